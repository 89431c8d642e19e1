// The monitoring worker through the native mesh: the monitor API, every probe failure reason, the
// incident/alert pipeline with faults, SSRF refusals, uptime over a seeded history and the status
// page. The origin is a fetch stub whose status, latency, matched selectors and redirects the test
// sets; the native host does not parse HTML, so the stub declares which selectors matched.
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "tests/native/harness.h"
#include "tests/native/test_support.h"
#include "workers/monitoring/jobs.h"
#include "workers/monitoring/status_page.h"

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

using ss::json;
using ss::native::HttpReply;
using ss::native::Mesh;
using ss::native::StubReply;
using ss::test::kAutoAdmin;
using ss::test::kAutoToken;
using ss::test::kBakeryAdmin;
using ss::test::kBakeryToken;

namespace {

const char* kPagerDutyUrl = "https://events.pd.test/v2/enqueue";
const char* kSlackUrl = "https://hooks.slack.test/services/T000/B000/XXXX";

struct Monitoring {
  Mesh mesh;
  // The origin (https://site.example/...).
  int status = 200;
  int latency = 40;
  bool network_error = false;
  bool timeout = false;
  std::optional<std::vector<std::string>> matched;  // unset: every selector matches
  std::map<std::string, std::string> redirects;     // url -> Location
  int redirect_latency = 5;
  // The alert endpoints.
  std::vector<json> pagerduty, slack;
  int alert_failures = 0;  // the next n alert requests answer 500
  std::vector<std::string> probed;
  // While set, alert jobs are held back here instead of delivered (a retry waiting out its backoff,
  // or a message the queue lost): release_alerts() delivers them.
  bool hold_alerts = false;
  std::vector<json> held_alerts;

  Monitoring() {
    mesh.set_env("monitoring", "PAGERDUTY_EVENTS_URL", kPagerDutyUrl);
    mesh.set_env("monitoring", "ALERT_BACKOFF_SECONDS", "0");
    mesh.provision("bakery", kBakeryToken, kBakeryAdmin, json::object(), "monitoring");
    mesh.provision("auto-repair", kAutoToken, kAutoAdmin, json::object(), "monitoring");
    mesh.fetch_stub = [this](const json& req) { return answer(req); };
  }

  StubReply answer(const json& req) {
    std::string url = ss::string_or(req, "url", "");
    StubReply r;
    if (url == kPagerDutyUrl || url == kSlackUrl) {
      if (alert_failures > 0) {
        --alert_failures;
        r.status = 500;
        return r;
      }
      auto body = ss::parse_json(ss::string_or(req, "body", ""));
      (url == kPagerDutyUrl ? pagerduty : slack).push_back(body ? *body : json(nullptr));
      r.status = url == kPagerDutyUrl ? 202 : 200;
      return r;
    }
    probed.push_back(url);
    if (auto it = redirects.find(url); it != redirects.end()) {
      r.status = 302;
      r.headers["location"] = it->second;
      r.elapsed_ms = redirect_latency;
      return r;
    }
    r.network_error = network_error;
    r.timeout = timeout;
    r.status = status;
    r.elapsed_ms = latency;
    r.selectors_matched = matched;
    // The host's timer: an answer slower than the call's time is none.
    if (r.elapsed_ms > ss::int_or(req, "timeoutMs", 1 << 30)) r.timeout = true;
    return r;
  }

  std::map<std::string, std::string> admin_headers(const char* tenant = "bakery",
                                                   const char* token = kBakeryAdmin) {
    return {{"X-SiteSwarm-Tenant-Id", tenant},
            {"Authorization", std::string("Bearer ") + token},
            {"Content-Type", "application/json"}};
  }
  HttpReply put(const std::string& id, const json& body, const char* tenant = "bakery",
                const char* token = kBakeryAdmin) {
    return mesh.request("monitoring", "PUT", "/admin/monitors/" + id, admin_headers(tenant, token),
                        body.dump());
  }
  HttpReply admin(const std::string& method, const std::string& path) {
    return mesh.request("monitoring", method, path, admin_headers());
  }
  json overview(const char* tenant = "bakery", const char* token = kBakeryToken) {
    HttpReply r =
        mesh.request("monitoring", "GET", "/v1/monitors", Mesh::tenant_headers(tenant, token));
    REQUIRE(r.status == 200);
    return r.body_json();
  }
  json monitor(const std::string& id) {
    json all = overview();
    for (const json& m : all["monitors"]) {
      if (m["id"] == id) return m;
    }
    FAIL("no monitor " << id);
    return nullptr;
  }

  // One cron tick five minutes after the last, then every queued job until the queue is empty
  // (retries are redelivered at once: the backoff is 0 in tests).
  void tick() {
    mesh.now_ms += ss::monitoring::kTickMs;
    json out = mesh.message("monitoring", json{{"op", "scheduled"}, {"cron", "*/5 * * * *"}});
    CHECK(out["ok"] == true);
    drain();
  }
  void drain() {
    std::vector<std::pair<json, int>> pending;  // body, attempts
    for (int round = 0; round < 50; ++round) {
      for (json& b : mesh.queue_sent["MONITOR_JOBS"]) {
        if (hold_alerts && b["type"] == "alert") {
          held_alerts.push_back(std::move(b));
        } else {
          pending.emplace_back(std::move(b), 1);
        }
      }
      mesh.queue_sent["MONITOR_JOBS"].clear();
      if (pending.empty()) return;
      json messages = json::array();
      for (std::size_t i = 0; i < pending.size(); ++i) {
        messages.push_back({{"id", "m" + std::to_string(i)},
                            {"body", pending[i].first},
                            {"attempts", pending[i].second}});
      }
      json out = mesh.message(
          "monitoring",
          json{{"op", "queue"}, {"queue", "siteswarm-monitoring-jobs"}, {"messages", messages}});
      std::vector<std::pair<json, int>> again;
      for (const json& r : out["retry"]) {
        std::size_t i = std::stoul(r["id"].get<std::string>().substr(1));
        again.emplace_back(pending[i].first, pending[i].second + 1);
      }
      pending = std::move(again);
    }
    FAIL("the job queue never drained");
  }
  void release_alerts() {
    hold_alerts = false;
    for (json& b : held_alerts) mesh.queue_sent["MONITOR_JOBS"].push_back(std::move(b));
    held_alerts.clear();
    drain();
  }
  std::vector<std::string> events(const std::string& type) {
    std::vector<std::string> out;
    for (const json& e : mesh.queue_sent["EVENTS_QUEUE"]) {
      if (e["event_type"] == type) out.push_back(e["entity_ref"]);
    }
    return out;
  }
};

json site(json extra = json::object()) {
  json m{{"url", "https://site.example/"},
         {"mustContain", {"form#contact"}},
         {"alertChannels",
          {{"pagerduty", {{"routingKey", "R0UT1NGKEY0123"}}},
           {"slack", {{"webhookUrl", kSlackUrl}}}}}};
  for (auto it = extra.begin(); it != extra.end(); ++it) m[it.key()] = it.value();
  return m;
}

// The bakery's monitor "home" (site()) written through the API, or declared by its manifest.
void declare_home(Monitoring& t, bool by_manifest, bool enabled) {
  if (by_manifest) {
    json config{{"monitors", {site({{"id", "home"}, {"enabled", enabled}})}}};
    t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, config, "monitoring");
  } else {
    REQUIRE(t.put("home", site({{"enabled", enabled}})).status / 100 == 2);
  }
}

}  // namespace

TEST_CASE("monitoring api: PUT/GET/list/DELETE with the contract's fields and defaults") {
  Monitoring t;
  HttpReply r = t.put("home", json{{"url", "https://site.example/"}});
  REQUIRE(r.status == 201);
  json m = r.body_json();
  CHECK(m["id"] == "home");
  CHECK(m["method"] == "GET");
  CHECK(m["expectStatus"] == json::array({200}));
  CHECK(m["maxLatencyMs"] == 500);
  CHECK(m["timeoutMs"] == 10000);
  CHECK(m["enabled"] == true);
  CHECK(m["mustContain"] == json::array());
  CHECK(m["maintenance"] == json::array());

  json full = site(
      {{"method", "GET"},
       {"expectStatus", {200, 204}},
       {"maxLatencyMs", 800},
       {"timeoutMs", 5000},
       {"enabled", false},
       {"maintenance", {{{"start", "2026-01-01T00:00:00Z"}, {"end", "2026-01-01T02:00:00Z"}}}}});
  r = t.put("home", full);
  REQUIRE(r.status == 200);
  r = t.admin("GET", "/admin/monitors/home");
  REQUIRE(r.status == 200);
  m = r.body_json();
  CHECK(m["expectStatus"] == json::array({200, 204}));
  CHECK(m["maxLatencyMs"] == 800);
  CHECK(m["mustContain"] == json::array({"form#contact"}));
  CHECK(m["enabled"] == false);
  CHECK(m["alertChannels"]["pagerduty"]["routingKey"] == "R0UT1NGKEY0123");
  CHECK(m["alertChannels"]["slack"]["webhookUrl"] == kSlackUrl);
  CHECK(m["maintenance"][0]["end"] == "2026-01-01T02:00:00Z");

  REQUIRE(t.put("api", json{{"url", "https://site.example/api"}, {"method", "HEAD"}}).status ==
          201);
  r = t.admin("GET", "/admin/monitors");
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["monitors"].size() == 2);

  CHECK(t.admin("DELETE", "/admin/monitors/api").status == 200);
  CHECK(t.admin("GET", "/admin/monitors/api").status == 404);
  CHECK(t.admin("DELETE", "/admin/monitors/api").status == 404);
}

TEST_CASE("monitoring api: auth, and another tenant's monitor id is a 404") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  CHECK(t.mesh.request("monitoring", "GET", "/admin/monitors/home").status == 401);
  CHECK(t.put("home", site(), "bakery", kAutoAdmin).status == 401);
  auto other = t.admin_headers("auto-repair", kAutoAdmin);
  CHECK(t.mesh.request("monitoring", "GET", "/admin/monitors/home", other).status == 404);
  CHECK(t.mesh.request("monitoring", "DELETE", "/admin/monitors/home", other).status == 404);
  CHECK(t.mesh.request("monitoring", "GET", "/admin/monitors", other)
            .body_json()["monitors"]
            .empty());
  CHECK(t.overview("auto-repair", kAutoToken)["monitors"].empty());
  CHECK(t.mesh.request("monitoring", "GET", "/v1/monitors").status == 401);
  // The same id in the other tenant is its own monitor.
  CHECK(t.put("home", site(), "auto-repair", kAutoAdmin).status == 201);
  CHECK(t.admin("GET", "/admin/monitors/home").body_json()["url"] == "https://site.example/");
}

