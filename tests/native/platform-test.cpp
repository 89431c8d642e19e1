// Platform routes every worker shares, through the native mesh: health, provisioning, tenant and
// operator authentication, diagnostics crossing a service binding, and the contract's error shapes.
#include "tests/native/harness.h"
#include "tests/native/test_support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using ss::json;
using ss::native::Mesh;
using ss::test::check_error;

namespace {
const std::map<std::string, std::string> kOperator = {
    {"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
    {"Content-Type", "application/json"}};
const char* kWorkers[] = {"leads", "cms", "monitoring", "analytics", "events"};
const char* kDbs[] = {"LEADS_DB", "CMS_DB", "MONITORING_DB", "ANALYTICS_DB", "EVENTS_DB"};

}  // namespace

TEST_CASE("every worker answers /health with its wrangler name and version") {
  Mesh mesh;
  const std::map<std::string, std::string> names = {
      {"leads", "siteswarm-leads-service"},
      {"cms", "siteswarm-cms-service"},
      {"monitoring", "siteswarm-synthetic-monitoring"},
      {"analytics", "siteswarm-analytics-service"},
      {"events", "siteswarm-events-service"}};
  for (const auto& [worker, service] : names) {
    auto r = mesh.request(worker, "GET", "/health");
    CHECK(r.status == 200);
    json body = r.body_json();
    CHECK(body["ok"] == true);
    CHECK(body["service"] == service);
    CHECK(body["version"] == "0.1.0");
  }
}

TEST_CASE("operator provisioning: create, update, read without secrets, disable") {
  Mesh mesh;
  json body{{"token", "bakery-token-0123456789"},
            {"adminToken", "bakery-admin-0123456789"},
            {"config", {{"storeSubmissions", true}}}};
  auto created = mesh.request("leads", "PUT", "/admin/tenants/bakery", kOperator, body.dump());
  CHECK(created.status == 201);
  CHECK(created.body_json()["tenantId"] == "bakery");
  CHECK(created.body_json()["config"]["storeSubmissions"] == true);

  auto updated = mesh.request("leads", "PUT", "/admin/tenants/bakery", kOperator,
                              json{{"config", {{"storeSubmissions", false}}}}.dump());
  CHECK(updated.status == 200);
  auto got = mesh.request("leads", "GET", "/admin/tenants/bakery", kOperator);
  CHECK(got.status == 200);
  CHECK(got.body_json()["config"]["storeSubmissions"] == false);
  CHECK(got.body.find("token") == std::string::npos);  // neither secrets nor their digests

  // Only digests are stored, and the token kept its value across the config-only update.
  json rows = mesh.db("LEADS_DB").rows("SELECT token_hash, admin_token_hash FROM tenants");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["token_hash"] == ss::native::sha256_hex("bakery-token-0123456789"));
  CHECK(rows[0]["admin_token_hash"] == ss::native::sha256_hex("bakery-admin-0123456789"));

  auto disabled = mesh.request("leads", "DELETE", "/admin/tenants/bakery", kOperator);
  CHECK(disabled.status == 200);
  CHECK(disabled.body_json()["enabled"] == false);
  auto whoami = mesh.request("leads", "GET", "/v1/tenant",
                             Mesh::tenant_headers("bakery", "bakery-token-0123456789"));
  check_error(whoami, 401, "unauthenticated_tenant");
  check_error(mesh.request("leads", "DELETE", "/admin/tenants/nobody", kOperator), 404,
              "not_found");
}

