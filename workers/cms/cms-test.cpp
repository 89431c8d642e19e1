// The cms service through the native mesh (real SQLite): the contract's reads, the Studio API with
// versions and If-Match, bad input that writes nothing, tenant isolation, Workers RPC, and the
// zero-lockout read path under injected D1 / KV faults.
#include "shared/json_util.h"
#include "tests/native/harness.h"
#include "tests/native/test_support.h"
#include "workers/cms/service.h"

#include <doctest/doctest.h>

#include <functional>
#include <set>

#include <algorithm>

using ss::json;
using ss::native::HttpReply;
using ss::native::Mesh;
using ss::test::kAutoAdmin;
using ss::test::kAutoToken;
using ss::test::kBakeryAdmin;
using ss::test::kBakeryToken;

namespace {

json bakery_cms_config() {
  return json{{"timezone", "America/New_York"},
              {"fallback",
               {{"hours",
                 {{"timezone", "America/New_York"},
                  {"weekly",
                   {{"mon", json::array()},
                    {"tue", {{{"open", "07:00"}, {"close", "15:00"}}}},
                    {"sat", {{{"open", "08:00"}, {"close", "14:00"}}}}}}}},
                {"overrides", json::array()},
                {"announcements",
                 {{{"text", "Fresh sourdough every morning from 7."}, {"level", "info"}}}}}}};
}

struct Cms {
  Mesh mesh;
  Cms() {
    ss::cms::forget_all_remembered();
    mesh.now_ms = 1780315200000;  // 2026-06-01T12:00:00Z, a Monday
    mesh.provision("bakery", kBakeryToken, kBakeryAdmin, bakery_cms_config(), "cms");
    mesh.provision("auto-repair", kAutoToken, kAutoAdmin, json{{"timezone", "Europe/London"}},
                   "cms");
  }
  ~Cms() { ss::cms::forget_all_remembered(); }

  HttpReply get(const std::string& path, const std::string& tenant = "bakery",
                const std::string& token = kBakeryToken) {
    return mesh.request("cms", "GET", path, Mesh::tenant_headers(tenant, token));
  }
  std::map<std::string, std::string> admin(const std::string& tenant = "bakery",
                                           const std::string& token = kBakeryAdmin) {
    return {{"X-SiteSwarm-Tenant-Id", tenant},
            {"Authorization", "Bearer " + token},
            {"Content-Type", "application/json"}};
  }
  HttpReply studio(const std::string& method, const std::string& path, const json& body = json(),
                   std::map<std::string, std::string> headers = {}) {
    auto h = admin();
    for (auto& [k, v] : headers) h[k] = v;
    return mesh.request("cms", method, path, h, body.is_null() ? "" : body.dump());
  }
  std::int64_t version() {
    auto r = studio("GET", "/admin/v1/content");
    REQUIRE(r.status == 200);
    return r.body_json()["version"].get<std::int64_t>();
  }
  std::vector<json> events(const std::string& type) {
    std::vector<json> out;
    for (const json& e : mesh.queue_sent["EVENTS_QUEUE"]) {
      if (e["event_type"] == type) out.push_back(e);
    }
    return out;
  }
  std::int64_t rows(const std::string& table) {
    return mesh.db("CMS_DB").rows("SELECT COUNT(*) AS n FROM " + table)[0]["n"].get<std::int64_t>();
  }
  void fail(bool d1, bool kv) {
    mesh.fail_effect = [d1, kv](const json& e) {
      std::string kind = ss::string_or(e, "kind", "");
      return (d1 && kind.rfind("d1.", 0) == 0) || (kv && kind.rfind("kv.", 0) == 0);
    };
  }
};

json hours_body(const char* zone = "America/New_York") {
  return json{{"timezone", zone},
              {"weekly",
               {{"mon", {{{"open", "07:00"}, {"close", "15:00"}}}},
                {"fri", {{{"open", "22:00"}, {"close", "02:00"}}}}}}};
}

}  // namespace

TEST_CASE("cms: /v1/content starts from the manifest snapshot, then KV serves it") {
  Cms t;
  HttpReply first = t.get("/v1/content");
  REQUIRE(first.status == 200);
  json body = first.body_json();
  CHECK(body["tenantId"] == "bakery");
  CHECK(body["version"] == 0);
  CHECK(body["source"] == "d1");
  CHECK(body["hours"]["timezone"] == "America/New_York");
  CHECK(body["hours"]["weekly"]["tue"][0] == json{{"open", "07:00"}, {"close", "15:00"}});
  CHECK(body["hours"]["weekly"]["sun"] == json::array());
  CHECK(body["overrides"] == json::array());
  REQUIRE(body["announcements"].size() == 1);
  CHECK(body["announcements"][0]["text"] == "Fresh sourdough every morning from 7.");
  // Never written through the API: no creation time — null, not "" (times are RFC 3339 or null).
  CHECK(body["announcements"][0]["createdAt"].is_null());
  CHECK(body["announcements"][0]["updatedAt"].is_null());
  for (const char* key : {"tenantId", "version", "hours", "overrides", "announcements", "source"}) {
    CHECK(body.contains(key));
  }
  json again = t.get("/v1/content").body_json();
  CHECK(again["source"] == "kv");
  CHECK(again["announcements"][0]["createdAt"].is_null());
}

TEST_CASE(
    "cms: a new manifest snapshot for a tenant without edits is served at once, then from KV") {
  Cms t;
  CHECK(t.get("/v1/content").body_json()["source"] == "d1");
  CHECK(t.get("/v1/content").body_json()["source"] == "kv");
  CHECK(t.get("/v1/content").body_json()["hours"]["weekly"]["sat"].size() == 1);
  // Provisioning pushes a new snapshot (Saturdays closed): version 0 still, so only the config changed.
  json config = bakery_cms_config();
  config["fallback"]["hours"]["weekly"]["sat"] = json::array();
  t.mesh.provision("bakery", kBakeryToken, kBakeryAdmin, config, "cms");
  for (int i = 0; i < 3;
       ++i) {  // D1 refills KV, then KV (parsed once) and the isolate's copy serve it
    json body = t.get("/v1/content").body_json();
    CHECK(body["version"] == 0);
    CHECK(body["source"] == (i == 0 ? "d1" : "kv"));
    CHECK(body["hours"]["weekly"]["sat"] == json::array());
  }
}

TEST_CASE("cms: tenant authentication: missing or wrong token is 401 and reads nothing") {
  Cms t;
  CHECK(t.get("/v1/content", "bakery", "wrong-token-000000000000").status == 401);
  CHECK(t.get("/v1/content", "bakery", "wrong-token-000000000000").body_json()["error"]["code"] ==
        "unauthenticated_tenant");
  CHECK(t.get("/v1/status", "nobody", kBakeryToken).status == 401);
  CHECK(t.mesh.request("cms", "GET", "/v1/content").status == 401);
  // The auto-repair token does not open the bakery.
  CHECK(t.get("/v1/content", "bakery", kAutoToken).status == 401);
  CHECK(t.studio("GET", "/admin/v1/content", json(), {{"Authorization", "Bearer nope"}}).status ==
        401);
  CHECK(t.mesh.request("cms", "GET", "/admin/v1/content", t.admin("bakery", kBakeryToken)).status ==
        401);
  // One answer whatever failed: no tenant id, a malformed or unknown one, a wrong or missing token,
  // a disabled tenant — the message tells nobody which ids exist.
  std::set<std::string> bodies;
  for (const HttpReply& r :
       {t.get("/v1/content", "bakery", "wrong-token-000000000000"),
        t.get("/v1/content", "nobody", kBakeryToken), t.get("/v1/content", "Bad_Id!", kBakeryToken),
        t.mesh.request("cms", "GET", "/v1/content"),
        t.mesh.request("cms", "GET", "/v1/content", {{"X-SiteSwarm-Tenant-Id", "bakery"}})}) {
    CHECK(r.status == 401);
    bodies.insert(r.body);
  }
  CHECK(bodies.size() == 1);
}

TEST_CASE("cms: /v1/status follows the hours in the tenant's zone") {
  Cms t;
  // Tuesday 2026-06-02 07:00–15:00 EDT = 11:00Z–19:00Z.
  json open = t.get("/v1/status?at=2026-06-02T12:00:00Z").body_json();
  CHECK(open["open"] == true);
  CHECK(open["reason"] == "regular_hours");
  CHECK(open["override"].is_null());
  CHECK(open["nextChange"] == "2026-06-02T19:00:00Z");
  json closed = t.get("/v1/status?at=2026-06-02T10:00:00Z").body_json();
  CHECK(closed["open"] == false);
  CHECK(closed["reason"] == "closed");
  CHECK(closed["nextChange"] == "2026-06-02T11:00:00Z");
  // An offset sent without percent-encoding ("+" reads as a space in a query string) and encoded.
  CHECK(t.get("/v1/status?at=2026-06-02T12:00:00+02:00").body_json()["open"] == false);
  CHECK(t.get("/v1/status?at=2026-06-02T12:00:00%2B02:00").body_json()["open"] == false);
  CHECK(t.get("/v1/status?at=2026-06-02T08:00:00-04:00").body_json()["open"] == true);
  // Without at: now (Monday 08:00 EDT, closed on Mondays).
  json now = t.get("/v1/status").body_json();
  CHECK(now["open"] == false);
  CHECK(now["nextChange"] == "2026-06-02T11:00:00Z");
  HttpReply bad = t.get("/v1/status?at=tomorrow");
  CHECK(bad.status == 400);
  CHECK(bad.body_json()["error"]["field"] == "at");
}

TEST_CASE("cms: Studio writes bump the version, refresh KV at once and emit cms.* events") {
  Cms t;
  CHECK(t.get("/v1/content").body_json()["source"] == "d1");  // KV now holds version 0
  HttpReply put = t.studio("PUT", "/admin/v1/hours", hours_body());
  REQUIRE(put.status == 200);
  CHECK(put.body_json()["version"] == 1);
  CHECK(put.header("etag") == "\"1\"");
  json read = t.get("/v1/content").body_json();
  CHECK(read["version"] == 1);
  CHECK(read["source"] == "kv");
  CHECK(read["hours"]["weekly"]["fri"][0]["close"] == "02:00");
  // The seed announcement became a row, keeping its id.
  CHECK(read["announcements"].size() == 1);
  CHECK(t.rows("cms_announcements") == 1);
  auto changed = t.events("cms.hours_changed");
  REQUIRE(changed.size() == 1);
  CHECK(changed[0]["tenant_id"] == "bakery");
  CHECK(changed[0]["payload"]["version"] == 1);

  HttpReply created = t.studio("POST", "/admin/v1/overrides",
                               json{{"from", "2026-12-24"},
                                    {"to", "2026-12-26"},
                                    {"closed", true},
                                    {"message", "Closed for the holidays"}});
  REQUIRE(created.status == 201);
  json o = created.body_json()["override"];
  CHECK(o["id"].get<std::string>().size() == 26);
  CHECK(created.body_json()["version"] == 2);
  CHECK(t.get("/v1/content").body_json()["overrides"].size() == 1);
  CHECK(t.events("cms.override_created").size() == 1);
  json holiday = t.get("/v1/status?at=2026-12-25T15:00:00Z").body_json();
  CHECK(holiday["open"] == false);
  CHECK(holiday["reason"] == "override");
  CHECK(holiday["override"]["message"] == "Closed for the holidays");

  HttpReply removed = t.studio("DELETE", "/admin/v1/overrides/" + o["id"].get<std::string>());
  CHECK(removed.status == 200);
  CHECK(removed.body_json()["version"] == 3);
  CHECK(t.get("/v1/content").body_json()["overrides"].empty());
  CHECK(t.events("cms.override_deleted").size() == 1);

  json history = t.studio("GET", "/admin/v1/history?limit=2").body_json();
  REQUIRE(history["versions"].size() == 2);
  CHECK(history["versions"][0]["version"] == 3);
  CHECK(history["versions"][0]["change"] == "override_deleted");
  CHECK(history["versions"][1]["change"] == "override_created");
  CHECK(history["versions"][0]["actor"] == "tenant-admin");
  CHECK(t.studio("GET", "/admin/v1/history?limit=0").status == 400);
}