TEST_CASE("monitoring api: the per-tenant cap refuses a new monitor with 409, not an update") {
  Monitoring t;
  REQUIRE(t.put("first", site()).status == 201);
  // Fill the tenant up to the cap beside it (the rows the API would have written).
  auto& db = t.mesh.db("MONITORING_DB");
  for (std::size_t i = 1; i < ss::monitoring::kMaxMonitorsPerTenant; ++i) {
    json r = db.execute(
        "INSERT INTO monitors (tenant_id, monitor_id, spec_json, enabled, source, created_at, "
        "updated_at) SELECT tenant_id, ?1, spec_json, enabled, source, created_at, updated_at "
        "FROM monitors WHERE tenant_id = 'bakery' AND monitor_id = 'first'",
        json::array({"filler-" + std::to_string(i)}));
    REQUIRE_FALSE(r.contains("error"));
  }
  HttpReply refused = t.put("one-too-many", site());
  CHECK(refused.status == 409);
  CHECK(refused.body_json()["error"]["code"] == "conflict");
  CHECK(t.mesh
            .request("monitoring", "GET", "/admin/monitors/one-too-many",
                     t.admin_headers("bakery", kBakeryAdmin))
            .status == 404);
  CHECK(t.put("first", site()).status == 200);  // an existing one still updates
  CHECK(t.put("elsewhere", site(), "auto-repair", kAutoAdmin).status == 201);  // per tenant
}

TEST_CASE("monitoring api: validation names the field") {
  Monitoring t;
  struct Case {
    json body;
    const char* field;
  };
  std::vector<Case> cases{
      {json{{"method", "GET"}}, "url"},
      {json{{"url", "not a url"}}, "url"},
      {json{{"url", "ftp://site.example/"}}, "url"},
      {json{{"url", "http://127.1/"}}, "url"},
      {json{{"url", "http://[::1]/"}}, "url"},
      {json{{"url", "http://169.254.169.254/"}}, "url"},
      {json{{"url", "http://0x7f000001/"}}, "url"},
      {json{{"url", "http://user@10.0.0.1/"}}, "url"},
      {site({{"method", "POST"}}), "method"},
      {site({{"expectStatus", {200, 700}}}), "expectStatus"},
      {site({{"maxLatencyMs", 0}}), "maxLatencyMs"},
      {site({{"timeoutMs", 10}}), "timeoutMs"},
      {site({{"mustContain", {"form#contact", "a:hover"}}}), "mustContain[1]"},
      {site({{"mustContain", {"a, b"}}}), "mustContain[0]"},
      {site({{"enabled", "yes"}}), "enabled"},
      {site({{"alertChannels", {{"email", {}}}}}), "alertChannels.email"},
      {site({{"alertChannels", {{"slack", {{"webhookUrl", "http://10.0.0.1/hook"}}}}}}),
       "alertChannels.slack.webhookUrl"},
      {site({{"maintenance", {{{"start", "yesterday"}, {"end", "2026-01-01T00:00:00Z"}}}}}),
       "maintenance[0].start"},
      {site({{"maintenance",
              {{{"start", "2026-01-02T00:00:00Z"}, {"end", "2026-01-01T00:00:00Z"}}}}}),
       "maintenance[0].end"},
      // Misspelt fields are refused by name, not read as "no alerts" or the default.
      {site({{"alertChannel", {{"slack", {{"webhookUrl", kSlackUrl}}}}}}), "alertChannel"},
      {site({{"alertChannels", {{"slack", {{"webhookURL", kSlackUrl}}}}}}),
       "alertChannels.slack.webhookURL"},
      {site({{"maintenance", {{{"start", "2026-01-01T00:00:00Z"}, {"stop", "x"}}}}}),
       "maintenance[0].stop"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.body.dump());
    HttpReply r = t.put("x", c.body);
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["code"] == "invalid_request");
    CHECK(r.body_json()["error"]["field"] == c.field);
    // The contract's validation shape too: "fields" maps the field to what is wrong with it.
    CHECK(r.body_json()["error"]["fields"][c.field].is_string());
  }
  CHECK(t.put("bad id!", site()).status == 400);
  CHECK(t.admin("GET", "/admin/monitors").body_json()["monitors"].empty());
  // A redacted view's placeholders written back are named as such, not as malformed secrets.
  for (const json& channels : {json{{"pagerduty", {{"routingKey", "…0123"}}}},
                               json{{"pagerduty", {{"routingKey", "(hidden)"}}}},
                               json{{"slack", {{"webhookUrl", "(hidden)"}}}}}) {
    CAPTURE(channels.dump());
    HttpReply r = t.put("x", site({{"alertChannels", channels}}));
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["message"].get<std::string>().find("placeholder") !=
          std::string::npos);
  }
  // The admin view sent back as it was read is taken (its id, source and stamps pass).
  REQUIRE(t.put("x", site()).status == 201);
  json view = t.admin("GET", "/admin/monitors/x").body_json();
  view["maxLatencyMs"] = 5000;
  CHECK(t.put("x", view).status == 200);
  // A manifest's monitor with a misspelt field: refused by its place in the config.
  auto declared = t.mesh.request(
      "monitoring", "PUT", "/admin/tenants/bakery",
      {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
       {"Content-Type", "application/json"}},
      json{{"config", {{"monitors", {site({{"id", "home"}, {"mustContians", "form"}})}}}}}.dump());
  CHECK(declared.status == 400);
  CHECK(declared.body_json()["error"]["field"] == "monitors[0].mustContians");
}

TEST_CASE(
    "monitoring api: the manifest's monitors are created, updated and removed by provisioning") {
  Monitoring t;
  json config{
      {"monitors",
       {site({{"id", "home"}}), json{{"id", "menu"}, {"url", "https://site.example/menu"}}}}};
  t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, config, "monitoring");
  json list = t.admin("GET", "/admin/monitors").body_json()["monitors"];
  REQUIRE(list.size() == 2);
  CHECK(list[0]["source"] == "config");
  config["monitors"] = json::array({json{{"id", "home"}, {"url", "https://site.example/v2"}}});
  t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, config, "monitoring");
  list = t.admin("GET", "/admin/monitors").body_json()["monitors"];
  REQUIRE(list.size() == 1);
  CHECK(list[0]["url"] == "https://site.example/v2");
  // The operator's view of the tenant hides the channel secrets.
  config["monitors"] = json::array({site({{"id", "home"}})});
  t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, config, "monitoring");
  HttpReply r = t.mesh.request("monitoring", "GET", "/admin/tenants/bakery",
                               {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken}});
  CHECK(r.body.find("R0UT1NGKEY0123") == std::string::npos);
  CHECK(r.body.find("XXXX") == std::string::npos);
  // A bad monitor in the manifest refuses the push, naming it.
  json bad{{"monitors", {json{{"id", "x"}, {"url", "http://10.0.0.1/"}}}}};
  r = t.mesh.request("monitoring", "PUT", "/admin/tenants/bakery",
                     {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                      {"Content-Type", "application/json"}},
                     json{{"config", bad}}.dump());
  CHECK(r.status == 400);
  CHECK(r.body_json()["error"]["field"] == "monitors[0].url");
  CHECK(r.body_json()["error"]["fields"]["monitors[0].url"].is_string());
  CHECK_FALSE(r.body_json()["error"]["fields"].contains("url"));
}

TEST_CASE("monitoring probe: each failure reason reaches /v1/monitors") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  json m = t.monitor("home");
  CHECK(m["state"] == "unknown");
  // Never probed: the contract's shape all the same, every value null (docs/monitoring.md).
  CHECK(m["lastProbe"] == json{{"at", nullptr},
                               {"ok", nullptr},
                               {"status", nullptr},
                               {"latencyMs", nullptr},
                               {"reason", nullptr}});
  CHECK(m["uptime"] == json{{"24h", nullptr}, {"7d", nullptr}, {"30d", nullptr}});
  CHECK(m["latencyMs"] == json{{"p50", nullptr}, {"p95", nullptr}});
  CHECK(m["incident"].is_null());
  HttpReply page = t.mesh.request("monitoring", "GET", "/status/bakery");
  REQUIRE(page.status == 200);
  CHECK(page.body.find("Last check") == std::string::npos);  // no probe, no "Last check"

  t.tick();
  m = t.monitor("home");
  CHECK(m["state"] == "up");
  CHECK(m["url"] == "https://site.example/");
  CHECK(m["lastProbe"]["ok"] == true);
  CHECK(m["lastProbe"]["status"] == 200);
  CHECK(m["lastProbe"]["latencyMs"] == 40);
  CHECK(m["lastProbe"]["reason"].is_null());

  auto reason_after = [&](auto setup) {
    Monitoring f;
    REQUIRE(f.put("home", site()).status == 201);
    setup(f);
    f.tick();
    json p = f.monitor("home");
    CHECK(p["state"] == "down");
    CHECK(p["lastProbe"]["ok"] == false);
    return p["lastProbe"];
  };
  CHECK(reason_after([](Monitoring& f) { f.status = 503; })["reason"] == "status_mismatch");
  CHECK(reason_after([](Monitoring& f) { f.status = 503; })["status"] == 503);
  CHECK(reason_after([](Monitoring& f) { f.latency = 900; })["reason"] == "too_slow");
  CHECK(reason_after([](Monitoring& f) { f.matched = std::vector<std::string>{}; })["reason"] ==
        "selector_missing:form#contact");
  CHECK(reason_after([](Monitoring& f) { f.timeout = true; })["reason"] == "timeout");
  json net = reason_after([](Monitoring& f) { f.network_error = true; });
  CHECK(net["reason"] == "network_error");
  CHECK(net["status"].is_null());
  CHECK(reason_after([](Monitoring& f) {
          f.redirects["https://site.example/"] = "http://169.254.169.254/latest/meta-data/";
        })["reason"] == "ssrf_blocked");
}

TEST_CASE("monitoring probe: a selector's attribute names match in any case, as in HTML") {
  Monitoring t;
  std::vector<std::string> sent;
  t.mesh.fetch_stub = [&](const json& req) {
    if (const json* s = ss::find_field(req, "selectors")) {
      for (const json& one : *s) sent.push_back(one.get<std::string>());
    }
    return t.answer(req);
  };
  json body = site();
  body["mustContain"] = {"main FORM[DATA-ROLE=Send]", "form#contact"};
  REQUIRE(t.put("home", body).status == 201);
  // The host (lol-html) matches the names lower-cased, as they are in the parsed page.
  t.matched = std::vector<std::string>{"main FORM[data-role=Send]", "form#contact"};
  t.tick();
  CHECK(sent == std::vector<std::string>{"main FORM[data-role=Send]", "form#contact"});
  json m = t.monitor("home");
  CHECK(m["lastProbe"]["ok"] == true);
  CHECK(m["lastProbe"]["reason"].is_null());
  // A miss is still named as the tenant wrote it.
  t.matched = std::vector<std::string>{"form#contact"};
  t.tick();
  CHECK(t.monitor("home")["lastProbe"]["reason"] == "selector_missing:main FORM[DATA-ROLE=Send]");
}

TEST_CASE(
    "monitoring probe: a stored Slack webhook the guard now refuses stops neither the probe nor "
    "PagerDuty") {
  Monitoring t;
  t.mesh.set_env("monitoring", "ALLOW_LOCAL_OUTBOUND", "1");
  json channels{{"pagerduty", {{"routingKey", "R0UT1NGKEY0123"}}},
                {"slack", {{"webhookUrl", "http://127.0.0.1:9/hook"}}}};
  REQUIRE(t.put("home", site({{"alertChannels", channels}})).status == 201);
  // The deployment's guard is stricter now (local outbound off): the webhook is refused, the
  // monitored URL is not.
  t.mesh.set_env("monitoring", "ALLOW_LOCAL_OUTBOUND", "0");
  t.tick();
  CHECK(t.probed == std::vector<std::string>{"https://site.example/"});
  CHECK(t.monitor("home")["state"] == "up");
  t.status = 503;
  for (int i = 0; i < 3; ++i) t.tick();
  CHECK(t.monitor("home")["lastProbe"]["reason"] == "status_mismatch");
  CHECK(t.pagerduty.size() == 1);
  if (!t.pagerduty.empty()) CHECK(t.pagerduty[0]["event_action"] == "trigger");
  CHECK(t.slack.empty());
}