TEST_CASE("a PUT without config keeps the stored one: rotating a token resets nothing") {
  Mesh mesh;
  json leads_config{{"storeSubmissions", false}, {"fields", {"budget"}}};
  json monitors{
      {"monitors", {{{"id", "home"}, {"url", "https://bakery.example/"}, {"enabled", true}}}}};
  auto manifest_monitors = [&] {
    return mesh.db("MONITORING_DB")
        .rows("SELECT monitor_id FROM monitors WHERE tenant_id = 'bakery'")
        .size();
  };
  for (const auto& entry : std::vector<std::pair<std::string, json>>{{"leads", leads_config},
                                                                     {"monitoring", monitors}}) {
    const std::string& worker = entry.first;
    const json& config = entry.second;
    CAPTURE(worker);
    json first{{"token", "bakery-token-0123456789"},
               {"adminToken", "bakery-admin-0123456789"},
               {"config", config}};
    REQUIRE(mesh.request(worker, "PUT", "/admin/tenants/bakery", kOperator, first.dump()).status ==
            201);
    // The token rotated, nothing else sent: the config (and what it made) stays as it was.
    auto rotated = mesh.request(worker, "PUT", "/admin/tenants/bakery", kOperator,
                                json{{"token", "bakery-token-rotated-0123"}}.dump());
    CHECK(rotated.status == 200);
    CHECK(rotated.body_json()["config"] == config);
    CHECK(mesh.request(worker, "GET", "/admin/tenants/bakery", kOperator).body_json()["config"] ==
          config);
    CHECK(mesh.request(worker, "GET", "/v1/tenant",
                       Mesh::tenant_headers("bakery", "bakery-token-rotated-0123"))
              .status == 200);
    if (worker == "monitoring") CHECK(manifest_monitors() == 1);  // before: deleted
    // Re-enabled after a disable without a config: still the stored one.
    REQUIRE(mesh.request(worker, "DELETE", "/admin/tenants/bakery", kOperator).status == 200);
    REQUIRE(mesh.request(worker, "PUT", "/admin/tenants/bakery", kOperator, "{}").status == 200);
    CHECK(mesh.request(worker, "GET", "/admin/tenants/bakery", kOperator).body_json()["config"] ==
          config);
    if (worker == "monitoring") CHECK(manifest_monitors() == 1);
    // An explicit config still replaces it.
    auto emptied = mesh.request(worker, "PUT", "/admin/tenants/bakery", kOperator,
                                json{{"config", json::object()}}.dump());
    CHECK(emptied.status == 200);
    CHECK(emptied.body_json()["config"] == json::object());
  }
  CHECK(manifest_monitors() == 0);  // the empty config declares none
}