// X-SiteSwarm-Actor is a name for the history: an ESC sequence or a C1 control (a raw header byte
// 0x80–0x9F reaches the core as one) is not kept; the write still goes through, by tenant-admin.
TEST_CASE("cms: an actor with control characters is recorded as tenant-admin") {
  Cms t;
  const std::string actors[] = {"Ada Lovelace", "Eve\x1b[2J", "Mallory\xc2\x85",
                                std::string(101, 'x')};
  for (const std::string& actor : actors) {
    CAPTURE(actor);
    CHECK(t.studio("PUT", "/admin/v1/hours", hours_body(), {{"X-SiteSwarm-Actor", actor}}).status ==
          200);
  }
  json versions = t.studio("GET", "/admin/v1/history?limit=4").body_json()["versions"];
  REQUIRE(versions.size() == 4);
  CHECK(versions[3]["actor"] == "Ada Lovelace");
  CHECK(versions[2]["actor"] == "tenant-admin");
  CHECK(versions[1]["actor"] == "tenant-admin");
  CHECK(versions[0]["actor"] == "tenant-admin");
}

TEST_CASE("cms: an emergency closure closes now until its end") {
  Cms t;
  // Tuesday 2026-06-02 12:00Z is inside regular hours.
  t.mesh.now_ms = 1780401600000;
  CHECK(t.get("/v1/status").body_json()["open"] == true);
  HttpReply r = t.studio(
      "POST", "/admin/v1/overrides",
      json{{"closedNow", true}, {"until", "2026-06-02T14:00:00Z"}, {"message", "Oven broke"}});
  REQUIRE(r.status == 201);
  json s = t.get("/v1/status").body_json();
  CHECK(s["open"] == false);
  CHECK(s["reason"] == "override");
  CHECK(s["override"]["closedNow"] == true);
  CHECK(s["nextChange"] == "2026-06-02T14:00:00Z");
  CHECK(t.get("/v1/status?at=2026-06-02T14:00:00Z").body_json()["open"] == true);
  HttpReply past = t.studio("POST", "/admin/v1/overrides",
                            json{{"closedNow", true}, {"until", "2026-06-01T00:00:00Z"}});
  CHECK(past.status == 400);
  CHECK(past.body_json()["error"]["field"] == "until");
  // Closed "for the foreseeable future": an instant past the zone data's years is fine.
  HttpReply far = t.studio("POST", "/admin/v1/overrides",
                           json{{"closedNow", true}, {"until", "2099-12-31T00:00:00Z"}});
  REQUIRE(far.status == 201);
  CHECK(far.body_json()["id"] == far.body_json()["override"]["id"]);
  CHECK(t.get("/v1/status").body_json()["open"] == false);
}

// docs/cms.md "Model": an override is a date range or an emergency closure, and a key of the
// other kind is 400 naming it. A date range sent with closedNow: true was an emergency closure
// from now with no end (the shop closed at once, indefinitely), and a date range's until was
// dropped.
TEST_CASE("cms: an override with keys of both kinds is 400 naming the key; nothing is written") {
  Cms t;
  t.mesh.now_ms = 1780401600000;  // Tuesday 2026-06-02 12:00Z, inside regular hours
  const std::int64_t version = t.version();
  const std::pair<json, const char*> mixed[] = {
      {json{{"closedNow", true}, {"from", "2026-12-24"}, {"to", "2026-12-25"}}, "to"},
      {json{{"closedNow", true}, {"from", "2026-12-24"}}, "from"},
      {json{{"closedNow", true}, {"hours", json::array({{{"open", "09:00"}, {"close", "12:00"}}})}},
       "hours"},
      {json{{"closedNow", true}, {"closed", false}}, "closed"},
      {json{{"from", "2026-12-24"}, {"closed", true}, {"until", "2026-12-25T00:00:00Z"}}, "until"},
      {json{{"closedNow", false}, {"until", "2026-12-25T00:00:00Z"}}, "until"},
  };
  for (const auto& item : mixed) {
    const std::string sent = item.first.dump();
    CAPTURE(sent);
    HttpReply r = t.studio("POST", "/admin/v1/overrides", item.first);
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["field"] == item.second);
  }
  CHECK(t.version() == version);
  CHECK(t.get("/v1/status").body_json()["open"] == true);
  // Each kind as its view writes it still passes: an emergency closure's from is its start
  // instant, and closed: true says what closedNow says.
  CHECK(t.studio("POST", "/admin/v1/overrides",
                 json{{"closedNow", true},
                      {"closed", true},
                      {"from", "2026-06-02T12:00:00Z"},
                      {"until", "2026-06-02T14:00:00Z"},
                      {"to", nullptr}})
            .status == 201);
  CHECK(t.studio("POST", "/admin/v1/overrides",
                 json{{"from", "2026-12-24"}, {"closed", true}, {"until", nullptr}})
            .status == 201);
}

TEST_CASE("cms: an announcement may run until 2099") {
  Cms t;
  HttpReply r = t.studio("POST", "/admin/v1/announcements",
                         json{{"text", "Gluten-free every day"},
                              {"level", "info"},
                              {"endsAt", "2099-12-31T00:00:00Z"}});
  REQUIRE(r.status == 201);
  CHECK(r.body_json()["id"] == r.body_json()["announcement"]["id"]);
  CHECK(r.body_json()["announcement"]["endsAt"] == "2099-12-31T00:00:00Z");
  CHECK(t.get("/v1/content").body_json()["announcements"].size() == 2);  // the seed one and this
}

TEST_CASE("cms: announcements: scheduled ones stay out of /v1/content until they start") {
  Cms t;
  HttpReply later = t.studio(
      "POST", "/admin/v1/announcements",
      json{{"text", "Summer menu"}, {"level", "info"}, {"startsAt", "2026-07-01T00:00:00Z"}});
  REQUIRE(later.status == 201);
  std::string id = later.body_json()["announcement"]["id"];
  CHECK(t.get("/v1/content").body_json()["announcements"].size() == 1);  // the seed one only
  CHECK(t.studio("GET", "/admin/v1/content").body_json()["announcements"].size() == 2);
  CHECK(t.events("cms.announcement_published").size() == 1);
  HttpReply patched = t.studio("PATCH", "/admin/v1/announcements/" + id,
                               json{{"startsAt", nullptr}, {"level", "warning"}});
  REQUIRE(patched.status == 200);
  CHECK(patched.body_json()["announcement"]["level"] == "warning");
  // The history says which fields the PATCH changed (the text was sent as it was: not changed).
  REQUIRE(t.studio("PATCH", "/admin/v1/announcements/" + id,
                   json{{"text", "Summer menu"}, {"endsAt", "2027-01-01T00:00:00Z"}})
              .status == 200);
  json versions = t.studio("GET", "/admin/v1/history?limit=2").body_json()["versions"];
  REQUIRE(versions.size() == 2);
  CHECK(versions[0]["change"] == "announcement_updated");
  CHECK(versions[0]["detail"]["changed"] == json::array({"endsAt"}));
  CHECK(versions[1]["detail"]["changed"] == json::array({"level", "startsAt"}));
  json content = t.get("/v1/content").body_json();
  CHECK(content["announcements"].size() == 2);
  CHECK(t.studio("DELETE", "/admin/v1/announcements/" + id).status == 200);
  CHECK(t.get("/v1/content").body_json()["announcements"].size() == 1);
  CHECK(t.studio("PATCH", "/admin/v1/announcements/" + id, json{{"text", "x"}}).status == 404);
}

TEST_CASE("cms: Studio hours without a zone are in the tenant's current zone") {
  Cms t;
  json weekly = hours_body()["weekly"];
  auto zone_after = [&](const std::string& tenant, const std::string& admin_token,
                        const json& body) {
    auto h = t.admin(tenant, admin_token);
    HttpReply put = t.mesh.request("cms", "PUT", "/admin/v1/hours", h, body.dump());
    CHECK(put.status == 200);
    CHECK(put.body_json()["hours"]["weekly"]["mon"][0]["open"] == "07:00");
    return t.mesh
        .request("cms", "GET", "/v1/content",
                 Mesh::tenant_headers(tenant, tenant == "bakery" ? kBakeryToken : kAutoToken))
        .body_json()["hours"]["timezone"];
  };
  // Before any Studio write: the config's zone (auto-repair: Europe/London, no hours of its own).
  CHECK(zone_after("auto-repair", kAutoAdmin, json{{"weekly", weekly}}) == "Europe/London");
  // After a write that named one: that zone stays, left out or null, wrapped or not.
  CHECK(zone_after("bakery", kBakeryAdmin, hours_body("Europe/Paris")) == "Europe/Paris");
  CHECK(zone_after("bakery", kBakeryAdmin, json{{"weekly", weekly}}) == "Europe/Paris");
  CHECK(zone_after("bakery", kBakeryAdmin, json{{"timezone", nullptr}, {"weekly", weekly}}) ==
        "Europe/Paris");
  CHECK(zone_after("bakery", kBakeryAdmin, json{{"hours", {{"weekly", weekly}}}}) ==
        "Europe/Paris");
  // A zone that is there must be one.
  HttpReply bad = t.studio("PUT", "/admin/v1/hours", json{{"timezone", 5}, {"weekly", weekly}});
  CHECK(bad.status == 400);
  CHECK(bad.body_json()["error"]["field"] == "timezone");
}

TEST_CASE("cms: If-Match on a stale version is 409 and writes nothing") {
  Cms t;
  REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body(), {{"If-Match", "0"}}).status == 200);
  HttpReply stale =
      t.studio("PUT", "/admin/v1/hours", hours_body("Europe/Paris"), {{"If-Match", "\"0\""}});
  CHECK(stale.status == 409);
  CHECK(stale.body_json()["error"]["code"] == "conflict");
  CHECK(t.version() == 1);
  CHECK(t.studio("GET", "/admin/v1/content").body_json()["hours"]["timezone"] ==
        "America/New_York");
  CHECK(t.studio("PUT", "/admin/v1/hours", hours_body("Europe/Paris"), {{"If-Match", "\"1\""}})
            .status == 200);
  CHECK(t.studio("PUT", "/admin/v1/hours", hours_body(), {{"If-Match", "one"}}).status == 400);
  // "*" matches whatever version is current (RFC 9110).
  CHECK(t.studio("PUT", "/admin/v1/hours", hours_body(), {{"If-Match", "*"}}).status == 200);
  CHECK(t.version() == 3);
}

// RFC 9110 §13.1.1: If-Match is a list of entity-tags, compared by the weak comparison (a weak tag
// names its version as the strong one does: docs/cms.md "If-Match"), or "*" (any current content:
// a tenant's content always has a version, 0 included).
TEST_CASE("cms: If-Match takes a list of entity-tags, weak or strong, or *") {
  Cms t;
  auto put = [&](const std::string& if_match) {
    return t.studio("PUT", "/admin/v1/hours", hours_body(), {{"If-Match", if_match}});
  };
  // "*" on a tenant that was never edited: its version-0 content is the current representation.
  CHECK(put("*").status == 200);
  CHECK(t.version() == 1);
  // A list matches when any of its tags does; empty elements are ignored (RFC 9110 §5.6.1).
  HttpReply listed = put("\"7\", \"1\"");
  CHECK(listed.status == 200);
  CHECK(listed.header("etag") == "\"2\"");
  CHECK(put(", \"0\",\"2\" ,").status == 200);
  CHECK(t.version() == 3);
  // None of the list matches: the precondition fails (409) and nothing is written.
  HttpReply none = put("\"1\", \"2\", \"4\"");
  CHECK(none.status == 409);
  CHECK(none.body_json()["error"]["code"] == "conflict");
  CHECK(none.body_json()["error"]["currentVersion"] == 3);
  CHECK(t.version() == 3);
  // A weak tag names its version as the strong one does (the edge may weaken the ETag a client
  // echoes): a stale one is refused, the current one matches, alone or in a list.
  for (const char* weak : {"W/\"2\"", "W/\"1\", W/\"2\""}) {
    HttpReply r = put(weak);
    CHECK_MESSAGE(r.status == 409, weak);
    CHECK(r.body_json()["error"]["code"] == "conflict");
  }
  CHECK(t.version() == 3);
  CHECK(put("W/\"2\", W/\"3\"").status == 200);
  CHECK(t.version() == 4);
  // Well-formed tags that are no version of ours (or not as we write it: "04") match nothing.
  for (const char* other : {"\"abc\"", "\"04\"", "\"4,5\"", "\"\""}) {
    CHECK_MESSAGE(put(other).status == 409, other);
  }
  CHECK(t.version() == 4);
  // The contract's bare version (If-Match: 4) is read as the tag "4", also in a list.
  CHECK(put("4").status == 200);
  CHECK(put("9, 5").status == 200);
  CHECK(t.version() == 6);
  // Not a list of entity-tags: 400 naming If-Match, nothing written.
  for (const char* bad : {"one", "\"6", "6\"", "*, \"6\"", "\"6\" \"6\"", "W/6", "", " , "}) {
    HttpReply r = put(bad);
    CHECK_MESSAGE(r.status == 400, bad);
    CHECK_MESSAGE(r.body_json()["error"]["field"] == "If-Match", bad);
  }
  CHECK(t.version() == 6);
  // The same rules on every write (here a POST and a DELETE).
  CHECK(t.studio("POST", "/admin/v1/announcements", json{{"text", "Hi"}}, {{"If-Match", "W/\"5\""}})
            .status == 409);
  HttpReply created = t.studio("POST", "/admin/v1/announcements", json{{"text", "Hi"}},
                               {{"If-Match", "\"5\", \"6\""}});
  REQUIRE(created.status == 201);
  std::string id = created.body_json()["id"].get<std::string>();
  CHECK(t.studio("DELETE", "/admin/v1/announcements/" + id, json(), {{"If-Match", "*"}}).status ==
        200);
  CHECK(t.version() == 8);
}