TEST_CASE("monitoring alerts: SLACK_API_URL sends a hooks.slack.com webhook to the local stub") {
  // As scripts/dev and the test mesh set it: hooks.slack.com stands in for the stub server, path
  // and query kept, and the guard judges the URL fetched (the stub's, loopback: local only).
  const char* hook = "https://hooks.slack.com/services/T0/B0/secret?thread=1";
  for (bool allow_local : {true, false}) {
    CAPTURE(allow_local);
    Monitoring t;
    t.mesh.set_env("monitoring", "SLACK_API_URL", "http://127.0.0.1:8799/slack");
    t.mesh.set_env("monitoring", "ALLOW_LOCAL_OUTBOUND", allow_local ? "1" : "0");
    std::vector<std::string> posted;
    auto origin = t.mesh.fetch_stub;
    t.mesh.fetch_stub = [&](const json& req) {
      std::string url = ss::string_or(req, "url", "");
      if (url.find("slack") == std::string::npos) return origin(req);
      posted.push_back(url);
      StubReply r;
      r.body = "ok";
      return r;
    };
    json channels{{"pagerduty", {{"routingKey", "R0UT1NGKEY0123"}}},
                  {"slack", {{"webhookUrl", hook}}}};
    REQUIRE(t.put("home", site({{"alertChannels", channels}})).status == 201);
    t.status = 503;
    for (int i = 0; i < 3; ++i) t.tick();
    CHECK(t.pagerduty.size() == 1);
    json alerts = t.admin("GET", "/admin/monitors/home/alerts").body_json()["alerts"];
    json slack;
    for (const json& a : alerts) {
      if (a["channel"] == "slack") slack = a;
    }
    REQUIRE(slack.is_object());
    if (allow_local) {
      CHECK(posted ==
            std::vector<std::string>{"http://127.0.0.1:8799/slack/services/T0/B0/secret?thread=1"});
      CHECK(slack["state"] == "sent");
    } else {
      // Local outbound off: the stub's loopback URL is refused, and hooks.slack.com is not tried.
      CHECK(posted.empty());
      CHECK(slack["state"] == "dead");
      CHECK(ss::string_or(slack, "lastError", "").find("refused") != std::string::npos);
    }
  }
  // Unset (production): the webhook goes as given.
  Monitoring t;
  std::vector<std::string> posted;
  auto origin = t.mesh.fetch_stub;
  t.mesh.fetch_stub = [&](const json& req) {
    std::string url = ss::string_or(req, "url", "");
    if (url.find("slack.com") == std::string::npos) return origin(req);
    posted.push_back(url);
    return StubReply{};
  };
  REQUIRE(t.put("home", site({{"alertChannels", {{"slack", {{"webhookUrl", hook}}}}}})).status ==
          201);
  t.status = 503;
  for (int i = 0; i < 3; ++i) t.tick();
  CHECK(posted == std::vector<std::string>{hook});
}

TEST_CASE("monitoring probe: redirects are followed hop by hop, at most 5") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.redirects["https://site.example/"] = "/next";
  t.redirects["https://site.example/next"] = "https://www.site.example/";
  t.tick();
  CHECK(t.monitor("home")["lastProbe"]["ok"] == true);
  CHECK(t.probed == std::vector<std::string>{"https://site.example/", "https://site.example/next",
                                             "https://www.site.example/"});
  // A redirect loop ends after 5 hops as a status mismatch (the 302 was not expected).
  t.redirects["https://www.site.example/"] = "https://site.example/";
  t.probed.clear();
  t.tick();
  CHECK(t.probed.size() == 6);
  CHECK(t.monitor("home")["lastProbe"]["reason"] == "status_mismatch");
  CHECK(t.monitor("home")["lastProbe"]["status"] == 302);
}

TEST_CASE("monitoring probe: timeoutMs is for the whole redirect walk") {
  // Two hops of 40 ms leave 20 of a 100 ms budget: the last hop gets those 20 (not 100 more), and
  // the probe is a timeout whose latency is the budget.
  Monitoring t;
  json spec = site();
  spec["timeoutMs"] = 100;
  REQUIRE(t.put("home", spec).status == 201);
  t.redirect_latency = 40;
  t.latency = 40;
  t.redirects["https://site.example/"] = "/a";
  t.redirects["https://site.example/a"] = "/b";
  t.tick();
  json probe = t.monitor("home")["lastProbe"];
  CHECK(probe["reason"] == "timeout");
  CHECK(probe["latencyMs"] == 100);
  CHECK(probe["status"].is_null());
  // A walk that spent the whole budget on its redirects starts no further hop.
  t.redirect_latency = 50;
  t.probed.clear();
  t.tick();
  CHECK(t.probed.size() == 2);
  CHECK(t.monitor("home")["lastProbe"]["reason"] == "timeout");
  CHECK(t.monitor("home")["lastProbe"]["latencyMs"] == 100);
  // Within the budget, the walk's latency is its hops' sum.
  t.redirect_latency = 10;
  t.tick();
  CHECK(t.monitor("home")["lastProbe"]["ok"] == true);
  CHECK(t.monitor("home")["lastProbe"]["latencyMs"] == 60);
}

TEST_CASE("monitoring incidents: 2 failures then a success open nothing") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 500;
  t.tick();
  t.tick();
  t.status = 200;
  t.tick();
  CHECK(t.monitor("home")["incident"].is_null());
  CHECK(t.pagerduty.empty());
  CHECK(t.slack.empty());
  CHECK(t.events("monitor.probe_failed").size() == 2);
  CHECK(t.events("monitor.incident_opened").empty());
}

TEST_CASE("monitoring incidents: 3 failures alert once in the real formats, a success resolves") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  t.tick();
  t.tick();
  CHECK(t.pagerduty.empty());
  t.tick();
  REQUIRE(t.pagerduty.size() == 1);
  REQUIRE(t.slack.size() == 1);
  json trigger = t.pagerduty[0];
  CHECK(trigger["routing_key"] == "R0UT1NGKEY0123");
  CHECK(trigger["event_action"] == "trigger");
  CHECK(trigger["dedup_key"].is_string());
  CHECK(trigger["payload"]["severity"] == "critical");
  CHECK(trigger["payload"]["source"] == "siteswarm-synthetic-monitoring");
  CHECK(trigger["payload"]["summary"].get<std::string>().find("status_mismatch") !=
        std::string::npos);
  CHECK(t.slack[0]["text"].get<std::string>().find("home") != std::string::npos);
  json m = t.monitor("home");
  CHECK(m["state"] == "down");
  REQUIRE(m["incident"].is_object());
  CHECK(m["incident"]["reason"] == "status_mismatch");
  CHECK(m["incident"]["resolvedAt"].is_null());
  CHECK(t.events("monitor.incident_opened") == std::vector<std::string>{"monitor:home"});

  t.tick();
  t.tick();  // still down: nothing more is sent
  CHECK(t.pagerduty.size() == 1);
  CHECK(t.slack.size() == 1);

  t.status = 200;
  t.tick();
  REQUIRE(t.pagerduty.size() == 2);
  REQUIRE(t.slack.size() == 2);
  CHECK(t.pagerduty[1]["event_action"] == "resolve");
  CHECK(t.pagerduty[1]["dedup_key"] == trigger["dedup_key"]);
  CHECK(t.pagerduty[1]["routing_key"] == "R0UT1NGKEY0123");
  m = t.monitor("home");
  CHECK(m["state"] == "up");
  CHECK(m["incident"].is_null());
  CHECK(t.events("monitor.incident_resolved") == std::vector<std::string>{"monitor:home"});
  t.tick();
  CHECK(t.pagerduty.size() == 2);

  // The next outage is a new incident with a new dedup_key.
  t.status = 500;
  t.tick();
  t.tick();
  t.tick();
  REQUIRE(t.pagerduty.size() == 3);
  CHECK(t.pagerduty[2]["dedup_key"] != trigger["dedup_key"]);
}

namespace {
// Three failed ticks: home's incident is open, one PagerDuty trigger and one Slack message out.
json open_incident(Monitoring& t) {
  t.status = 503;
  for (int i = 0; i < 3; ++i) t.tick();
  REQUIRE(t.pagerduty.size() == 1);
  REQUIRE(t.slack.size() == 1);
  REQUIRE(t.pagerduty[0]["event_action"] == "trigger");
  return t.pagerduty[0];
}
json incident_rows(Monitoring& t) {
  return t.mesh.db("MONITORING_DB").rows("SELECT incident_id, resolved_at FROM incidents");
}
}  // namespace

TEST_CASE("monitoring overview: the D1 reads of /v1/monitors do not grow with open incidents") {
  Monitoring t;
  auto d1_reads = [&] {
    t.overview();  // the tenant's row is cached after a first call: count a warm one
    int n = 0;
    t.mesh.fail_effect = [&n](const json& e) {
      if (e["kind"].get<std::string>().rfind("d1.", 0) == 0) ++n;
      return false;
    };
    json all = t.overview();
    t.mesh.fail_effect = nullptr;
    int down = 0;
    for (const json& m : all["monitors"]) down += m["incident"].is_object() ? 1 : 0;
    return std::pair{n, down};
  };
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  for (int i = 0; i < 3; ++i) t.tick();
  auto [one, one_down] = d1_reads();
  CHECK(one_down == 1);
  for (const char* id : {"menu", "order", "contact", "about"}) {
    json spec = site();
    spec["url"] = std::string("https://site.example/") + id;
    REQUIRE(t.put(id, spec).status == 201);
  }
  for (int i = 0; i < 3; ++i) t.tick();
  auto [five, five_down] = d1_reads();
  CHECK(five_down == 5);
  CHECK(five == one);  // one read of the incidents, not one per monitor that is down
}

TEST_CASE("monitoring probe: a tenant disabled after the tick's enqueue is not probed") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.tick();
  REQUIRE(t.probed.size() == 1);
  // The cron enqueues this tick's job, then the operator disables the tenant before it runs.
  t.mesh.now_ms += ss::monitoring::kTickMs;
  CHECK(t.mesh.message("monitoring", json{{"op", "scheduled"}, {"cron", "*/5 * * * *"}})["ok"] ==
        true);
  REQUIRE(t.mesh.queue_sent["MONITOR_JOBS"].size() == 1);
  auto op = std::map<std::string, std::string>{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken}};
  REQUIRE(t.mesh.request("monitoring", "DELETE", "/admin/tenants/bakery", op).status == 200);
  t.drain();
  CHECK(t.probed.size() == 1);
}