TEST_CASE("provisioning refuses bad input with the contract's errors and writes nothing") {
  Mesh mesh;
  for (std::size_t i = 0; i < 5; ++i) {
    const std::string w = kWorkers[i];
    check_error(mesh.request(w, "PUT", "/admin/tenants/bakery", {}, "{}"), 401, "unauthorized");
    check_error(
        mesh.request(w, "PUT", "/admin/tenants/bakery",
                     {{"Authorization", "Bearer wrong"}, {"Content-Type", "application/json"}},
                     "{}"),
        401, "unauthorized");
    check_error(mesh.request(w, "PUT", "/admin/tenants/Bad_Id", kOperator, "{}"), 400,
                "invalid_request");
    check_error(mesh.request(w, "PUT", "/admin/tenants/bakery", kOperator, "{not json"), 400,
                "invalid_json");
    ss::native::HttpReply plain =
        mesh.request(w, "PUT", "/admin/tenants/bakery",
                     {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                      {"Content-Type", "text/plain"}},
                     "{}");
    check_error(plain, 415, "unsupported_media_type");
    CHECK(plain.body_json()["error"]["field"] == "Content-Type");  // the header, named
    CHECK(plain.body_json()["error"]["fields"].contains("Content-Type"));
    // A new tenant without its secrets: each missing one named.
    ss::native::HttpReply bare = mesh.request(w, "PUT", "/admin/tenants/bakery", kOperator,
                                              json{{"config", json::object()}}.dump());
    check_error(bare, 400, "invalid_request");
    CHECK(bare.body_json()["error"]["field"] == "token");
    CHECK(bare.body_json()["error"]["fields"].size() == 2);
    CHECK(bare.body_json()["error"]["fields"].contains("adminToken"));
    ss::native::HttpReply half = mesh.request(w, "PUT", "/admin/tenants/bakery", kOperator,
                                              json{{"token", "bakery-token"}}.dump());
    check_error(half, 400, "invalid_request");
    CHECK(half.body_json()["error"]["fields"] == json{{"adminToken", "a new tenant needs it"}});
    check_error(mesh.request(w, "PUT", "/admin/tenants/bakery", kOperator,
                             json{{"token", ""}, {"adminToken", "x"}}.dump()),
                400, "invalid_request");
    check_error(mesh.request(w, "PUT", "/admin/tenants/bakery", kOperator,
                             json{{"token", std::string(513, 't')}, {"adminToken", "x"}}.dump()),
                400, "invalid_request");
    check_error(
        mesh.request(w, "PUT", "/admin/tenants/bakery", kOperator, std::string(70 * 1024, ' ')),
        413, "payload_too_large");
    check_error(mesh.request(w, "PUT", "/admin/tenants/bakery", kOperator, "[1]"), 400,
                "invalid_request");
    CHECK(mesh.db(kDbs[i]).rows("SELECT * FROM tenants").empty());
    // The contract sets no minimum length: short, readable secrets are taken (only digests kept).
    ss::native::HttpReply created =
        mesh.request(w, "PUT", "/admin/tenants/acme", kOperator,
                     json{{"token", "acme-token"}, {"adminToken", "acme-admin"}}.dump());
    CHECK(created.status == 201);
    CHECK(mesh.db(kDbs[i]).rows("SELECT * FROM tenants WHERE token_hash = 'acme-token'").empty());
    // The site's token may not also be the admin token: sent together, or one alone equal to the
    // stored other. Nothing changes.
    for (const json& body : {json{{"token", "same"}, {"adminToken", "same"}},
                             json{{"token", "acme-admin"}}, json{{"adminToken", "acme-token"}}}) {
      CAPTURE(body.dump());
      auto refused = mesh.request(w, "PUT", "/admin/tenants/acme", kOperator, body.dump());
      check_error(refused, 400, "invalid_request");
      CHECK(refused.body_json()["error"]["field"] == "adminToken");
    }
    CHECK(mesh.request(w, "GET", "/v1/tenant", Mesh::tenant_headers("acme", "acme-token")).status ==
          200);
    // A misspelt top-level key is refused by name, not taken as an update that keeps the old
    // secret; so are the GET view's read-only keys.
    for (const char* key : {"tokne", "enabled", "tenantId"}) {
      auto refused = mesh.request(w, "PUT", "/admin/tenants/acme", kOperator,
                                  json{{key, "rotated"}, {"config", json::object()}}.dump());
      check_error(refused, 400, "invalid_request");
      CHECK(refused.body_json()["error"]["field"] == key);
    }
    CHECK(mesh.request(w, "GET", "/v1/tenant", Mesh::tenant_headers("acme", "acme-token")).status ==
          200);
    // A misspelt config key is refused by name where the worker reads a config (the ledger keeps
    // none).
    if (w != "events") {
      json typo{{"timeZone", "Europe/Paris"}};
      auto refused =
          mesh.request(w, "PUT", "/admin/tenants/acme", kOperator, json{{"config", typo}}.dump());
      check_error(refused, 400, "invalid_request");
      CHECK(refused.body_json()["error"]["field"] == "config.timeZone");
    }
  }
}

TEST_CASE("tenant authentication: missing headers, unknown tenant, wrong token, bad version") {
  Mesh mesh;
  mesh.provision("bakery", "bakery-token-0123456789", "bakery-admin-0123456789");
  auto ok = mesh.request("cms", "GET", "/v1/tenant",
                         Mesh::tenant_headers("bakery", "bakery-token-0123456789"));
  CHECK(ok.status == 200);
  CHECK(ok.body_json() == json{{"tenantId", "bakery"}, {"capabilityVersion", "1.0.0"}});

  // A 401 names its scheme; API answers are not for shared caches.
  auto missing = mesh.request("cms", "GET", "/v1/tenant");
  check_error(missing, 401, "unauthenticated_tenant");
  CHECK(missing.header("www-authenticate") == "Bearer");
  CHECK(missing.header("cache-control") == "no-store");
  CHECK(ok.header("cache-control") == "no-store");
  check_error(mesh.request("cms", "GET", "/v1/tenant", {{"X-SiteSwarm-Tenant-Id", "bakery"}}), 401,
              "unauthenticated_tenant");
  check_error(mesh.request("cms", "GET", "/v1/tenant",
                           Mesh::tenant_headers("auto-repair", "bakery-token-0123456789")),
              401, "unauthenticated_tenant");
  check_error(
      mesh.request("cms", "GET", "/v1/tenant", Mesh::tenant_headers("bakery", "wrong-token")), 401,
      "unauthenticated_tenant");
  check_error(mesh.request("cms", "GET", "/v1/tenant",
                           Mesh::tenant_headers("BAKERY!", "bakery-token-0123456789")),
              401, "unauthenticated_tenant");
  auto headers = Mesh::tenant_headers("bakery", "bakery-token-0123456789");
  headers["X-SiteSwarm-Capability-Version"] = "2.0.0";
  auto unsupported = mesh.request("cms", "GET", "/v1/tenant", headers);
  check_error(unsupported, 400, "unsupported_capability_version");
  CHECK(unsupported.body_json()["error"]["fields"]["X-SiteSwarm-Capability-Version"].is_string());
  // The admin token is not a tenant token.
  check_error(mesh.request("cms", "GET", "/v1/tenant",
                           Mesh::tenant_headers("bakery", "bakery-admin-0123456789")),
              401, "unauthenticated_tenant");
}

