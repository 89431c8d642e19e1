// Drain by insertion order: the ledger numbers events itself at insert, and every cursor follows
// that sequence, so a producer's event_id (its clock, late or wrong) can neither hide events from
// a drainer nor make it skip them.
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/ulid.h"
#include "tests/native/harness.h"
#include "tests/native/test_support.h"
#include "workers/events/drain.h"
#include "workers/events/ledger.h"

#include <doctest/doctest.h>

using ss::json;
using ss::native::Mesh;
using ss::test::kAutoToken;
using ss::test::kBakeryToken;

namespace {

const char* kFarFuture = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ";

struct CursorLedger {
  Mesh mesh;
  std::vector<json> calls;  // workflow starts received by the webhook stub

  CursorLedger() {
    mesh.provision("bakery", kBakeryToken, "bakery-admin-0123456789", {}, "events");
    mesh.provision("auto-repair", kAutoToken, "auto-admin-0123456789", {}, "events");
    mesh.set_env("events", "ALLOW_LOCAL_OUTBOUND", "1");
    mesh.set_env("events", "WORKFLOW_RUN_EVENTS", "0");  // counts of reads below: starts only
    mesh.fetch_stub = [this](const json& req) {
      calls.push_back(json::parse(req["body"].get<std::string>(), nullptr, false));
      ss::native::StubReply reply;
      reply.status = 202;
      reply.body = "{}";
      return reply;
    };
    auto op = operator_headers();
    REQUIRE(mesh.request("events", "PUT", "/admin/workflows/notify", op,
                         R"({"target":{"webhook":"http://127.0.0.1:9/hooks/notify"}})")
                .status == 201);
    REQUIRE(mesh.request("events", "POST", "/admin/subscriptions", op,
                         R"({"event_type_glob":"*","workflow_type":"notify"})")
                .status == 201);
  }
  static std::map<std::string, std::string> operator_headers() {
    return {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
            {"Content-Type", "application/json"}};
  }
  ss::native::HttpReply post(const std::string& tenant, const std::string& token,
                             const json& extra = json::object()) {
    json body{
        {"event_type", "order.placed"}, {"entity_ref", "order:1"}, {"payload", json::object()}};
    body.update(extra);
    auto h = Mesh::tenant_headers(tenant, token);
    h["Content-Type"] = "application/json";
    auto r = mesh.request("events", "POST", "/api/events", h, body.dump());
    mesh.now_ms += 1;
    return r;
  }
  // One message through the siteswarm-events queue, as emit_event() sends it; true when acked.
  bool enqueue(const std::string& tenant, const std::string& event_id) {
    json body{{"event_id", event_id},    {"event_type", "order.placed"},
              {"entity_ref", "order:2"}, {"payload", json::object()},
              {"tenant_id", tenant},     {"source_system", "siteswarm-leads-service"}};
    json batch{{"op", "queue"},
               {"queue", "siteswarm-events"},
               {"messages", {{{"id", "m1"}, {"body", body}, {"attempts", 1}}}}};
    json out = mesh.message("events", batch);
    mesh.now_ms += 1;
    return out["ack"] == json::array({"m1"});
  }
  json drain(const std::string& consumer = "workflow_runner") {
    auto r = mesh.request("events", "POST", "/admin/events/drain?consumer=" + consumer,
                          operator_headers());
    REQUIRE(r.status == 200);
    return r.body_json()["consumers"][consumer];
  }
};

}  // namespace

TEST_CASE("a far-future event_id is refused on POST, accepted from the queue, and hides nothing") {
  // Before the ledger's own sequence, that one id moved every cursor past all later events of
  // every tenant: the auto-repair event below was never drained (read 0, nothing started).
  CursorLedger l;
  auto refused = l.post("bakery", kBakeryToken, {{"event_id", kFarFuture}});
  CHECK(refused.status == 400);
  CHECK(refused.body_json()["error"]["code"] == "invalid_event");
  CHECK(refused.body_json()["error"]["field"] == "event_id");

  // Within the documented skew it is fine.
  std::string soon =
      ss::encode_ulid(l.mesh.now_ms + ss::events::kMaxEventIdSkewMs - 1000, ss::UlidRandom{});
  CHECK(l.post("bakery", kBakeryToken, {{"event_id", soon}}).status == 201);

  // The queue never drops a message for its id.
  CHECK(l.enqueue("bakery", kFarFuture));
  json first = l.drain();
  CHECK(first["read"] == 2);
  CHECK(first["started"] == 2);
  CHECK(first["cursor"] == kFarFuture);

  // Another tenant's event afterwards is still drained and started.
  auto later = l.post("auto-repair", kAutoToken);
  REQUIRE(later.status == 201);
  std::string later_id = later.body_json()["event_id"];
  CHECK(later_id < std::string(kFarFuture));
  json second = l.drain();
  CHECK(second["read"] == 1);
  CHECK(second["started"] == 1);
  CHECK(second["cursor"] == later_id);
  REQUIRE(l.calls.size() == 3);
  CHECK(l.calls.back()["event"]["event_id"] == later_id);
  CHECK(l.calls.back()["event"]["tenant_id"] == "auto-repair");
  for (const char* consumer : {"timeline_indexer", "anomaly_detector"}) {
    CHECK(l.drain(consumer)["read"] == 3);
  }
}

TEST_CASE("an event ingested after the cursor passed its timestamp is still drained") {
  // Before: the cursor was the newest event_id drained, so an event minted earlier and delivered
  // late (a queue retry) sorted behind it and was skipped for good (read 0).
  CursorLedger l;
  std::string minted = ss::encode_ulid(l.mesh.now_ms - 10 * 60 * 1000, ss::UlidRandom{});
  auto fresh = l.post("bakery", kBakeryToken);
  REQUIRE(fresh.status == 201);
  CHECK(l.drain()["read"] == 1);
  CHECK(l.drain("timeline_indexer")["read"] == 1);

  CHECK(l.enqueue("bakery", minted));  // arrives now, ten minutes after it was minted
  json report = l.drain();
  CHECK(report["read"] == 1);
  CHECK(report["started"] == 1);
  CHECK(report["cursor"] == minted);
  REQUIRE(l.calls.size() == 2);
  CHECK(l.calls.back()["event"]["event_id"] == minted);
  CHECK(l.drain("timeline_indexer")["read"] == 1);
  CHECK(l.drain()["read"] == 0);  // and only once
}

TEST_CASE("replay maps from_event_id to that event's place in insertion order") {
  CursorLedger l;
  std::string minted = ss::encode_ulid(l.mesh.now_ms - 60 * 60 * 1000, ss::UlidRandom{});
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) ids.push_back(l.post("bakery", kBakeryToken).body_json()["event_id"]);
  CHECK(l.enqueue("bakery", minted));  // inserted third, whatever its id says
  CHECK(l.drain()["read"] == 3);
  auto op = CursorLedger::operator_headers();
  auto replay = l.mesh.request("events", "POST", "/admin/consumers/workflow_runner/replay", op,
                               json{{"from_event_id", ids[1]}}.dump());
  REQUIRE(replay.status == 200);
  CHECK(replay.body_json()["cursor"] == ids[0]);
  json again = l.drain();
  CHECK(again["read"] == 2);  // ids[1] and the late one, though its id sorts before both
  CHECK(again["duplicates"] == 2);
  CHECK(again["started"] == 0);
  auto unknown = l.mesh.request("events", "POST", "/admin/consumers/workflow_runner/replay", op,
                                json{{"from_event_id", "01JH0000000000000000000000"}}.dump());
  CHECK(unknown.status == 404);
  CHECK(unknown.body_json()["error"]["field"] == "from_event_id");
}