TEST_CASE("cms: bad input names the field and writes nothing") {
  Cms t;
  struct Case {
    const char* method;
    const char* path;
    json body;
    const char* field;
  };
  std::string long_text(501, 'x');
  json too_many_ranges = json::array();
  for (int i = 0; i < 7; ++i) too_many_ranges.push_back({{"open", "07:00"}, {"close", "08:00"}});
  std::vector<Case> cases = {
      {"PUT", "/admin/v1/hours", hours_body("Mars/Olympus"), "timezone"},
      {"PUT", "/admin/v1/hours",
       json{{"timezone", "UTC"}, {"weekly", {{"mon", {{{"open", "25:00"}, {"close", "26:00"}}}}}}},
       "weekly.mon[0].open"},
      {"PUT", "/admin/v1/hours", json{{"timezone", "UTC"}, {"weekly", {{"mon", too_many_ranges}}}},
       "weekly.mon"},
      {"PUT", "/admin/v1/hours",
       json{{"timezone", "UTC"}, {"weekly", {{"someday", json::array()}}}}, "weekly.someday"},
      {"POST", "/admin/v1/overrides", json{{"from", "2026-02-30"}, {"closed", true}}, "from"},
      // Dates the zone data covers: 2020 through 2099.
      {"POST", "/admin/v1/overrides", json{{"from", "2100-01-01"}, {"closed", true}}, "from"},
      {"POST", "/admin/v1/overrides", json{{"from", "2019-12-31"}, {"closed", true}}, "from"},
      {"POST", "/admin/v1/overrides",
       json{{"from", "2026-12-26"}, {"to", "2026-12-24"}, {"closed", true}}, "to"},
      {"POST", "/admin/v1/overrides", json{{"from", "2026-12-24"}}, "closed"},
      {"POST", "/admin/v1/overrides",
       json{{"from", "2026-12-24"}, {"closed", true}, {"message", long_text}}, "message"},
      {"POST", "/admin/v1/announcements", json{{"text", long_text}}, "text"},
      {"POST", "/admin/v1/announcements", json{{"text", "hi"}, {"level", "loud"}}, "level"},
      {"POST", "/admin/v1/announcements", json{{"text", std::string("nul\0here", 8)}}, "text"},
      {"POST", "/admin/v1/announcements", json{{"text", "bell\x07"}}, "text"},
      // Only spaces would show visitors an empty banner.
      {"POST", "/admin/v1/announcements", json{{"text", " \n\t "}}, "text"},
      // closedNow false is a date range: one without its dates is refused by them.
      {"POST", "/admin/v1/overrides", json{{"closedNow", "yes"}}, "closedNow"},
      {"POST", "/admin/v1/overrides",
       json{{"from", "2026-12-24"}, {"closed", true}, {"message", "del\x7f"}}, "message"},
      {"POST", "/admin/v1/announcements",
       json{{"text", "hi"},
            {"level", "info"},
            {"startsAt", "2026-07-02T00:00:00Z"},
            {"endsAt", "2026-07-01T00:00:00Z"}},
       "endsAt"},
      // Misspelt fields are refused by name instead of read as their defaults.
      {"PUT", "/admin/v1/hours", json{{"timeZone", "UTC"}, {"weekly", json::object()}}, "timeZone"},
      {"PUT", "/admin/v1/hours", json{{"hours", {{"timezone", "UTC"}, {"weekley", {}}}}},
       "hours.weekley"},
      {"POST", "/admin/v1/announcements", json{{"text", "hi"}, {"levl", "emergency"}}, "levl"},
      {"POST", "/admin/v1/overrides",
       json{{"from", "2026-12-24"}, {"closed", true}, {"mesage", "x"}}, "mesage"},
      // Inside a range too: a key it does not know is refused by its path, not dropped.
      {"PUT", "/admin/v1/hours",
       json{{"timezone", "UTC"},
            {"weekly",
             {{"mon", {{{"open", "09:00"}, {"close", "10:00"}, {"timezone", "Asia/Tokyo"}}}}}}},
       "weekly.mon[0].timezone"},
      {"POST", "/admin/v1/overrides",
       json{{"from", "2026-12-20"},
            {"to", "2026-12-20"},
            {"hours", {{{"open", "10:00"}, {"close", "11:00"}, {"bogus", true}}}}},
       "hours[0].bogus"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.path);
    CAPTURE(c.field);
    HttpReply r = t.studio(c.method, c.path, c.body);
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["code"] == "invalid_request");
    CHECK(r.body_json()["error"]["field"] == c.field);
    CHECK(r.body_json()["error"]["fields"].contains(c.field));
  }
  // closedNow false is a date range (its dates are then asked for); anything else is neither.
  HttpReply yes = t.studio("POST", "/admin/v1/overrides", json{{"closedNow", "yes"}});
  CHECK(yes.body_json()["error"]["message"].get<std::string>().find(
            "must be true, or false or absent for a date range") != std::string::npos);
  HttpReply big =
      t.studio("POST", "/admin/v1/announcements", json{{"text", std::string(70000, 'x')}});
  CHECK(big.status == 413);
  HttpReply type =
      t.studio("PUT", "/admin/v1/hours", hours_body(), {{"Content-Type", "text/plain"}});
  CHECK(type.status == 415);
  HttpReply malformed = t.mesh.request("cms", "PUT", "/admin/v1/hours", t.admin(), "{nope");
  CHECK(malformed.status == 400);
  CHECK(t.version() == 0);
  CHECK(t.rows("cms_versions") == 0);
  CHECK(t.rows("cms_state") == 0);
  CHECK(t.mesh.queue_sent["EVENTS_QUEUE"].empty());
}

TEST_CASE("cms: Studio bodies sent back as they were read are taken (the view's fields pass)") {
  Cms t;
  // The whole GET /admin/v1/content, its hours changed: {"hours": …} beside the rest of the view.
  json content = t.studio("GET", "/admin/v1/content").body_json();
  content["hours"]["weekly"]["mon"] = json::array({{{"open", "09:00"}, {"close", "12:00"}}});
  HttpReply hours = t.studio("PUT", "/admin/v1/hours", content);
  CHECK(hours.status == 200);
  CHECK(hours.body_json()["hours"]["weekly"]["mon"][0]["open"] == "09:00");
  // And a write's own answer, {"hours": …, "version": N}, sent back.
  CHECK(t.studio("PUT", "/admin/v1/hours", hours.body_json()).status == 200);
  // An override as read (its id and stamp) makes a new one: the id is the server's.
  json read_override{{"id", "01JD0000000000000000000000"},
                     {"createdAt", "2026-06-01T12:00:00Z"},
                     {"from", "2026-12-24"},
                     {"closed", true}};
  HttpReply created = t.studio("POST", "/admin/v1/overrides", read_override);
  CHECK(created.status == 201);
  CHECK(created.body_json()["id"] != "01JD0000000000000000000000");
}

TEST_CASE("cms: text keeps newlines and tabs; a control character is 400 on PATCH too") {
  Cms t;
  HttpReply created =
      t.studio("POST", "/admin/v1/announcements", json{{"text", "Line one\nLine two\tend"}});
  REQUIRE(created.status == 201);
  CHECK(created.body_json()["announcement"]["text"] == "Line one\nLine two\tend");
  const std::string id = created.body_json()["announcement"]["id"];
  HttpReply patched =
      t.studio("PATCH", "/admin/v1/announcements/" + id, json{{"text", "esc\x1b[31m"}});
  CHECK(patched.status == 400);
  CHECK(patched.body_json()["error"]["field"] == "text");
  HttpReply blank = t.studio("PATCH", "/admin/v1/announcements/" + id, json{{"text", "  "}});
  CHECK(blank.status == 400);
  CHECK(blank.body_json()["error"]["field"] == "text");
  CHECK(blank.body_json()["error"]["message"].get<std::string>().find("not only spaces") !=
        std::string::npos);
  // Text stored before that rule still takes a PATCH that leaves it alone.
  t.mesh.db("CMS_DB").execute("UPDATE cms_announcements SET text = '   ' WHERE id = ?1",
                              json::array({id}));
  HttpReply level = t.studio("PATCH", "/admin/v1/announcements/" + id, json{{"level", "warning"}});
  CHECK(level.status == 200);
  CHECK(level.body_json()["announcement"]["text"] == "   ");
  REQUIRE(t.studio("PATCH", "/admin/v1/announcements/" + id, json{{"text", "Line one"}}).status ==
          200);
  CHECK(t.get("/v1/content").body_json()["announcements"].size() >= 1);
  // A misspelt field is refused by name, and a PATCH with nothing to change writes no version.
  const std::int64_t before = t.version();
  HttpReply typo = t.studio("PATCH", "/admin/v1/announcements/" + id, json{{"txt", "typo"}});
  CHECK(typo.status == 400);
  CHECK(typo.body_json()["error"]["field"] == "txt");
  CHECK(t.studio("PATCH", "/admin/v1/announcements/" + id, json::object()).status == 400);
  CHECK(t.version() == before);
  // The announcement as read (its id and stamps included) may be sent back with a change.
  json view = created.body_json()["announcement"];
  view["level"] = "warning";
  HttpReply round_trip = t.studio("PATCH", "/admin/v1/announcements/" + id, view);
  CHECK(round_trip.status == 200);
  CHECK(round_trip.body_json()["announcement"]["level"] == "warning");
  CHECK(t.version() == before + 1);
}

// C1 controls (U+0080..U+009F: NEL, CSI, …) are refused like ASCII's, as the leads service does;
// U+00A0 and above are text.
TEST_CASE("cms: a C1 control character is 400 naming the field, and nothing is written") {
  Cms t;
  const std::int64_t before = t.version();
  struct Case {
    const char* method;
    std::string path;
    json body;
    const char* field;
  };
  HttpReply created =
      t.studio("POST", "/admin/v1/announcements", json{{"text", "caf\xc3\xa9\xc2\xa0ok"}});
  REQUIRE(created.status == 201);
  const std::string id = created.body_json()["id"];
  const std::int64_t written = t.version();
  CHECK(written == before + 1);
  const Case cases[] = {
      {"POST", "/admin/v1/announcements", json{{"text", "Closed\xc2\x85today"}}, "text"},
      {"PATCH", "/admin/v1/announcements/" + id,
       json{{"text",
             "csi \xc2\x9b"
             "31m"}},
       "text"},
      {"POST", "/admin/v1/overrides",
       json{{"from", "2026-12-24"}, {"closed", true}, {"message", "pad\xc2\x80"}}, "message"},
      {"POST", "/admin/v1/overrides",
       json{{"closedNow", true}, {"until", nullptr}, {"message", "x\xc2\x9f"}}, "message"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.method);
    CAPTURE(c.field);
    HttpReply r = t.studio(c.method, c.path, c.body);
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["code"] == "invalid_request");
    CHECK(r.body_json()["error"]["field"] == c.field);
    CHECK(r.body_json()["error"]["fields"].contains(c.field));
  }
  CHECK(t.version() == written);
  // A tenant config's snapshot is checked with the same rule.
  json body{{"token", "zz-token-0123456789abcd"},
            {"adminToken", "zz-admin-0123456789abcd"},
            {"config", {{"fallback", {{"announcements", {{{"text", "bad\xc2\x85"}}}}}}}}};
  HttpReply seeded = t.mesh.request("cms", "PUT", "/admin/tenants/zz",
                                    {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                                     {"Content-Type", "application/json"}},
                                    body.dump());
  CHECK(seeded.status == 400);
  CHECK(seeded.body_json()["error"]["field"] == "config.fallback.announcements[0].text");
}