TEST_CASE(
    "the capability version: tenant admin calls refuse an unknown major too; each version a "
    "tenant calls with is logged once per instance") {
  Mesh mesh;
  for (const char* worker : {"leads", "cms", "monitoring", "analytics"}) {
    mesh.provision("bakery", "bakery-token-0123456789", "bakery-admin-0123456789", json::object(),
                   worker);
  }
  auto admin = [](const std::string& version) {
    std::map<std::string, std::string> h{{"X-SiteSwarm-Tenant-Id", "bakery"},
                                         {"Authorization", "Bearer bakery-admin-0123456789"}};
    if (!version.empty()) h["X-SiteSwarm-Capability-Version"] = version;
    return h;
  };
  const std::vector<std::pair<std::string, std::string>> admin_reads = {
      {"leads", "/api/leads"},
      {"cms", "/admin/v1/content"},
      {"monitoring", "/admin/monitors"},
      {"analytics", "/dashboard"}};
  for (const auto& read : admin_reads) {
    const std::string& worker = read.first;
    const std::string& path = read.second;
    CAPTURE(worker);
    check_error(mesh.request(worker, "GET", path, admin("2.0.0")), 400,
                "unsupported_capability_version");
    CHECK(mesh.request(worker, "GET", path, admin("1.4.2")).status == 200);
    CHECK(mesh.request(worker, "GET", path, admin("")).status == 200);
    // A bad admin token is still the 401, whatever the version says.
    auto wrong = admin("2.0.0");
    wrong["Authorization"] = "Bearer nope";
    check_error(mesh.request(worker, "GET", path, wrong), 401, "unauthenticated_tenant");
  }
  // Logged: the first call with a version, not every call (a log line per request would end the
  // replay of cms answers); another version is logged again.
  auto tenant = Mesh::tenant_headers("bakery", "bakery-token-0123456789");
  tenant["X-SiteSwarm-Capability-Version"] = "1.7.0";
  auto first = mesh.request("leads", "GET", "/v1/tenant", tenant);
  REQUIRE(first.status == 200);
  CHECK(first.logs ==
        std::vector<std::string>{"tenant bakery calls with capability version 1.7.0"});
  CHECK(mesh.request("leads", "GET", "/v1/tenant", tenant).logs.empty());
  tenant["X-SiteSwarm-Capability-Version"] = "1.8.0";
  CHECK(mesh.request("leads", "GET", "/v1/tenant", tenant).logs ==
        std::vector<std::string>{"tenant bakery calls with capability version 1.8.0"});
}