TEST_CASE("monitoring incidents: deleting a monitor that is down closes its incident") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  json trigger = open_incident(t);
  HttpReply r = t.admin("DELETE", "/admin/monitors/home");
  REQUIRE(r.status == 200);
  t.drain();
  // The page PagerDuty opened is closed, and Slack is told why.
  REQUIRE(t.pagerduty.size() == 2);
  CHECK(t.pagerduty[1] == json{{"routing_key", "R0UT1NGKEY0123"},
                               {"event_action", "resolve"},
                               {"dedup_key", trigger["dedup_key"]}});
  REQUIRE(t.slack.size() == 2);
  std::string text = t.slack[1]["text"];
  CHECK(text.find("no longer monitored (the monitor was deleted)") != std::string::npos);
  json rows = incident_rows(t);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["resolved_at"].is_string());
  CHECK(t.events("monitor.incident_resolved") == std::vector<std::string>{"monitor:home"});
  // Nothing more at later ticks, and a monitor made again under the id starts afresh.
  t.tick();
  CHECK(t.pagerduty.size() == 2);
  REQUIRE(t.put("home", site()).status == 201);
  t.tick();
  t.tick();
  CHECK(t.pagerduty.size() == 2);
  t.tick();
  REQUIRE(t.pagerduty.size() == 3);
  CHECK(t.pagerduty[2]["event_action"] == "trigger");
  CHECK(t.pagerduty[2]["dedup_key"] != trigger["dedup_key"]);
}

TEST_CASE(
    "monitoring incidents: a monitor made again under a deleted one's id shows none of its "
    "incidents") {
  // Deleted by the API or by a manifest that no longer declares it, then declared again: the old
  // monitor's incident is not on the new one's status page, overview or alert list.
  for (bool by_manifest : {false, true}) {
    CAPTURE(by_manifest);
    Monitoring t;
    declare_home(t, by_manifest, true);
    json trigger = open_incident(t);
    if (by_manifest) {
      t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, json{{"monitors", json::array()}},
                       "monitoring");
    } else {
      REQUIRE(t.admin("DELETE", "/admin/monitors/home").status == 200);
    }
    t.drain();
    REQUIRE(t.pagerduty.size() == 2);  // the old incident is closed and its page resolved
    CHECK(t.pagerduty[1]["event_action"] == "resolve");
    declare_home(t, by_manifest, true);
    auto page = [&] {
      HttpReply r = t.mesh.request("monitoring", "GET", "/status/bakery.json");
      REQUIRE(r.status == 200);
      return r.body_json();
    };
    auto alerts = [&] {
      return t.admin("GET", "/admin/monitors/home/alerts").body_json()["alerts"];
    };
    CHECK(page()["incidents"] == json::array());
    CHECK(t.monitor("home")["incident"].is_null());
    CHECK(alerts() == json::array());
    HttpReply html = t.mesh.request("monitoring", "GET", "/status/bakery");
    CHECK(html.body.find("No incidents in the last 90 days.") != std::string::npos);
    // Probed up: its figures are its own (no failure of the old monitor's).
    t.status = 200;
    t.tick();
    json m = page()["monitors"][0];
    CHECK(m["state"] == "up");
    CHECK(m["uptime"]["24h"] == 100.0);
    CHECK(m["uptime"]["90d"] == 100.0);
    CHECK(page()["incidents"] == json::array());
    // Its own outage is its own incident, the only one shown.
    t.status = 503;
    for (int i = 0; i < 3; ++i) t.tick();
    REQUIRE(t.pagerduty.size() == 3);
    CHECK(t.pagerduty[2]["dedup_key"] != trigger["dedup_key"]);
    json incidents = page()["incidents"];
    REQUIRE(incidents.size() == 1);
    CHECK(incidents[0]["id"] == t.monitor("home")["incident"]["id"]);
    CHECK(incidents[0]["resolvedAt"].is_null());
    json mine = alerts();
    CHECK(mine.size() == 2);  // its PagerDuty trigger and its Slack message
    for (const json& a : mine) CHECK(a["incidentId"] == incidents[0]["id"]);
  }
}

TEST_CASE("monitoring incidents: disabling a monitor that is down closes its incident") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  json trigger = open_incident(t);
  REQUIRE(t.put("home", site({{"enabled", false}})).status == 200);
  t.drain();
  REQUIRE(t.pagerduty.size() == 2);
  CHECK(t.pagerduty[1]["event_action"] == "resolve");
  CHECK(t.pagerduty[1]["dedup_key"] == trigger["dedup_key"]);
  CHECK(t.slack[1]["text"].get<std::string>().find("disabled") != std::string::npos);
  json m = t.monitor("home");
  CHECK(m["state"] == "unknown");
  CHECK(m["incident"].is_null());
  // Enabled again while still down: a new outage is a new incident, paged again.
  REQUIRE(t.put("home", site()).status == 200);
  for (int i = 0; i < 3; ++i) t.tick();
  REQUIRE(t.pagerduty.size() == 3);
  CHECK(t.pagerduty[2]["event_action"] == "trigger");
  CHECK(t.pagerduty[2]["dedup_key"] != trigger["dedup_key"]);
}

TEST_CASE("monitoring incidents: the resolve goes where the trigger went, channels changed since") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  json trigger = open_incident(t);
  // While down, the routing key is replaced and Slack removed.
  REQUIRE(t.put("home", json{{"url", "https://site.example/"},
                             {"mustContain", {"form#contact"}},
                             {"alertChannels", {{"pagerduty", {{"routingKey", "NEWKEY000000"}}}}}})
              .status == 200);
  t.status = 200;
  t.tick();
  REQUIRE(t.pagerduty.size() == 2);
  CHECK(t.pagerduty[1]["routing_key"] == "R0UT1NGKEY0123");
  CHECK(t.pagerduty[1]["dedup_key"] == trigger["dedup_key"]);
  REQUIRE(t.slack.size() == 2);
  CHECK(t.slack[1]["text"].get<std::string>().find("back up") != std::string::npos);
  // The next incident pages the new key only.
  t.status = 503;
  for (int i = 0; i < 3; ++i) t.tick();
  REQUIRE(t.pagerduty.size() == 3);
  CHECK(t.pagerduty[2]["routing_key"] == "NEWKEY000000");
  CHECK(t.slack.size() == 2);
}

TEST_CASE(
    "monitoring incidents: a manifest that drops a monitor that is down closes its incident") {
  Monitoring t;
  json config{{"monitors", {site({{"id", "home"}})}}};
  t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, config, "monitoring");
  json trigger = open_incident(t);
  config["monitors"] = json::array();
  t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, config, "monitoring");
  t.drain();
  REQUIRE(t.pagerduty.size() == 2);
  CHECK(t.pagerduty[1]["event_action"] == "resolve");
  CHECK(t.pagerduty[1]["dedup_key"] == trigger["dedup_key"]);
  CHECK(incident_rows(t)[0]["resolved_at"].is_string());
}

TEST_CASE("monitoring incidents: the cron closes what a failed close left open") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  json trigger = open_incident(t);
  // The close right after the delete fails (D1 went away for its read); the delete stands.
  t.mesh.fail_effect = [](const json& e) {
    return ss::string_or(e, "sql", "").find("closure") != std::string::npos;
  };
  REQUIRE(t.admin("DELETE", "/admin/monitors/home").status == 200);
  t.drain();
  CHECK(t.pagerduty.size() == 1);
  CHECK(incident_rows(t)[0]["resolved_at"].is_null());
  t.mesh.fail_effect = nullptr;
  t.tick();
  REQUIRE(t.pagerduty.size() == 2);
  CHECK(t.pagerduty[1]["event_action"] == "resolve");
  CHECK(t.pagerduty[1]["dedup_key"] == trigger["dedup_key"]);
  CHECK(incident_rows(t)[0]["resolved_at"].is_string());
}

TEST_CASE("monitoring incidents: a probe running while its incident is closed does not reopen it") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  json trigger = open_incident(t);
  // While the next probe fetches, a sweep closes the incident (the monitor was disabled and enabled
  // again meanwhile, say): what that probe then writes must not bring the closed incident back.
  bool closed = false;
  auto origin = t.mesh.fetch_stub;
  t.mesh.fetch_stub = [&](const json& req) {
    if (!closed && ss::string_or(req, "url", "").find("site.example") != std::string::npos) {
      closed = true;
      auto& db = t.mesh.db("MONITORING_DB");
      db.execute("UPDATE incidents SET resolved_at = '2025-11-29T15:00:00Z'", json::array());
      db.execute("UPDATE monitors SET incident_id = NULL, consecutive_failures = 0", json::array());
    }
    return origin(req);
  };
  t.tick();  // still down
  REQUIRE(closed);
  json state = t.mesh.db("MONITORING_DB").rows("SELECT incident_id FROM monitors");
  CHECK(state[0]["incident_id"].is_null());
  // So the outage that goes on is a new incident, paged with a new dedup_key once it has failed
  // three times since (the count was cleared with the incident).
  t.tick();
  t.tick();
  CHECK(t.pagerduty.size() == 1);
  t.tick();
  REQUIRE(t.pagerduty.size() == 2);
  CHECK(t.pagerduty[1]["event_action"] == "trigger");
  CHECK(t.pagerduty[1]["dedup_key"] != trigger["dedup_key"]);
}

TEST_CASE("monitoring alerts: no resolve for a trigger that never went out") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  t.alert_failures = 1000;  // PagerDuty and Slack down: both triggers give up (dead)
  for (int i = 0; i < 3; ++i) t.tick();
  t.alert_failures = 0;
  t.status = 200;
  t.tick();
  // Nobody heard of the incident: nobody is told it is over.
  CHECK(t.pagerduty.empty());
  CHECK(t.slack.empty());
  CHECK(t.monitor("home")["incident"].is_null());
  CHECK(t.events("monitor.incident_resolved").size() == 1);
}

TEST_CASE("monitoring alerts: no resolve for a trigger still waiting when its incident resolves") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  t.tick();
  t.tick();
  // The third failure opens the incident, but its triggers wait (an endpoint that failed once and
  // retries after its backoff, or a message the queue lost, re-enqueued by the cron later).
  t.hold_alerts = true;
  t.tick();
  REQUIRE(t.held_alerts.size() == 2);
  CHECK(t.pagerduty.empty());
  // The site recovers before they go out: the resolves are delivered first.
  t.hold_alerts = false;
  t.status = 200;
  t.tick();
  // The triggers come last: their incident is over, so they are given up.
  t.release_alerts();
  // Nobody was told of the incident, so nobody is told it is over (no PagerDuty resolve of a page
  // that was never opened, no "back up" in Slack without a "down").
  CHECK(t.pagerduty.empty());
  CHECK(t.slack.empty());
  json alerts = t.admin("GET", "/admin/monitors/home/alerts").body_json()["alerts"];
  REQUIRE(alerts.size() == 4);
  for (const json& a : alerts) {
    CHECK(a["state"] == "dead");
    for (const char* key :
         {"createdAt", "updatedAt"}) {  // to the second, as the contract writes times
      const std::string shown = a[key].get<std::string>();
      CHECK_MESSAGE(shown.size() == 20, key, ": ", shown);
      CHECK(shown.back() == 'Z');
    }
  }
}