TEST_CASE("cms: a tenant's fallback snapshot is checked at provisioning, naming the field") {
  Cms t;
  auto provision = [&](const json& fallback) {
    json body{{"token", "zz-token-0123456789abcd"},
              {"adminToken", "zz-admin-0123456789abcd"},
              {"config", {{"timezone", "Europe/Paris"}, {"fallback", fallback}}}};
    return t.mesh.request("cms", "PUT", "/admin/tenants/zz",
                          {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                           {"Content-Type", "application/json"}},
                          body.dump());
  };
  json weekly{{"mon", {{{"open", "08:00"}, {"close", "17:00"}}}}};
  struct Case {
    json fallback;
    const char* field;
  };
  const Case cases[] = {
      {json{{"hours", {{"timezone", "Mars/Base"}, {"weekly", weekly}}}},
       "config.fallback.hours.timezone"},
      {json{{"hours", {{"timezone", "UTC"}, {"weekly", {{"funday", json::array()}}}}}},
       "config.fallback.hours.weekly.funday"},
      {json{{"overrides", "x"}}, "config.fallback.overrides"},
      {json{{"overrides", {{{"from", "2026-02-30"}, {"closed", true}}}}},
       "config.fallback.overrides[0].from"},
      {json{{"announcements", {{{"text", ""}}}}}, "config.fallback.announcements[0].text"},
      {json{{"announcements", {{{"text", "   "}}}}}, "config.fallback.announcements[0].text"},
      {json{{"announcements", {{{"text", "hi"}, {"level", "loud"}}}}},
       "config.fallback.announcements[0].level"},
      {json("x"), "config.fallback"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.field);
    HttpReply r = provision(c.fallback);
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["field"] == c.field);
  }
  CHECK(t.mesh
            .request("cms", "GET", "/admin/tenants/zz",
                     {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken}})
            .status == 404);  // nothing was written
  // A good snapshot is taken; a manifest's announcement may leave its level out (info).
  HttpReply ok = provision(json{{"hours", {{"timezone", "Europe/Paris"}, {"weekly", weekly}}},
                                {"announcements", {{{"text", "Open on Monday"}}}}});
  CHECK(ok.status == 201);
  json content = t.get("/v1/content", "zz", "zz-token-0123456789abcd").body_json();
  REQUIRE(content["announcements"].size() == 1);
  CHECK(content["announcements"][0]["level"] == "info");
}

// A snapshot's range is read as it was provisioned, keys it does not know left out (as the SDK
// reads the same manifest); only a Studio write refuses them.
TEST_CASE("cms: a snapshot range with an extra key keeps its hours; a Studio write refuses one") {
  Cms t;
  const std::string token = "zz-token-0123456789abcd";
  const std::string admin_token = "zz-admin-0123456789abcd";
  json body{{"token", token},
            {"adminToken", admin_token},
            {"config",
             {{"timezone", "UTC"},
              {"fallback",
               {{"hours",
                 {{"weekly",
                   {{"mon", {{{"open", "08:00"}, {"close", "17:00"}, {"note", "lunch"}}}}}}}}}}}}};
  REQUIRE(t.mesh
              .request("cms", "PUT", "/admin/tenants/zz",
                       {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                        {"Content-Type", "application/json"}},
                       body.dump())
              .status == 201);
  json content = t.get("/v1/content", "zz", token).body_json();
  CHECK(content["hours"]["weekly"]["mon"] ==
        json::array({{{"open", "08:00"}, {"close", "17:00"}}}));
  // 2026-06-01 is a Monday.
  CHECK(t.get("/v1/status?at=2026-06-01T09:00:00Z", "zz", token).body_json()["open"] == true);
  HttpReply studio = t.mesh.request(
      "cms", "PUT", "/admin/v1/hours", t.admin("zz", admin_token),
      json{{"timezone", "UTC"},
           {"weekly", {{"mon", {{{"open", "08:00"}, {"close", "17:00"}, {"note", "lunch"}}}}}}}
          .dump());
  CHECK(studio.status == 400);
  CHECK(studio.body_json()["error"]["field"] == "weekly.mon[0].note");
}

// docs/cms.md "Storage and caching": a snapshot's hours may leave their zone out (or give null);
// they are then in the tenant's `config.timezone`, else UTC — the zone the bundled seed and the
// SDK's fallback read them in. Provisioning takes such a snapshot; a bad zone is still refused.
TEST_CASE("cms: a snapshot's hours without a zone are provisioned, in the tenant's zone") {
  Cms t;
  const std::string token = "zz-token-0123456789abcd";
  const std::string admin_token = "zz-admin-0123456789abcd";
  auto provision = [&](const std::string& id, const json& config) {
    json body{{"token", token}, {"adminToken", admin_token}, {"config", config}};
    return t.mesh.request("cms", "PUT", "/admin/tenants/" + id,
                          {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                           {"Content-Type", "application/json"}},
                          body.dump());
  };
  json weekly{{"mon", {{{"open", "08:00"}, {"close", "17:00"}}}}};
  // 2026-06-01 is a Monday: 07:30Z is 07:30 in UTC (closed) and 09:30 in Paris (CEST, open).
  const std::string at = "/v1/status?at=2026-06-01T07:30:00Z";

  // No config.timezone, a null zone: UTC.
  HttpReply utc =
      provision("zz", json{{"fallback", {{"hours", {{"timezone", nullptr}, {"weekly", weekly}}}}}});
  CHECK(utc.status == 201);
  json content = t.get("/v1/content", "zz", token).body_json();
  CHECK(content["version"] == 0);
  CHECK(content["hours"]["timezone"] == "UTC");
  CHECK(content["hours"]["weekly"]["mon"] == weekly["mon"]);
  json status = t.get(at, "zz", token).body_json();
  CHECK(status["open"] == false);
  CHECK(status["nextChange"] == "2026-06-01T08:00:00Z");

  // The zone left out, config.timezone Europe/Paris: the hours are Paris time.
  HttpReply paris = provision(
      "zz", json{{"timezone", "Europe/Paris"}, {"fallback", {{"hours", {{"weekly", weekly}}}}}});
  CHECK(paris.status == 200);
  content = t.get("/v1/content", "zz", token).body_json();
  CHECK(content["hours"]["timezone"] == "Europe/Paris");
  status = t.get(at, "zz", token).body_json();
  CHECK(status["open"] == true);
  CHECK(status["reason"] == "regular_hours");
  CHECK(status["nextChange"] == "2026-06-01T15:00:00Z");  // 17:00 CEST
  // Both stores down: the copy answers the same.
  t.fail(true, true);
  json fallback = t.get(at, "zz", token).body_json();
  CHECK(fallback["source"] == "fallback");
  CHECK(fallback["open"] == true);
  CHECK(t.get("/v1/content", "zz", token).body_json()["hours"]["timezone"] == "Europe/Paris");
  t.mesh.fail_effect = nullptr;
  // The first Studio write stores the snapshot as rows, in the zone it was read in.
  HttpReply note = t.mesh.request("cms", "POST", "/admin/v1/announcements",
                                  t.admin("zz", admin_token), json{{"text", "Hello"}}.dump());
  CHECK(note.status == 201);
  json stored =
      t.mesh.request("cms", "GET", "/admin/v1/content", t.admin("zz", admin_token)).body_json();
  CHECK(stored["version"] == 1);
  CHECK(stored["hours"]["timezone"] == "Europe/Paris");
  CHECK(stored["hours"]["weekly"]["mon"] == weekly["mon"]);

  // A zone that is given must be one: 400 invalid_request naming it, and nothing is written.
  struct Case {
    json hours;
    const char* field;
  };
  const Case cases[] = {
      {json{{"timezone", "Mars/Base"}, {"weekly", weekly}}, "config.fallback.hours.timezone"},
      {json{{"timezone", "europe/paris"}, {"weekly", weekly}}, "config.fallback.hours.timezone"},
      {json{{"timezone", ""}, {"weekly", weekly}}, "config.fallback.hours.timezone"},
      {json{{"timezone", 1}, {"weekly", weekly}}, "config.fallback.hours.timezone"},
      {json{{"weekly", {{"mon", {{{"open", "08:00"}, {"close", "24:01"}}}}}}},
       "config.fallback.hours.weekly.mon[0].close"},
      {json{{"timezone", "UTC"}}, "config.fallback.hours.weekly"},
      {json(nullptr), "config.fallback.hours"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.hours.dump());
    HttpReply r =
        provision("yy", json{{"timezone", "Europe/Paris"}, {"fallback", {{"hours", c.hours}}}});
    CHECK(r.status == 400);
    json error = r.body_json()["error"];
    CHECK(error["code"] == "invalid_request");
    CHECK(error["field"] == c.field);
    CHECK(error["fields"].contains(c.field));
    CHECK(error["message"].is_string());
  }
  CHECK(t.mesh
            .request("cms", "GET", "/admin/tenants/yy",
                     {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken}})
            .status == 404);
}

// A snapshot's hours are the contract's {timezone, weekly} (docs/cms.md "A snapshot's hours are not
// wrapped"): {"hours": {"hours": …}} is refused at provisioning and read as hours left out (closed
// all week) from a bundled seed, as the SDK reads the manifest. Studio's PUT body may still wrap.
TEST_CASE("cms: a snapshot's hours wrapped as {hours: …} are not hours; Studio's body may wrap") {
  Cms t;
  json weekly{{"mon", {{{"open", "08:00"}, {"close", "17:00"}}}}};
  json wrapped{{"hours", {{"timezone", "Europe/Paris"}, {"weekly", weekly}}}};
  json body{{"token", "ww-token-0123456789abcd"},
            {"adminToken", "ww-admin-0123456789abcd"},
            {"config", {{"timezone", "Europe/Paris"}, {"fallback", {{"hours", wrapped}}}}}};
  HttpReply r = t.mesh.request("cms", "PUT", "/admin/tenants/ww",
                               {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                                {"Content-Type", "application/json"}},
                               body.dump());
  CHECK(r.status == 400);
  json error = r.body_json()["error"];
  CHECK(error["code"] == "invalid_request");
  CHECK(error["field"] == "config.fallback.hours.weekly");
  CHECK(t.mesh
            .request("cms", "GET", "/admin/tenants/ww",
                     {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken}})
            .status == 404);

  // A bundled seed (never provisioned) so wrapped: its hours are left out, in the seed's zone.
  json seeds{{"auto-repair",
              {{"tokenHash", ss::native::sha256_hex(kAutoToken)},
               {"timezone", "UTC"},
               {"content", {{"hours", wrapped}}}}}};
  t.mesh.set_env("cms", ss::cms::kSeedsVar, seeds.dump());
  t.fail(true, true);
  auto headers = Mesh::tenant_headers("auto-repair", kAutoToken);
  json content = t.mesh.request("cms", "GET", "/v1/content", headers).body_json();
  CHECK(content["source"] == "fallback");
  CHECK(content["hours"]["timezone"] == "UTC");
  CHECK(content["hours"]["weekly"]["mon"] == json::array());
  json status =
      t.mesh.request("cms", "GET", "/v1/status?at=2026-06-01T07:30:00Z", headers).body_json();
  CHECK(status["open"] == false);  // 09:30 in Paris, had the wrapped hours been read
  CHECK(status["nextChange"].is_null());
  t.mesh.fail_effect = nullptr;

  // Studio's PUT /admin/v1/hours takes its body as the hours, or wrapped in {"hours": …}.
  HttpReply put = t.studio("PUT", "/admin/v1/hours", json{{"hours", hours_body("Europe/Paris")}});
  CHECK(put.status == 200);
  CHECK(t.studio("GET", "/admin/v1/content").body_json()["hours"]["timezone"] == "Europe/Paris");
}

TEST_CASE("cms: too many items is 400 and the count stays") {
  Cms t;
  for (std::size_t i = 0; i < ss::cms::kMaxAnnouncements - 1; ++i) {  // the seed has one
    REQUIRE(t.studio("POST", "/admin/v1/announcements",
                     json{{"text", "n" + std::to_string(i)}, {"level", "info"}})
                .status == 201);
  }
  HttpReply over = t.studio("POST", "/admin/v1/announcements",
                            json{{"text", "one too many"}, {"level", "info"}});
  CHECK(over.status == 400);
  CHECK(over.body_json()["error"]["field"] == "announcements");
  CHECK(t.rows("cms_announcements") == static_cast<std::int64_t>(ss::cms::kMaxAnnouncements));
}