TEST_CASE("every tenant-auth failure answers the same 401; the operator token is any length") {
  Mesh mesh;
  mesh.provision("bakery", "bakery-token-0123456789", "bakery-admin-0123456789");
  mesh.provision("gone", "gone-token-0123456789ab", "gone-admin-0123456789ab");
  REQUIRE(mesh.request("cms", "DELETE", "/admin/tenants/gone", kOperator).status == 200);
  // Unknown tenant, wrong token, disabled tenant, malformed id, missing token: one answer, so a
  // tenant id cannot be told to exist.
  std::vector<std::map<std::string, std::string>> failures = {
      Mesh::tenant_headers("no-such-tenant", "bakery-token-0123456789"),
      Mesh::tenant_headers("bakery", "wrong-token"),
      Mesh::tenant_headers("gone", "gone-token-0123456789ab"),
      Mesh::tenant_headers("BAKERY!", "bakery-token-0123456789"),
      {{"X-SiteSwarm-Tenant-Id", "bakery"}},
      {}};
  std::set<std::string> bodies;
  for (const auto& h : failures) {
    auto r = mesh.request("cms", "GET", "/v1/tenant", h);
    CHECK(r.status == 401);
    bodies.insert(r.body);
  }
  CHECK(bodies.size() == 1);
  CHECK(json::parse(*bodies.begin())["error"]["code"] == "unauthenticated_tenant");
  // The tenant admin API likewise: unknown tenant and bad admin token read the same.
  auto admin = [](const std::string& tenant, const std::string& token) {
    return std::map<std::string, std::string>{{"X-SiteSwarm-Tenant-Id", tenant},
                                              {"Authorization", "Bearer " + token}};
  };
  auto unknown = mesh.request("leads", "GET", "/api/leads", admin("no-such", "x-admin-token"));
  auto wrong = mesh.request("leads", "GET", "/api/leads", admin("bakery", "x-admin-token"));
  auto missing = mesh.request("leads", "GET", "/api/leads", {{"X-SiteSwarm-Tenant-Id", "bakery"}});
  CHECK(unknown.status == 401);
  CHECK(unknown.body == wrong.body);
  CHECK(unknown.body == missing.body);
  CHECK(mesh.request("leads", "GET", "/api/leads", admin("bakery", "bakery-admin-0123456789"))
            .status == 200);
  // Operator: a token of another length, a prefix, a longer one — all the same 401.
  std::set<std::string> operator_bodies;
  for (std::string token :
       {"x", "test-admin-toke", "test-admin-token-and-more", "TEST-ADMIN-TOKEN"}) {
    auto r =
        mesh.request("cms", "GET", "/admin/diagnostics", {{"Authorization", "Bearer " + token}});
    CHECK(r.status == 401);
    operator_bodies.insert(r.body);
  }
  CHECK(operator_bodies.size() == 1);
  CHECK(mesh.request("cms", "GET", "/admin/diagnostics", kOperator).status == 200);
  // The scheme is case-insensitive (RFC 9110 §11.1), and more than one space may follow it; the
  // token itself is compared exactly.
  const std::string op_token = kOperator.at("Authorization").substr(7);
  for (std::string scheme : {"bearer ", "BEARER ", "Bearer   "}) {
    CAPTURE(scheme);
    CHECK(mesh.request("cms", "GET", "/admin/diagnostics", {{"Authorization", scheme + op_token}})
              .status == 200);
    std::map<std::string, std::string> tenant_admin = {
        {"X-SiteSwarm-Tenant-Id", "bakery"}, {"Authorization", scheme + "bakery-admin-0123456789"}};
    CHECK(mesh.request("leads", "GET", "/api/leads", tenant_admin).status == 200);
  }
  for (std::string bad : {std::string("Bearer"), std::string("Bearer "), "Bearerx " + op_token,
                          "Basic " + op_token, "Bearer " + op_token + "x"}) {
    CAPTURE(bad);
    CHECK(mesh.request("cms", "GET", "/admin/diagnostics", {{"Authorization", bad}}).status == 401);
  }
}

TEST_CASE("diagnostics awaits D1, KV and a service call concurrently, crossing to another core") {
  Mesh mesh;
  mesh.provision("bakery", "bakery-token-0123456789", "bakery-admin-0123456789", {}, "cms");
  mesh.effect_kinds.clear();
  auto r = mesh.request("cms", "GET", "/admin/diagnostics", kOperator);
  CHECK(r.status == 200);
  json body = r.body_json();
  CHECK(body["ok"] == true);
  CHECK(body["checks"]["d1"]["tenants"] == 1);
  CHECK(body["checks"]["kv"]["ok"] == true);
  CHECK(body["checks"]["services"]["EVENTS_SERVICE"]["service"] == "siteswarm-events-service");
  // The operator token is checked in the core, with no effect (constant_time_equal); then one
  // batch carried the D1 query, the KV write and the service call together.
  REQUIRE(mesh.effect_kinds.size() >= 3);
  std::vector<std::string> first(mesh.effect_kinds.begin(), mesh.effect_kinds.begin() + 3);
  CHECK(first == std::vector<std::string>{"d1.first", "kv.put", "service"});
  check_error(mesh.request("cms", "GET", "/admin/diagnostics"), 401, "unauthorized");
  // A dependency down: 503 with the contract's error object, the checks beside it.
  mesh.fail_effect = [](const json& effect) { return effect.value("kind", "") == "kv.put"; };
  auto down = mesh.request("cms", "GET", "/admin/diagnostics", kOperator);
  check_error(down, 503, "dependency_unavailable");
  CHECK(down.body_json()["ok"] == false);
  CHECK(down.body_json()["checks"]["kv"]["ok"] == false);
  CHECK(down.body_json()["checks"]["d1"]["ok"] == true);
}