TEST_CASE("two tenants' events under one event_id are each drained and started once") {
  CursorLedger l;
  const std::string id = "01JH0000000000000000000000";
  REQUIRE(l.post("bakery", kBakeryToken, {{"event_id", id}}).status == 201);
  REQUIRE(l.post("auto-repair", kAutoToken, {{"event_id", id}}).status == 201);
  json report = l.drain();
  CHECK(report["read"] == 2);
  CHECK(report["started"] == 2);
  CHECK(report["duplicates"] == 0);
  REQUIRE(l.calls.size() == 2);
  CHECK(l.calls[0]["event"]["tenant_id"] == "bakery");
  CHECK(l.calls[1]["event"]["tenant_id"] == "auto-repair");
  CHECK(l.drain()["read"] == 0);
}

TEST_CASE("retention ages events by the ledger's clock, not by the producer's event_id") {
  // Before: retention took every event whose event_id sorted below a ULID of "now - 730 days". An
  // event minted two and a half years ago but ingested today lost its payload at once, and one
  // with a far-future id (accepted from the queue) was never redacted at all.
  CursorLedger l;
  auto retention = [&] {
    auto r = l.mesh.request("events", "POST", "/admin/events/retention",
                            CursorLedger::operator_headers());
    REQUIRE(r.status == 200);
    return r.body_json()["redacted"].get<int>();
  };
  std::string old_id = ss::encode_ulid(l.mesh.now_ms - 900LL * ss::kMsPerDay, ss::UlidRandom{});
  auto old_minted = l.post("bakery", kBakeryToken, {{"event_id", old_id}, {"payload", {{"k", 1}}}});
  REQUIRE(old_minted.status == 201);
  CHECK(l.enqueue("auto-repair", kFarFuture));
  CHECK(retention() == 0);  // both were recorded just now

  l.mesh.now_ms += 731LL * ss::kMsPerDay;
  std::string fresh = l.post("bakery", kBakeryToken).body_json()["event_id"];
  CHECK(retention() == 2);
  json rows = l.mesh.db("EVENTS_DB")
                  .rows(
                      "SELECT event_id, payload_json, redacted_at FROM events "
                      "WHERE event_type != 'events.tombstoned' ORDER BY seq");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["event_id"] == old_id);
  CHECK(rows[0]["payload_json"] == "{\"_redacted\":true}");
  CHECK(rows[1]["event_id"] == kFarFuture);
  CHECK(rows[1]["payload_json"] == "{\"_redacted\":true}");
  CHECK(rows[2]["event_id"] == fresh);
  CHECK(rows[2]["redacted_at"].is_null());
  CHECK(retention() == 0);
}