TEST_CASE("cms: at the cap, items that are over make room; live ones never do") {
  Cms t;  // Monday 2026-06-01 12:00Z
  // The overrides fill up with an emergency closure that ends at 13:00 and holidays in June.
  REQUIRE(t.studio("POST", "/admin/v1/overrides",
                   json{{"closedNow", true}, {"until", "2026-06-01T13:00:00Z"}})
              .status == 201);
  for (std::size_t i = 1; i < ss::cms::kMaxOverrides; ++i) {
    REQUIRE(t.studio("POST", "/admin/v1/overrides",
                     json{{"from", "2026-06-10"}, {"to", "2026-06-11"}, {"closed", true}})
                .status == 201);
  }
  json emergency{{"closedNow", true}, {"message", "Oven broke"}};
  HttpReply full = t.studio("POST", "/admin/v1/overrides", emergency);
  CHECK(full.status == 400);
  CHECK(full.body_json()["error"]["field"] == "overrides");
  // The message says which overrides make room (an emergency closure that is over: not yet here).
  CHECK(full.body_json()["error"]["message"].get<std::string>().find("whose until has passed") !=
        std::string::npos);
  // Once the first closure is over, a new one takes its place: nothing else goes.
  t.mesh.now_ms = 1780315200000 + 3600 * 1000;  // 13:00Z
  HttpReply room = t.studio("POST", "/admin/v1/overrides", emergency);
  REQUIRE(room.status == 201);
  CHECK(t.rows("cms_overrides") == static_cast<std::int64_t>(ss::cms::kMaxOverrides));
  CHECK(t.get("/v1/status").body_json()["open"] == false);
  auto created = t.events("cms.override_created");
  REQUIRE(!created.empty());
  CHECK(created.back()["payload"]["pruned"].size() == 1);
  // Days after the holidays, they are over in every zone: they make room too.
  t.mesh.now_ms = 1780315200000 + 12 * 86400 * 1000LL;  // 2026-06-13T12:00Z
  REQUIRE(t.studio("POST", "/admin/v1/overrides", emergency).status == 201);
  CHECK(t.rows("cms_overrides") == 2);  // the two closures without an end, and the newest
  // Announcements: one that has ended makes room for a new one at the cap.
  Cms a;
  REQUIRE(a.studio("POST", "/admin/v1/announcements",
                   json{{"text", "Closing early today"}, {"endsAt", "2026-06-01T13:00:00Z"}})
              .status == 201);
  for (std::size_t i = 2; i < ss::cms::kMaxAnnouncements; ++i) {  // the seed has one
    REQUIRE(a.studio("POST", "/admin/v1/announcements", json{{"text", "n" + std::to_string(i)}})
                .status == 201);
  }
  CHECK(a.studio("POST", "/admin/v1/announcements", json{{"text", "full"}}).status == 400);
  a.mesh.now_ms = 1780315200000 + 3600 * 1000;
  CHECK(a.studio("POST", "/admin/v1/announcements", json{{"text", "room"}}).status == 201);
  CHECK(a.rows("cms_announcements") == static_cast<std::int64_t>(ss::cms::kMaxAnnouncements));
}

TEST_CASE("cms: another tenant's ids are 404 and stay untouched") {
  Cms t;
  auto auto_admin = t.admin("auto-repair", kAutoAdmin);
  HttpReply theirs = t.mesh.request("cms", "POST", "/admin/v1/overrides", auto_admin,
                                    json{{"from", "2026-12-24"}, {"closed", true}}.dump());
  REQUIRE(theirs.status == 201);
  std::string id = theirs.body_json()["override"]["id"];
  HttpReply note = t.mesh.request("cms", "POST", "/admin/v1/announcements", auto_admin,
                                  json{{"text", "Tyres on sale"}, {"level", "info"}}.dump());
  std::string note_id = note.body_json()["announcement"]["id"];
  CHECK(t.studio("DELETE", "/admin/v1/overrides/" + id).status == 404);
  CHECK(t.studio("DELETE", "/admin/v1/announcements/" + note_id).status == 404);
  CHECK(t.studio("PATCH", "/admin/v1/announcements/" + note_id, json{{"text", "mine"}}).status ==
        404);
  json auto_content =
      t.mesh.request("cms", "GET", "/v1/content", Mesh::tenant_headers("auto-repair", kAutoToken))
          .body_json();
  CHECK(auto_content["overrides"].size() == 1);
  CHECK(auto_content["announcements"][0]["text"] == "Tyres on sale");
  CHECK(t.get("/v1/content").body_json()["overrides"].empty());
}

TEST_CASE("cms: zero lockout: KV down → d1, D1 down → kv, both down → fallback") {
  Cms t;
  REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body()).status == 200);
  t.fail(false, true);
  json from_d1 = t.get("/v1/content").body_json();
  CHECK(from_d1["source"] == "d1");
  CHECK(from_d1["version"] == 1);
  CHECK(t.get("/v1/status?at=2026-06-01T12:00:00Z").body_json()["source"] == "d1");
  t.fail(true, false);
  HttpReply from_kv = t.get("/v1/content");
  REQUIRE(from_kv.status == 200);
  CHECK(from_kv.body_json()["source"] == "kv");
  CHECK(from_kv.body_json()["version"] == 1);
  json status = t.get("/v1/status?at=2026-06-01T12:00:00Z").body_json();
  CHECK(status["source"] == "kv");
  CHECK(status["open"] == true);  // Monday 08:00 EDT, 07:00–15:00
  CHECK(t.get("/v1/content", "bakery", "wrong-token-000000000000").status == 401);
  t.fail(true, true);
  HttpReply fallback = t.get("/v1/content");
  REQUIRE(fallback.status == 200);
  CHECK(fallback.body_json()["source"] == "fallback");
  CHECK(fallback.body_json()["version"] == 1);  // the isolate's last-known-good copy
  CHECK(t.get("/v1/status?at=2026-06-01T12:00:00Z").body_json()["open"] == true);
  CHECK(t.get("/v1/content", "bakery", "wrong-token-000000000000").status == 401);
  // Nobody ever read auto-repair in this isolate and nothing is bundled: 503, not someone else's.
  HttpReply unknown = t.get("/v1/content", "auto-repair", kAutoToken);
  CHECK(unknown.status == 503);
  CHECK(unknown.body_json()["error"]["code"] == "service_unavailable");
  // Studio writes need D1.
  CHECK(t.studio("PUT", "/admin/v1/hours", hours_body()).status == 503);
}

// KV refusing writes (its 1 write/s per key) after a Studio write committed: the put of the new
// document fails and so does the delete of the old one. The old version is served from KV for at
// most the document's TTL, never forever: once it expires, the next read refills from D1.
TEST_CASE("cms: a write whose KV put and delete both fail does not serve the old version forever") {
  Cms t;
  REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body()).status == 200);
  REQUIRE(t.get("/v1/content").body_json()["version"] == 1);
  t.mesh.fail_effect = [](const json& e) {
    std::string kind = ss::string_or(e, "kind", "");
    return kind == "kv.put" || kind == "kv.delete";
  };
  HttpReply second = t.studio("PUT", "/admin/v1/hours", hours_body("Europe/London"));
  REQUIRE(second.status == 200);  // D1 committed; the event names the new version
  CHECK(second.body_json()["version"] == 2);
  CHECK(t.events("cms.hours_changed").size() == 2);
  t.mesh.fail_effect = nullptr;
  t.mesh.now_ms += 3601 * 1000;  // past the TTL of the document put for version 1
  json later = t.get("/v1/content").body_json();
  CHECK(later["version"] == 2);
  CHECK(later["hours"]["timezone"] == "Europe/London");
  CHECK(t.get("/v1/content").body_json()["source"] == "kv");  // refilled with version 2
}

// The events queue refusing a committed write's cms.* event: the event stays in the outbox with
// the version and the cron sends it (once), under the version's idempotency key and the event_id
// drawn at the write; never lost with the version standing.
TEST_CASE("cms: a committed write's cms.* event refused by the queue is sent by the cron") {
  Cms t;
  int refused = 0;
  t.mesh.fail_effect = [&refused](const json& e) {
    if (ss::string_or(e, "kind", "") != "queue.send") return false;
    ++refused;
    return true;
  };
  HttpReply put = t.studio("PUT", "/admin/v1/hours", hours_body());
  REQUIRE(put.status == 200);  // the version stands: the answer does not wait on the queue
  CHECK(put.body_json()["version"] == 1);
  CHECK(refused == 1);
  CHECK(t.events("cms.hours_changed").empty());
  CHECK(t.rows("cms_event_outbox") == 1);
  // Too young for the cron (a write's own send may be in flight): nothing sent yet.
  t.mesh.message("cms", {{"op", "scheduled"}, {"cron", "*/10 * * * *"}});
  CHECK(refused == 1);
  // Still refused a minute later: the row stays, one attempt more, with the error.
  t.mesh.now_ms += 61 * 1000;
  t.mesh.message("cms", {{"op", "scheduled"}, {"cron", "*/10 * * * *"}});
  CHECK(refused == 2);
  auto row = t.mesh.db("CMS_DB").rows("SELECT attempts, last_error FROM cms_event_outbox");
  REQUIRE(row.size() == 1);
  CHECK(row[0]["attempts"] == 1);
  CHECK(row[0]["last_error"].get<std::string>().find("queue") != std::string::npos);
  // The queue back: sent once, the row gone, and the next run sends nothing.
  t.mesh.fail_effect = nullptr;
  t.mesh.message("cms", {{"op", "scheduled"}, {"cron", "*/10 * * * *"}});
  auto changed = t.events("cms.hours_changed");
  REQUIRE(changed.size() == 1);
  CHECK(changed[0]["payload"]["version"] == 1);
  CHECK(changed[0]["idempotency_key"] == "cms-version:1");
  CHECK(changed[0]["tenant_id"] == "bakery");
  CHECK(t.rows("cms_event_outbox") == 0);
  t.mesh.message("cms", {{"op", "scheduled"}, {"cron", "*/10 * * * *"}});
  CHECK(t.events("cms.hours_changed").size() == 1);
}

// A write whose send succeeded leaves no outbox row; one that lost its race for the version (or
// was refused) leaves none either: the row is in the version's own transaction.
TEST_CASE("cms: the outbox holds only committed versions' unsent events") {
  Cms t;
  REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body()).status == 200);
  CHECK(t.events("cms.hours_changed").size() == 1);
  CHECK(t.rows("cms_event_outbox") == 0);
  // A conditional write on a stale version: 409, nothing committed, nothing in the outbox.
  HttpReply stale =
      t.studio("PUT", "/admin/v1/hours", hours_body("Europe/London"), {{"If-Match", "\"0\""}});
  CHECK(stale.status == 409);
  CHECK(t.rows("cms_event_outbox") == 0);
  CHECK(t.events("cms.hours_changed").size() == 1);
  // An event whose sent row could not be deleted (D1 down after the send) is sent again by the
  // cron with the same event_id: the ledger stores an event_id once.
  t.mesh.fail_effect = [](const json& e) {
    return ss::string_or(e, "kind", "") == "d1.run" &&
           ss::string_or(e, "sql", "").find("DELETE FROM cms_event_outbox") != std::string::npos;
  };
  REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body("Europe/London")).status == 200);
  t.mesh.fail_effect = nullptr;
  auto first = t.events("cms.hours_changed");
  REQUIRE(first.size() == 2);
  CHECK(t.rows("cms_event_outbox") == 1);
  t.mesh.now_ms += 61 * 1000;
  t.mesh.message("cms", {{"op", "scheduled"}, {"cron", "*/10 * * * *"}});
  auto again = t.events("cms.hours_changed");
  REQUIRE(again.size() == 3);
  CHECK(again[2]["event_id"] == first[1]["event_id"]);
  CHECK(t.rows("cms_event_outbox") == 0);
}

// A disabled tenant: D1 answers 401 at once; during a D1 outage nothing the operator's DELETE left
// behind may still verify its token (the KV document holds its token hash, the isolate its copy).
TEST_CASE(
    "cms: a disabled tenant's KV document and copy go with it, so a D1 outage serves nothing") {
  Cms t;
  REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body()).status == 200);
  REQUIRE(t.get("/v1/content").status == 200);
  REQUIRE(t.mesh.kv_value("CMS_CACHE", ss::cms::cache_key("bakery")));
  HttpReply disabled =
      t.mesh.request("cms", "DELETE", "/admin/tenants/bakery",
                     {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken}});
  REQUIRE(disabled.status == 200);
  CHECK(!t.mesh.kv_value("CMS_CACHE", ss::cms::cache_key("bakery")));
  CHECK(t.get("/v1/content").status == 401);  // D1 answers
  t.fail(true, false);                        // D1 down, KV up
  HttpReply outage = t.get("/v1/content");
  CHECK(outage.status == 503);
  CHECK(outage.body_json()["error"]["code"] == "service_unavailable");
  t.fail(true, true);
  CHECK(t.get("/v1/status").status == 503);
  // Another tenant is untouched.
  t.fail(false, false);
  CHECK(t.get("/v1/content", "auto-repair", kAutoToken).status == 200);
}