TEST_CASE("monitoring alerts: an endpoint down then up gets each alert exactly once") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  t.tick();
  t.tick();
  t.alert_failures = 3;  // the first three alert requests fail
  t.tick();
  CHECK(t.pagerduty.size() == 1);
  CHECK(t.slack.size() == 1);
  json alerts = t.admin("GET", "/admin/monitors/home/alerts").body_json()["alerts"];
  REQUIRE(alerts.size() == 2);
  for (const json& a : alerts) CHECK(a["state"] == "sent");
  CHECK(alerts.dump().find("R0UT1NGKEY0123") == std::string::npos);  // no secret in the view
  // Redelivering an alert job that was already sent sends nothing.
  for (const json& a : alerts) {
    t.mesh.queue_sent["MONITOR_JOBS"].push_back(json{{"type", "alert"}, {"alertId", a["id"]}});
  }
  t.drain();
  CHECK(t.pagerduty.size() == 1);
  CHECK(t.slack.size() == 1);
}

TEST_CASE("monitoring alerts: an endpoint that stays down leaves the alert visibly dead") {
  Monitoring t;
  REQUIRE(t.put("home", json{{"url", "https://site.example/"},
                             {"alertChannels", {{"slack", {{"webhookUrl", kSlackUrl}}}}}})
              .status == 201);
  t.status = 503;
  t.alert_failures = 1000;
  t.tick();
  t.tick();
  t.tick();
  json alerts = t.admin("GET", "/admin/monitors/home/alerts").body_json()["alerts"];
  REQUIRE(alerts.size() == 1);
  CHECK(alerts[0]["state"] == "dead");
  CHECK(alerts[0]["attempts"] == ss::monitoring::kMaxAlertAttempts);
  CHECK(alerts[0]["lastError"] == "HTTP 500");
  CHECK(t.slack.empty());
}

TEST_CASE("monitoring alerts: a maintenance window records probes and alerts nothing") {
  Monitoring t;
  // The mesh clock starts at 2025-11-29T14:20:00Z; the window covers the next hour.
  json windows =
      json::array({json{{"start", "2025-11-29T14:00:00Z"}, {"end", "2025-11-29T15:00:00Z"}}});
  // Sent under the contract's words ("maintenanceWindows"), answered under both names.
  HttpReply saved = t.put("home", site({{"maintenanceWindows", windows}}));
  REQUIRE(saved.status == 201);
  CHECK(saved.body_json()["maintenance"] == windows);
  CHECK(saved.body_json()["maintenanceWindows"] == windows);
  // The answer sent back as it came (both names, agreeing) is accepted; two that differ are not.
  json echoed = saved.body_json();
  for (const char* key : {"id", "source", "createdAt", "updatedAt", "tenantId"}) echoed.erase(key);
  CHECK(t.put("home", echoed).status == 200);
  HttpReply bad =
      t.put("other", site({{"maintenanceWindows", json::array({json{{"start", "x"}}})}}));
  CHECK(bad.status == 400);
  CHECK(bad.body_json()["error"]["field"] == "maintenanceWindows[0].start");
  HttpReply differ =
      t.put("other", site({{"maintenance", windows}, {"maintenanceWindows", json::array()}}));
  CHECK(differ.status == 400);
  CHECK(differ.body_json()["error"]["field"] == "maintenanceWindows");
  // The same instants written with other offsets agree; one second apart they do not.
  json shifted = json::array(
      {json{{"start", "2025-11-29T15:00:00+01:00"}, {"end", "2025-11-29T10:00:00-05:00"}}});
  CHECK(t.put("home", site({{"maintenance", windows}, {"maintenanceWindows", shifted}})).status ==
        200);
  shifted[0]["end"] = "2025-11-29T10:00:01-05:00";
  CHECK(t.put("other", site({{"maintenance", windows}, {"maintenanceWindows", shifted}})).status ==
        400);
  t.status = 503;
  for (int i = 0; i < 5; ++i) t.tick();
  CHECK(t.pagerduty.empty());
  CHECK(t.slack.empty());
  json m = t.monitor("home");
  CHECK(m["incident"].is_null());
  CHECK(m["state"] == "down");
  CHECK(m["lastProbe"]["reason"] == "status_mismatch");
  CHECK(t.events("monitor.probe_failed").size() == 5);
  // Failures in the window do not count against uptime.
  CHECK(m["uptime"]["24h"] == 100.0);
  // The public status page says it is planned work (the windows themselves stay private).
  HttpReply page = t.mesh.request("monitoring", "GET", "/status/bakery");
  REQUIRE(page.status == 200);
  CHECK(page.body.find("Planned maintenance in progress") != std::string::npos);
  CHECK(page.body.find("Down — planned maintenance") != std::string::npos);
  CHECK(page.body.find("Some systems are down") == std::string::npos);
  json listed = t.mesh.request("monitoring", "GET", "/status/bakery.json").body_json();
  CHECK(listed["monitors"][0]["maintenance"] == true);
  CHECK(listed.dump().find("2025-11-29T14:00:00Z") == std::string::npos);
  CHECK(listed.dump().find("2025-11-29T15:00:00Z") == std::string::npos);
  CHECK_FALSE(m.contains("maintenance"));  // GET /v1/monitors keeps the contract's shape
}

TEST_CASE("monitoring status page: an outage that began before a window is not planned work") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  for (int i = 0; i < 3; ++i) t.tick();
  REQUIRE_FALSE(t.monitor("home")["incident"].is_null());
  // A window opened now, the site still down: the incident stays open, and the page says so.
  json windows = json::array({json{{"start", ss::format_rfc3339(t.mesh.now_ms - 60 * 1000)},
                                   {"end", ss::format_rfc3339(t.mesh.now_ms + 3600 * 1000)}}});
  REQUIRE(t.put("home", site({{"maintenance", windows}})).status == 200);
  t.tick();
  HttpReply page = t.mesh.request("monitoring", "GET", "/status/bakery");
  REQUIRE(page.status == 200);
  CHECK(page.body.find("Some systems are down") != std::string::npos);
  CHECK(page.body.find("planned maintenance") == std::string::npos);
  CHECK(t.mesh.request("monitoring", "GET", "/status/bakery.json")
            .body_json()["monitors"][0]["maintenance"] == false);
}

TEST_CASE("monitoring alerts: a window begins at its start, not before") {
  // A window an hour ahead; the third failure is judged 1 ms before its start, or right at it.
  auto third_failure_at = [](std::int64_t offset_ms) {
    auto t = std::make_unique<Monitoring>();
    const std::int64_t start_ms = t->mesh.now_ms + 60 * 60 * 1000;
    json windows = json::array({json{{"start", ss::format_rfc3339(start_ms)},
                                     {"end", ss::format_rfc3339(start_ms + 60 * 60 * 1000)}}});
    REQUIRE(t->put("home", site({{"maintenance", windows}})).status == 201);
    t->status = 503;
    t->latency = 0;  // the probe takes no time: it is judged at its tick's time
    for (std::int64_t i = 2; i >= 0; --i) {
      // tick() moves the clock on by kTickMs first: ticks at start + offset - 2, 1 and 0 ticks.
      t->mesh.now_ms = start_ms + offset_ms - (i + 1) * ss::monitoring::kTickMs;
      t->tick();
    }
    return t;
  };
  SUBCASE("at start_ms - 1 it has not begun: the incident opens and both channels alert") {
    auto t = third_failure_at(-1);
    std::vector<std::string> paged;
    for (const json& e : t->pagerduty) paged.push_back(ss::string_or(e, "event_action", ""));
    CHECK(paged == std::vector<std::string>{"trigger"});
    CHECK(t->slack.size() == 1);
    CHECK(t->events("monitor.incident_opened").size() == 1);
    json m = t->monitor("home");
    CHECK(m["state"] == "down");
    CHECK(m["incident"]["reason"] == "status_mismatch");
  }
  SUBCASE("at start_ms it has begun: no incident, no alert") {
    auto t = third_failure_at(0);
    CHECK(t->events("monitor.probe_failed").size() == 3);
    CHECK(t->pagerduty.empty());
    CHECK(t->slack.empty());
    CHECK(t->events("monitor.incident_opened").empty());
    json m = t->monitor("home");
    CHECK(m["state"] == "down");
    CHECK(m["incident"].is_null());
  }
}

TEST_CASE(
    "monitoring alerts: a trigger judged before its incident resolved does not go out after") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  t.hold_alerts = true;
  for (int i = 0; i < 3; ++i) t.tick();
  REQUIRE(t.held_alerts.size() == 2);  // the PagerDuty and Slack triggers, waiting
  // Between a trigger job's check of its incident and its claim, the site recovers and the incident
  // is resolved (the resolve jobs, finding the triggers still pending, give themselves up).
  bool resolved = false;
  t.mesh.fail_effect = [&](const json& e) {
    if (!resolved && e.value("sql", "").find("SET state = 'sending'") != std::string::npos) {
      resolved = true;
      t.mesh.db("MONITORING_DB")
          .execute("UPDATE incidents SET resolved_at = '2026-01-01T00:00:00Z'", json::array());
    }
    return false;
  };
  t.release_alerts();
  t.mesh.fail_effect = nullptr;
  CHECK(resolved);
  CHECK(t.pagerduty.empty());
  CHECK(t.slack.empty());
  json triggers =
      t.mesh.db("MONITORING_DB").rows("SELECT state FROM alerts WHERE action = 'trigger'");
  REQUIRE(triggers.size() == 2);
  for (const json& a : triggers) CHECK(a["state"] == "dead");
}

TEST_CASE("monitoring alerts: an incident that recovers inside a window resolves after it") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  for (int i = 0; i < 3; ++i) t.tick();
  REQUIRE(t.pagerduty.size() == 1);
  REQUIRE(t.slack.size() == 1);
  REQUIRE(t.events("monitor.incident_opened").size() == 1);
  // Planned work from now on for half an hour; the site comes back inside it.
  const std::int64_t end_ms = t.mesh.now_ms + 30 * 60 * 1000;
  json windows = json::array({json{{"start", ss::format_rfc3339(t.mesh.now_ms - 60 * 1000)},
                                   {"end", ss::format_rfc3339(end_ms)}}});
  REQUIRE(t.put("home", site({{"maintenance", windows}})).status == 200);
  t.status = 200;
  t.tick();
  t.tick();
  // No alert fires in the window, a resolve included; the incident stays open meanwhile.
  CHECK(t.pagerduty.size() == 1);
  CHECK(t.slack.size() == 1);
  json during = t.monitor("home");
  CHECK(during["state"] == "up");
  CHECK_FALSE(during["incident"].is_null());
  CHECK(t.events("monitor.incident_resolved").empty());
  // The first success after the window resolves it and sends the resolve.
  t.mesh.now_ms = end_ms;
  t.tick();
  REQUIRE(t.pagerduty.size() == 2);
  CHECK(t.pagerduty[1]["event_action"] == "resolve");
  CHECK(t.pagerduty[1]["dedup_key"] == t.pagerduty[0]["dedup_key"]);
  CHECK(t.slack.size() == 2);
  CHECK(t.monitor("home")["incident"].is_null());
  CHECK(t.events("monitor.incident_resolved").size() == 1);
}

