// The analytics service through the native mesh: tracker, beacon, queue consumer, stats,
// dashboard, salts and retention on virtual time, and the privacy promises (no IP or user agent
// stored anywhere, DNT/GPC honoured, tenant only from the tenant context).
#include "shared/rfc3339.h"
#include "tests/native/harness.h"
#include "tests/native/test_support.h"
#include "workers/analytics/dashboard.h"
#include "workers/analytics/tracker.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using ss::json;
using ss::native::HttpReply;
using ss::native::Mesh;
using ss::test::kAutoAdmin;
using ss::test::kAutoToken;
using ss::test::kBakeryAdmin;
using ss::test::kBakeryToken;

namespace {

const char* kChrome =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36";
const char* kIphone =
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/18.1 Mobile/15E148 Safari/604.1";
const char* kIp = "203.0.113.77";
const char* kIp2 = "198.51.100.23";

// 2025-11-29T14:20:00Z is the mesh's start; these are the days around it.
const std::int64_t kDay = ss::days_from_civil(2025, 11, 29) * ss::kMsPerDay;

struct Analytics {
  Mesh mesh;
  int next_message = 0;

  Analytics() {
    mesh.provision("bakery", kBakeryToken, kBakeryAdmin, json{{"hosts", {"crumbandcrust.example"}}},
                   "analytics");
    mesh.provision("auto-repair", kAutoToken, kAutoAdmin, json::object(), "analytics");
    mesh.request_cf = json{{"country", "DE"}, {"colo", "FRA"}};
  }

  HttpReply beacon(const json& body, const std::string& ua = kChrome, const std::string& ip = kIp,
                   std::map<std::string, std::string> extra = {},
                   const std::string& tenant = "bakery", const std::string& token = kBakeryToken) {
    auto headers = Mesh::tenant_headers(tenant, token);
    headers["Content-Type"] = "text/plain;charset=UTF-8";
    if (!ua.empty()) headers["User-Agent"] = ua;
    headers["CF-Connecting-IP"] = ip;
    for (auto& [k, v] : extra) headers[k] = v;
    return mesh.request("analytics", "POST", "/beacon", headers, body.dump());
  }
  HttpReply page(const std::string& url, const std::string& ua = kChrome,
                 const std::string& ip = kIp, const std::string& referrer = "") {
    return beacon(json{{"u", url}, {"r", referrer}, {"w", 1280}}, ua, ip);
  }

  std::vector<json>& queued() { return mesh.queue_sent["PAGEVIEWS_QUEUE"]; }

  // Delivers every queued message to the consumer as ONE batch; returns the consumer's output.
  json drain() {
    json messages = json::array();
    for (const json& body : queued()) {
      messages.push_back({{"id", "m" + std::to_string(++next_message)},
                          {"body", body},
                          {"attempts", 1},
                          {"timestamp", mesh.now_ms}});
    }
    queued().clear();
    return mesh.message(
        "analytics",
        json{{"op", "queue"}, {"queue", "siteswarm-pageviews"}, {"messages", messages}});
  }

  json maintenance() {
    return mesh.message("analytics", json{{"op", "scheduled"}, {"cron", "0 * * * *"}});
  }

  json stats(const std::string& query, const std::string& tenant = "bakery",
             const std::string& token = kBakeryToken, int expect = 200) {
    auto r =
        mesh.request("analytics", "GET", "/v1/stats" + query, Mesh::tenant_headers(tenant, token));
    CHECK(r.status == expect);
    return r.body_json();
  }