TEST_CASE(
    "test routes exist only with test hooks on: without them 404 for every method, no Allow") {
  Mesh mesh;
  // Each worker's test routes, with the method each takes when hooks are on.
  const std::vector<std::array<const char*, 3>> routes = {
      {"leads", "GET", "/__test/trap"},
      {"events", "POST", "/__test/programs"},
      {"monitoring", "POST", "/__test/tick"},
      {"cms", "POST", "/__test/zone"},
      {"analytics", "POST", "/__test/maintenance"}};
  for (const auto& route : routes) {
    const std::string path = route[2];
    CAPTURE(path);
    for (const char* asked : {"GET", "POST", "PUT", "DELETE"}) {
      CAPTURE(asked);
      auto reply =
          mesh.request(route[0], asked, path, {{"Content-Type", "application/json"}}, "{}");
      check_error(reply, 404, "not_found");
      CHECK(reply.header("allow").empty());
    }
  }
  // With hooks on, the route is there: its own method runs, another is a 405 naming it.
  mesh.set_env("monitoring", "SITESWARM_TEST_HOOKS", "1");
  auto wrong = mesh.request("monitoring", "GET", "/__test/tick");
  check_error(wrong, 405, "method_not_allowed");
  CHECK(wrong.header("allow") == "POST");
  check_error(mesh.request("monitoring", "POST", "/__test/tick",
                           {{"Content-Type", "application/json"}}, R"({"tick":-1})"),
              400, "invalid_request");
}

TEST_CASE(
    "tenant tokens are checked against the instance's cached row: D1 read once per 30 s, "
    "a new token at once, revocation through this instance at once, elsewhere within 30 s") {
  Mesh mesh;
  mesh.provision("bakery", ss::test::kBakeryToken, ss::test::kBakeryAdmin, json::object(), "leads");
  int tenant_reads = 0;
  mesh.observe_effects = [&](const json& effects) {
    for (const json& e : effects) {
      if (e.value("kind", "").rfind("d1.", 0) == 0 &&
          e.value("sql", "").find("FROM tenants") != std::string::npos) {
        ++tenant_reads;
      }
    }
  };
  auto whoami = [&](const std::string& token) {
    return mesh.request("leads", "GET", "/v1/tenant", Mesh::tenant_headers("bakery", token));
  };
  for (int i = 0; i < 5; ++i) CHECK(whoami(ss::test::kBakeryToken).status == 200);
  CHECK(tenant_reads == 1);

  // A wrong token is never answered from the cache: D1 decides every refusal.
  check_error(whoami("bakery-token-wrong-000000"), 401, "unauthenticated_tenant");
  CHECK(tenant_reads == 2);
  CHECK(whoami(ss::test::kBakeryToken).status == 200);
  CHECK(tenant_reads == 2);

  // The cached row lives kTenantCacheTtlMs (30 s) from when D1 was asked.
  mesh.now_ms += 29'999;
  CHECK(whoami(ss::test::kBakeryToken).status == 200);
  CHECK(tenant_reads == 2);
  mesh.now_ms += 1;
  CHECK(whoami(ss::test::kBakeryToken).status == 200);
  CHECK(tenant_reads == 3);

  // A rotation made elsewhere (another isolate, written straight into D1): the new token works at
  // once (a mismatch reads D1); the old one keeps working until the cached row is 30 s old.
  const std::string rotated = "bakery-token-rotated-0001";
  mesh.db("LEADS_DB")
      .execute("UPDATE tenants SET token_hash = ?1 WHERE tenant_id = 'bakery'",
               json::array({ss::native::sha256_hex(rotated)}));
  CHECK(whoami(rotated).status == 200);
  check_error(whoami(ss::test::kBakeryToken), 401, "unauthenticated_tenant");
  mesh.db("LEADS_DB")
      .execute("UPDATE tenants SET token_hash = ?1 WHERE tenant_id = 'bakery'",
               json::array({ss::native::sha256_hex(ss::test::kBakeryToken)}));
  CHECK(whoami(ss::test::kBakeryToken).status == 200);  // re-read: the row matches again
  mesh.db("LEADS_DB")
      .execute("UPDATE tenants SET enabled = 0 WHERE tenant_id = 'bakery'", json::array());
  CHECK(whoami(ss::test::kBakeryToken).status == 200);  // the documented lag, at most 30 s
  mesh.now_ms += 30'000;
  check_error(whoami(ss::test::kBakeryToken), 401, "unauthenticated_tenant");

  // Through this instance's operator route, a disable takes effect on the next request.
  mesh.db("LEADS_DB")
      .execute("UPDATE tenants SET enabled = 1 WHERE tenant_id = 'bakery'", json::array());
  CHECK(whoami(ss::test::kBakeryToken).status == 200);
  auto disabled = mesh.request("leads", "DELETE", "/admin/tenants/bakery", kOperator);
  CHECK(disabled.status == 200);
  check_error(whoami(ss::test::kBakeryToken), 401, "unauthenticated_tenant");

  // Tenant admin tokens always read D1.
  mesh.request(
      "leads", "PUT", "/admin/tenants/bakery", kOperator,
      json{{"token", ss::test::kBakeryToken}, {"adminToken", ss::test::kBakeryAdmin}}.dump());
  int before = tenant_reads;
  std::map<std::string, std::string> admin = {
      {"X-SiteSwarm-Tenant-Id", "bakery"},
      {"Authorization", std::string("Bearer ") + ss::test::kBakeryAdmin}};
  CHECK(mesh.request("leads", "GET", "/api/leads", admin).status == 200);
  CHECK(mesh.request("leads", "GET", "/api/leads", admin).status == 200);
  CHECK(tenant_reads == before + 2);
}