TEST_CASE("cms: zero lockout on a fresh isolate comes from the snapshot bundled into the worker") {
  Cms t;
  std::string hash = ss::native::sha256_hex(kAutoToken);
  json seeds{{"auto-repair",
              {{"tokenHash", hash},
               {"timezone", "Europe/London"},
               {"content",
                {{"hours",
                  {{"timezone", "Europe/London"},
                   {"weekly", {{"mon", {{{"open", "08:00"}, {"close", "17:00"}}}}}}}},
                 {"announcements", {{{"text", "Call ahead"}}}}}}}}};
  t.mesh.set_env("cms", ss::cms::kSeedsVar, seeds.dump());
  t.fail(true, true);
  HttpReply r =
      t.mesh.request("cms", "GET", "/v1/content", Mesh::tenant_headers("auto-repair", kAutoToken));
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["source"] == "fallback");
  CHECK(r.body_json()["hours"]["weekly"]["mon"][0]["open"] == "08:00");
  CHECK(r.body_json()["announcements"][0]["text"] == "Call ahead");
  json s = t.mesh
               .request("cms", "GET", "/v1/status?at=2026-06-01T12:00:00Z",
                        Mesh::tenant_headers("auto-repair", kAutoToken))
               .body_json();
  CHECK(s["open"] == true);  // 13:00 BST
  CHECK(s["source"] == "fallback");
  CHECK(
      t.mesh.request("cms", "GET", "/v1/content", Mesh::tenant_headers("auto-repair", kBakeryToken))
          .status == 401);
  CHECK(t.get("/v1/content").status == 503);  // the bakery has no bundled seed here
}

// A bundled seed is read as the SDK reads the manifest's snapshot (bindings/sdk/src/hours.js): hours
// naming no zone are in the seed's zone; hours with a bad range are left out as a whole.
TEST_CASE("cms: a bundled seed's hours without a zone are read in the seed's zone") {
  Cms t;
  auto seeded = [&](const json& hours, const char* zone) {
    json seeds{{"auto-repair",
                {{"tokenHash", ss::native::sha256_hex(kAutoToken)},
                 {"timezone", zone},
                 {"content", {{"hours", hours}}}}}};
    ss::cms::forget_all_remembered();
    t.mesh.set_env("cms", ss::cms::kSeedsVar, seeds.dump());
    return t.mesh
        .request("cms", "GET", "/v1/status?at=2026-06-01T07:30:00Z",  // a Monday
                 Mesh::tenant_headers("auto-repair", kAutoToken))
        .body_json();
  };
  t.fail(true, true);
  json weekly{{"mon", {{{"open", "08:00"}, {"close", "17:00"}}}}};
  json london = seeded(json{{"weekly", weekly}}, "Europe/London");  // 08:30 BST
  CHECK(london["open"] == true);
  CHECK(london["source"] == "fallback");
  CHECK(seeded(json{{"timezone", nullptr}, {"weekly", weekly}}, "Europe/London")["open"] == true);
  CHECK(seeded(json{{"weekly", weekly}}, "UTC")["open"] == false);  // 07:30 UTC
  // A zone of its own still wins; a bad range leaves the hours out (closed all week).
  CHECK(seeded(json{{"timezone", "Europe/Paris"}, {"weekly", weekly}}, "UTC")["open"] == true);
  json bad{{"mon", {{{"open", "08:00"}, {"close", "24:01"}}}}};
  json closed = seeded(json{{"weekly", bad}}, "Europe/London");
  CHECK(closed["open"] == false);
  CHECK(closed["nextChange"].is_null());
}

TEST_CASE("cms: Workers RPC getContent/getStatus run the same handlers with tenant auth") {
  Cms t;
  json ok =
      t.mesh.message("cms", json{{"op", "rpc"},
                                 {"method", "getContent"},
                                 {"args", {{{"tenantId", "bakery"}, {"token", kBakeryToken}}}}});
  CHECK(ok["ok"] == true);
  CHECK(ok["value"]["tenantId"] == "bakery");
  CHECK(ok["value"]["source"] == "d1");
  json status = t.mesh.message(
      "cms",
      json{{"op", "rpc"},
           {"method", "getStatus"},
           {"args", {{{"tenantId", "bakery"}, {"token", kBakeryToken}}, "2026-06-02T12:00:00Z"}}});
  CHECK(status["ok"] == true);
  CHECK(status["value"]["open"] == true);
  CHECK(status["value"]["nextChange"] == "2026-06-02T19:00:00Z");
  json wrong = t.mesh.message("cms", json{{"op", "rpc"},
                                          {"method", "getContent"},
                                          {"args", {{{"tenantId", "bakery"}, {"token", "nope"}}}}});
  CHECK(wrong["ok"] == false);
  CHECK(wrong["status"] == 401);
  CHECK(wrong["error"]["code"] == "unauthenticated_tenant");
}

TEST_CASE("cms: reads refuse a capability major they do not speak, after authentication") {
  Cms t;
  for (const char* path : {"/v1/content", "/v1/status"}) {
    CAPTURE(path);
    auto h = Mesh::tenant_headers("bakery", kBakeryToken);
    h["X-SiteSwarm-Capability-Version"] = "2.0.0";
    HttpReply v2 = t.mesh.request("cms", "GET", path, h);
    CHECK(v2.status == 400);
    CHECK(v2.body_json()["error"]["code"] == "unsupported_capability_version");
    // Again, with the content now in KV: still 400.
    CHECK(t.mesh.request("cms", "GET", path, h).status == 400);
    h["X-SiteSwarm-Capability-Version"] = "1.3.0";
    CHECK(t.mesh.request("cms", "GET", path, h).status == 200);
    // A bad token is the 401 whatever the version says.
    auto wrong = Mesh::tenant_headers("bakery", "nope");
    wrong["X-SiteSwarm-Capability-Version"] = "2.0.0";
    CHECK(t.mesh.request("cms", "GET", path, wrong).status == 401);
  }
  json rpc = t.mesh.message(
      "cms",
      json{{"op", "rpc"},
           {"method", "getContent"},
           {"args",
            {{{"tenantId", "bakery"}, {"token", kBakeryToken}, {"capabilityVersion", "2.0.0"}}}}});
  CHECK(rpc["ok"] == false);
  CHECK(rpc["status"] == 400);
  CHECK(rpc["error"]["code"] == "unsupported_capability_version");
}

TEST_CASE("cms: provisioning refuses an unknown time zone") {
  Cms t;
  HttpReply r = t.mesh.request("cms", "PUT", "/admin/tenants/mars",
                               {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                                {"Content-Type", "application/json"}},
                               json{{"token", "mars-token-0123456789"},
                                    {"adminToken", "mars-admin-0123456789"},
                                    {"config", {{"timezone", "Mars/Olympus"}}}}
                                   .dump());
  CHECK(r.status == 400);
  CHECK(r.body_json()["error"]["field"] == "config.timezone");
}

// ---- The isolate's kept answers and known tokens (docs/cms.md, "Kept answers").

TEST_CASE("cms: kept answers: a KV document written by another isolate is served at once") {
  Cms t;
  const std::string key = ss::cms::cache_key("bakery");
  REQUIRE(t.get("/v1/content").body_json()["source"] == "d1");
  for (int i = 0; i < 3; ++i) {  // parsed once, then the kept bodies
    json body = t.get("/v1/content").body_json();
    CHECK(body["source"] == "kv");
    CHECK(body["version"] == 0);
    CHECK(body["announcements"].size() == 1);
    CHECK(t.get("/v1/status").body_json()["open"] == false);  // Monday 08:00 EDT: closed
  }
  // Another isolate commits version 5 (Mondays 07:00–15:00, no announcements) and puts its
  // document; this isolate's copy and kept bodies still hold version 0, in the same second.
  auto text = t.mesh.kv_value("CMS_CACHE", key);
  REQUIRE(text);
  json doc = json::parse(*text);
  doc["content"]["version"] = 5;
  doc["content"]["hours"]["weekly"]["mon"] = json::array({{{"open", "07:00"}, {"close", "15:00"}}});
  doc["content"]["announcements"] = json::array();
  t.mesh.kv_set("CMS_CACHE", key, doc.dump());
  for (int i = 0; i < 2; ++i) {
    json body = t.get("/v1/content").body_json();
    CHECK(body["source"] == "kv");
    CHECK(body["version"] == 5);
    CHECK(body["announcements"] == json::array());
    json status = t.get("/v1/status").body_json();
    CHECK(status["open"] == true);
    CHECK(status["source"] == "kv");
    CHECK(status["nextChange"] == "2026-06-01T19:00:00Z");
  }
}

TEST_CASE("cms: kept answers never cross tenants") {
  Cms t;
  for (int i = 0; i < 3; ++i) {  // the bakery's bodies are kept
    CHECK(t.get("/v1/content").status == 200);
    CHECK(t.get("/v1/status").status == 200);
  }
  REQUIRE(t.get("/v1/content").body_json()["source"] == "kv");
  for (int i = 0; i < 3; ++i) {
    json other = t.get("/v1/content", "auto-repair", kAutoToken).body_json();
    CHECK(other["tenantId"] == "auto-repair");
    CHECK(other["hours"]["timezone"] == "Europe/London");
    CHECK(other["announcements"] == json::array());
    json status = t.get("/v1/status", "auto-repair", kAutoToken).body_json();
    CHECK(status["open"] == false);
    CHECK(status["nextChange"].is_null());  // no hours at all
  }
  // A token opens only its own tenant, kept bodies or not.
  CHECK(t.get("/v1/content", "bakery", kAutoToken).status == 401);
  CHECK(t.get("/v1/status", "bakery", kAutoToken).status == 401);
  CHECK(t.get("/v1/content", "auto-repair", kBakeryToken).status == 401);
  CHECK(t.get("/v1/status", "auto-repair", kBakeryToken).status == 401);
  json bakery = t.get("/v1/content").body_json();
  CHECK(bakery["tenantId"] == "bakery");
  CHECK(bakery["hours"]["timezone"] == "America/New_York");
}

TEST_CASE("cms: a kept /v1/status answer changes at its nextChange instant") {
  Cms t;
  t.mesh.now_ms = 1780426799000;  // 2026-06-02T18:59:59Z, Tuesday 14:59:59 EDT: open until 15:00
  REQUIRE(t.get("/v1/content").status == 200);  // fills KV
  for (int i = 0; i < 3; ++i) {
    json s = t.get("/v1/status").body_json();
    CHECK(s["open"] == true);
    CHECK(s["source"] == "kv");
    CHECK(s["nextChange"] == "2026-06-02T19:00:00Z");
  }
  t.mesh.now_ms += 999;  // 18:59:59.999: the same second
  CHECK(t.get("/v1/status").body_json()["open"] == true);
  t.mesh.now_ms += 1;  // 19:00:00Z
  json closed = t.get("/v1/status").body_json();
  CHECK(closed["open"] == false);
  CHECK(closed["reason"] == "closed");
  CHECK(closed["nextChange"] == "2026-06-06T12:00:00Z");  // Saturday 08:00 EDT
  // An explicit `at` is its own second.
  CHECK(t.get("/v1/status?at=2026-06-02T18:00:00Z").body_json()["open"] == true);
  CHECK(t.get("/v1/status").body_json()["open"] == false);
}

TEST_CASE("cms: HTTP /v1/status and RPC getStatus in one second compute the schedule once") {
  Cms t;
  auto rpc_status = [&t] {
    return t.mesh.message("cms",
                          json{{"op", "rpc"},
                               {"method", "getStatus"},
                               {"args", {{{"tenantId", "bakery"}, {"token", kBakeryToken}}}}});
  };
  t.get("/v1/content");  // the KV document read once: the copy is kept from here on
  REQUIRE(t.get("/v1/status").body_json()["source"] == "kv");
  const std::size_t before = ss::cms::status_computations();
  json http = t.get("/v1/status").body_json();
  json rpc = rpc_status();
  CHECK(rpc["ok"] == true);
  CHECK(rpc["value"] == http);
  CHECK(rpc_status()["value"] == http);
  CHECK(ss::cms::status_computations() == before);  // all three: the second's kept answer
  t.mesh.now_ms += 1000;
  CHECK(rpc_status()["ok"] == true);
  CHECK(ss::cms::status_computations() == before + 1);  // a new second, computed once
  CHECK(t.get("/v1/status").status == 200);
  CHECK(ss::cms::status_computations() == before + 1);
}