TEST_CASE("monitoring probe: each monitor is probed once per tick, however often the jobs come") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  REQUIRE(t.put("menu", json{{"url", "https://site.example/menu"}}).status == 201);
  REQUIRE(t.put("off", json{{"url", "https://site.example/off"}, {"enabled", false}}).status ==
          201);
  t.mesh.now_ms += ss::monitoring::kTickMs;
  t.mesh.message("monitoring", json{{"op", "scheduled"}, {"cron", "*/5 * * * *"}});
  // A second cron run for the same tick, and every job delivered twice.
  t.mesh.message("monitoring", json{{"op", "scheduled"}, {"cron", "*/5 * * * *"}});
  auto jobs = t.mesh.queue_sent["MONITOR_JOBS"];
  CHECK(jobs.size() == 2);
  for (const json& j : jobs) t.mesh.queue_sent["MONITOR_JOBS"].push_back(j);
  t.drain();
  CHECK(t.probed.size() == 2);
  // A probe still holding its claim (lease not run out) is not started again at the next tick.
  t.mesh.db("MONITORING_DB")
      .execute("UPDATE monitors SET probing_until = ?1 WHERE monitor_id = 'home'",
               json::array({t.mesh.now_ms + 10 * 60 * 1000}));
  t.probed.clear();
  t.tick();
  CHECK(t.probed == std::vector<std::string>{"https://site.example/menu"});
}

TEST_CASE("monitoring cron: every firing probes, one firing delivered twice probes once") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  auto fire = [&](std::int64_t at_ms) {
    t.mesh.now_ms = at_ms;
    json out = t.mesh.message("monitoring", json{{"op", "scheduled"}, {"cron", "*/5 * * * *"}});
    CHECK(out["ok"] == true);
    t.drain();
  };
  // Three firings within one five-minute window (an operator's manual triggers): three probes,
  // three consecutive failures, so the incident opens and alerts fire once.
  std::int64_t at = t.mesh.now_ms;
  fire(at);
  fire(at);  // a second firing at the same instant: no second probe
  CHECK(t.probed.size() == 1);
  fire(at + 1000);
  fire(at + 2000);
  CHECK(t.probed.size() == 3);
  json m = t.monitor("home");
  CHECK(m["state"] == "down");
  CHECK(m["incident"].is_object());
  CHECK(t.pagerduty.size() == 1);
  // The host names the firing (its scheduledTime): the same firing delivered again, later, does not
  // probe again; the next firing does.
  t.probed.clear();
  auto deliver = [&](std::int64_t scheduled_ms) {
    t.mesh.now_ms += 1000;
    t.mesh.message(
        "monitoring",
        json{{"op", "scheduled"}, {"cron", "*/5 * * * *"}, {"scheduledTime", scheduled_ms}});
    t.drain();
  };
  deliver(at + 300'000);
  deliver(at + 300'000);
  CHECK(t.probed.size() == 1);
  deliver(at + 600'000);
  CHECK(t.probed.size() == 2);
}

TEST_CASE("monitoring history: uptime and latency over a seeded history") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  auto& db = t.mesh.db("MONITORING_DB");
  std::int64_t now = t.mesh.now_ms;
  // Last 24 h: 100 probes, 4 failures, latencies 1..100 ms.
  for (int i = 0; i < 100; ++i) {
    db.execute(
        "INSERT INTO probes (tenant_id, monitor_id, at_ms, ok, status, latency_ms, reason, "
        "maintenance) VALUES ('bakery', 'home', ?1, ?2, 200, ?3, NULL, 0)",
        json::array({now - 3600000 - i * 60000, i < 4 ? 0 : 1, i + 1}));
  }
  // An old probe outside the 24 h window.
  db.execute(
      "INSERT INTO probes (tenant_id, monitor_id, at_ms, ok, status, latency_ms, reason, "
      "maintenance) VALUES ('bakery', 'home', ?1, 0, 500, 5000, 'status_mismatch', 0)",
      json::array({now - 2 * 86400000LL}));
  // Daily rollups: today 1000/10, 3 days ago 1000/0, 20 days ago 1000/990 (outside 7 d).
  const char* kHist = "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]";
  db.execute("INSERT INTO probe_days VALUES ('bakery', 'home', '2025-11-29', 1000, 10, ?1)",
             json::array({kHist}));
  db.execute("INSERT INTO probe_days VALUES ('bakery', 'home', '2025-11-26', 1000, 0, ?1)",
             json::array({kHist}));
  db.execute("INSERT INTO probe_days VALUES ('bakery', 'home', '2025-11-09', 1000, 990, ?1)",
             json::array({kHist}));
  db.execute("INSERT INTO probe_days VALUES ('bakery', 'home', '2025-10-01', 1000, 1000, ?1)",
             json::array({kHist}));
  json m = t.monitor("home");
  CHECK(m["uptime"]["24h"] == 96.0);
  CHECK(m["uptime"]["7d"] == 99.5);
  CHECK(m["uptime"]["30d"] == doctest::Approx(66.667));
  CHECK(m["latencyMs"]["p50"] == 50);
  CHECK(m["latencyMs"]["p95"] == 95);
  // Probes that got no answer (a refused connection: 0 ms; a timeout: its limit) count against
  // uptime but have no latency to rank: 60 of them leave p50/p95 where the answers put them.
  for (int i = 0; i < 60; ++i) {
    db.execute(
        "INSERT INTO probes (tenant_id, monitor_id, at_ms, ok, status, latency_ms, reason, "
        "maintenance) VALUES ('bakery', 'home', ?1, 0, NULL, ?2, ?3, 0)",
        json::array({now - 7200000 - i * 1000, i % 2 == 0 ? 0 : 10000,
                     i % 2 == 0 ? "network_error" : "timeout"}));
  }
  json after = t.monitor("home");
  CHECK(after["latencyMs"]["p50"] == 50);
  CHECK(after["latencyMs"]["p95"] == 95);
  CHECK(after["uptime"]["24h"] == doctest::Approx(60.0));  // 96 of 160
  // Another tenant sees none of it.
  REQUIRE(t.put("home", site(), "auto-repair", kAutoAdmin).status == 201);
  json other = t.overview("auto-repair", kAutoToken)["monitors"][0];
  CHECK(other["uptime"]["24h"].is_null());
  CHECK(other["latencyMs"]["p50"].is_null());
}

TEST_CASE("monitoring history: the cron prunes raw probes and old rollups") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  auto& db = t.mesh.db("MONITORING_DB");
  std::int64_t now = t.mesh.now_ms;
  db.execute(
      "INSERT INTO probes (tenant_id, monitor_id, at_ms, ok, maintenance) VALUES "
      "('bakery', 'home', ?1, 1, 0), ('bakery', 'home', ?2, 1, 0)",
      json::array({now - 8 * 86400000LL, now - 86400000LL}));
  db.execute(
      "INSERT INTO probe_days VALUES ('bakery', 'home', '2024-01-01', 1, 0, '[]'), "
      "('bakery', 'home', '2025-09-01', 1, 0, '[]')",
      json::array());
  t.tick();
  CHECK(db.rows("SELECT COUNT(*) AS n FROM probes")[0]["n"] == 2);  // one kept + the new probe
  CHECK(db.rows("SELECT day FROM probe_days ORDER BY day")[0]["day"] == "2025-09-01");
}

TEST_CASE("monitoring status page: HTML and JSON, public, escaped, cached") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.tick();
  HttpReply r = t.mesh.request("monitoring", "GET", "/status/bakery");
  REQUIRE(r.status == 200);
  CHECK(r.header("content-type").find("text/html") == 0);
  CHECK(r.header("cache-control") == "public, max-age=60");
  CHECK(r.body.find("<script") == std::string::npos);
  CHECK(r.body.find("viewport") != std::string::npos);
  CHECK(r.body.find("home") != std::string::npos);
  CHECK(r.body.find("Operational") != std::string::npos);
  // Each monitor is a heading; its bar's label says what the colours count, and a key says what
  // each colour means.
  CHECK(r.body.find("<h2 class=\"name\">home</h2>") != std::string::npos);
  CHECK(r.body.find(
            "aria-label=\"Uptime of the last 90 days, days by colour: 1 at 100%, 0 at 95% to under "
            "100%, 0 below 95%, 89 without data\"") != std::string::npos);
  CHECK(r.body.find("<i class=\"warn\"></i>95% to under 100%") != std::string::npos);

  HttpReply j = t.mesh.request("monitoring", "GET", "/status/bakery.json");
  REQUIRE(j.status == 200);
  json s = j.body_json();
  CHECK(s["state"] == "up");
  REQUIRE(s["monitors"].size() == 1);
  CHECK(s["monitors"][0]["days"].size() == 90);
  CHECK(s["monitors"][0]["days"][89]["checks"] == 1);
  CHECK_FALSE(s["monitors"][0].contains("url"));  // the public page shows no URLs
  CHECK(j.body.find("R0UT1NGKEY0123") == std::string::npos);

  // Cached for 60 s: a change in D1 shows only once the cache time has passed.
  t.mesh.db("MONITORING_DB")
      .execute(
          "UPDATE monitors SET last_probe_json = json_set(last_probe_json, '$.ok', json('false'))",
          json::array());
  CHECK(t.mesh.request("monitoring", "GET", "/status/bakery.json").body_json()["state"] == "up");
  t.mesh.now_ms += 61 * 1000;
  CHECK(t.mesh.request("monitoring", "GET", "/status/bakery.json").body_json()["state"] == "down");
  CHECK(t.mesh.request("monitoring", "GET", "/status/unknown-tenant").status == 404);
  CHECK(t.mesh.request("monitoring", "GET", "/status/Bad..id").status == 404);
}

// The page is public: a spike of views must not read D1 per view. Its KV copy held the data, but
// the tenant's row was read from D1 on every view; it now comes from the instance's tenant cache.
TEST_CASE("monitoring status page: repeated views read nothing from D1") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.tick();
  int d1 = 0;
  t.mesh.observe_effects = [&](const json& effects) {
    for (const json& e : effects) {
      if (ss::string_or(e, "kind", "").rfind("d1.", 0) == 0) ++d1;
    }
  };
  REQUIRE(t.mesh.request("monitoring", "GET", "/status/bakery").status == 200);
  CHECK(d1 > 0);  // the first view builds the page
  d1 = 0;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(t.mesh.request("monitoring", "GET", "/status/bakery.json").status == 200);
    REQUIRE(t.mesh.request("monitoring", "GET", "/status/bakery").status == 200);
  }
  CHECK(d1 == 0);
  // A tenant disabled through this instance has no page at once; unknown ones never do.
  auto op = std::map<std::string, std::string>{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken}};
  REQUIRE(t.mesh.request("monitoring", "DELETE", "/admin/tenants/bakery", op).status == 200);
  CHECK(t.mesh.request("monitoring", "GET", "/status/bakery").status == 404);
  CHECK(t.mesh.request("monitoring", "GET", "/status/bakery.json").status == 404);
  CHECK(t.mesh.request("monitoring", "GET", "/status/nobody").status == 404);
}

// A disabled tenant's page is public too: once its (disabled) row is in the cache, further views
// answer 404 without reading D1 (they read the tenants table on every view before).
TEST_CASE("monitoring status page: repeated views of a disabled tenant read nothing from D1") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.tick();
  auto op = std::map<std::string, std::string>{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken}};
  REQUIRE(t.mesh.request("monitoring", "DELETE", "/admin/tenants/bakery", op).status == 200);
  int d1 = 0;
  t.mesh.observe_effects = [&](const json& effects) {
    for (const json& e : effects) {
      if (ss::string_or(e, "kind", "").rfind("d1.", 0) == 0) ++d1;
    }
  };
  REQUIRE(t.mesh.request("monitoring", "GET", "/status/bakery").status == 404);
  CHECK(d1 > 0);  // the first view reads the (disabled) row
  d1 = 0;
  for (int i = 0; i < 3; ++i) {
    CHECK(t.mesh.request("monitoring", "GET", "/status/bakery.json").status == 404);
    CHECK(t.mesh.request("monitoring", "GET", "/status/bakery").status == 404);
  }
  CHECK(d1 == 0);
}