TEST_CASE("retention's tombstone names only its own tenant's events") {
  // The batch holds both tenants' events; each tenant's tombstone (which that tenant reads on GET
  // /api/events) must not carry the other tenant's event_ids in its entity_ref or idempotency_key.
  CursorLedger l;
  std::string a1 = l.post("bakery", kBakeryToken).body_json()["event_id"];
  std::string b1 = l.post("auto-repair", kAutoToken).body_json()["event_id"];
  std::string a2 = l.post("bakery", kBakeryToken).body_json()["event_id"];
  std::string b2 = l.post("auto-repair", kAutoToken).body_json()["event_id"];
  l.mesh.now_ms += 731LL * ss::kMsPerDay;
  auto r =
      l.mesh.request("events", "POST", "/admin/events/retention", CursorLedger::operator_headers());
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["redacted"] == 4);
  auto tombstones = [&](const std::string& tenant, const std::string& token) {
    auto read = l.mesh.request("events", "GET", "/api/events?type=events.tombstoned",
                               Mesh::tenant_headers(tenant, token));
    REQUIRE(read.status == 200);
    return read.body_json()["events"];
  };
  json bakery = tombstones("bakery", kBakeryToken);
  REQUIRE(bakery.size() == 1);
  CHECK(bakery[0]["entity_ref"] == "retention:" + a1 + ".." + a2);
  for (const std::string& other : {b1, b2}) {
    CHECK(bakery[0].dump().find(other) == std::string::npos);
  }
  json auto_repair = tombstones("auto-repair", kAutoToken);
  REQUIRE(auto_repair.size() == 1);
  CHECK(auto_repair[0]["entity_ref"] == "retention:" + b1 + ".." + b2);
  for (const std::string& other : {a1, a2}) {
    CHECK(auto_repair[0].dump().find(other) == std::string::npos);
  }
  // Run again: nothing left, no second tombstone.
  r = l.mesh.request("events", "POST", "/admin/events/retention", CursorLedger::operator_headers());
  CHECK(r.body_json()["redacted"] == 0);
  CHECK(tombstones("bakery", kBakeryToken).size() == 1);
}