TEST_CASE("cms: a kept /v1/content answer changes when an announcement starts or ends") {
  Cms t;  // 2026-06-01T12:00:00Z
  HttpReply r = t.studio("POST", "/admin/v1/announcements",
                         json{{"text", "Ten seconds of fame"},
                              {"level", "info"},
                              {"startsAt", "2026-06-01T12:00:10Z"},
                              {"endsAt", "2026-06-01T12:00:20Z"}});
  REQUIRE(r.status == 201);
  auto announcements = [&t] {
    json body = t.get("/v1/content").body_json();
    CHECK(body["source"] == "kv");
    return body["announcements"].size();
  };
  CHECK(announcements() == 1);  // the seed's
  CHECK(announcements() == 1);
  t.mesh.now_ms += 9999;  // 12:00:09.999
  CHECK(announcements() == 1);
  t.mesh.now_ms += 1;  // 12:00:10
  CHECK(announcements() == 2);
  CHECK(announcements() == 2);
  t.mesh.now_ms += 9999;  // 12:00:19.999
  CHECK(announcements() == 2);
  t.mesh.now_ms += 1;  // 12:00:20
  CHECK(announcements() == 1);
  t.mesh.now_ms -= 5000;  // a clock that steps back is answered for its own instant
  CHECK(announcements() == 2);
}

static HttpReply operator_request(Cms& t, const std::string& method, const std::string& path,
                                  const json& body = json()) {
  return t.mesh.request("cms", method, path,
                        {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                         {"Content-Type", "application/json"}},
                        body.is_null() ? "" : body.dump());
}

TEST_CASE(
    "cms: a repeat token costs no crypto effect; wrong and rotated tokens are still refused") {
  Cms t;
  REQUIRE(t.get("/v1/content").status == 200);
  REQUIRE(t.get("/v1/content").status == 200);
  t.mesh.effect_kinds.clear();
  HttpReply hit = t.get("/v1/content");
  CHECK(hit.status == 200);
  CHECK(hit.body_json()["source"] == "kv");
  CHECK(t.mesh.effect_kinds == std::vector<std::string>{"kv.get"});  // no hash, no D1
  t.mesh.effect_kinds.clear();
  CHECK(t.get("/v1/content", "bakery", "wrong-token-000000000000").status == 401);
  CHECK(std::count(t.mesh.effect_kinds.begin(), t.mesh.effect_kinds.end(), "crypto.sha256") == 1);
  CHECK(t.get("/v1/content").status == 200);

  // The operator rotates the bakery's token: the old one is refused at once, the new one works.
  const std::string rotated = "bakery-rotated-token-0123456789abcdef";
  t.mesh.provision("bakery", rotated, kBakeryAdmin, bakery_cms_config(), "cms");
  CHECK(t.get("/v1/content").status == 401);
  CHECK(t.get("/v1/status").status == 401);
  for (int i = 0; i < 3; ++i) CHECK(t.get("/v1/content", "bakery", rotated).status == 200);
  CHECK(t.get("/v1/content").status == 401);
  // With D1 down the copy that answers still knows only the new token's hash.
  t.fail(true, false);
  HttpReply from_kv = t.get("/v1/content", "bakery", rotated);
  CHECK(from_kv.status == 200);
  CHECK(from_kv.body_json()["source"] == "kv");
  CHECK(t.get("/v1/content").status == 401);
  CHECK(t.get("/v1/status").status == 401);

  // Rotated again by a PUT that sends the token alone (the config is kept): the copies made for
  // the last token go all the same, so the old token is refused during a D1 outage too.
  t.fail(false, false);
  const std::string again = "bakery-rotated-again-0123456789abcdef";
  REQUIRE(operator_request(t, "PUT", "/admin/tenants/bakery", json{{"token", again}}).status ==
          200);
  t.fail(true, false);
  CHECK(t.get("/v1/content", "bakery", rotated).status != 200);
  t.fail(true, true);
  CHECK(t.get("/v1/content", "bakery", rotated).status != 200);
  t.fail(false, false);
  CHECK(t.get("/v1/content", "bakery", again).status == 200);
  CHECK(t.get("/v1/content", "bakery", again).body_json()["announcements"].size() == 1);
}

TEST_CASE("cms: a read from the kept copy with the tenant cache standing for D1 is replayable") {
  Cms t;  // 2026-06-01T12:00:00Z
  // First read: D1 answers (content and tenant row): not replayable.
  HttpReply first = t.get("/v1/content");
  REQUIRE(first.status == 200);
  CHECK(first.replay.is_null());
  const std::int64_t row_read_at = t.mesh.now_ms;  // the tenant row came from D1 just now
  REQUIRE(t.get("/v1/content").status == 200);
  t.mesh.now_ms += 10'000;
  HttpReply kept = t.get("/v1/content");
  REQUIRE(kept.status == 200);
  REQUIRE(kept.replay.is_object());
  // Until the cached tenant row's freshness ends (30 s after D1 gave it), not 30 s from now.
  const std::int64_t until = kept.replay["until"].get<std::int64_t>();
  CHECK(until == row_read_at + 30'000);
  // It names every header the run read: the tenant's id, token and capability version among them.
  std::vector<std::string> names = kept.replay["headers"].get<std::vector<std::string>>();
  for (const char* h :
       {"x-siteswarm-tenant-id", "x-siteswarm-tenant-token", "x-siteswarm-capability-version"}) {
    CHECK(std::find(names.begin(), names.end(), h) != names.end());
  }
  // /v1/status for now: until the end of this second; with `at`: as long as the row is fresh.
  HttpReply now = t.get("/v1/status");
  REQUIRE(now.replay.is_object());
  CHECK(now.replay["until"] == (t.mesh.now_ms / 1000 + 1) * 1000);
  HttpReply at = t.get("/v1/status?at=2026-06-02T18:00:00Z");
  REQUIRE(at.replay.is_object());
  CHECK(at.replay["until"] == until);

  // An announcement that starts in 10 s (at 12:00:20) caps the content answer's replay there.
  REQUIRE(t.studio("POST", "/admin/v1/announcements",
                   json{{"text", "Soon"}, {"level", "info"}, {"startsAt", "2026-06-01T12:00:20Z"}})
              .status == 201);
  REQUIRE(t.get("/v1/content").status == 200);  // the write's KV document, remembered
  HttpReply capped = t.get("/v1/content");
  REQUIRE(capped.replay.is_object());
  CHECK(capped.replay["until"] == 1780315220000);

  // Never replayable: an error, a read D1 answers because the tenant cache could not stand for it,
  // a read with D1 or KV down.
  CHECK(t.get("/v1/content", "bakery", "wrong-token-000000000000").replay.is_null());
  t.fail(false, true);  // KV down
  CHECK(t.get("/v1/content").replay.is_null());
  t.fail(true, false);      // D1 down, KV answers: the token is checked against the KV copy
  t.mesh.now_ms += 31'000;  // the cached tenant row is stale
  HttpReply d1_down = t.get("/v1/content");
  CHECK(d1_down.status == 200);
  CHECK(d1_down.replay.is_null());
}

TEST_CASE(
    "cms: a snapshot pushed through another isolate is not undone by this isolate's cached row") {
  Cms t;
  REQUIRE(t.get("/v1/content").body_json()["source"] == "d1");  // the tenant row is cached here
  REQUIRE(t.get("/v1/content").body_json()["hours"]["weekly"]["sat"].size() == 1);
  // Another isolate handles PUT /admin/tenants/bakery (Saturdays closed): D1's row changes and
  // the KV document is dropped; this isolate's tenant cache still holds the old row.
  json config = bakery_cms_config();
  config["fallback"]["hours"]["weekly"]["sat"] = json::array();
  t.mesh.db("CMS_DB").execute("UPDATE tenants SET config_json = ?1 WHERE tenant_id = 'bakery'",
                              json::array({config.dump()}));
  t.mesh.kv_delete("CMS_CACHE", ss::cms::cache_key("bakery"));
  t.mesh.now_ms += 5'000;  // the cached row is still fresh
  // The KV miss refills the document: from the snapshot D1 holds now, not the cached row's.
  CHECK(t.get("/v1/content").body_json()["hours"]["weekly"]["sat"] == json::array());
  t.mesh.now_ms += 60'000;  // long after the cache's 30 s
  for (int i = 0; i < 2; ++i) {
    json body = t.get("/v1/content").body_json();
    CHECK(body["source"] == "kv");
    CHECK(body["hours"]["weekly"]["sat"] == json::array());
  }
}

TEST_CASE("cms: /v1/status?at= before the zone data's window is refused, not answered wrongly") {
  Cms t;
  REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body()).status == 200);  // Mon 07:00–15:00
  // Monday 2006-03-20 11:30Z was 06:30 EST (DST began on 2 April then, not under today's rule on
  // 12 March): closed. The zone data only knows 2020 on, so it would say 07:30 EDT, open.
  HttpReply past = t.get("/v1/status?at=2006-03-20T11:30:00Z");
  CHECK(past.status == 400);
  CHECK(past.body_json()["error"]["field"] == "at");
  CHECK(past.body_json()["open"].is_null());
  // Inside the window it answers.
  CHECK(t.get("/v1/status?at=2020-01-06T12:30:00Z").body_json()["open"] == true);  // 07:30 EST
}

TEST_CASE(
    "cms: a read's KV refill that lands after a concurrent write does not bring back the old "
    "version") {
  Cms t;
  // A read misses KV and loads version 0 from D1; before its KV put lands, a Studio write commits
  // version 1 and puts its document. The read's put (version 0) then arrives last.
  bool fired = false;
  t.mesh.observe_effects = [&](const json& effects) {
    for (const json& e : effects) {
      if (fired || e["kind"] != "kv.put" ||
          e["value"].get<std::string>().find("\"version\":0") == std::string::npos) {
        continue;
      }
      fired = true;
      REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body()).status == 200);
    }
  };
  CHECK(t.get("/v1/content").body_json()["version"] == 0);  // answered as loaded: fine
  REQUIRE(fired);
  t.mesh.observe_effects = nullptr;
  for (int i = 0; i < 3; ++i) {
    json body = t.get("/v1/content").body_json();
    CHECK(body["version"] == 1);
    CHECK(body["hours"]["weekly"]["mon"].size() == 1);
  }
  t.mesh.now_ms += 3'600'000;  // an hour later: still
  CHECK(t.get("/v1/content").body_json()["version"] == 1);
}

// During an outage every read of a tenant without another copy is answered from the bundled seeds
// (CMS_FALLBACK_SEEDS: every tenant's snapshot, hundreds of them in one JSON text). They are parsed
// once per instance, and again only when the text changes.
TEST_CASE("cms: the bundled seeds are parsed once per instance, again when their text changes") {
  Cms t;
  auto seeds_with = [](const char* open, const char* text) {
    return json{
        {"auto-repair",
         {{"tokenHash", ss::native::sha256_hex(kAutoToken)},
          {"timezone", "Europe/London"},
          {"content",
           {{"hours",
             {{"timezone", "Europe/London"},
              {"weekly", {{"mon", {{{"open", open}, {"close", "17:00"}}}}}}}},
            {"announcements", {{{"text", text}}}}}}}},
        {"other",
         {{"tokenHash", ss::native::sha256_hex("other-token")}, {"content", json::object()}}}}
        .dump();
  };
  auto read = [&](const std::string& path, const std::string& token = kAutoToken) {
    return t.mesh.request("cms", "GET", path, Mesh::tenant_headers("auto-repair", token));
  };
  t.mesh.set_env("cms", ss::cms::kSeedsVar, seeds_with("08:00", "Call ahead"));
  t.fail(true, true);
  const std::size_t before = ss::cms::bundled_seed_parses();
  for (int i = 0; i < 3; ++i) {
    HttpReply content = read("/v1/content");
    REQUIRE(content.status == 200);
    CHECK(content.body_json()["source"] == "fallback");
    CHECK(content.body_json()["version"] == 0);
    CHECK(content.body_json()["announcements"][0]["text"] == "Call ahead");
    json status = read("/v1/status?at=2026-06-01T07:30:00Z").body_json();  // 08:30 BST, a Monday
    CHECK(status["open"] == true);
    CHECK(status["source"] == "fallback");
  }
  // A wrong token is still refused; a tenant without a seed is still 503.
  CHECK(read("/v1/content", kBakeryToken).status == 401);
  CHECK(t.get("/v1/content").status == 503);
  CHECK(ss::cms::bundled_seed_parses() - before == 1);

  // New seeds (a deploy, or a CMS_FALLBACK_SEEDS secret set): read at once, parsed once.
  t.mesh.set_env("cms", ss::cms::kSeedsVar, seeds_with("09:00", "New hours"));
  for (int i = 0; i < 2; ++i) {
    HttpReply content = read("/v1/content");
    REQUIRE(content.status == 200);
    CHECK(content.body_json()["hours"]["weekly"]["mon"][0]["open"] == "09:00");
    CHECK(content.body_json()["announcements"][0]["text"] == "New hours");
    CHECK(read("/v1/status?at=2026-06-01T07:30:00Z").body_json()["open"] == false);
  }
  CHECK(ss::cms::bundled_seed_parses() - before == 2);
  // Seeds that are not JSON serve nobody (503), also when asked again, and are not parsed again.
  t.mesh.set_env("cms", ss::cms::kSeedsVar, "{not json");
  CHECK(read("/v1/content").status == 503);
  CHECK(read("/v1/content").status == 503);
  CHECK(ss::cms::bundled_seed_parses() - before == 3);
  // No seeds at all: nothing to parse.
  t.mesh.set_env("cms", ss::cms::kSeedsVar, "");
  CHECK(read("/v1/content").status == 503);
  CHECK(ss::cms::bundled_seed_parses() - before == 3);
}