  std::vector<std::string> salt_days() {
    std::vector<std::string> days;
    for (const json& row : mesh.db("ANALYTICS_DB").rows("SELECT day FROM salts ORDER BY day")) {
      days.push_back(row["day"]);
    }
    return days;
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("analytics: GET /script.js serves the tracker, long-cacheable under its version") {
  Analytics a;
  auto r = a.mesh.request("analytics", "GET", "/script.js");
  CHECK(r.status == 200);
  CHECK(r.header("content-type").rfind("text/javascript", 0) == 0);
  CHECK(r.body == std::string(ss::analytics::kTrackerSource));
  CHECK(r.header("cache-control") == "public, max-age=3600");
  CHECK(r.header("etag") == "\"" + std::string(ss::analytics::kTrackerVersion) + "\"");

  auto pinned = a.mesh.request("analytics", "GET",
                               "/script.js?v=" + std::string(ss::analytics::kTrackerVersion));
  CHECK(pinned.status == 200);
  CHECK(pinned.header("cache-control") == "public, max-age=31536000, immutable");

  // The tracker never touches storage or cookies, and sends with sendBeacon or keepalive fetch.
  std::string js(ss::analytics::kTrackerSource);
  for (const char* banned : {"cookie", "localStorage", "sessionStorage", "indexedDB", "canvas"}) {
    CHECK(js.find(banned) == std::string::npos);
  }
  CHECK(js.find("sendBeacon") != std::string::npos);
  CHECK(js.find("keepalive") != std::string::npos);
  CHECK(js.find("pushState") != std::string::npos);
  CHECK(js.find("popstate") != std::string::npos);
}

TEST_CASE("analytics: the embedded tracker is generated from tracker.js as committed") {
  std::string source = slurp(std::string(SS_SOURCE_DIR) + "/workers/analytics/tracker.js");
  REQUIRE(!source.empty());
  // Stale? Run node scripts/gen-analytics.mjs.
  CHECK(ss::native::sha256_hex(source) == std::string(ss::analytics::kTrackerSourceSha256));
}

TEST_CASE("analytics: a beacon is 202 with an empty body, one AE point and one queue message") {
  Analytics a;
  a.maintenance();  // today's salt exists, as after any hourly cron
  a.mesh.effect_kinds.clear();
  const std::size_t promises = ss::native::promises_kept();
  auto r = a.beacon(json{{"u",
                          "https://crumbandcrust.example/menu?utm_source=news&utm_medium="
                          "email&utm_campaign=spring&id=42#top"},
                         {"r", "https://www.google.com/search?q=bread"},
                         {"w", 390}});
  CHECK(r.status == 202);
  CHECK(r.body.empty());
  // The 202 came with the AE point and the queue send, ahead of their results (docs/abi.md "Answers
  // known in advance"): the JS host answers without a last resume; here the promise was checked.
  CHECK(ss::native::promises_kept() == promises + 1);
  // No D1 write on the request path: reads only (tenant, salt), then AE + queue.
  for (const auto& kind : a.mesh.effect_kinds) {
    CHECK(kind != "d1.run");
    CHECK(kind != "d1.batch");
  }
  REQUIRE(a.mesh.analytics_points.size() == 1);
  const json& point = a.mesh.analytics_points[0];
  CHECK(point["binding"] == "PAGEVIEWS");
  CHECK(point["indexes"] == json::array({"bakery"}));
  CHECK(point["blobs"] == json::array({"pageview", "/menu", "google.com", "news", "email", "spring",
                                       "DE", "FRA", "desktop", "Chrome", ""}));
  CHECK(point["doubles"] == json::array({1, 390, 1}));
  REQUIRE(a.queued().size() == 1);
  const json& msg = a.queued()[0];
  CHECK(msg["t"] == "bakery");
  CHECK(msg["d"] == "2025-11-29");
  CHECK(msg["v"].get<std::string>().size() == 16);
  CHECK(msg["m"]["path"] == "/menu");  // no query string, no fragment
}

TEST_CASE("analytics: the tenant comes from the tenant context, never from the body") {
  Analytics a;
  auto r = a.beacon(json{
      {"u", "https://crumbandcrust.example/"}, {"tenant", "auto-repair"}, {"t", "auto-repair"}});
  CHECK(r.status == 202);
  REQUIRE(a.queued().size() == 1);
  CHECK(a.queued()[0]["t"] == "bakery");
  CHECK(a.mesh.analytics_points[0]["indexes"][0] == "bakery");
  a.drain();
  CHECK(a.stats("?by=path")["totals"]["pageviews"] == 1);
  CHECK(a.stats("?by=path", "auto-repair", kAutoToken)["totals"]["pageviews"] == 0);

  // No tenant context, or a forged one: 401, nothing counted.
  auto none = a.mesh.request("analytics", "POST", "/beacon", {{"User-Agent", kChrome}},
                             R"({"u":"https://crumbandcrust.example/"})");
  CHECK(none.status == 401);
  CHECK(none.body_json()["error"]["code"] == "unauthenticated_tenant");
  auto forged =
      a.beacon(json{{"u", "https://x.example/"}}, kChrome, kIp, {}, "auto-repair", kBakeryToken);
  CHECK(forged.status == 401);
  CHECK(a.queued().empty());
  CHECK(a.mesh.analytics_points.size() == 1);
}

TEST_CASE("analytics: a refused beacon draws no salt; a later one is hashed with today's") {
  Analytics a;  // no cron run yet: no salt
  auto forged = a.beacon(json{{"u", "https://crumbandcrust.example/"}}, kChrome, kIp, {}, "bakery",
                         kAutoToken);
  CHECK(forged.status == 401);
  CHECK(a.mesh.db("ANALYTICS_DB").rows("SELECT * FROM salts").empty());
  // The first good beacon draws it; the next ones (salt cached) hash while authenticating, with
  // the same salt: one visitor.
  CHECK(a.page("https://crumbandcrust.example/").status == 202);
  CHECK(a.mesh.db("ANALYTICS_DB").rows("SELECT * FROM salts").size() == 1);
  auto forged_again = a.beacon(json{{"u", "https://crumbandcrust.example/"}}, kChrome, kIp, {},
                               "bakery", kAutoToken);
  CHECK(forged_again.status == 401);
  CHECK(a.page("https://crumbandcrust.example/menu").status == 202);
  REQUIRE(a.queued().size() == 2);
  CHECK(a.queued()[0]["v"] == a.queued()[1]["v"]);
  a.drain();
  json totals = a.stats("")["totals"];
  CHECK(totals["pageviews"] == 2);
  CHECK(totals["visitors"] == 1);
}

TEST_CASE("analytics: oversized and malformed beacons are refused and nothing is counted") {
  Analytics a;
  auto big = a.beacon(json{{"u", "https://crumbandcrust.example/" + std::string(5000, 'a')}});
  CHECK(big.status == 413);
  CHECK(big.body_json()["error"]["code"] == "payload_too_large");
  struct Case {
    std::string body;
    std::string field;
  };
  const Case cases[] = {{"not json", ""},
                        {"[1,2]", ""},
                        {R"({"r":"https://a.example/"})", "u"},
                        {R"({"u":42})", "u"},
                        {R"({"u":"/relative"})", "u"},
                        {R"j({"u":"javascript:alert(1)"})j", "u"},
                        {R"({"u":"https://a.example/","r":7})", "r"},
                        {R"({"u":"https://a.example/","w":"wide"})", "w"},
                        {R"({"u":"https://a.example/","w":-1})", "w"}};
  for (const Case& c : cases) {
    auto headers = Mesh::tenant_headers("bakery", kBakeryToken);
    headers["User-Agent"] = kChrome;
    auto r = a.mesh.request("analytics", "POST", "/beacon", headers, c.body);
    INFO(c.body);
    CHECK(r.status == 400);
    json err = r.body_json()["error"];
    CHECK(err["code"].is_string());
    if (!c.field.empty()) {
      CHECK(err["field"] == c.field);
      CHECK(err["fields"].is_object());  // the contract's validation shape
      CHECK(err["fields"].contains(c.field));
    }
  }
  auto headers = Mesh::tenant_headers("bakery", kBakeryToken);
  headers["Content-Type"] = "application/x-www-form-urlencoded";
  CHECK(a.mesh.request("analytics", "POST", "/beacon", headers, "u=x").status == 415);
  CHECK(a.queued().empty());
  CHECK(a.mesh.analytics_points.empty());
  a.drain();
  json s = a.stats("");
  CHECK(s["totals"]["pageviews"] == 0);
  CHECK(s["totals"]["filtered"] == 0);
}

TEST_CASE("analytics: bots are filtered, counted as filtered and never as pageviews") {
  Analytics a;
  const std::string bots[] = {
      "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
      "HeadlessChrome/131.0.0.0 Safari/537.36",
      "curl/8.5.0", "SiteSwarm-Monitor/0.1 (+https://siteswarm.example/monitoring)",
      "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"};
  for (const auto& ua : bots) CHECK(a.page("https://crumbandcrust.example/", ua).status == 202);
  CHECK(a.page("https://crumbandcrust.example/", "").status == 202);  // no User-Agent at all
  CHECK(a.page("https://crumbandcrust.example/", kChrome).status == 202);
  REQUIRE(a.mesh.analytics_points.size() == 7);
  for (int i = 0; i < 6; ++i) {
    CHECK(a.mesh.analytics_points[i]["blobs"][0] == "filtered");
    CHECK(a.queued()[i]["f"] == true);
    CHECK_FALSE(a.queued()[i].contains("v"));
  }
  CHECK(a.mesh.analytics_points[1]["blobs"][10] == "headless");
  CHECK(a.mesh.analytics_points[5]["blobs"][10] == "empty_ua");
  a.drain();
  json s = a.stats("?by=browser");
  CHECK(s["totals"]["pageviews"] == 1);
  CHECK(s["totals"]["filtered"] == 6);
  CHECK(s["rows"] == json::array({{{"key", "Chrome"}, {"pageviews", 1}, {"visitors", 1}}}));
}

TEST_CASE("analytics: DNT or Sec-GPC count the pageview but make no visitor hash") {
  Analytics a;
  a.beacon(json{{"u", "https://crumbandcrust.example/"}}, kChrome, kIp, {{"DNT", "1"}});
  a.beacon(json{{"u", "https://crumbandcrust.example/"}}, kChrome, kIp2, {{"Sec-GPC", "1"}});
  a.beacon(json{{"u", "https://crumbandcrust.example/"}}, kIphone, kIp);
  REQUIRE(a.queued().size() == 3);
  CHECK_FALSE(a.queued()[0].contains("v"));
  CHECK_FALSE(a.queued()[1].contains("v"));
  CHECK(a.queued()[2].contains("v"));
  CHECK(a.mesh.analytics_points[0]["doubles"][2] == 0);
  a.drain();
  json s = a.stats("");
  CHECK(s["totals"]["pageviews"] == 3);
  CHECK(s["totals"]["visitors"] == 1);
  CHECK(a.mesh.db("ANALYTICS_DB").rows("SELECT * FROM visitor_days").size() == 1);
}

TEST_CASE("analytics: DNT: 0 or Sec-GPC: 0 is no opt-out; the visitor is counted") {
  Analytics a;
  a.beacon(json{{"u", "https://crumbandcrust.example/"}}, kChrome, kIp, {{"DNT", "0"}});
  a.beacon(json{{"u", "https://crumbandcrust.example/"}}, kIphone, kIp2, {{"Sec-GPC", "0"}});
  REQUIRE(a.queued().size() == 2);
  CHECK(a.queued()[0].contains("v"));
  CHECK(a.queued()[1].contains("v"));
  CHECK(a.mesh.analytics_points[0]["doubles"][2] == 1);
  CHECK(a.mesh.analytics_points[1]["doubles"][2] == 1);
  a.drain();
  json s = a.stats("");
  CHECK(s["totals"]["pageviews"] == 2);
  CHECK(s["totals"]["visitors"] == 2);
}

TEST_CASE("analytics: the pipeline rolls up dimensions, visitors and bounce rate") {
  Analytics a;
  a.mesh.effect_kinds.clear();
  // Visitor 1 (Chrome, kIp): two pages from Google. Visitor 2 (iPhone): one page, direct.
  // Visitor 3 (Chrome, kIp2): one page via an internal link (own host = direct).
  a.page("https://crumbandcrust.example/", kChrome, kIp, "https://www.google.com/");
  a.page("https://crumbandcrust.example/menu?utm_source=flyer", kChrome, kIp,
         "https://www.google.com/");
  a.page("https://crumbandcrust.example/", kIphone, kIp);
  a.page("https://crumbandcrust.example/menu", kChrome, kIp2, "https://crumbandcrust.example/");
  json out = a.drain();
  CHECK(out["ack"].size() == 4);
  CHECK(out["retry"].empty());
  // The whole message batch is one D1 batch.
  int batches = 0;
  for (const auto& k : a.mesh.effect_kinds) batches += k == "d1.batch";
  CHECK(batches == 1);

  json totals = a.stats("")["totals"];
  CHECK(totals["pageviews"] == 4);
  CHECK(totals["visitors"] == 3);
  CHECK(totals["bounceRate"] == doctest::Approx(2.0 / 3.0).epsilon(0.001));

  json paths = a.stats("?by=path")["rows"];
  CHECK(paths == json::array({{{"key", "/"}, {"pageviews", 2}, {"visitors", 2}},
                              {{"key", "/menu"}, {"pageviews", 2}, {"visitors", 2}}}));
  json refs = a.stats("?by=referrer")["rows"];
  CHECK(refs == json::array({{{"key", "(direct)"}, {"pageviews", 2}, {"visitors", 2}},
                             {{"key", "google.com"}, {"pageviews", 2}, {"visitors", 1}}}));
  json devices = a.stats("?by=device")["rows"];
  CHECK(devices == json::array({{{"key", "desktop"}, {"pageviews", 3}, {"visitors", 2}},
                                {{"key", "mobile"}, {"pageviews", 1}, {"visitors", 1}}}));
  json countries = a.stats("?by=country")["rows"];
  CHECK(countries == json::array({{{"key", "DE"}, {"pageviews", 4}, {"visitors", 3}}}));
  CHECK(a.stats("?by=utm_source")["rows"] ==
        json::array({{{"key", "flyer"}, {"pageviews", 1}, {"visitors", 1}}}));
  json days = a.stats("?from=2025-11-28&to=2025-11-30&by=day");
  CHECK(days["from"] == "2025-11-28");
  CHECK(days["to"] == "2025-11-30");
  CHECK(days["rows"] == json::array({{{"key", "2025-11-28"}, {"pageviews", 0}, {"visitors", 0}},
                                     {{"key", "2025-11-29"}, {"pageviews", 4}, {"visitors", 3}},
                                     {{"key", "2025-11-30"}, {"pageviews", 0}, {"visitors", 0}}}));

  // A later batch: visitor 2 comes back → no longer a bounce (the counters follow across batches).
  a.page("https://crumbandcrust.example/about", kIphone, kIp);
  a.drain();
  totals = a.stats("")["totals"];
  CHECK(totals["pageviews"] == 5);
  CHECK(totals["visitors"] == 3);
  CHECK(totals["bounceRate"] == doctest::Approx(1.0 / 3.0).epsilon(0.001));
}

TEST_CASE("analytics: a failed rollup retries the whole batch; malformed messages are dropped") {
  Analytics a;
  a.page("https://crumbandcrust.example/");
  a.queued().push_back(json{{"t", "Not A Tenant"}, {"d", "x"}});
  a.mesh.fail_effect = [](const json& e) { return e.value("kind", "") == "d1.batch"; };
  json out = a.drain();
  CHECK(out["ack"] == json::array({"m2"}));  // the malformed one
  REQUIRE(out["retry"].size() == 1);
  CHECK(out["retry"][0]["id"] == "m1");
  a.mesh.fail_effect = nullptr;
  CHECK(a.stats("")["totals"]["pageviews"] == 0);
}

TEST_CASE("analytics: salts rotate at 00:00 UTC and are deleted 48 hours after their day began") {
  Analytics a;
  a.mesh.now_ms = kDay + 86'399'000;  // 2025-11-29T23:59:59Z
  a.maintenance();
  CHECK(a.salt_days() == std::vector<std::string>{"2025-11-29", "2025-11-30"});

  a.page("https://crumbandcrust.example/");
  a.page("https://crumbandcrust.example/");     // same visitor, same day: same hash
  a.mesh.now_ms = kDay + ss::kMsPerDay + 1000;  // 2025-11-30T00:00:01Z
  a.page("https://crumbandcrust.example/");
  REQUIRE(a.queued().size() == 3);
  CHECK(a.queued()[0]["v"] == a.queued()[1]["v"]);
  CHECK(a.queued()[0]["d"] == "2025-11-29");
  CHECK(a.queued()[2]["d"] == "2025-11-30");
  CHECK(a.queued()[2]["v"] != a.queued()[0]["v"]);  // a new salt: unlinkable across days
  a.drain();
  CHECK(a.stats("?from=2025-11-29&to=2025-11-30")["totals"]["visitors"] == 2);

  // Still within 48 hours of 2025-11-29 00:00: its salt and visitor rows are kept.
  a.maintenance();
  CHECK(a.salt_days() == std::vector<std::string>{"2025-11-29", "2025-11-30", "2025-12-01"});
  // 2025-12-01T00:00:00Z: 48 hours after 2025-11-29 began → its salt and per-visitor rows go.
  a.mesh.now_ms = kDay + 2 * ss::kMsPerDay;
  a.maintenance();
  CHECK(a.salt_days() == std::vector<std::string>{"2025-11-30", "2025-12-01", "2025-12-02"});
  CHECK(a.mesh.db("ANALYTICS_DB")
            .rows("SELECT * FROM visitor_days WHERE day = '2025-11-29'")
            .empty());
  CHECK(a.mesh.db("ANALYTICS_DB")
            .rows("SELECT * FROM visitor_dims WHERE day = '2025-11-29'")
            .empty());
  CHECK(a.mesh.db("ANALYTICS_DB")
            .rows("SELECT * FROM visitor_days WHERE day = '2025-11-30'")
            .size() == 1);
  // The rollups stay: the stats of the day are unchanged.
  json s = a.stats("?from=2025-11-29&to=2025-11-29");
  CHECK(s["totals"]["pageviews"] == 2);
  CHECK(s["totals"]["visitors"] == 1);
}

TEST_CASE("analytics: rollups are kept ANALYTICS_RETENTION_DAYS days") {
  Analytics a;
  a.mesh.set_env("analytics", "ANALYTICS_RETENTION_DAYS", "7");
  a.page("https://crumbandcrust.example/");
  a.drain();
  a.mesh.now_ms = kDay + 6 * ss::kMsPerDay;
  a.maintenance();
  CHECK(a.stats("?from=2025-11-29&to=2025-11-29")["totals"]["pageviews"] == 1);
  a.mesh.now_ms = kDay + 7 * ss::kMsPerDay;
  a.maintenance();
  CHECK(a.stats("?from=2025-11-29&to=2025-11-29")["totals"]["pageviews"] == 0);
}

TEST_CASE("analytics: no IP address or user agent is stored anywhere") {
  Analytics a;
  a.maintenance();
  const std::string uas[] = {
      kChrome, kIphone, "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"};
  for (const auto& ua : uas) {
    a.page("https://crumbandcrust.example/?utm_source=x", ua, kIp, "https://news.example/");
    a.page("https://crumbandcrust.example/b", ua, kIp2);
  }
  std::string recorded;
  for (const json& p : a.mesh.analytics_points) recorded += p.dump();
  for (const json& q : a.queued()) recorded += q.dump();
  a.drain();
  auto& db = a.mesh.db("ANALYTICS_DB");
  for (const json& t : db.rows("SELECT name FROM sqlite_master WHERE type = 'table'")) {
    for (const json& row : db.rows("SELECT * FROM \"" + t["name"].get<std::string>() + "\"")) {
      recorded += row.dump();
    }
  }
  CHECK(recorded.find("daily_totals") == std::string::npos);  // (rows, not names, were read)
  CHECK(recorded.find("bakery") != std::string::npos);        // the dump did read the tables
  for (const std::string& needle :
       {std::string(kIp), std::string(kIp2), std::string("203.0.113"), std::string("Mozilla"),
        std::string("AppleWebKit"), std::string("Googlebot")}) {
    INFO(needle);
    CHECK(recorded.find(needle) == std::string::npos);
  }
}

TEST_CASE("analytics: stats are the tenant's own, and bad ranges are 400 naming the field") {
  Analytics a;
  a.page("https://crumbandcrust.example/");
  a.beacon(json{{"u", "https://autorepair.example/"}}, kChrome, kIp, {}, "auto-repair", kAutoToken);
  a.drain();
  CHECK(a.stats("")["totals"]["pageviews"] == 1);
  CHECK(a.stats("", "auto-repair", kAutoToken)["totals"]["pageviews"] == 1);
  // Another tenant's id with our token, a query parameter naming a tenant: nothing leaks.
  a.stats("", "auto-repair", kBakeryToken, 401);
  CHECK(a.stats("?tenant=auto-repair&tenantId=auto-repair")["rows"][29]["pageviews"] == 1);
  // The tenant admin token reads the same stats.
  auto admin = a.mesh.request("analytics", "GET", "/v1/stats",
                              {{"X-SiteSwarm-Tenant-Id", "bakery"},
                               {"Authorization", std::string("Bearer ") + kBakeryAdmin}});
  CHECK(admin.status == 200);
  CHECK(admin.body_json()["totals"]["pageviews"] == 1);

  struct Bad {
    std::string query;
    std::string field;
  };
  const Bad bad[] = {{"?from=2025-13-01", "from"},
                     {"?from=yesterday", "from"},
                     {"?to=2025-02-30", "to"},
                     {"?from=2025-11-29&to=2025-11-01", "from"},
                     {"?from=2024-01-01&to=2025-11-29", "from"},
                     {"?by=ip", "by"},
                     {"?by=path&limit=0", "limit"},
                     {"?to=0000-01-10", "to"},
                     {"?from=1969-12-31&to=1970-01-05", "from"}};
  for (const Bad& b : bad) {
    INFO(b.query);
    json err = a.stats(b.query, "bakery", kBakeryToken, 400)["error"];
    CHECK(err["code"] == "invalid_request");
    CHECK(err["field"] == b.field);
    CHECK(err["message"].get<std::string>().find(b.field) != std::string::npos);
    // The contract's validation shape, as cms and monitoring answer it: "fields" names it too.
    CHECK(err["fields"].is_object());
    CHECK(err["fields"].size() == 1);
    CHECK(err["fields"].contains(b.field));
  }
  json full = a.stats("?from=2024-11-29&to=2025-11-29");  // 366 days: the limit
  CHECK(full["rows"].size() == 366);
  // The default range (30 days to `to`) starts no earlier than the first day there can be.
  json first = a.stats("?to=1970-01-10");
  CHECK(first["from"] == "1970-01-01");
  CHECK(first["rows"].size() == 10);
}

TEST_CASE("analytics: config.hosts takes host names only, as a referrer's host reads") {
  Analytics a;
  auto provision = [&](const json& hosts) {
    json body{{"token", "zz-token-0123456789abcd"},
              {"adminToken", "zz-admin-0123456789abcd"},
              {"config", {{"hosts", hosts}}}};
    return a.mesh.request("analytics", "PUT", "/admin/tenants/zz",
                          {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                           {"Content-Type", "application/json"}},
                          body.dump());
  };
  // Not a host at all, or a name a URL cannot carry as written (a Unicode name: its xn-- form).
  // And a host no referrer can carry, which would be kept and never match: no wildcard is read.
  for (const char* bad : {"crumb and crust.example", "[::1", "[]", "user@x.example", "http://",
                          "b\xc3\xa4"
                          "ckerei.example",
                          "*.shop.example", "*", "shop!.example", "%73hop.example"}) {
    INFO(bad);
    HttpReply r = provision(json::array({"ok.example", bad}));
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["field"] == "config.hosts");
    CHECK(r.body.find("xn--") != std::string::npos);
  }
  HttpReply good = provision(
      json::array({"crumbandcrust.example", "www.crumb-and-crust.example", "127.0.0.1", "[::1]",
                   "localhost", "my_host.example", "xn--bckerei-5wa.example", "shop.example.",
                   "www.Crumb-And-Crust.example",  // compared in lower case, as hosts are
                   // A URL or host:port names its host (a referrer's is compared without them).
                   "https://crumbandcrust.example/menu", "localhost:8787", "127.1"}));
  CHECK(good.status == 201);
}

TEST_CASE("analytics: config.siteHosts is the same list as config.hosts, one of the two") {
  Analytics a;
  auto provision = [&](const json& config) {
    json body{{"token", "zz-token-0123456789abcd"},
              {"adminToken", "zz-admin-0123456789abcd"},
              {"config", config}};
    return a.mesh.request("analytics", "PUT", "/admin/tenants/zz",
                          {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                           {"Content-Type", "application/json"}},
                          body.dump());
  };
  HttpReply bad = provision({{"siteHosts", {"ok.example", "not a host"}}});
  CHECK(bad.status == 400);
  CHECK(bad.body_json()["error"]["field"] == "config.siteHosts");
  HttpReply both = provision({{"hosts", {"a.example"}}, {"siteHosts", {"b.example"}}});
  CHECK(both.status == 400);
  CHECK(both.body_json()["error"]["field"] == "config.siteHosts");
  CHECK(provision({{"hosts", {"a.example"}}, {"siteHosts", {"a.example"}}}).status == 201);
  // The same hosts spelt otherwise (case, a URL, order, a repeat) agree.
  CHECK(provision({{"hosts", {"A.example", "b.example"}},
                   {"siteHosts", {"https://b.example/", "a.example", "a.example"}}})
            .status == 200);
  CHECK(provision({{"siteHosts", {"shop.zz.example"}}}).status == 200);
  CHECK(provision({{"siteHost", {"shop.zz.example"}}}).status == 400);  // unknown keys still are

  // A referrer from one of the siteHosts counts as direct, as one of the hosts would.
  HttpReply hit = a.beacon(
      json{{"u", "https://zz.example/"}, {"r", "https://shop.zz.example/cart"}, {"w", 1280}},
      kChrome, kIp, {}, "zz", "zz-token-0123456789abcd");
  CHECK(hit.status == 202);
  a.drain();
  json refs = a.stats("?by=referrer", "zz", "zz-token-0123456789abcd")["rows"];
  CHECK(refs == json::array({{{"key", "(direct)"}, {"pageviews", 1}, {"visitors", 1}}}));
}

// A line through one point draws nothing: a one-day range showed its visitors nowhere.
TEST_CASE("analytics: the chart marks each day's visitors, so a one-day range shows them") {
  auto circles = [](const std::string& html) {
    std::size_t count = 0;
    for (auto at = html.find("<circle class=\"visitors\""); at != std::string::npos;
         at = html.find("<circle class=\"visitors\"", at + 1)) {
      ++count;
    }
    return count;
  };
  json one_day{{"from", "2026-12-06"},
               {"to", "2026-12-06"},
               {"rows", json::array({{{"key", "2026-12-06"}, {"pageviews", 4}, {"visitors", 3}}})}};
  CHECK(circles(ss::analytics::render_dashboard("bakery", one_day, {})) == 1);
  json days = json::array();
  for (int d = 1; d <= 40; ++d) {
    days.push_back({{"key", "day" + std::to_string(d)}, {"pageviews", d}, {"visitors", d}});
  }
  CHECK(circles(ss::analytics::render_dashboard("bakery", json{{"rows", days}}, {})) == 0);
  days.erase(days.begin() + 31, days.end());
  CHECK(circles(ss::analytics::render_dashboard("bakery", json{{"rows", days}}, {})) == 31);
}

TEST_CASE("analytics: the dashboard is escaped HTML with an SVG chart, for the tenant admin") {
  Analytics a;
  a.page("https://crumbandcrust.example/<script>alert(1)</script>");
  a.page("https://crumbandcrust.example/", kChrome, kIp, "https://evil.example\"><img src=x>/");
  a.drain();
  auto tenant_only = a.mesh.request("analytics", "GET", "/dashboard",
                                    Mesh::tenant_headers("bakery", kBakeryToken));
  CHECK(tenant_only.status == 401);
  auto r = a.mesh.request("analytics", "GET", "/dashboard",
                          {{"X-SiteSwarm-Tenant-Id", "bakery"},
                           {"Authorization", std::string("Bearer ") + kBakeryAdmin}});
  CHECK(r.status == 200);
  CHECK(r.header("content-type") == "text/html; charset=utf-8");
  CHECK(r.header("content-security-policy").find("default-src 'none'") != std::string::npos);
  CHECK(r.body.find("<svg") != std::string::npos);
  CHECK(r.body.find("<polyline") != std::string::npos);
  CHECK(r.body.find("<script") == std::string::npos);
  CHECK(r.body.find("<img") == std::string::npos);
  CHECK(r.body.find("&lt;script&gt;") != std::string::npos);
  CHECK(r.body.find("http://") == std::string::npos);  // nothing loaded from anywhere
  CHECK(r.body.find("https://") == std::string::npos);
  for (const char* title : {"Pages", "Referrers", "Countries", "Devices", "Browsers"}) {
    CHECK(r.body.find(std::string("<h2>") + title + "</h2>") != std::string::npos);
  }
  auto bad = a.mesh.request("analytics", "GET", "/dashboard?from=nope",
                            {{"X-SiteSwarm-Tenant-Id", "bakery"},
                             {"Authorization", std::string("Bearer ") + kBakeryAdmin}});
  CHECK(bad.status == 400);
}

TEST_CASE("analytics: each finished day is announced to the ledger once, an hour after it ends") {
  Analytics a;
  a.page("https://crumbandcrust.example/", kChrome, kIp);
  a.page("https://crumbandcrust.example/menu", kChrome, kIp);
  a.page("https://crumbandcrust.example/", kIphone, kIp2);
  a.beacon(json{{"u", "https://crumbandcrust.example/"}},
           "Googlebot/2.1 (+http://www.google.com/bot.html)");
  // auto-repair's day has bot hits only: filtered, never traffic to announce.
  a.beacon(json{{"u", "https://auto.example/"}}, "Googlebot/2.1 (+http://www.google.com/bot.html)",
           kIp, {}, "auto-repair", kAutoToken);
  a.drain();
  CHECK(a.mesh.db("ANALYTICS_DB")
            .rows("SELECT * FROM daily_totals WHERE tenant_id = 'auto-repair' AND filtered = 1")
            .size() == 1);
  auto announced = [&] {
    std::vector<json> out;
    for (const json& body : a.mesh.queue_sent["EVENTS_QUEUE"]) {
      if (body.value("event_type", "") == "analytics.day_summarized") out.push_back(body);
    }
    return out;
  };
  a.maintenance();  // the same day: not finished
  CHECK(announced().empty());
  a.mesh.now_ms = kDay + ss::kMsPerDay + 59 * 60'000;  // 00:59 the next day: still within the hour
  a.maintenance();
  CHECK(announced().empty());

  // The hourly run fails to send: nothing is marked, the next run sends it.
  a.mesh.now_ms = kDay + ss::kMsPerDay + 60 * 60'000;
  a.mesh.fail_effect = [](const json& e) { return e.value("kind", "") == "queue.sendBatch"; };
  a.maintenance();
  CHECK(announced().empty());
  a.mesh.fail_effect = nullptr;
  a.mesh.now_ms += 60 * 60'000;
  a.maintenance();
  std::vector<json> events = announced();
  REQUIRE(events.size() == 1);  // bakery only: auto-repair had bots only
  const json& e = events[0];
  CHECK(e["tenant_id"] == "bakery");
  CHECK(e["entity_ref"] == "tenant:bakery");
  CHECK(e["idempotency_key"] == "analytics.day_summarized:2025-11-29");
  CHECK(e["source_system"] == "siteswarm-analytics-service");
  CHECK(e["payload"] == json{{"day", "2025-11-29"},
                             {"pageviews", 3},
                             {"visitors", 2},
                             {"bounces", 1},
                             {"filtered", 1}});

  // Announced once: later runs send nothing more for that day.
  a.mesh.now_ms += 60 * 60'000;
  a.maintenance();
  CHECK(announced().size() == 1);
  CHECK(a.mesh.db("ANALYTICS_DB")
            .rows("SELECT day FROM daily_totals WHERE summarized_at IS NULL")
            .empty());
}

TEST_CASE(
    "analytics: a pageview rolled up after its day's per-visitor rows are gone adds no "
    "visitor") {
  // A consumer backlog (D1 down, retries, a paused consumer) can deliver a message of day D after
  // 00:00 of D+2, when the hourly job has deleted D's visitor_days / visitor_dims. The hash in it
  // must not recreate them: that would count the visitor a second time (and a second bounce), and
  // keep a per-visitor row of D beyond its 48 hours.
  Analytics a;
  a.maintenance();
  a.page("https://crumbandcrust.example/");
  a.drain();
  a.page("https://crumbandcrust.example/menu");  // the same visitor, same day: still queued
  REQUIRE(a.queued().size() == 1);
  a.mesh.now_ms = kDay + 2 * ss::kMsPerDay + 60'000;  // 2025-12-01T00:01:00Z
  a.maintenance();
  CHECK(a.mesh.db("ANALYTICS_DB").rows("SELECT * FROM visitor_days").empty());
  json out = a.drain();
  CHECK(out["ack"].size() == 1);
  json s = a.stats("?from=2025-11-29&to=2025-11-29&by=path");
  CHECK(s["totals"]["pageviews"] == 2);  // the pageview still counts
  CHECK(s["totals"]["visitors"] == 1);
  CHECK(s["totals"]["bounceRate"] == 1.0);
  CHECK(s["rows"] == json::array({{{"key", "/"}, {"pageviews", 1}, {"visitors", 1}},
                                  {{"key", "/menu"}, {"pageviews", 1}, {"visitors", 0}}}));
  CHECK(a.mesh.db("ANALYTICS_DB").rows("SELECT * FROM visitor_days").empty());
  CHECK(a.mesh.db("ANALYTICS_DB").rows("SELECT * FROM visitor_dims").empty());
}

TEST_CASE(
    "analytics: a beacon with a Content-Type that is not text/plain or JSON is 415, even "
    "an unparseable one") {
  // Only text/plain, application/json or no Content-Type at all are beacons; a header that is
  // present but malformed is not "none".
  Analytics a;
  for (const char* type : {"text", "application/x-www-form-urlencoded; charset",
                           "image/png;;=", "multipart/form-data; boundary"}) {
    INFO(std::string(type));
    auto r = a.beacon(json{{"u", "https://crumbandcrust.example/"}}, kChrome, kIp,
                      {{"Content-Type", type}});
    CHECK(r.status == 415);
    CHECK(r.body_json()["error"]["field"] == "Content-Type");  // the header, named
  }
  CHECK(a.queued().empty());
  CHECK(a.mesh.analytics_points.empty());
  // Still accepted: no Content-Type, and the two beacon types with parameters.
  auto headers = Mesh::tenant_headers("bakery", kBakeryToken);
  headers["User-Agent"] = kChrome;
  CHECK(a.mesh
            .request("analytics", "POST", "/beacon", headers,
                     R"({"u":"https://crumbandcrust.example/"})")
            .status == 202);
  CHECK(a.beacon(json{{"u", "https://crumbandcrust.example/"}}, kChrome, kIp,
                 {{"Content-Type", "Application/JSON; charset=utf-8"}})
            .status == 202);
}

TEST_CASE("analytics: expired salts and per-visitor rows go even when a new salt cannot be drawn") {
  // The 48-hour deletions must not depend on drawing the next salts: a D1 that refuses writes
  // (a full database, say) still deletes, and a failed draw is retried the next hour.
  Analytics a;
  a.maintenance();
  a.page("https://crumbandcrust.example/");
  a.drain();
  CHECK(a.mesh.db("ANALYTICS_DB").rows("SELECT * FROM visitor_days").size() == 1);
  a.mesh.now_ms = kDay + 2 * ss::kMsPerDay;  // 2025-12-01T00:00:00Z: 2025-11-29 is 48 hours old
  a.mesh.fail_effect = [](const json& e) {
    return e.value("sql", "").find("INSERT OR IGNORE INTO salts") != std::string::npos;
  };
  a.maintenance();
  a.mesh.fail_effect = nullptr;
  CHECK(a.salt_days() == std::vector<std::string>{"2025-11-30"});
  CHECK(a.mesh.db("ANALYTICS_DB").rows("SELECT * FROM visitor_days").empty());
  CHECK(a.mesh.db("ANALYTICS_DB").rows("SELECT * FROM visitor_dims").empty());
  // The next run draws what is missing.
  a.mesh.now_ms += 3'600'000;
  a.maintenance();
  CHECK(a.salt_days() == std::vector<std::string>{"2025-11-30", "2025-12-01", "2025-12-02"});
}