TEST_CASE(
    "a tenant token that authenticated before costs no hash; wrong, rotated and revoked tokens are "
    "still refused") {
  Mesh mesh;
  mesh.provision("bakery", ss::test::kBakeryToken, ss::test::kBakeryAdmin, json::object(),
                 "analytics");
  auto hashes = [&] {
    return std::count(mesh.effect_kinds.begin(), mesh.effect_kinds.end(), "crypto.sha256");
  };
  auto whoami = [&](const std::string& token) {
    return mesh.request("analytics", "GET", "/v1/tenant", Mesh::tenant_headers("bakery", token));
  };
  // The first request hashes the token (beside D1's read of the row); the repeats do not, and with
  // the row in the tenant cache they perform no effect at all.
  mesh.effect_kinds.clear();
  CHECK(whoami(ss::test::kBakeryToken).status == 200);
  CHECK(hashes() == 1);
  mesh.effect_kinds.clear();
  for (int i = 0; i < 3; ++i) CHECK(whoami(ss::test::kBakeryToken).status == 200);
  CHECK(mesh.effect_kinds.empty());

  // A wrong token is hashed and refused, and does not displace the known one.
  mesh.effect_kinds.clear();
  check_error(whoami("bakery-token-wrong-000000"), 401, "unauthenticated_tenant");
  CHECK(hashes() == 1);
  mesh.effect_kinds.clear();
  CHECK(whoami(ss::test::kBakeryToken).status == 200);
  CHECK(mesh.effect_kinds.empty());

  // Past the cached row's 30 s the known digest still saves the hash: D1's row is read alone.
  mesh.now_ms += 30'000;
  mesh.effect_kinds.clear();
  CHECK(whoami(ss::test::kBakeryToken).status == 200);
  CHECK(hashes() == 0);
  CHECK(mesh.effect_kinds.size() == 1);

  // Rotated in D1 (elsewhere): once the cached row is stale, the old token — its digest still known,
  // so it is not hashed again — no longer matches D1's row and is refused; the new token is hashed
  // once and works, and is then the known one.
  const std::string rotated = "bakery-token-rotated-0001";
  mesh.db("ANALYTICS_DB")
      .execute("UPDATE tenants SET token_hash = ?1 WHERE tenant_id = 'bakery'",
               json::array({ss::native::sha256_hex(rotated)}));
  mesh.now_ms += 30'000;
  mesh.effect_kinds.clear();
  check_error(whoami(ss::test::kBakeryToken), 401, "unauthenticated_tenant");
  CHECK(hashes() == 0);
  CHECK(whoami(rotated).status == 200);
  CHECK(hashes() == 1);
  mesh.effect_kinds.clear();
  CHECK(whoami(rotated).status == 200);
  CHECK(mesh.effect_kinds.empty());

  // Disabled in D1 (elsewhere): the known token is refused once the cached row is stale, unhashed.
  mesh.db("ANALYTICS_DB")
      .execute("UPDATE tenants SET enabled = 0 WHERE tenant_id = 'bakery'", json::array());
  mesh.now_ms += 30'000;
  mesh.effect_kinds.clear();
  check_error(whoami(rotated), 401, "unauthenticated_tenant");
  CHECK(hashes() == 0);
  mesh.db("ANALYTICS_DB")
      .execute("UPDATE tenants SET enabled = 1 WHERE tenant_id = 'bakery'", json::array());
  CHECK(whoami(rotated).status == 200);

  // Revoked through this instance's operator route: refused at once, known digest or not.
  CHECK(mesh.request("analytics", "DELETE", "/admin/tenants/bakery", kOperator).status == 200);
  check_error(whoami(rotated), 401, "unauthenticated_tenant");
}