TEST_CASE("monitoring status page: the incidents of monitors it does not show stay private") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  REQUIRE(t.put("internal-admin", json{{"url", "https://site.example/admin"}}).status == 201);
  REQUIRE(t.put("old-shop", json{{"url", "https://site.example/shop"}}).status == 201);
  t.status = 503;
  for (int i = 0; i < 3; ++i) t.tick();  // all three down, each with an incident
  t.status = 200;
  t.tick();  // and back up: three resolved incidents
  auto status = [&] {
    return t.mesh.request("monitoring", "GET", "/status/bakery.json").body_json();
  };
  REQUIRE(status()["incidents"].size() == 3);
  // One monitor disabled (the page no longer shows it), one deleted.
  json off = json{{"url", "https://site.example/admin"}, {"enabled", false}};
  REQUIRE(t.put("internal-admin", off).status == 200);
  REQUIRE(t.mesh.request("monitoring", "DELETE", "/admin/monitors/old-shop", t.admin_headers())
              .status == 200);
  json s = status();
  REQUIRE(s["monitors"].size() == 1);
  REQUIRE(s["incidents"].size() == 1);
  CHECK(s["incidents"][0]["monitorId"] == "home");
  HttpReply html = t.mesh.request("monitoring", "GET", "/status/bakery");
  CHECK(html.body.find("internal-admin") == std::string::npos);
  CHECK(html.body.find("old-shop") == std::string::npos);
}

TEST_CASE("monitoring status page: what the page shows changing clears the cache at once") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.tick();
  auto status = [&] {
    return t.mesh.request("monitoring", "GET", "/status/bakery.json").body_json();
  };
  CHECK(status()["state"] == "up");  // cached now
  // A probe that turns the monitor down (a firing a second later: well within the cache's 60 s)
  // shows on the next view, not a minute later.
  t.status = 503;
  t.mesh.now_ms += 1000;
  t.mesh.message("monitoring", json{{"op", "scheduled"}, {"cron", "*/5 * * * *"}});
  t.drain();
  REQUIRE(t.probed.size() == 2);
  CHECK(status()["state"] == "down");
  // Adding and removing monitors show at once.
  REQUIRE(t.put("menu", json{{"url", "https://site.example/menu"}}).status == 201);
  CHECK(status()["monitors"].size() == 2);
  REQUIRE(
      t.mesh.request("monitoring", "DELETE", "/admin/monitors/menu", t.admin_headers()).status ==
      200);
  CHECK(status()["monitors"].size() == 1);
}

TEST_CASE(
    "monitoring overview: GET /v1/monitors takes the tenant token or the tenant admin token") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  HttpReply admin = t.mesh.request("monitoring", "GET", "/v1/monitors", t.admin_headers());
  REQUIRE(admin.status == 200);
  CHECK(admin.body_json()["monitors"].size() == 1);
  auto wrong = t.admin_headers();
  wrong["Authorization"] = "Bearer not-the-admin-token-0000";
  CHECK(t.mesh.request("monitoring", "GET", "/v1/monitors", wrong).status == 401);
  auto other = t.admin_headers();
  other["X-SiteSwarm-Tenant-Id"] = "auto-repair";
  CHECK(t.mesh.request("monitoring", "GET", "/v1/monitors", other).status == 401);
}

TEST_CASE("monitoring status page: every value is HTML-escaped") {
  json status{{"tenantId", "bakery"},
              {"state", "down"},
              {"generatedAt", "2026-01-01T00:00:00Z"},
              {"monitors",
               {{{"id", "<script>x</script>"},
                 {"state", "down\"><b>"},
                 {"lastProbe", {{"at", "t"}, {"reason", "selector_missing:a[x='<i>']"}}},
                 {"days", json::array()}}}},
              {"incidents", {{{"monitorId", "<img>"}, {"reason", "&"}, {"openedAt", "o"}}}}};
  std::string html = ss::monitoring::render_status_html(status);
  CHECK(html.find("<script>") == std::string::npos);
  CHECK(html.find("&lt;script&gt;x&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("<b>") == std::string::npos);
  CHECK(html.find("<img>") == std::string::npos);
  CHECK(html.find("a[x=&#39;&lt;i&gt;&#39;]") != std::string::npos);
}

TEST_CASE("monitoring service targets: a platform worker watched through its binding") {
  Monitoring m;
  m.mesh.set_env("monitoring", "MONITOR_SERVICES", "events,leads");
  auto field_of = [](const HttpReply& r) { return r.body_json()["error"]["field"]; };
  // Only bound services, only their public health routes, no selectors on JSON.
  auto unknown = m.put("x", {{"service", "billing"}});
  CHECK(unknown.status == 400);
  CHECK(field_of(unknown) == "service");
  auto admin_path = m.put("x", {{"service", "events"}, {"path", "/admin/consumers"}});
  CHECK(admin_path.status == 400);
  CHECK(field_of(admin_path) == "path");
  auto selectors = m.put("x", {{"service", "events"}, {"mustContain", {"div"}}});
  CHECK(selectors.status == 400);
  CHECK(field_of(selectors) == "mustContain");
  auto both = m.put("x", {{"service", "events"}, {"url", "https://site.example/"}});
  CHECK(both.status == 400);
  CHECK(field_of(both) == "url");

  json ledger{{"service", "events"},
              {"path", "/health/consumers"},
              {"alertChannels", {{"pagerduty", {{"routingKey", "R0UT1NGKEY0123"}}}}}};
  auto created = m.put("ledger", ledger);
  REQUIRE(created.status == 201);
  CHECK(created.body_json()["url"] == "service://events/health/consumers");
  CHECK(created.body_json()["service"] == "events");
  // A PUT of what GET shows is accepted as it is.
  json shown = m.admin("GET", "/admin/monitors/ledger").body_json();
  CHECK(m.put("ledger", shown).status == 200);

  m.tick();
  CHECK(m.monitor("ledger")["state"] == "up");
  CHECK(m.monitor("ledger")["lastProbe"]["status"] == 200);
  CHECK(m.probed.empty());  // through the binding, never the network

  // The ledger stalls (an event unread for over an hour): /health/consumers answers 503, and after
  // three probes the incident opens and pages once.
  m.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, json::object(), "events");
  auto h = Mesh::tenant_headers("bakery", kBakeryToken);
  h["Content-Type"] = "application/json";
  REQUIRE(m.mesh
              .request("events", "POST", "/api/events", h,
                       json{{"event_type", "order.placed"},
                            {"entity_ref", "order:1"},
                            {"payload", json::object()}}
                           .dump())
              .status == 201);
  m.mesh.now_ms += 2 * 60 * 60 * 1000;
  for (int i = 0; i < 3; ++i) m.tick();
  json down = m.monitor("ledger");
  CHECK(down["state"] == "down");
  CHECK(down["lastProbe"]["status"] == 503);
  CHECK(down["lastProbe"]["reason"] == "status_mismatch");
  CHECK(m.pagerduty.size() == 1);
  if (!m.pagerduty.empty()) CHECK(m.pagerduty[0]["event_action"] == "trigger");

  // A deployment that binds no services refuses service monitors.
  m.mesh.set_env("monitoring", "MONITOR_SERVICES", "");
  CHECK(field_of(m.put("other", {{"service", "events"}})) == "service");
}

TEST_CASE("monitoring incidents: failures from before a monitor was disabled do not count after") {
  // Two failures, then the monitor is disabled (no incident was open) and later enabled again: the
  // count starts afresh, so a single failure after that opens nothing and pages nobody.
  for (bool by_manifest : {false, true}) {
    CAPTURE(by_manifest);
    Monitoring t;
    auto declare = [&](bool enabled) { declare_home(t, by_manifest, enabled); };
    declare(true);
    t.status = 503;
    t.tick();
    t.tick();
    declare(false);
    t.tick();
    declare(true);
    t.tick();  // one failure since it was enabled again
    CHECK(t.monitor("home")["incident"].is_null());
    CHECK(t.pagerduty.empty());
    CHECK(t.slack.empty());
    CHECK(t.events("monitor.incident_opened").empty());
    // Three failures in a row since, and the incident opens.
    t.tick();
    t.tick();
    CHECK(t.pagerduty.size() == 1);
  }
}

TEST_CASE("monitoring: a monitor enabled again is unknown until it is probed again") {
  // Down when it was disabled; enabled again (by the API or the manifest), it is not shown down on the
  // strength of a probe from before, and its next probe decides.
  for (bool by_manifest : {false, true}) {
    CAPTURE(by_manifest);
    Monitoring t;
    auto declare = [&](bool enabled) { declare_home(t, by_manifest, enabled); };
    declare(true);
    t.status = 503;
    t.tick();
    REQUIRE(t.monitor("home")["state"] == "down");
    declare(false);
    declare(true);
    CHECK(t.monitor("home")["state"] == "unknown");
    CHECK(t.monitor("home")["lastProbe"]["at"].is_null());
    // Writing an enabled monitor again keeps what its probes said.
    t.tick();
    REQUIRE(t.monitor("home")["state"] == "down");
    declare(true);
    CHECK(t.monitor("home")["state"] == "down");
    t.status = 200;
    t.tick();
    CHECK(t.monitor("home")["state"] == "up");
  }
}

TEST_CASE("monitoring incidents: a monitor disabled or deleted while its probe runs is not paged") {
  // Two failures; the third probe is fetching when the monitor is disabled (or deleted, or deleted
  // and made again, or its tenant disabled): that probe must not open an incident and page for a
  // monitor nobody watches.
  for (std::string change : {"disable", "delete", "remake", "tenant"}) {
    CAPTURE(change);
    Monitoring t;
    REQUIRE(t.put("home", site()).status == 201);
    t.status = 503;
    t.tick();
    t.tick();
    bool changed = false;
    auto origin = t.mesh.fetch_stub;
    t.mesh.fetch_stub = [&](const json& req) {
      if (!changed && ss::string_or(req, "url", "").find("site.example") != std::string::npos) {
        changed = true;
        auto& db = t.mesh.db("MONITORING_DB");
        // What PUT {"enabled": false} / DELETE / DELETE then PUT write meanwhile.
        if (change == "disable") {
          db.execute("UPDATE monitors SET enabled = 0, consecutive_failures = 0", json::array());
        } else if (change == "tenant") {
          db.execute("UPDATE tenants SET enabled = 0", json::array());  // DELETE /admin/tenants/…
        } else {
          db.execute("DELETE FROM monitors", json::array());
        }
        if (change == "remake") {
          db.execute(
              "INSERT INTO monitors (tenant_id, monitor_id, spec_json, created_at, updated_at) "
              "VALUES ('bakery', 'home', ?1, 'x', 'x')",
              json::array({site().dump()}));
        }
      }
      return origin(req);
    };
    t.tick();
    REQUIRE(changed);
    t.mesh.fetch_stub = origin;
    t.tick();  // the cron's sweep finds nothing to close
    CHECK(t.pagerduty.empty());
    CHECK(t.slack.empty());
    CHECK(t.events("monitor.incident_opened").empty());
    CHECK(t.mesh.db("MONITORING_DB").rows("SELECT incident_id FROM incidents").empty());
  }
}

TEST_CASE("monitoring history: a monitor deleted while its probe runs leaves no history behind") {
  // The probe is fetching when the monitor is deleted (DELETE takes its history with it), or deleted
  // and made again under its id: the old monitor's probe must not write history for either.
  for (std::string change : {"delete", "remake"}) {
    CAPTURE(change);
    Monitoring t;
    REQUIRE(t.put("home", site()).status == 201);
    bool changed = false;
    auto origin = t.mesh.fetch_stub;
    t.mesh.fetch_stub = [&](const json& req) {
      if (!changed && ss::string_or(req, "url", "").find("site.example") != std::string::npos) {
        changed = true;
        REQUIRE(t.mesh.request("monitoring", "DELETE", "/admin/monitors/home", t.admin_headers())
                    .status == 200);
        if (change == "remake") REQUIRE(t.put("home", site()).status == 201);
      }
      return origin(req);
    };
    t.status = 503;
    t.tick();
    REQUIRE(changed);
    auto& db = t.mesh.db("MONITORING_DB");
    CHECK(db.rows("SELECT COUNT(*) AS n FROM probes")[0]["n"] == 0);
    CHECK(db.rows("SELECT COUNT(*) AS n FROM probe_days")[0]["n"] == 0);
    if (change == "remake") {
      json m = t.monitor("home");  // the new monitor: never probed, no failure on its record
      CHECK(m["uptime"]["24h"].is_null());
      CHECK(m["uptime"]["30d"].is_null());
    }
  }
}

TEST_CASE(
    "monitoring incidents: a monitor disabled while a probe resolves its incident pages again "
    "when it is enabled and fails") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  for (int i = 0; i < 3; ++i) t.tick();
  REQUIRE(t.events("monitor.incident_opened").size() == 1);
  // The site is back; while this probe fetches, the monitor is disabled (and its immediate close
  // does not happen: the probe's commit lands first).
  t.status = 200;
  bool changed = false;
  auto origin = t.mesh.fetch_stub;
  t.mesh.fetch_stub = [&](const json& req) {
    if (!changed && ss::string_or(req, "url", "").find("site.example") != std::string::npos) {
      changed = true;
      t.mesh.db("MONITORING_DB").execute("UPDATE monitors SET enabled = 0", json::array());
    }
    return origin(req);
  };
  t.tick();
  REQUIRE(changed);
  t.mesh.fetch_stub = origin;
  auto& db = t.mesh.db("MONITORING_DB");
  CHECK(db.rows("SELECT * FROM incidents WHERE resolved_at IS NULL").empty());
  CHECK(db.rows("SELECT incident_id FROM monitors")[0]["incident_id"].is_null());
  // Enabled again, and down again: three failures open a new incident and page.
  db.execute("UPDATE monitors SET enabled = 1", json::array());
  t.status = 503;
  for (int i = 0; i < 3; ++i) t.tick();
  CHECK(t.events("monitor.incident_opened").size() == 2);
  CHECK(db.rows("SELECT * FROM incidents WHERE resolved_at IS NULL").size() == 1);
}