namespace {

// Runs `between` once, at the moment the cms core issues its first kv.put of bakery's document
// whose JSON holds `marker`: that put then lands after whatever `between` did.
void before_bakery_put(Cms& t, const std::string& marker, std::function<void()> between,
                       bool& fired) {
  t.mesh.observe_effects = [marker, between = std::move(between), &fired](const json& effects) {
    for (const json& e : effects) {
      if (fired || e["kind"] != "kv.put" || e["key"] != ss::cms::cache_key("bakery") ||
          e["value"].get<std::string>().find(marker) == std::string::npos) {
        continue;
      }
      fired = true;
      between();
    }
  };
}

// Runs `between` once, when the cms core issues a Studio write's batch (its first statement inserts
// the cms_versions row), before the batch is performed.
void before_commit(Cms& t, std::function<void()> between, bool& fired) {
  t.mesh.observe_effects = [between = std::move(between), &fired](const json& effects) {
    for (const json& e : effects) {
      if (fired || e["kind"] != "d1.batch" || !e["statements"].is_array() ||
          e["statements"].empty() ||
          ss::string_or(e["statements"][0], "sql", "").find("INSERT INTO cms_versions") ==
              std::string::npos) {
        continue;
      }
      fired = true;
      between();
    }
  };
}

}  // namespace

// Without If-Match a write that loses the race for its version is retried on fresh content, after a
// random pause: fifteen losses in a row still end in its 201; only a sixteenth is a 409.
TEST_CASE("cms: a write without If-Match is retried through fifteen lost races, not answered 409") {
  for (int losses : {15, 16}) {
    CAPTURE(losses);
    Cms t;
    auto written = [&] {
      return t.mesh.db("CMS_DB")
          .rows("SELECT id FROM cms_announcements WHERE text = 'Through the race'")
          .size();
    };
    int lost = 0;
    std::vector<std::int64_t> pauses;
    bool busy = false;  // the competing write's own batch is not one to lose
    t.mesh.observe_effects = [&](const json& effects) {
      for (const json& e : effects) {
        if (e["kind"] == "sleep") pauses.push_back(ss::int_or(e, "ms", -1));
        if (busy || lost >= losses || e["kind"] != "d1.batch" || !e["statements"].is_array() ||
            e["statements"].empty() ||
            ss::string_or(e["statements"][0], "sql", "").find("INSERT INTO cms_versions") ==
                std::string::npos) {
          continue;
        }
        busy = true;
        ++lost;
        REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body()).status == 200);
        busy = false;
      }
    };
    HttpReply r = t.studio("POST", "/admin/v1/announcements", json{{"text", "Through the race"}});
    t.mesh.observe_effects = nullptr;
    CHECK(lost == losses);
    // A random pause before each retry, none after the last loss: the n-th at most 10 · 2^(n−1) ms
    // (320 at most), and not all the same (random).
    REQUIRE(pauses.size() == 15);
    std::set<std::int64_t> distinct;
    for (std::size_t n = 1; n <= pauses.size(); ++n) {
      CAPTURE(n);
      CHECK(pauses[n - 1] >= 0);
      CHECK(pauses[n - 1] <= std::min<std::int64_t>(10LL << (n - 1), 320));
      distinct.insert(pauses[n - 1]);
    }
    CHECK(distinct.size() > 3);
    if (losses == 15) {
      CHECK(r.status == 201);
      CHECK(r.body_json()["version"] == 16);  // after the fifteen competing writes
      CHECK(written() == 1);
    } else {
      CHECK(r.status == 409);
      CHECK(r.body_json()["error"]["currentVersion"] == 16);
      CHECK(written() == 0);
    }
  }
}

// A read that D1 authenticated refills the KV document; the operator disables the tenant before the
// refill's put lands. The document (the tenant's token hash beside its content) must not outlive
// the disable: during a D1 outage it would still let the disabled tenant's token read.
TEST_CASE("cms: a read's KV refill that lands after the tenant is disabled does not keep it") {
  Cms t;
  REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body()).status == 200);  // version 1
  // KV lost the document (evicted, a failed put): the next read refills it from D1.
  t.mesh.kv_delete("CMS_CACHE", ss::cms::cache_key("bakery"));
  ss::cms::forget_all_remembered();
  bool fired = false;
  before_bakery_put(
      t, "\"version\":1",
      [&] { REQUIRE(operator_request(t, "DELETE", "/admin/tenants/bakery").status == 200); },
      fired);
  HttpReply read = t.get("/v1/content");
  t.mesh.observe_effects = nullptr;
  REQUIRE(fired);
  CHECK(read.status == 200);  // authenticated before the disable: answered as loaded
  CHECK(!t.mesh.kv_value("CMS_CACHE", ss::cms::cache_key("bakery")));
  CHECK(t.get("/v1/content").status == 401);  // D1 answers
  t.fail(true, false);                        // D1 down, KV up: nothing verifies the token
  HttpReply kv_up = t.get("/v1/content");
  CHECK(kv_up.status == 503);
  CHECK(kv_up.body_json()["error"]["code"] == "service_unavailable");
  t.fail(true, true);  // both down: nor does this isolate's copy
  CHECK(t.get("/v1/status").status == 503);
  // Another tenant is untouched.
  t.fail(false, false);
  CHECK(t.get("/v1/content", "auto-repair", kAutoToken).status == 200);
}

// The same race with a PUT /admin/tenants/{id} (a new token, a new snapshot) on a tenant without
// edits (version 0, whose content is the snapshot): the refill read the old row.
TEST_CASE(
    "cms: a read's KV refill that lands after a new token or snapshot (version 0) is not kept") {
  const std::string new_token = "bakery-rotated-token-0123456789abcdef";
  SUBCASE("a rotated token") {
    Cms t;
    bool fired = false;
    before_bakery_put(
        t, "\"version\":0",
        [&] {
          REQUIRE(operator_request(t, "PUT", "/admin/tenants/bakery",
                                   json{{"token", new_token}, {"config", bakery_cms_config()}})
                      .status == 200);
        },
        fired);
    CHECK(t.get("/v1/content").status == 200);  // authenticated with the old token before the PUT
    t.mesh.observe_effects = nullptr;
    REQUIRE(fired);
    // The old token's hash stays nowhere: refused with D1 up, and with D1 down.
    CHECK(t.get("/v1/content").status == 401);
    t.fail(true, false);
    CHECK(t.get("/v1/content").status != 200);
    t.fail(true, true);
    CHECK(t.get("/v1/content").status != 200);
    t.fail(false, false);
    json fresh = t.get("/v1/content", "bakery", new_token).body_json();
    CHECK(fresh["version"] == 0);
    t.fail(true, false);  // the new token's document is served during a D1 outage
    CHECK(t.get("/v1/content", "bakery", new_token).body_json()["source"] == "kv");
  }
  SUBCASE("a new snapshot") {
    Cms t;
    json config = bakery_cms_config();
    config["fallback"]["hours"]["weekly"]["sat"] = json::array();  // Saturdays closed now
    bool fired = false;
    before_bakery_put(
        t, "\"version\":0",
        [&] {
          REQUIRE(operator_request(t, "PUT", "/admin/tenants/bakery", json{{"config", config}})
                      .status == 200);
        },
        fired);
    CHECK(t.get("/v1/content").body_json()["hours"]["weekly"]["sat"].size() == 1);  // as loaded
    t.mesh.observe_effects = nullptr;
    REQUIRE(fired);
    for (int i = 0; i < 3; ++i) {
      json body = t.get("/v1/content").body_json();
      CHECK(body["version"] == 0);
      CHECK(body["hours"]["weekly"]["sat"] == json::array());
    }
    t.mesh.now_ms += 3'600'000;  // an hour later, past every cache: still the new snapshot
    CHECK(t.get("/v1/content").body_json()["hours"]["weekly"]["sat"] == json::array());
  }
}

// A Studio write authenticates (the tenant row, read from D1), loads the content, then commits its
// batch. The operator disables the tenant, or gives it another admin token, in between: the
// batch's guard (store.cpp kInsertVersion) refuses it as a whole, and the write answers as
// authentication would (401 unauthenticated_tenant), with nothing written, cached or emitted.
TEST_CASE("cms: a Studio write whose tenant is disabled after it authenticated does not commit") {
  struct Case {
    const char* name;
    std::function<void(Cms&)> between;
  };
  const Case cases[] = {
      {"the operator's DELETE, through this isolate",
       [](Cms& t) {
         REQUIRE(operator_request(t, "DELETE", "/admin/tenants/bakery").status == 200);
       }},
      // Another isolate's DELETE: D1 changes, this isolate still holds the row as enabled.
      {"a disable through another isolate",
       [](Cms& t) {
         t.mesh.db("CMS_DB").rows("UPDATE tenants SET enabled = 0 WHERE tenant_id = 'bakery'");
       }},
      {"a new admin token",
       [](Cms& t) {
         json body{{"adminToken", "bakery-new-admin-token-0123456789ab"},
                   {"config", bakery_cms_config()}};
         REQUIRE(operator_request(t, "PUT", "/admin/tenants/bakery", body).status == 200);
       }},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    Cms t;
    REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body()).status == 200);  // version 1
    const std::int64_t versions = t.rows("cms_versions");
    const std::int64_t announcements = t.rows("cms_announcements");
    const std::size_t published = t.events("cms.announcement_published").size();
    const auto kv_before = t.mesh.kv_value("CMS_CACHE", ss::cms::cache_key("bakery"));
    bool fired = false;
    before_commit(
        t, [&] { c.between(t); }, fired);
    HttpReply r = t.studio("POST", "/admin/v1/announcements", json{{"text", "After the disable"}});
    t.mesh.observe_effects = nullptr;
    REQUIRE(fired);
    CHECK(r.status == 401);
    CHECK(r.body_json()["error"]["code"] == "unauthenticated_tenant");
    CHECK(t.rows("cms_versions") == versions);
    CHECK(t.rows("cms_announcements") == announcements);
    CHECK(t.mesh.db("CMS_DB").rows("SELECT version FROM cms_state")[0]["version"] == 1);
    CHECK(t.events("cms.announcement_published").size() == published);
    auto kv_after = t.mesh.kv_value("CMS_CACHE", ss::cms::cache_key("bakery"));
    CHECK((!kv_after || kv_after == kv_before));  // never the refused write's document
    CHECK(t.studio("GET", "/admin/v1/content").status == 401);
    // The public read too, at once: this isolate forgot the row its write's authentication cached
    // (a disable through another isolate would otherwise stand here for the cache's 30 s).
    if (name != "a new admin token") CHECK(t.get("/v1/content").status == 401);
  }
  // A write that loses the race for its version to another writer is still a 409, not a 401.
  Cms t;
  bool fired = false;
  before_commit(
      t,
      [&] {
        REQUIRE(t.studio("PUT", "/admin/v1/hours", hours_body("Europe/Paris")).status == 200);
      },
      fired);
  HttpReply lost = t.studio("POST", "/admin/v1/announcements", json{{"text", "Second"}},
                            {{"If-Match", "\"0\""}});
  t.mesh.observe_effects = nullptr;
  REQUIRE(fired);
  CHECK(lost.status == 409);
  CHECK(lost.body_json()["error"]["currentVersion"] == 1);
}

TEST_CASE("cms: an override on the last day the zone data covers, 2099-12-31, is taken") {
  Cms t;
  HttpReply far = t.studio("POST", "/admin/v1/overrides",
                           json{{"from", "2099-12-31"}, {"closed", true}, {"message", "Far"}});
  CHECK(far.status == 201);
  json status = t.get("/v1/status?at=2099-12-31T12:00:00Z").body_json();
  CHECK(status["open"] == false);
  CHECK(status["reason"] == "override");
}