// RFC 9110 §8.4.1: a body in a content coding the route does not take is 415 naming
// Content-Encoding (not a 400 for JSON or a form it cannot read), on every route that reads a body,
// and nothing is written.
TEST_CASE("a compressed body is 415 naming Content-Encoding on every route that reads one") {
  Mesh mesh;
  mesh.provision("bakery", ss::test::kBakeryToken, ss::test::kBakeryAdmin);
  const std::map<std::string, std::string> site = {
      {"X-SiteSwarm-Tenant-Id", "bakery"}, {"X-SiteSwarm-Tenant-Token", ss::test::kBakeryToken}};
  const std::map<std::string, std::string> admin = {
      {"X-SiteSwarm-Tenant-Id", "bakery"},
      {"Authorization", std::string("Bearer ") + ss::test::kBakeryAdmin}};
  struct Case {
    const char* worker;
    const char* method;
    const char* path;
    std::map<std::string, std::string> headers;
    const char* type;
  };
  std::vector<Case> cases = {
      {"leads", "POST", "/api/leads/submit", site, "application/json"},
      {"leads", "POST", "/api/leads/submit", site, "application/x-www-form-urlencoded"},
      {"cms", "PUT", "/admin/v1/hours", admin, "application/json"},
      {"cms", "POST", "/admin/v1/announcements", admin, "application/json"},
      {"monitoring", "PUT", "/admin/monitors/home", admin, "application/json"},
      {"analytics", "POST", "/beacon", site, "text/plain"},
      {"events", "POST", "/api/events", site, "application/json"},
      {"events", "POST", "/admin/subscriptions", kOperator, "application/json"},
  };
  for (Case& c : cases) {
    CAPTURE(c.worker);
    CAPTURE(c.path);
    CAPTURE(c.type);
    c.headers["Content-Type"] = c.type;
    for (const char* coding : {"gzip", "br", "GZIP"}) {
      c.headers["Content-Encoding"] = coding;
      auto reply = mesh.request(c.worker, c.method, c.path, c.headers, R"({"text":"hi"})");
      check_error(reply, 415, "unsupported_media_type");
      CHECK(reply.body_json()["error"]["field"] == "Content-Encoding");
    }
  }
  // Nothing was written by a refused request; identity is no coding at all.
  CHECK(mesh.request("cms", "GET", "/admin/v1/content", admin).body_json()["version"] == 0);
  CHECK(mesh.request("monitoring", "GET", "/admin/monitors/home", admin).status == 404);
  auto identity = mesh.request("cms", "PUT", "/admin/v1/hours",
                               {{"X-SiteSwarm-Tenant-Id", "bakery"},
                                {"Authorization", std::string("Bearer ") + ss::test::kBakeryAdmin},
                                {"Content-Type", "application/json"},
                                {"Content-Encoding", "identity"}},
                               R"({"timezone":"UTC","weekly":{}})");
  CHECK(identity.status == 200);
}