TEST_CASE("monitoring history: a monitor the manifest drops takes its history with it") {
  // As DELETE /admin/monitors/{id} does: declared again later under the same id, the new monitor's
  // uptime and status bars do not start with the old one's failures.
  Monitoring t;
  json config{{"monitors", {site({{"id", "home"}})}}};
  t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, config, "monitoring");
  t.status = 503;
  t.tick();
  t.tick();
  CHECK(t.monitor("home")["uptime"]["24h"] == 0.0);
  t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, json{{"monitors", json::array()}},
                   "monitoring");
  auto& db = t.mesh.db("MONITORING_DB");
  CHECK(db.rows("SELECT COUNT(*) AS n FROM probes")[0]["n"] == 0);
  CHECK(db.rows("SELECT COUNT(*) AS n FROM probe_days")[0]["n"] == 0);
  t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, config, "monitoring");
  json m = t.monitor("home");
  CHECK(m["uptime"]["24h"].is_null());
  CHECK(m["uptime"]["7d"].is_null());
}

TEST_CASE("monitoring incidents: failures from before a tenant was disabled do not count after") {
  Monitoring t;
  REQUIRE(t.put("home", site()).status == 201);
  t.status = 503;
  t.tick();
  t.tick();
  auto op = std::map<std::string, std::string>{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken}};
  REQUIRE(t.mesh.request("monitoring", "DELETE", "/admin/tenants/bakery", op).status == 200);
  t.tick();
  t.tick();
  // Enabled again (a provisioning push) weeks later: one failure is one failure.
  t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, json::object(), "monitoring");
  t.tick();
  CHECK(t.monitor("home")["incident"].is_null());
  CHECK(t.pagerduty.empty());
  t.tick();
  t.tick();
  CHECK(t.pagerduty.size() == 1);
}

namespace {

// A monitor that pages Slack only.
json slack_only() {
  return json{{"url", "https://site.example/"},
              {"alertChannels", {{"slack", {{"webhookUrl", kSlackUrl}}}}}};
}

// One job delivered to the consumer on its own (a copy of a message, by hand); its outcome.
json deliver_job(Monitoring& t, const json& body) {
  json message{{"id", "copy"}, {"body", body}, {"attempts", 1}};
  return t.mesh.message("monitoring", json{{"op", "queue"},
                                           {"queue", "siteswarm-monitoring-jobs"},
                                           {"messages", json::array({message})}});
}

// The monitor down for three probes with its trigger's job held back: that job.
json held_trigger(Monitoring& t) {
  REQUIRE(t.put("home", slack_only()).status == 201);
  t.status = 503;
  t.tick();
  t.tick();
  t.hold_alerts = true;
  t.tick();
  REQUIRE(t.held_alerts.size() == 1);
  json trigger = t.held_alerts[0];
  t.held_alerts.clear();
  return trigger;
}

}  // namespace

// Two jobs of one trigger (a redelivery; the cron's re-enqueue of a job the queue was late with):
// one is sending it when the incident resolves and the other copy runs. That copy may not give the
// trigger up under its sender: the resolve would then find it "never sent" and give itself up too,
// leaving the page that did go out open for good.
TEST_CASE("monitoring alerts: a trigger's second job does not give it up while it is being sent") {
  Monitoring t;
  json trigger = held_trigger(t);
  bool fired = false;
  json resolve_out;
  auto endpoint = t.mesh.fetch_stub;
  t.mesh.fetch_stub = [&](const json& req) {
    if (!fired && ss::string_or(req, "url", "") == kSlackUrl) {
      fired = true;
      // While the trigger's POST is in flight: the site is back (a firing a second later), the
      // incident resolves and its resolve is made; then the trigger's other job runs, then the
      // resolve's.
      t.status = 200;
      t.mesh.now_ms += 1000;
      t.mesh.message("monitoring", json{{"op", "scheduled"}, {"cron", "*/5 * * * *"}});
      t.drain();
      REQUIRE(t.held_alerts.size() == 1);
      json resolve = t.held_alerts[0];
      t.held_alerts.clear();
      deliver_job(t, trigger);
      resolve_out = deliver_job(t, resolve);
      // A resolve asked to wait for its trigger comes back after the backoff.
      if (!resolve_out["retry"].empty()) t.mesh.queue_sent["MONITOR_JOBS"].push_back(resolve);
    }
    return endpoint(req);
  };
  deliver_job(t, trigger);
  REQUIRE(fired);
  t.mesh.fetch_stub = endpoint;
  t.hold_alerts = false;
  t.drain();
  // Slack heard "down" and then "back up"; both alerts are sent.
  CHECK(t.slack.size() == 2);
  REQUIRE(!t.slack.empty());
  CHECK(t.slack.back()["text"].get<std::string>().find("back up") != std::string::npos);
  json alerts = t.admin("GET", "/admin/monitors/home/alerts").body_json()["alerts"];
  CHECK(alerts.size() == 2);
  for (const json& a : alerts) CHECK_MESSAGE(a["state"] == "sent", a.dump());
}

// A sender that outlived its claim's lease (an isolate stalled past 60 s mid-send): meanwhile the
// redelivered job claimed the alert and sent it. The first sender's outcome is no longer the
// alert's: its failure must not put a sent alert back to pending (to be sent again, and its
// resolve dropped while it waits).
TEST_CASE("monitoring alerts: a sender whose lease lapsed does not overwrite the next sender's") {
  Monitoring t;
  json trigger = held_trigger(t);
  bool fired = false;
  auto endpoint = t.mesh.fetch_stub;
  t.mesh.fetch_stub = [&](const json& req) {
    if (!fired && ss::string_or(req, "url", "") == kSlackUrl) {
      fired = true;
      t.mesh.now_ms += ss::monitoring::kAlertLeaseMs + 1000;
      deliver_job(t, trigger);  // claims the lapsed lease and sends
      StubReply failed;
      failed.status = 500;  // the first sender's own POST fails
      return failed;
    }
    return endpoint(req);
  };
  json out = deliver_job(t, trigger);
  REQUIRE(fired);
  t.mesh.fetch_stub = endpoint;
  CHECK(t.slack.size() == 1);
  json alerts = t.admin("GET", "/admin/monitors/home/alerts").body_json()["alerts"];
  REQUIRE(alerts.size() == 1);
  CHECK(alerts[0]["state"] == "sent");
  // Its job is not retried, and a retry of it would send nothing.
  CHECK(out["retry"].empty());
  deliver_job(t, trigger);
  CHECK(t.slack.size() == 1);
}

// A second job of an alert whose attempt just failed (a redelivery; the cron's re-enqueue) is not
// the retry the queue holds back for the backoff: it comes back when the backoff is over instead of
// spending the next attempt at once on an endpoint that is down.
TEST_CASE("monitoring alerts: a second job after a failed attempt waits out the backoff") {
  Monitoring t;
  t.mesh.set_env("monitoring", "ALERT_BACKOFF_SECONDS", "30");
  json trigger = held_trigger(t);
  t.alert_failures = 1;
  json first = deliver_job(t, trigger);
  REQUIRE(first["retry"].size() == 1);
  CHECK(first["retry"][0]["delaySeconds"] == 30);
  t.mesh.now_ms += 5000;
  json copy = deliver_job(t, trigger);
  CHECK(t.slack.empty());
  REQUIRE(copy["retry"].size() == 1);
  CHECK(copy["retry"][0]["delaySeconds"] == 25);
  json alerts = t.admin("GET", "/admin/monitors/home/alerts").body_json()["alerts"];
  REQUIRE(alerts.size() == 1);
  CHECK(alerts[0]["attempts"] == 1);
  // Once it is over, the next attempt goes (once).
  t.mesh.now_ms += 25000;
  deliver_job(t, trigger);
  deliver_job(t, trigger);
  CHECK(t.slack.size() == 1);
  alerts = t.admin("GET", "/admin/monitors/home/alerts").body_json()["alerts"];
  CHECK(alerts[0]["state"] == "sent");
  CHECK(alerts[0]["attempts"] == 2);
}
