#pragma once
// The ledger on the native mesh, for the events tests: provisioning, a webhook stub recording
// every workflow start, and short-hands for the operator API, emits, drains and SQL.
#include "shared/json_util.h"
#include "tests/native/harness.h"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace ss::events::testing {

using ss::json;
using ss::native::Mesh;

inline const char* kToken = "bakery-token-0123456789";

struct Ledger {
  Mesh mesh;
  std::vector<json> calls;  // workflow starts received by the webhook stub
  std::set<std::string> failing_events;
  std::vector<json> alert_posts;  // PagerDuty and Slack requests: {"url","body"}
  int alert_status = 202;
  std::string start_reply_body = "{}";  // what a workflow target answers to a start

  Ledger() {
    mesh.provision("bakery", kToken, "bakery-admin-0123456789", {}, "events");
    mesh.set_env("events", "ALLOW_LOCAL_OUTBOUND", "1");
    // The fan-out tests count reads and starts; the runner's own workflow.run_* events are tested
    // on their own (consumers-test.cpp turns them back on).
    mesh.set_env("events", "WORKFLOW_RUN_EVENTS", "0");
    mesh.fetch_stub = [this](const json& req) {
      ss::native::StubReply reply;
      json body = json::parse(req["body"].get<std::string>(), nullptr, false);
      std::string url = req["url"];
      if (url.find("/v2/enqueue") != std::string::npos ||
          url.find("/slack/") != std::string::npos) {
        alert_posts.push_back({{"url", url}, {"body", body}});
        reply.status = alert_status;
        reply.body = "{}";
        return reply;
      }
      calls.push_back({{"url", req["url"]},
                       {"body_optional", req.value("bodyOptional", false)},
                       {"key", req["headers"]["idempotency-key"]},
                       {"headers", req["headers"]},
                       {"body", body},
                       {"text", req["body"]}});
      std::string event_id = body["event"]["event_id"];
      reply.status = failing_events.count(event_id) ? 500 : 202;
      reply.body = start_reply_body;
      return reply;
    };
  }

  std::map<std::string, std::string> op(bool json_body = true) {
    std::map<std::string, std::string> h{
        {"Authorization", std::string("Bearer ") + Mesh::kAdminToken}};
    if (json_body) h["Content-Type"] = "application/json";
    return h;
  }
  ss::native::HttpReply admin(const std::string& method, const std::string& path,
                              const json& body = nullptr) {
    return mesh.request("events", method, path, op(!body.is_null()),
                        body.is_null() ? "" : body.dump());
  }
  void workflow(const std::string& type) {
    REQUIRE(admin("PUT", "/admin/workflows/" + type,
                  {{"target", {{"webhook", "http://127.0.0.1:9/hooks/" + type}}}})
                .status == 201);
  }
  void subscribe(const std::string& glob, const std::string& type,
                 const json& extra = json::object()) {
    json body = extra;
    body["event_type_glob"] = glob;
    body["workflow_type"] = type;
    auto r = admin("POST", "/admin/subscriptions", body);
    REQUIRE(r.status == 201);
  }
  std::string emit(const std::string& type, const json& payload = json::object(),
                   const std::string& ref = "item:1") {
    auto h = Mesh::tenant_headers("bakery", kToken);
    h["Content-Type"] = "application/json";
    auto r = mesh.request("events", "POST", "/api/events", h,
                          json{{"event_type", type},
                               {"entity_ref", ref},
                               {"payload", payload.is_null() ? json::object() : payload}}
                              .dump());
    REQUIRE(r.status == 201);
    mesh.now_ms += 1;
    return r.body_json()["event_id"];
  }
  json drain(const std::string& consumer = "workflow_runner") {
    auto r = admin("POST", "/admin/events/drain?consumer=" + consumer);
    REQUIRE(r.status == 200);
    return r.body_json()["consumers"][consumer];
  }
  std::multiset<std::string> keys() const {
    std::multiset<std::string> out;
    for (const json& c : calls) out.insert(c["key"].get<std::string>());
    return out;
  }
  json db(const std::string& sql) { return mesh.db("EVENTS_DB").rows(sql); }
};

}  // namespace ss::events::testing
