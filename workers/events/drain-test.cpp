// The ledger's guarantees, played end to end through the native mesh: fan-out, its cap, dedupe,
// quarantine, kill switches, replay, locks, timelines, anomalies, retention and lag.
#include "workers/events/drain.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/text.h"
#include "shared/ulid.h"
#include "tests/native/harness.h"
#include "workers/events/admin.h"
#include "workers/events/cursor.h"
#include "workers/events/test_ledger.h"

#include <doctest/doctest.h>

#include <set>

using ss::json;
using ss::native::Mesh;

using namespace ss::events::testing;

TEST_CASE("a drainer that dies mid-batch and is re-run starts every workflow exactly once") {
  Ledger l;
  l.workflow("notify");
  l.workflow("audit");
  l.subscribe("price.*", "notify");
  l.subscribe("*", "audit");
  // Chunks of 4 starts (2 events): each D1 batch carries the previous chunk's commit and the next
  // chunk's claims.
  l.mesh.set_env("events", "DRAIN_CHUNK_STARTS", "4");
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(l.emit("price.changed", {{"n", i}}));

  // The isolate "dies" while the fourth D1 batch travels (after the opening: the first chunk's
  // claims, then the first chunk's commit with the second chunk's claims, then the second chunk's
  // commit with the third chunk's claims): events 1-2 are committed, events 3-4 were claimed and
  // started but not committed. Every effect after that fails.
  int batches = 0;
  bool dead = false;
  l.mesh.fail_effect = [&](const json& e) {
    if (!dead && e["kind"] == "d1.batch" && ++batches == 4) dead = true;
    return dead;
  };
  auto died = l.admin("POST", "/admin/events/drain?consumer=workflow_runner");
  CHECK(died.status == 503);
  CHECK(l.calls.size() == 8);  // 4 events × 2 workflows reached their targets
  json cursor = l.db("SELECT cursor FROM event_drain_state WHERE consumer = 'workflow_runner'");
  REQUIRE(cursor.size() == 1);
  CHECK(cursor[0]["cursor"] == ids[1]);
  CHECK(l.db("SELECT * FROM event_consumer_dedupe WHERE status = 'claimed'").size() == 4);

  l.mesh.fail_effect = nullptr;
  l.mesh.now_ms += ss::events::kLockTtlMs;  // the dead run's lock and claims expire
  json report = l.drain();
  CHECK(report["read"] == 4);
  CHECK(report["started"] == 8);
  CHECK(report["cursor"] == ids[5]);
  auto keys = l.keys();
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == 12);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    // Only the starts in flight when the run died are sent again, with the same Idempotency-Key.
    std::size_t expected = i == 2 || i == 3 ? 2 : 1;
    CHECK(keys.count("workflow_runner:" + ids[i] + ":notify") == expected);
    CHECK(keys.count("workflow_runner:" + ids[i] + ":audit") == expected);
  }
  CHECK(l.db("SELECT * FROM workflow_run_log WHERE status = 'started'").size() == 12);
  CHECK(l.db("SELECT * FROM event_consumer_dedupe WHERE status = 'started'").size() == 12);
  // The start request carries the contract's body.
  json start = l.calls[0]["body"];
  CHECK(start["workflow_type"] == "notify");
  CHECK(start["workflow_run_id"].get<std::string>().rfind("run_", 0) == 0);
  CHECK(start["event"]["event_id"] == ids[0]);
  CHECK(start["input"] == json{{"n", 0}});
  // Written as compact JSON with its keys in order, as every body the platform writes.
  CHECK(l.calls[0]["text"] == start.dump());
  CHECK(l.calls[1]["text"] == l.calls[1]["body"].dump());
}

TEST_CASE("a batch of events is claimed and committed in one D1 batch each, starts 6 at a time") {
  Ledger l;
  for (int w = 0; w < 8; ++w) {
    l.workflow("wf" + std::to_string(w));
    l.subscribe("order.*", "wf" + std::to_string(w));
  }
  for (int i = 0; i < 40; ++i) l.emit("order.placed", {{"n", i}});
  int batches = 0;
  int starts_at_once = 0;
  l.mesh.fail_effect = [&](const json& e) {
    if (e["kind"] == "d1.batch") ++batches;
    return false;
  };
  l.mesh.observe_effects = [&](const json& effects) {
    int fetches = 0;
    for (const json& e : effects) fetches += e["kind"] == "fetch" ? 1 : 0;
    starts_at_once = std::max(starts_at_once, fetches);
  };
  json report = l.drain();
  CHECK(report["read"] == 40);
  CHECK(report["started"] == 320);
  CHECK(l.calls.size() == 320);
  CHECK(batches == 3);  // the opening (lock, cursor, events), the claims of all 320 starts, then
                        // the commit (with the lock's release)
  CHECK(starts_at_once == 6);  // Workers' simultaneous-connection limit
  CHECK(l.db("SELECT * FROM event_consumer_dedupe WHERE status = 'started'").size() == 320);
  CHECK(l.db("SELECT * FROM workflow_run_log WHERE status = 'started'").size() == 320);
  CHECK(l.drain()["read"] == 0);
  CHECK(l.calls.size() == 320);
}

TEST_CASE(
    "no start goes out on a claim older than half the lock TTL; the next run sends the rest") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(l.emit("order.placed"));
  // Each start takes a quarter of the claims' freshness: the first 6 (sent together) use it up.
  auto stub = l.mesh.fetch_stub;
  l.mesh.fetch_stub = [&](const json& req) {
    ss::native::StubReply reply = stub(req);
    reply.elapsed_ms = static_cast<int>(ss::events::kClaimFreshMs / 4);
    return reply;
  };
  json first = l.drain();
  CHECK(first["read"] == 6);
  CHECK(first["started"] == 6);
  CHECK(first["budget_exhausted"] == true);
  CHECK(first["cursor"] == ids[5]);
  CHECK(l.calls.size() == 6);
  CHECK(l.db("SELECT * FROM event_consumer_dedupe WHERE status = 'claimed'").empty());
  json second = l.drain();
  CHECK(second["read"] == 4);
  CHECK(second["started"] == 4);
  CHECK(second["cursor"] == ids[9]);
  auto keys = l.keys();
  CHECK(keys.size() == 10);
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == 10);
}

TEST_CASE(
    "a start claimed by a live run is left to it and the cursor waits; a dead run's claim is taken "
    "over") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::string stale = l.emit("order.placed");
  std::string fresh = l.emit("order.placed");
  auto claim = [&](const std::string& id, std::int64_t at) {
    l.mesh.db("EVENTS_DB")
        .execute(
            "INSERT INTO event_consumer_dedupe (consumer, seq, dedupe_key, event_id, created_at, "
            "status, holder, claimed_at_ms) SELECT 'workflow_runner', seq, ?1, ?2, 'x', "
            "'claimed', 'other-run', ?3 FROM events WHERE event_id = ?2",
            json::array({"workflow_runner:" + id + ":notify", id, at}));
  };
  claim(stale, l.mesh.now_ms - ss::events::kLockTtlMs - 1);  // a run that died long ago
  claim(fresh, l.mesh.now_ms);                               // a run starting it right now
  json first = l.drain();
  CHECK(first["read"] == 1);
  CHECK(first["started"] == 1);
  CHECK(first["contended"] == true);
  CHECK(first["cursor"] == stale);  // not past the event another run is still starting
  REQUIRE(l.calls.size() == 1);
  CHECK(l.calls[0]["key"] == "workflow_runner:" + stale + ":notify");
  // That run never finished: once its claim is older than the lock TTL, the next drain takes it
  // over.
  l.mesh.now_ms += ss::events::kLockTtlMs + 1;
  json second = l.drain();
  CHECK(second["read"] == 1);
  CHECK(second["started"] == 1);
  CHECK(second["cursor"] == fresh);
  REQUIRE(l.calls.size() == 2);
  CHECK(l.calls[1]["key"] == "workflow_runner:" + fresh + ":notify");
  CHECK(l.db("SELECT * FROM event_consumer_dedupe WHERE status = 'started'").size() == 2);
}

TEST_CASE("a failed start releases its claim so a retry can start it") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::string id = l.emit("order.placed");
  l.failing_events.insert(id);
  CHECK(l.drain()["quarantined"] == 1);
  CHECK(l.db("SELECT * FROM event_consumer_dedupe").empty());
  l.failing_events.clear();
  CHECK(l.admin("POST", "/admin/quarantine/workflow_runner/" + id + "/retry")
            .body_json()["started"] == 1);
  CHECK(l.db("SELECT * FROM event_consumer_dedupe WHERE status = 'started'").size() == 1);
}

TEST_CASE("the quarantine list pages oldest first, with next, and reaches its newest rows") {
  // More open rows than a page holds: every one is reachable (the list stopped at the oldest 500,
  // with no sign of more, so newly quarantined events never showed).
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(l.emit("order.placed"));
  l.failing_events = std::set<std::string>(ids.begin(), ids.end());
  REQUIRE(l.drain()["quarantined"] == 5);
  std::vector<std::string> seen;
  std::string after;
  for (int page = 0; page < 5; ++page) {
    json body = l.admin("GET", "/admin/quarantine?consumer=workflow_runner&limit=2" +
                                   (after.empty() ? std::string() : "&after=" + after))
                    .body_json();
    for (const json& row : body["quarantined"]) seen.push_back(row["event_id"]);
    CHECK(body["quarantined"].size() <= 2);
    if (body["next"].is_null()) break;
    after = body["next"];
  }
  CHECK(seen == ids);
  // A bare seq is after that event; a limit or an after that is no such thing is 400 naming it.
  json rows = l.admin("GET", "/admin/quarantine").body_json()["quarantined"];
  REQUIRE(rows.size() == 5);
  CHECK(l.admin("GET", "/admin/quarantine").body_json()["next"].is_null());
  const std::string third_seq = std::to_string(rows[2]["seq"].get<std::int64_t>());
  json later = l.admin("GET", "/admin/quarantine?after=" + third_seq).body_json()["quarantined"];
  REQUIRE(later.size() == 2);
  CHECK(later[0]["event_id"] == ids[3]);
  for (const char* bad : {"limit=0", "limit=501", "after=x", "after=-1"}) {
    CAPTURE(bad);
    auto r = l.admin("GET", std::string("/admin/quarantine?") + bad);
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["field"] ==
          std::string(bad).substr(0, std::string(bad).find('=')));
  }
}

TEST_CASE("a quarantined event whose starts later all succeed (a replay) is no longer open") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::string bad = l.emit("order.placed");
  std::string still_bad = l.emit("order.placed");
  std::string good = l.emit("order.placed");
  l.failing_events = {bad, still_bad};
  CHECK(l.drain()["quarantined"] == 2);
  auto open_rows = [&] {
    return l.admin("GET", "/admin/quarantine?consumer=workflow_runner").body_json()["quarantined"];
  };
  REQUIRE(open_rows().size() == 2);
  // The target works again for `bad`: a replay starts it, and its row is resolved in the drain's
  // own commit; `still_bad` fails again and stays open.
  l.failing_events = {still_bad};
  // A key the replay does not take is a 400 naming it, and the cursor stays where it was.
  auto odd = l.admin("POST", "/admin/consumers/workflow_runner/replay",
                     {{"from_event_id", bad}, {"form_event_id", bad}});
  CHECK(odd.status == 400);
  CHECK(odd.body_json()["error"]["field"] == "form_event_id");
  CHECK(l.drain()["read"] == 0);
  REQUIRE(
      l.admin("POST", "/admin/consumers/workflow_runner/replay", {{"from_event_id", bad}}).status ==
      200);
  json report = l.drain();
  CHECK(report["started"] == 1);
  CHECK(report["duplicates"] == 1);
  CHECK(report["quarantined"] == 1);
  json open = open_rows();
  REQUIRE(open.size() == 1);
  CHECK(open[0]["event_id"] == still_bad);
  CHECK(l.db("SELECT * FROM events_quarantine WHERE event_id = '" + bad +
             "' AND resolved_at IS NOT NULL")
            .size() == 1);
  CHECK(l.mesh.request("events", "GET", "/health", l.op(false)).body_json()["quarantined"] == 1);
  (void)good;
}

// Two tenants' events may share an event_id (it is unique per tenant): their quarantine rows are
// two, and the operator tells them apart by tenant and seq and retries one by its `id.seq`.
TEST_CASE(
    "quarantine rows of two tenants' events sharing an id: listed apart, retried one by one") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  const std::string id = l.emit("order.placed");  // bakery's
  REQUIRE(l.admin("POST", "/api/events",
                  {{"event_type", "order.placed"},
                   {"entity_ref", "order:1"},
                   {"payload", json::object()},
                   {"tenant_id", "auto-repair"},
                   {"event_id", id}})
              .status == 201);
  l.failing_events.insert(id);
  CHECK(l.drain()["quarantined"] == 2);
  json listed =
      l.admin("GET", "/admin/quarantine?consumer=workflow_runner").body_json()["quarantined"];
  REQUIRE(listed.size() == 2);
  CHECK(listed[0]["tenant_id"] == "bakery");
  CHECK(listed[1]["tenant_id"] == "auto-repair");
  CHECK(listed[0]["seq"] != listed[1]["seq"]);
  const std::string second = id + "." + std::to_string(listed[1]["seq"].get<std::int64_t>());
  // Retried by id.seq: that row's attempt, the other row untouched (by its id alone the open row
  // with the lowest seq is the one retried, as before).
  json retried =
      l.admin("POST", "/admin/quarantine/workflow_runner/" + second + "/retry").body_json();
  CHECK(retried["resolved"] == false);
  CHECK(retried["seq"] == listed[1]["seq"]);
  CHECK(retried["tenant_id"] == "auto-repair");
  json rows = l.db("SELECT seq, attempts FROM events_quarantine ORDER BY seq");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["attempts"] == 1);
  CHECK(rows[1]["attempts"] == 2);
  l.failing_events.clear();
  CHECK(l.admin("POST", "/admin/quarantine/workflow_runner/" + second + "/retry")
            .body_json()["resolved"] == true);
  json open =
      l.admin("GET", "/admin/quarantine?consumer=workflow_runner").body_json()["quarantined"];
  REQUIRE(open.size() == 1);
  CHECK(open[0]["tenant_id"] == "bakery");
  // A seq that is not this event's row, or a malformed one, is no quarantined event.
  CHECK(l.admin("POST", "/admin/quarantine/workflow_runner/" + id + ".999999/retry").status == 404);
  CHECK(l.admin("POST", "/admin/quarantine/workflow_runner/" + id + ".x/retry").status == 404);
}

// A retry that died after its claim landed (found by tests/integration/faults.test.mjs): a retry
// meanwhile must not mark the event resolved with nothing started, or the start is lost (the cursor
// is already past a quarantined event).
TEST_CASE("a quarantine retry meeting another run's live claim leaves the event quarantined") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::string id = l.emit("order.placed");
  l.failing_events.insert(id);
  CHECK(l.drain()["quarantined"] == 1);
  l.failing_events.clear();
  std::size_t failed_calls = l.calls.size();  // the quarantining attempt (answered 500)
  // A retry that died after its claim landed, before its start went out.
  l.mesh.db("EVENTS_DB")
      .execute(
          "INSERT INTO event_consumer_dedupe (consumer, seq, dedupe_key, event_id, created_at, "
          "status, holder, claimed_at_ms) SELECT 'workflow_runner', seq, ?1, ?2, 'x', 'claimed', "
          "'dead-retry', ?3 FROM events WHERE event_id = ?2",
          json::array({"workflow_runner:" + id + ":notify", id, l.mesh.now_ms}));
  std::string retry = "/admin/quarantine/workflow_runner/" + id + "/retry";
  json met = l.admin("POST", retry).body_json();
  CHECK(met["resolved"] == false);
  CHECK(met["started"] == 0);
  CHECK(met["reason"].get<std::string>().find("claimed by another run") != std::string::npos);
  json open = l.db("SELECT attempts FROM events_quarantine WHERE resolved_at IS NULL");
  REQUIRE(open.size() == 1);
  CHECK(open[0]["attempts"] == 1);  // left as it was: not an attempt, another run holds it
  CHECK(l.calls.size() == failed_calls);
  // Once that claim is older than the lock TTL, the retry takes it over and starts it once.
  l.mesh.now_ms += ss::events::kLockTtlMs + 1;
  json retried = l.admin("POST", retry).body_json();
  CHECK(retried["resolved"] == true);
  CHECK(retried["started"] == 1);
  CHECK(l.calls.size() == failed_calls + 1);
  CHECK(l.db("SELECT * FROM events_quarantine WHERE resolved_at IS NULL").empty());
}

// Issue 14 item 2: the target is judged again right before each start, so a definition saved
// under other rules (or with ALLOW_LOCAL_OUTBOUND on) never reaches a refused address.
TEST_CASE("a workflow start re-checks the webhook: a refused target is never called") {
  Ledger l;
  l.workflow("notify");  // http://127.0.0.1:9/… — admitted in local development only
  l.subscribe("*", "notify");
  l.mesh.set_env("events", "ALLOW_LOCAL_OUTBOUND", "0");
  std::string id = l.emit("order.placed");
  CHECK(l.drain()["quarantined"] == 1);
  CHECK(l.calls.empty());
  json q = l.db("SELECT reason FROM events_quarantine");
  REQUIRE(q.size() == 1);
  CHECK(q[0]["reason"].get<std::string>().find("webhook URL refused") != std::string::npos);
  CHECK(q[0]["reason"].get<std::string>().find("loopback") != std::string::npos);

  // Written behind the API's back: a private address stays refused even in local development.
  l.mesh.set_env("events", "ALLOW_LOCAL_OUTBOUND", "1");
  l.mesh.db("EVENTS_DB")
      .execute("UPDATE workflow_definitions SET target_json = ?1 WHERE workflow_type = 'notify'",
               json::array({R"({"webhook":"http://169.254.169.254/latest"})"}));
  CHECK(l.admin("POST", "/admin/quarantine/workflow_runner/" + id + "/retry")
            .body_json()["started"] == 0);
  CHECK(l.calls.empty());
  l.emit("order.placed");
  CHECK(l.drain()["started"] == 0);
  CHECK(l.calls.empty());
}

TEST_CASE("a drain stops before the subrequest budget and the next run continues at the cursor") {
  Ledger l;
  l.mesh.set_env("events", "DRAIN_SUBREQUEST_BUDGET", "30");
  l.workflow("notify");
  l.subscribe("*", "notify");
  // 30 single-start events: the batch's D1 work is a few round trips, the starts are what count.
  for (int i = 0; i < 30; ++i) l.emit("order.placed");
  json first = l.drain();
  CHECK(first["budget_exhausted"] == true);
  int read = first["read"];
  CHECK(read > 0);
  CHECK(read < 30);
  int total = read;
  for (int i = 0; i < 10 && total < 30; ++i) total += l.drain()["read"].get<int>();
  CHECK(total == 30);
  CHECK(l.calls.size() == 30);
}

TEST_CASE("50 subscriptions on * start 8 workflows and leave one cap record") {
  Ledger l;
  for (int i = 0; i < 50; ++i) {
    std::string type = "wf" + std::to_string(100 + i);
    l.workflow(type);
    l.subscribe("*", type);
  }
  std::string id = l.emit("item.created");
  json report = l.drain();
  CHECK(report["started"] == 8);
  CHECK(report["capped"] == 1);
  CHECK(l.calls.size() == 8);
  json caps = l.db("SELECT * FROM events WHERE event_type = 'events.fanout_capped'");
  REQUIRE(caps.size() == 1);
  json payload = json::parse(caps[0]["payload_json"].get<std::string>());
  CHECK(payload["event_id"] == id);
  CHECK(payload["matched"] == 50);
  CHECK(payload["dropped_subscriptions"].size() == 42);
  auto health = l.mesh.request("events", "GET", "/health", l.op(false)).body_json();
  CHECK(health["ok"] == true);
  CHECK(health["fanout_capped"] == 1);
  // The cap record itself fans out (capped again) without recording a cap of the cap.
  json again = l.drain();
  CHECK(again["read"] == 1);
  CHECK(again["capped"] == 1);
  CHECK(l.db("SELECT * FROM events WHERE event_type = 'events.fanout_capped'").size() == 1);
}

TEST_CASE(
    "a poison event is quarantined, the cursor moves past it, later events flow, retry works") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::string a = l.emit("lead.received");
  std::string poison = l.emit("lead.received", {{"poison", true}});
  std::string c = l.emit("lead.received");
  l.failing_events.insert(poison);
  json report = l.drain();
  CHECK(report["read"] == 3);
  CHECK(report["started"] == 2);
  CHECK(report["quarantined"] == 1);
  CHECK(report["cursor"] == c);
  auto q = l.admin("GET", "/admin/quarantine?consumer=workflow_runner").body_json();
  REQUIRE(q["quarantined"].size() == 1);
  CHECK(q["quarantined"][0]["event_id"] == poison);
  CHECK(q["quarantined"][0]["reason"].get<std::string>().find("500") != std::string::npos);
  CHECK(l.mesh.request("events", "GET", "/health", l.op(false)).body_json()["quarantined"] == 1);
  // A consumer no drainer has, or an `all` that is neither 0 nor 1: a 400 naming it, not an empty
  // list that reads as "nothing quarantined".
  for (auto [query, field] :
       {std::pair{"?consumer=zzz", "consumer"}, std::pair{"?all=yes", "all"}}) {
    auto bad = l.admin("GET", std::string("/admin/quarantine") + query);
    CHECK(bad.status == 400);
    CHECK(bad.body_json()["error"]["field"] == field);
  }

  l.failing_events.clear();
  auto retried = l.admin("POST", "/admin/quarantine/workflow_runner/" + poison + "/retry");
  REQUIRE(retried.status == 200);
  CHECK(retried.body_json()["resolved"] == true);
  CHECK(retried.body_json()["started"] == 1);
  CHECK(l.admin("GET", "/admin/quarantine").body_json()["quarantined"].empty());
  // Resolved: nothing to retry (409 with the time), and nothing started again.
  const std::size_t starts = l.calls.size();
  auto again = l.admin("POST", "/admin/quarantine/workflow_runner/" + poison + "/retry");
  CHECK(again.status == 409);
  CHECK(again.body_json()["error"]["resolved_at"].is_string());
  CHECK(l.calls.size() == starts);
  CHECK(l.admin("POST", "/admin/quarantine/workflow_runner/" + a + "/retry").status == 404);
}

TEST_CASE("kill:fanout stops fan-out without losing events; switching it off drains them all") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", true}}).status == 200);
  for (int i = 0; i < 5; ++i) l.emit("order.placed");
  json killed = l.drain();
  CHECK(killed["killed"] == true);
  CHECK(killed["read"] == 0);
  CHECK(l.calls.empty());
  CHECK(l.db("SELECT * FROM events").size() == 5);  // events keep accumulating
  auto list = l.admin("GET", "/admin/kill-switches").body_json();
  CHECK(list["kill_switches"][0] == json{{"name", "kill:fanout"},
                                         {"enabled", true},
                                         {"updated_at", list["kill_switches"][0]["updated_at"]},
                                         {"known", true}});
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", false}}).status == 200);
  json report = l.drain();
  CHECK(report["read"] == 5);
  CHECK(l.calls.size() == 5);
  CHECK(l.admin("PUT", "/admin/kill-switches/Kill Fanout", {{"enabled", true}}).status == 400);
  CHECK(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", "yes"}}).status == 400);
}

TEST_CASE("replay shows a consumer the window again and dedupe prevents double starts") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(l.emit("price.changed", {}, "item:7"));
  CHECK(l.drain()["started"] == 4);
  CHECK(l.drain("timeline_indexer")["read"] == 4);
  auto r = l.admin("POST", "/admin/consumers/workflow_runner/replay", {{"from_event_id", ids[1]}});
  REQUIRE(r.status == 200);
  json report = l.drain();
  CHECK(report["read"] == 3);
  CHECK(report["duplicates"] == 3);
  CHECK(report["started"] == 0);
  CHECK(l.calls.size() == 4);
  // The timeline survives a replay without double counting.
  REQUIRE(l.admin("POST", "/admin/consumers/timeline_indexer/replay", {{"from_event_id", ids[0]}})
              .status == 200);
  CHECK(l.drain("timeline_indexer")["read"] == 4);
  auto timeline = l.mesh.request("events", "GET", "/api/entities/item/7/timeline",
                                 Mesh::tenant_headers("bakery", kToken));
  REQUIRE(timeline.status == 200);
  CHECK(timeline.body_json()["summary"]["event_count"] == 4);
  CHECK(timeline.body_json()["summary"]["last_event_id"] == ids[3]);
  CHECK(timeline.body_json()["events"].size() == 4);
  // The operator reads that tenant's timeline with ?tenant= (summary and events alike).
  auto as_operator = l.admin("GET", "/api/entities/item/7/timeline?tenant=bakery");
  REQUIRE(as_operator.status == 200);
  CHECK(as_operator.body_json()["summary"]["event_count"] == 4);
  CHECK(as_operator.body_json()["events"].size() == 4);
  CHECK(l.admin("GET", "/api/entities/item/7/timeline?tenant=Not%20One").status == 400);
  CHECK(l.admin("POST", "/admin/consumers/nobody/replay", {{"from_event_id", ids[0]}}).status ==
        404);
  CHECK(
      l.admin("POST", "/admin/consumers/workflow_runner/replay", {{"from_event_id", "x"}}).status ==
      400);
}

// docs/contract.md "Common rules": an unknown record is 404. The consumer is the path's record, so
// it is judged before the body: a consumer no drainer has is 404 whatever the body (before: 415
// without a body, 400 invalid_json with a malformed one), and a known one's body errors are 400.
TEST_CASE("replay: an unknown consumer is 404 before its body is read; body errors are 400") {
  Ledger l;
  std::string id = l.emit("price.changed");
  auto no_body = l.mesh.request("events", "POST", "/admin/consumers/nobody/replay", l.op(false));
  CHECK(no_body.status == 404);
  CHECK(no_body.body_json()["error"]["code"] == "not_found");
  auto malformed =
      l.mesh.request("events", "POST", "/admin/consumers/nobody/replay", l.op(), "{\"from_");
  CHECK(malformed.status == 404);
  CHECK(l.admin("POST", "/admin/consumers/nobody/replay", {{"from_event_id", id}}).status == 404);
  auto bad_json =
      l.mesh.request("events", "POST", "/admin/consumers/workflow_runner/replay", l.op(), "{\"f");
  CHECK(bad_json.status == 400);
  CHECK(bad_json.body_json()["error"]["code"] == "invalid_json");
  auto missing = l.admin("POST", "/admin/consumers/workflow_runner/replay", json::object());
  CHECK(missing.status == 400);
  CHECK(missing.body_json()["error"]["field"] == "from_event_id");
  CHECK(
      l.admin("POST", "/admin/consumers/workflow_runner/replay", {{"from_event_id", id}}).status ==
      200);
}

TEST_CASE("two drains at once: the second finds the lock and does nothing") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  l.emit("order.placed");
  l.mesh.db("EVENTS_DB")
      .execute("INSERT INTO cron_locks VALUES ('drain:workflow_runner', 'other', ?1)",
               json::array({l.mesh.now_ms + 60000}));
  json report = l.drain();
  CHECK(report["locked"] == true);
  CHECK(report["read"] == 0);
  CHECK(l.calls.empty());
  l.mesh.now_ms += 61000;  // the other holder's lock expired
  CHECK(l.drain()["read"] == 1);
  CHECK(l.db("SELECT * FROM cron_locks").empty());  // released after the run
}

TEST_CASE("globs, filters and mappers that do not match start nothing; matching ones shape input") {
  Ledger l;
  l.workflow("big_items");
  l.workflow("vendors");
  l.subscribe("price.*", "big_items",
              {{"filter_expr", "payload.amount > 100 && entity_type == \"item\""}});
  l.subscribe("vendor.*", "vendors",
              {{"input_mapper", {{"vendor_id", "$.entity_id"}, {"cost", "$.payload.cost"}}}});
  l.emit("price.changed", {{"amount", 50}});               // filter false
  l.emit("price.changed", {{"amount", 500}}, "vendor:9");  // entity_type mismatch
  l.emit("lead.received", {{"amount", 500}});              // glob mismatch
  CHECK(l.drain()["started"] == 0);
  CHECK(l.calls.empty());
  l.emit("price.changed", {{"amount", 101}});
  l.emit("vendor.cost_changed", {{"cost", 3.5}}, "vendor:42");
  CHECK(l.drain()["started"] == 2);
  REQUIRE(l.calls.size() == 2);
  CHECK(l.calls[0]["body"]["input"] == json{{"amount", 101}});
  CHECK(l.calls[1]["body"]["input"] == json{{"vendor_id", "42"}, {"cost", 3.5}});
}

TEST_CASE("invalid subscriptions and workflows are refused naming the field") {
  Ledger l;
  auto expect = [&](const json& body, const std::string& field) {
    auto r = l.admin("POST", "/admin/subscriptions", body);
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["field"] == field);
  };
  expect({{"event_type_glob", "Price.*"}, {"workflow_type", "x"}}, "event_type_glob");
  expect({{"event_type_glob", "probe..x"}, {"workflow_type", "x"}}, "event_type_glob");  // never
  expect({{"workflow_type", "x"}}, "event_type_glob");
  expect({{"event_type_glob", "price.*"}, {"workflow_type", "X Y"}}, "workflow_type");
  expect({{"event_type_glob", "price.*"}, {"workflow_type", "x"}, {"filter_expr", "payload.a >"}},
         "filter_expr");
  expect({{"event_type_glob", "price.*"}, {"workflow_type", "x"}, {"filter_expr", "((((a)"}},
         "filter_expr");
  expect({{"event_type_glob", "price.*"},
          {"workflow_type", "x"},
          {"input_mapper", {{"a", "entity_id"}}}},
         "input_mapper");
  expect({{"event_type_glob", "price.*"}, {"workflow_type", "x"}, {"input_mapper", "nope"}},
         "input_mapper");
  expect({{"event_type_glob", "price.*"}, {"workflow_type", "x"}, {"enabled", "no"}}, "enabled");
  CHECK(l.db("SELECT * FROM event_subscriptions").empty());
  CHECK(l.admin("PUT", "/admin/workflows/x", {{"target", {{"webhook", "ftp://x"}}}}).status == 400);
  CHECK(l.admin("PUT", "/admin/workflows/x", {{"target", {{"service", "leads"}}}}).status == 400);
  CHECK(l.admin("PUT", "/admin/workflows/x", {{"target", json::object()}}).status == 400);
  CHECK(l.mesh.request("events", "POST", "/admin/subscriptions", {}, "{}").status == 401);
  // Round trip of a valid one.
  l.subscribe("lead.*", "notify", {{"filter_expr", "exists(payload.email)"}});
  auto list = l.admin("GET", "/admin/subscriptions").body_json()["subscriptions"];
  REQUIRE(list.size() == 1);
  CHECK(list[0]["filter_expr"] == "exists(payload.email)");
  std::string id = list[0]["id"];
  CHECK(l.admin("GET", "/admin/subscriptions/" + id).status == 200);
  // A ULID is Crockford base32, read in either case (as event ids are everywhere in the ledger):
  // the lower-case id names the same subscription.
  std::string lower = ss::ascii_lower(id);
  REQUIRE(lower != id);
  auto by_lower = l.admin("GET", "/admin/subscriptions/" + lower);
  CHECK(by_lower.status == 200);
  CHECK(by_lower.body_json()["id"] == id);
  CHECK(l.admin("PATCH", "/admin/subscriptions/" + lower, {{"enabled", false}}).status == 200);
  CHECK(l.admin("DELETE", "/admin/subscriptions/" + lower).status == 204);
  CHECK(l.admin("DELETE", "/admin/subscriptions/" + id).status == 404);
}

TEST_CASE("a misspelt subscription or workflow setting is refused, never read as its default") {
  Ledger l;
  auto refused = [&](const std::string& method, const std::string& path, const json& body,
                     const std::string& field) {
    auto r = l.admin(method, path, body);
    CAPTURE(body.dump());
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["field"] == field);
  };
  // "enable": false would have left a live subscription starting workflows.
  refused("POST", "/admin/subscriptions",
          {{"event_type_glob", "lead.*"}, {"workflow_type", "notify"}, {"enable", false}},
          "enable");
  CHECK(l.db("SELECT * FROM event_subscriptions").empty());
  // "risklevel" would have left a risky workflow at 0, out of kill:high_risk_ops' reach.
  refused("PUT", "/admin/workflows/wf_risky",
          {{"target", {{"webhook", "https://example.com/x"}}}, {"risklevel", 5}}, "risklevel");
  refused("PUT", "/admin/workflows/wf_path",
          {{"target", {{"service", "LEADS_SERVICE"}, {"pth", "/wf"}}}}, "target.pth");
  refused("PUT", "/admin/workflows/wf_hook",
          {{"target", {{"webhook", "https://example.com/x"}, {"path", "/wf"}}}}, "target.path");
  CHECK(l.db("SELECT * FROM workflow_definitions").empty());
  // What was read back can be sent again: a subscription's and a workflow's views pass.
  auto made = l.admin("POST", "/admin/subscriptions",
                      {{"event_type_glob", "lead.*"}, {"workflow_type", "notify"}});
  REQUIRE(made.status == 201);
  CHECK(l.admin("POST", "/admin/subscriptions", made.body_json()).status == 201);
  auto saved =
      l.admin("PUT", "/admin/workflows/notify",
              {{"target", {{"service", "LEADS_SERVICE"}, {"path", "/wf"}}}, {"risk_level", 4}});
  REQUIRE(saved.status == 201);
  auto again = l.admin("PUT", "/admin/workflows/notify", saved.body_json());
  CHECK(again.status == 200);
  CHECK(again.body_json()["risk_level"] == 4);
}

TEST_CASE("a workflow's target.service must be a service binding this worker has") {
  Ledger l;
  auto put = [&](const std::string& service) {
    return l.admin("PUT", "/admin/workflows/x",
                   {{"target", {{"service", service}, {"path", "/s"}}}});
  };
  // By default: any service binding the worker has (the host's SS_SERVICE_BINDINGS), nothing else.
  auto nope = put("NOPE");
  CHECK(nope.status == 400);
  CHECK(nope.body_json()["error"]["code"] == "invalid_request");
  CHECK(nope.body_json()["error"]["field"] == "target.service");
  CHECK(put("LEADS").status == 400);
  CHECK(l.db("SELECT * FROM workflow_definitions").empty());
  CHECK(put("MONITOR_SERVICE").status == 201);
  // WORKFLOW_SERVICES narrows it.
  l.mesh.set_env("events", "WORKFLOW_SERVICES", "LEADS_SERVICE, CMS_SERVICE");
  CHECK(put("MONITOR_SERVICE").status == 400);
  CHECK(put("LEADS_SERVICE").status == 200);
  CHECK(put("CMS_SERVICE").status == 200);
  // A listed name the worker does not bind is refused all the same.
  l.mesh.set_env("events", "WORKFLOW_SERVICES", "LEADS_SERVICE,NOPE_SERVICE");
  CHECK(put("NOPE_SERVICE").status == 400);
}

TEST_CASE(
    "a refused target.service names the bindings a workflow may use, never the ledger's own") {
  Ledger l;
  // The ledger's config worker, deployed: it binds the runner beside the workflow targets.
  l.mesh.set_env("events", "SS_SERVICE_BINDINGS", "EVENTS_RUNNER,LEADS_SERVICE,CMS_SERVICE");
  auto message_for = [&](const std::string& service) {
    auto r =
        l.admin("PUT", "/admin/workflows/x", {{"target", {{"service", service}, {"path", "/s"}}}});
    CHECK(r.status == 400);
    return r.body_json()["error"]["message"].get<std::string>();
  };
  for (const char* service : {"NOPE", "EVENTS_RUNNER", "EVENTS_CONFIG"}) {
    CAPTURE(service);
    std::string message = message_for(service);
    CAPTURE(message);
    CHECK(message.find("(it has: LEADS_SERVICE,CMS_SERVICE)") != std::string::npos);
    CHECK(message.find("EVENTS_RUNNER,") == std::string::npos);
  }
  // WORKFLOW_SERVICES naming a binding this worker lacks: only what a PUT would accept is offered.
  l.mesh.set_env("events", "WORKFLOW_SERVICES", "LEADS_SERVICE,MONITOR_SERVICE");
  std::string message = message_for("NOPE");
  CAPTURE(message);
  CHECK(message.find("(it has: LEADS_SERVICE)") != std::string::npos);
}

// A tenant's POST of a price.changed event whose payload's amount is `amount`.
static ss::native::HttpReply post_price_of(Ledger& l, const json& amount) {
  auto h = Mesh::tenant_headers("bakery", kToken);
  h["Content-Type"] = "application/json";
  return l.mesh.request("events", "POST", "/api/events", h,
                        json{{"event_type", "price.changed"},
                             {"entity_ref", "item:1"},
                             {"payload", {{"amount", amount}}}}
                            .dump());
}

TEST_CASE("PUT /admin/schemas/{type} takes the schema as the body too; GET reads one schema") {
  Ledger l;
  // The schema itself as the body (the resource's representation), not wrapped in {"schema": …}.
  json schema{{"$schema", "https://json-schema.org/draft/2020-12/schema"},
              {"type", "object"},
              {"required", {"amount"}},
              {"properties", {{"amount", {{"type", "number"}}}}}};
  REQUIRE(l.admin("PUT", "/admin/schemas/price.changed", schema).status == 201);
  auto got = l.admin("GET", "/admin/schemas/price.changed");
  REQUIRE(got.status == 200);
  CHECK(got.body_json()["event_type"] == "price.changed");
  CHECK(got.body_json()["schema"] == schema);
  auto bad = post_price_of(l, "lots");
  CHECK(bad.status == 422);
  CHECK(bad.body_json()["error"]["code"] == "schema_violation");
  CHECK(bad.body_json()["error"]["field"] == "payload");
  CHECK(bad.body_json()["error"]["fields"] == json{{"payload", "/amount: expected number"}});
  // What GET answers can be PUT back (the wrapped form), and replaces it.
  CHECK(l.admin("PUT", "/admin/schemas/price.changed", got.body_json()).status == 200);
  // A raw schema is still checked: a keyword the subset does not enforce is refused by name.
  auto refused = l.admin("PUT", "/admin/schemas/price.changed", {{"anyOf", json::array()}});
  CHECK(refused.status == 400);
  CHECK(refused.body_json()["error"]["field"] == "schema");
  // A body without any schema keyword (a misspelt wrapper) is not read as an accept-all schema.
  auto typo = l.admin("PUT", "/admin/schemas/other.type", {{"shema", schema}});
  CHECK(typo.status == 400);
  CHECK(typo.body_json()["error"]["field"] == "schema");
  CHECK(l.admin("GET", "/admin/schemas/other.type").status == 404);
  CHECK(l.db("SELECT * FROM events_schema").size() == 1);
}

TEST_CASE("a registered JSON Schema refuses a payload that breaks it with 422") {
  Ledger l;
  json schema{{"type", "object"},
              {"required", {"amount"}},
              {"properties", {{"amount", {{"type", "number"}}}}}};
  REQUIRE(l.admin("PUT", "/admin/schemas/price.changed", {{"schema", schema}}).status == 201);
  auto bad = post_price_of(l, "lots");
  CHECK(bad.status == 422);
  CHECK(bad.body_json()["error"]["code"] == "schema_violation");
  CHECK(bad.body_json()["error"]["violations"].size() >= 1);
  CHECK(l.emit("price.changed", {{"amount", 3}}).size() == 26);
  CHECK(l.admin("PUT", "/admin/schemas/price.changed", {{"schema", {{"type", 5}}}}).status == 400);
  CHECK(l.db("SELECT * FROM events").size() == 1);
  // Registered again: replaced (200), and the new schema is the one that judges.
  json loose{{"type", "object"}};
  CHECK(l.admin("PUT", "/admin/schemas/price.changed", {{"schema", loose}}).status == 200);
  CHECK(l.db("SELECT * FROM events_schema").size() == 1);
  CHECK(post_price_of(l, "lots").status == 201);
}

TEST_CASE("a retry of a stored event is a duplicate, whatever schema was registered since") {
  Ledger l;
  auto h = Mesh::tenant_headers("bakery", kToken);
  h["Content-Type"] = "application/json";
  auto post = [&](const json& body) {
    return l.mesh.request("events", "POST", "/api/events", h, body.dump());
  };
  json with_id{{"event_type", "sch.test"},
               {"entity_ref", "item:1"},
               {"payload", {{"v", 1}}},
               {"event_id", "01JH0000000000000000000042"}};
  json with_key{{"event_type", "sch.test"},
                {"entity_ref", "item:2"},
                {"payload", {{"v", 1}}},
                {"idempotency_key", "k-1"}};
  REQUIRE(post(with_id).status == 201);
  REQUIRE(post(with_key).status == 201);
  json schema{{"type", "object"}, {"required", {"amount"}}};
  REQUIRE(l.admin("PUT", "/admin/schemas/sch.test", {{"schema", schema}}).status == 201);
  for (const json& retry : {with_id, with_key}) {
    auto r = post(retry);
    CAPTURE(retry.dump());
    CHECK(r.status == 200);
    CHECK(r.body_json()["duplicate"] == true);
  }
  CHECK(post(with_id).body_json()["event_id"] == "01JH0000000000000000000042");
  // A new event that breaks the schema is still refused, with or without its own id.
  json fresh = with_id;
  fresh["event_id"] = "01JH0000000000000000000043";
  CHECK(post(fresh).status == 422);
  fresh.erase("event_id");
  CHECK(post(fresh).status == 422);
  CHECK(l.db("SELECT * FROM events").size() == 2);
  // The tenant's events read back are never for a shared cache, as every JSON answer.
  auto read =
      l.mesh.request("events", "GET", "/api/events", Mesh::tenant_headers("bakery", kToken));
  CHECK(read.status == 200);
  CHECK(read.header("cache-control") == "no-store");
}

TEST_CASE("retention replaces old payloads with a summary and a tombstone; nothing is deleted") {
  Ledger l;
  std::string old1 = l.emit("price.changed", {{"secret", "old"}});
  std::string old2 = l.emit("lead.received", {{"secret", "old"}});
  l.mesh.now_ms += 400LL * ss::kMsPerDay;
  std::string fresh = l.emit("price.changed", {{"secret", "new"}});
  // The default keeps payloads 730 days (EVENTS_RETENTION_DAYS): a 400-day-old one stays.
  CHECK(l.admin("POST", "/admin/events/retention").body_json()["redacted"] == 0);
  l.mesh.now_ms += 400LL * ss::kMsPerDay;
  auto r = l.admin("POST", "/admin/events/retention");
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["redacted"] == 2);
  json rows = l.db("SELECT event_id, payload_json, redacted_at FROM events ORDER BY event_id");
  REQUIRE(rows.size() == 4);  // 3 + the tombstone
  CHECK(rows[0]["payload_json"] == "{\"_redacted\":true}");
  CHECK(rows[1]["payload_json"] == "{\"_redacted\":true}");
  CHECK(rows[2]["event_id"] == fresh);
  CHECK(rows[2]["payload_json"].get<std::string>().find("new") != std::string::npos);
  json tomb = l.db("SELECT * FROM events WHERE event_type = 'events.tombstoned'");
  REQUIRE(tomb.size() == 1);
  CHECK(tomb[0]["tenant_id"] == "bakery");
  CHECK(l.db("SELECT * FROM events_retention_summaries").size() == 2);
  CHECK(l.admin("POST", "/admin/events/retention").body_json()["redacted"] == 0);
}

TEST_CASE(
    "the hourly cron runs retention batches until it catches up, at most "
    "RETENTION_BATCHES_PER_RUN") {
  // Before: one batch of 500 an hour (12,000 events a day), whatever the backlog.
  Ledger l;
  for (int i = 0; i < 1001; ++i) l.emit("price.changed", {{"i", i}});
  l.mesh.now_ms += 731LL * ss::kMsPerDay;
  auto unredacted = [&] {
    return l
        .db("SELECT COUNT(*) AS n FROM events WHERE redacted_at IS NULL "
            "AND event_type != 'events.tombstoned'")[0]["n"]
        .get<int>();
  };
  l.mesh.set_env("events", "RETENTION_BATCHES_PER_RUN", "1");
  l.mesh.message("events", {{"op", "scheduled"}, {"cron", "0 * * * *"}});
  CHECK(unredacted() == 501);
  l.mesh.set_env("events", "RETENTION_BATCHES_PER_RUN", "20");
  l.mesh.message("events", {{"op", "scheduled"}, {"cron", "0 * * * *"}});
  CHECK(unredacted() == 0);  // 500 + 1 in the second run, which then stops
  CHECK(l.db("SELECT * FROM events WHERE event_type = 'events.tombstoned'").size() == 3);
}

TEST_CASE("/health shows each consumer's lag and flags one over an hour") {
  Ledger l;
  l.emit("order.placed");
  l.mesh.now_ms += 2 * 60 * 60 * 1000;
  json health = l.mesh.request("events", "GET", "/health", l.op(false)).body_json();
  CHECK(health["service"] == "siteswarm-events-service");
  CHECK(health["consumers"]["workflow_runner"]["lagging"] == true);
  CHECK(health["consumers"]["workflow_runner"]["lag_seconds"].get<int>() >= 7200);
  CHECK(health["lagging"] == true);
  l.drain();
  health = l.mesh.request("events", "GET", "/health", l.op(false)).body_json();
  CHECK(health["consumers"]["workflow_runner"]["lagging"] == false);
  CHECK(health["consumers"]["timeline_indexer"]["lagging"] == true);
}

TEST_CASE("cron triggers run the right consumer") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  l.emit("order.placed");
  json out = l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}});
  CHECK(out["ok"] == true);
  CHECK(l.calls.size() == 1);
  out = l.mesh.message("events", {{"op", "scheduled"}, {"cron", "0 * * * *"}});
  CHECK(out["ok"] == true);
  CHECK(l.db("SELECT * FROM entity_timelines").size() == 1);
}

TEST_CASE(
    "/health: public exactly {ok, service, version} without a D1 query; details with the operator "
    "token; /health/consumers pages on a stall") {
  // Before: anyone saw every consumer's cursor and the quarantine counts, at 7 D1 queries a hit;
  // then a coarse "status" beside the contract's three keys, read from D1 once a second.
  Ledger l;
  l.emit("order.placed");
  int d1 = 0;
  l.mesh.fail_effect = [&](const json& e) {
    if (e["kind"].get<std::string>().rfind("d1.", 0) == 0) ++d1;
    return false;
  };
  json pub = l.mesh.request("events", "GET", "/health").body_json();
  CHECK(pub == json{{"ok", true}, {"service", "siteswarm-events-service"}, {"version", "0.1.0"}});
  CHECK(d1 == 0);
  json full = l.mesh.request("events", "GET", "/health", l.op(false)).body_json();
  CHECK(d1 == 1);
  CHECK(full["ok"] == true);
  CHECK(full["status"] == "ok");
  CHECK(full["consumers"]["workflow_runner"]["lagging"] == false);
  CHECK(full["quarantined"] == 0);
  // A wrong token is the public view, not an error.
  auto wrong = l.mesh.request("events", "GET", "/health", {{"Authorization", "Bearer nope"}});
  CHECK(wrong.status == 200);
  CHECK(wrong.body_json() == pub);
  CHECK(l.mesh.request("events", "GET", "/health/consumers").status == 200);
  l.mesh.now_ms += 2 * 60 * 60 * 1000;
  // /health stays 200 with the same three keys (the platform contract: the worker is up); the probe
  // for outside monitors, /health/consumers, is the one that answers 503, reading D1 on every hit.
  auto stalled = l.mesh.request("events", "GET", "/health");
  CHECK(stalled.status == 200);
  CHECK(stalled.body_json() == pub);
  d1 = 0;
  for (int i = 0; i < 2; ++i) {
    auto probe = l.mesh.request("events", "GET", "/health/consumers");
    CHECK(probe.status == 503);
    CHECK(probe.body_json()["ok"] == false);
    CHECK(probe.body_json()["status"] == "stalled");
    CHECK(probe.body_json()["error"]["code"] == "consumer_stalled");
    CHECK_FALSE(probe.body_json().contains("consumers"));
  }
  CHECK(d1 == 2);
  CHECK(l.mesh.request("events", "GET", "/health", l.op(false)).body_json()["status"] == "stalled");
  // Draining through the operator API cures it, at once for the probe.
  for (const char* c : {"workflow_runner", "timeline_indexer", "anomaly_detector",
                        "reflexion_analyzer", "customer_health_watcher"}) {
    l.drain(c);
  }
  CHECK(l.mesh.request("events", "GET", "/health/consumers").status == 200);
  // D1 down: /health still answers (it reads nothing); the probe and the operator view say so.
  l.mesh.fail_effect = [](const json& e) { return e["kind"] == "d1.all"; };
  CHECK(l.mesh.request("events", "GET", "/health").body_json() == pub);
  json down = l.mesh.request("events", "GET", "/health", l.op(false)).body_json();
  CHECK(down["ok"] == true);
  CHECK(down["status"] == "degraded");
}

// --- draining on cron: batch after batch in one run ------------------------------------------------

namespace {

const json kRunnerCron = {{"op", "scheduled"}, {"cron", "*/2 * * * *"}};

// `n` events of `type` for bakery; their event_ids in insertion order.
std::vector<std::string> emit_many(Ledger& l, int n, const std::string& type,
                                   const json& payload = json::object()) {
  std::vector<std::string> ids;
  ids.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) ids.push_back(l.emit(type, payload));
  return ids;
}

json drain_state(Ledger& l, const std::string& consumer) {
  json rows =
      l.db("SELECT cursor, events_read FROM event_drain_state WHERE consumer = '" + consumer + "'");
  return rows.empty() ? json(nullptr) : rows[0];
}

// Every start the webhook received went out once, and those are exactly the events' starts.
void check_started_once(Ledger& l, const std::vector<std::string>& ids) {
  std::multiset<std::string> keys = l.keys();
  CHECK(keys.size() == ids.size());
  for (const std::string& id : ids) CHECK(keys.count("workflow_runner:" + id + ":notify") == 1);
}

}  // namespace

TEST_CASE(
    "one cron run drains a backlog of three batches, holding one lock it renews with each commit") {
  // Before: one batch of 500 per run, so workflow_runner's */2 cron drained at most 250 events a
  // minute however long the backlog.
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::vector<std::string> ids = emit_many(l, 1201, "order.placed");
  // 90 s of virtual time pass at each D1 batch: the run outlives the lock's 5 minute TTL, so its
  // lock must be renewed to stay its own.
  struct LockSeen {
    std::string holder;
    std::int64_t expires_at_ms = 0;
    std::int64_t now_ms = 0;
  };
  std::vector<LockSeen> seen;
  l.mesh.fail_effect = [&](const json& e) {
    if (e["kind"] != "d1.batch") return false;
    l.mesh.now_ms += 90 * 1000;
    json lock = l.db(
        "SELECT holder, expires_at_ms FROM cron_locks WHERE name = "
        "'drain:workflow_runner'");
    LockSeen s;
    s.now_ms = l.mesh.now_ms;
    if (!lock.empty()) {
      s.holder = lock[0]["holder"];
      s.expires_at_ms = lock[0]["expires_at_ms"];
    }
    seen.push_back(s);
    return false;
  };
  json out = l.mesh.message("events", kRunnerCron);
  CHECK(out["ok"] == true);
  check_started_once(l, ids);
  json state = drain_state(l, "workflow_runner");
  CHECK(state["cursor"] == ids.back());
  CHECK(state["events_read"] == 1201);
  // Opening, then per batch its claims and its commit (which opens the next batch or releases).
  REQUIRE(seen.size() >= 7);
  CHECK(seen[0].holder.empty());  // the opening takes the lock
  for (std::size_t i = 1; i < 7; ++i) {
    CHECK(seen[i].holder == seen[1].holder);        // one run, one holder
    CHECK(seen[i].expires_at_ms > seen[i].now_ms);  // still live: renewed by each commit
  }
  CHECK(seen[6].now_ms - seen[1].now_ms > ss::events::kLockTtlMs);
  CHECK(l.db("SELECT * FROM cron_locks WHERE name = 'drain:workflow_runner'").empty());
  // The operator's drain reads one batch per call unless asked for more.
  l.mesh.fail_effect = nullptr;
  CHECK(l.drain()["read"] == 0);
}

TEST_CASE("DRAIN_BATCHES_PER_RUN bounds a cron run; the next run continues at the cursor") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  l.mesh.set_env("events", "DRAIN_BATCHES_PER_RUN", "2");
  std::vector<std::string> ids = emit_many(l, 1001, "order.placed");
  l.mesh.message("events", kRunnerCron);
  CHECK(l.calls.size() == 1000);
  CHECK(drain_state(l, "workflow_runner")["cursor"] == ids[999]);
  CHECK(l.db("SELECT * FROM cron_locks").empty());
  l.mesh.message("events", kRunnerCron);
  check_started_once(l, ids);
  CHECK(drain_state(l, "workflow_runner")["cursor"] == ids.back());
  // POST /admin/events/drain?batches=N drains like a cron run and says how many batches it took.
  std::vector<std::string> more = emit_many(l, 600, "order.placed");
  auto r = l.admin("POST", "/admin/events/drain?consumer=workflow_runner&batches=5");
  REQUIRE(r.status == 200);
  json report = r.body_json()["consumers"]["workflow_runner"];
  CHECK(report["read"] == 600);
  CHECK(report["started"] == 600);
  CHECK(report["batches"] == 2);
  CHECK(report["cursor"] == more.back());
  auto bad = l.admin("POST", "/admin/events/drain?consumer=workflow_runner&batches=0");
  CHECK(bad.status == 400);
  CHECK(bad.body_json()["error"]["field"] == "batches");
  // Over the maximum (kMaxDrainBatchesPerRun, sized to keep a run under 1,000 D1 queries).
  auto over = l.admin("POST", "/admin/events/drain?consumer=workflow_runner&batches=151");
  CHECK(over.status == 400);
  CHECK(over.body_json()["error"]["field"] == "batches");
  CHECK(l.admin("POST", "/admin/events/drain?consumer=workflow_runner&batches=150").status == 200);
  // A consumer that is not one of the five drainers: 400 naming the query parameter.
  auto nobody = l.admin("POST", "/admin/events/drain?consumer=nobody");
  CHECK(nobody.status == 400);
  CHECK(nobody.body_json()["error"]["code"] == "invalid_request");
  CHECK(nobody.body_json()["error"]["field"] == "consumer");
  // The operator's tenant_id: a well-formed tenant id or null; anything else names the field.
  for (const json& tenant : {json("Bakery"), json(5), json("-x"), json("")}) {
    auto r = l.admin("POST", "/api/events",
                     {{"event_type", "order.placed"},
                      {"entity_ref", "order:1"},
                      {"payload", json::object()},
                      {"tenant_id", tenant}});
    CAPTURE(tenant.dump());
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["code"] == "invalid_event");
    CHECK(r.body_json()["error"]["field"] == "tenant_id");
  }
}

TEST_CASE(
    "the subrequest budget is the run's: a cron run of several batches stops when it is spent") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  // One start per event: 700 subrequests cover the first batch (500 starts) and part of the second.
  l.mesh.set_env("events", "DRAIN_SUBREQUEST_BUDGET", "700");
  std::vector<std::string> ids = emit_many(l, 1001, "order.placed");
  l.mesh.message("events", kRunnerCron);
  std::size_t first_run = l.calls.size();
  CHECK(first_run > 500);
  CHECK(first_run < 700);
  CHECK(drain_state(l, "workflow_runner")["cursor"] == ids[first_run - 1]);
  CHECK(l.db("SELECT * FROM cron_locks").empty());
  for (int i = 0; i < 3 && l.calls.size() < ids.size(); ++i) l.mesh.message("events", kRunnerCron);
  check_started_once(l, ids);
}

TEST_CASE("a kill switch turned on mid-run stops the run at the next batch, lock released") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::vector<std::string> ids = emit_many(l, 1001, "order.placed");
  int batches = 0;
  l.mesh.fail_effect = [&](const json& e) {
    // The second D1 batch is the first batch's claims: the switch goes on while it is processed.
    if (e["kind"] == "d1.batch" && ++batches == 2) {
      l.mesh.db("EVENTS_DB")
          .execute(
              "INSERT INTO kill_switches (name, enabled, updated_at) "
              "VALUES ('kill:fanout', 1, '2025-11-29T14:20:00Z')",
              json::array());
    }
    return false;
  };
  l.mesh.message("events", kRunnerCron);
  CHECK(l.calls.size() == 500);  // the batch in hand finishes; the next one is not read
  CHECK(drain_state(l, "workflow_runner")["cursor"] == ids[499]);
  CHECK(l.db("SELECT * FROM cron_locks").empty());
  l.mesh.fail_effect = nullptr;
  l.mesh.message("events", kRunnerCron);  // still on: nothing
  CHECK(l.calls.size() == 500);
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", false}}).status == 200);
  l.mesh.message("events", kRunnerCron);
  check_started_once(l, ids);
}

TEST_CASE("a failure in batch 2 keeps batch 1 committed; the next run redoes batch 2 once") {
  SUBCASE("workflow_runner: batch 2's claims fail, nothing of it was started") {
    Ledger l;
    l.workflow("notify");
    l.subscribe("*", "notify");
    std::vector<std::string> ids = emit_many(l, 1001, "order.placed");
    int batches = 0;
    // Opening, batch 1's claims, batch 1's commit (opening batch 2), batch 2's claims.
    l.mesh.fail_effect = [&](const json& e) { return e["kind"] == "d1.batch" && ++batches == 4; };
    l.mesh.message("events", kRunnerCron);
    CHECK(l.calls.size() == 500);
    CHECK(drain_state(l, "workflow_runner")["cursor"] == ids[499]);
    CHECK(l.db("SELECT * FROM cron_locks").empty());  // released on the way out
    l.mesh.fail_effect = nullptr;
    l.mesh.message("events", kRunnerCron);
    check_started_once(l, ids);
    CHECK(l.db("SELECT * FROM event_consumer_dedupe WHERE status = 'started'").size() == 1001);
  }
  SUBCASE("reflexion_analyzer: batch 2's commit fails; every failure is counted once") {
    Ledger l;
    std::vector<std::string> ids =
        emit_many(l, 1001, "lead.spam_absorbed", {{"reason", "honeypot"}});
    int batches = 0;
    // Opening, batch 1's commit (opening batch 2), batch 2's commit.
    l.mesh.fail_effect = [&](const json& e) { return e["kind"] == "d1.batch" && ++batches == 3; };
    const json cron = {{"op", "scheduled"}, {"cron", "*/30 * * * *"}};
    l.mesh.message("events", cron);
    auto counted = [&] {
      json rows =
          l.db("SELECT failure_count FROM reflexion_log WHERE subject = 'lead.spam_absorbed'");
      return rows.empty() ? 0 : rows[0]["failure_count"].get<int>();
    };
    CHECK(counted() == 500);
    CHECK(drain_state(l, "reflexion_analyzer")["cursor"] == ids[499]);
    CHECK(l.db("SELECT * FROM cron_locks").empty());
    l.mesh.fail_effect = nullptr;
    l.mesh.message("events", cron);
    CHECK(counted() == 1001);
    CHECK(drain_state(l, "reflexion_analyzer")["cursor"] == ids.back());
    l.mesh.message("events", cron);  // caught up: nothing counted twice
    CHECK(counted() == 1001);
  }
}

TEST_CASE("a drain call costs one D1 round trip to open and releases its lock in its commit") {
  // Before: the kill switches, the lock, the cursor and the batch were four D1 calls, and the
  // release a fifth after the commit.
  Ledger l;
  emit_many(l, 3, "lead.spam_absorbed", {{"reason", "honeypot"}});
  std::vector<std::string> kinds;
  l.mesh.fail_effect = [&](const json& e) {
    std::string kind = e["kind"];
    if (kind.rfind("d1.", 0) == 0) kinds.push_back(kind);
    return false;
  };
  json report = l.drain("reflexion_analyzer");
  CHECK(report["read"] == 3);
  CHECK(kinds == std::vector<std::string>{"d1.batch", "d1.batch"});  // open; commit + release
  CHECK(l.db("SELECT * FROM cron_locks").empty());
  kinds.clear();
  CHECK(l.drain("reflexion_analyzer")["read"] == 0);  // caught up: open, then the release alone
  CHECK(kinds.size() == 2);
  // Locked or killed: the opening alone.
  l.mesh.db("EVENTS_DB")
      .execute("INSERT INTO cron_locks VALUES ('drain:reflexion_analyzer', 'other', ?1)",
               json::array({l.mesh.now_ms + 60000}));
  kinds.clear();
  CHECK(l.drain("reflexion_analyzer")["locked"] == true);
  CHECK(kinds.size() == 1);
  l.mesh.db("EVENTS_DB").execute("DELETE FROM cron_locks", json::array());
  REQUIRE(
      l.admin("PUT", "/admin/kill-switches/kill:reflexion_analyzer", {{"enabled", true}}).status ==
      200);
  kinds.clear();
  json killed = l.drain("reflexion_analyzer");
  CHECK(killed["killed"] == true);
  CHECK(kinds.size() == 1);
  CHECK(l.db("SELECT * FROM cron_locks").empty());  // a stopped consumer takes no lock
}

// Three events drained and two waiting; a drain of those two runs, and while it sends its first
// start the operator replays workflow_runner from the first event — after the run's lock has
// expired, with `expire_lock` (a run past the lock's 5 minutes). Returns the replay's status.
static int replay_during_drain(Ledger& l, std::vector<std::string>& ids, bool expire_lock) {
  l.workflow("notify");
  l.subscribe("*", "notify");
  for (int i = 0; i < 3; ++i) ids.push_back(l.emit("price.changed"));
  CHECK(l.drain()["started"] == 3);
  for (int i = 0; i < 2; ++i) ids.push_back(l.emit("price.changed"));
  auto stub = l.mesh.fetch_stub;
  int replay_status = 0;
  l.mesh.fetch_stub = [&](const json& req) {
    if (replay_status == 0) {
      if (expire_lock) {
        l.mesh.db("EVENTS_DB").execute("UPDATE cron_locks SET expires_at_ms = 0", json::array());
      }
      replay_status =
          l.admin("POST", "/admin/consumers/workflow_runner/replay", {{"from_event_id", ids[0]}})
              .status;
    }
    return stub(req);
  };
  json report = l.drain();
  l.mesh.fetch_stub = stub;
  CHECK(report["read"] == 2);
  return replay_status;
}

TEST_CASE("a run that outlived its drain lock cannot overwrite a replayed cursor") {
  Ledger l;
  std::vector<std::string> ids;
  CHECK(replay_during_drain(l, ids, /*expire_lock=*/true) == 200);
  // The run's commit moved nothing: the replay's cursor stands, and the next drain reads the
  // window again (dedupe absorbs what was started).
  json cursor = l.db("SELECT cursor FROM event_drain_state WHERE consumer = 'workflow_runner'");
  REQUIRE(cursor.size() == 1);
  CHECK(cursor[0]["cursor"] != ids[4]);
  json again = l.drain();
  CHECK(again["read"] == 5);
  CHECK(l.calls.size() == 5);
}

TEST_CASE("a replay made while a drain of that consumer runs is never undone by the run") {
  Ledger l;
  std::vector<std::string> ids;
  // The replay cannot take effect under the running drain: it says so instead of answering 200
  // and being overwritten by the run's commit.
  CHECK(replay_during_drain(l, ids, /*expire_lock=*/false) == 409);
  json cursor = l.db("SELECT cursor FROM event_drain_state WHERE consumer = 'workflow_runner'");
  REQUIRE(cursor.size() == 1);
  CHECK(cursor[0]["cursor"] == ids[4]);

  // Once the run is over, the same replay lands, and the next drain reads the window again.
  REQUIRE(l.admin("POST", "/admin/consumers/workflow_runner/replay", {{"from_event_id", ids[0]}})
              .status == 200);
  json again = l.drain();
  CHECK(again["read"] == 5);
  CHECK(again["duplicates"] == 5);
  CHECK(l.calls.size() == 5);
}

TEST_CASE("a run that lost its drain lock reports the cursor it committed, not the one it wanted") {
  SUBCASE("the last batch: its commit and the release find the lock taken") {
    Ledger l;
    std::vector<std::string> ids;
    l.workflow("notify");
    l.subscribe("*", "notify");
    for (int i = 0; i < 3; ++i) ids.push_back(l.emit("price.changed"));
    CHECK(l.drain()["cursor"] == ids[2]);
    for (int i = 0; i < 2; ++i) ids.push_back(l.emit("price.changed"));
    auto stub = l.mesh.fetch_stub;
    l.mesh.fetch_stub = [&](const json& req) {
      // While the run sends its starts, its lock expires and another run takes it.
      l.mesh.db("EVENTS_DB")
          .execute("UPDATE cron_locks SET holder = 'other', expires_at_ms = ?1",
                   json::array({l.mesh.now_ms + ss::events::kLockTtlMs}));
      return stub(req);
    };
    json report = l.drain();
    l.mesh.fetch_stub = stub;
    CHECK(report["read"] == 2);
    CHECK(report["started"] == 2);
    CHECK(report["lock_lost"] == true);
    // Before: ids[4], a position the commit never wrote.
    CHECK(report["cursor"] == ids[2]);
    CHECK(drain_state(l, "workflow_runner")["cursor"] == ids[2]);
    // The other run's lock was left alone.
    CHECK(l.db("SELECT holder FROM cron_locks")[0]["holder"] == "other");
  }
  SUBCASE("a full batch: the commit that would open the next one finds the lock taken") {
    Ledger l;
    std::vector<std::string> ids =
        emit_many(l, 600, "lead.spam_absorbed", {{"reason", "honeypot"}});
    int batches = 0;
    l.mesh.fail_effect = [&](const json& e) {
      // The opening, then batch 1's commit: the lock is another run's by the time it lands.
      if (e["kind"] == "d1.batch" && ++batches == 2) {
        l.mesh.db("EVENTS_DB")
            .execute("UPDATE cron_locks SET holder = 'other', expires_at_ms = ?1",
                     json::array({l.mesh.now_ms + ss::events::kLockTtlMs}));
      }
      return false;
    };
    auto r = l.admin("POST", "/admin/events/drain?consumer=reflexion_analyzer&batches=2");
    l.mesh.fail_effect = nullptr;
    REQUIRE(r.status == 200);
    json report = r.body_json()["consumers"]["reflexion_analyzer"];
    CHECK(report["read"] == 500);
    CHECK(report["lock_lost"] == true);
    CHECK(report["cursor"].is_null());  // before: ids[499]
    CHECK(l.db("SELECT * FROM event_drain_state WHERE consumer = 'reflexion_analyzer'").empty());
  }
  SUBCASE("a full batch whose commit finds the lock taken and a kill switch on") {
    Ledger l;
    emit_many(l, 600, "lead.spam_absorbed", {{"reason", "honeypot"}});
    int batches = 0;
    l.mesh.fail_effect = [&](const json& e) {
      if (e["kind"] == "d1.batch" && ++batches == 2) {
        l.mesh.db("EVENTS_DB")
            .execute("UPDATE cron_locks SET holder = 'other', expires_at_ms = ?1",
                     json::array({l.mesh.now_ms + ss::events::kLockTtlMs}));
        l.mesh.db("EVENTS_DB")
            .execute(
                "INSERT INTO kill_switches (name, enabled, updated_at) "
                "VALUES ('kill:reflexion_analyzer', 1, '2025-11-29T14:20:00Z')",
                json::array());
      }
      return false;
    };
    auto r = l.admin("POST", "/admin/events/drain?consumer=reflexion_analyzer&batches=2");
    l.mesh.fail_effect = nullptr;
    REQUIRE(r.status == 200);
    json report = r.body_json()["consumers"]["reflexion_analyzer"];
    CHECK(report["killed"] == true);
    CHECK(report["lock_lost"] == true);
    CHECK(report["cursor"].is_null());
    CHECK(l.db("SELECT holder FROM cron_locks")[0]["holder"] == "other");
  }
}

TEST_CASE(
    "a lock lost between workflow_runner's chunks reports the cursor those chunks committed") {
  // One start per chunk: each chunk's commit (its cursor included) rides with the next chunk's
  // claims. The lock is taken by another run while the second chunk's start goes out: the first
  // chunk's commit landed while this run held the lock (the cursor is past event 3), the second's
  // and the third's did not.
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  l.mesh.set_env("events", "DRAIN_CHUNK_STARTS", "1");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(l.emit("price.changed"));
  CHECK(l.drain()["cursor"] == ids[2]);
  for (int i = 0; i < 3; ++i) ids.push_back(l.emit("price.changed"));
  auto stub = l.mesh.fetch_stub;
  int starts = 0;
  l.mesh.fetch_stub = [&](const json& req) {
    if (++starts == 2) {
      l.mesh.db("EVENTS_DB")
          .execute("UPDATE cron_locks SET holder = 'other', expires_at_ms = ?1",
                   json::array({l.mesh.now_ms + ss::events::kLockTtlMs}));
    }
    return stub(req);
  };
  json report = l.drain();
  l.mesh.fetch_stub = stub;
  CAPTURE(report);
  CHECK(report["lock_lost"] == true);
  CHECK(report["started"] == 3);
  CHECK(drain_state(l, "workflow_runner")["cursor"] == ids[3]);
  // Before: ids[2], the cursor the run opened with, though its first chunk had committed ids[3].
  CHECK(report["cursor"] == ids[3]);
  CHECK(l.db("SELECT holder FROM cron_locks")[0]["holder"] == "other");
}

TEST_CASE("a quarantine retry honours kill:fanout and kill:workflow_runner as the drain does") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("*", "notify");
  std::string id = l.emit("order.placed");
  l.failing_events.insert(id);
  CHECK(l.drain()["quarantined"] == 1);
  l.failing_events.clear();
  REQUIRE(l.calls.size() == 1);  // the failed start
  const std::string retry = "/admin/quarantine/workflow_runner/" + id + "/retry";
  json before = l.db("SELECT attempts, reason, resolved_at FROM events_quarantine");
  REQUIRE(before.size() == 1);

  for (const std::string stop : {"kill:fanout", "kill:workflow_runner"}) {
    CAPTURE(stop);
    REQUIRE(l.admin("PUT", "/admin/kill-switches/" + stop, {{"enabled", true}}).status == 200);
    // The drain holds back: nothing read, nothing started.
    CHECK(l.drain()["killed"] == true);
    // So does the retry: refused with the contract's JSON error, nothing sent, the row as it was.
    // Before: the retry started the workflow while the emergency stop was on.
    auto r = l.admin("POST", retry);
    CHECK(r.status == 409);
    CHECK(r.body_json()["error"]["code"] == "conflict");
    CHECK(r.body_json()["error"]["kill_switch"] == stop);
    json message = r.body_json()["error"]["message"];
    CHECK(message.is_string());
    if (message.is_string()) CHECK(message.get<std::string>().find(stop) != std::string::npos);
    CHECK(l.calls.size() == 1);
    CHECK(l.db("SELECT attempts, reason, resolved_at FROM events_quarantine") == before);
    CHECK(l.db("SELECT * FROM event_consumer_dedupe").empty());
    REQUIRE(l.admin("PUT", "/admin/kill-switches/" + stop, {{"enabled", false}}).status == 200);
  }

  // Every stop off: the retry starts it, once.
  auto ok = l.admin("POST", retry);
  REQUIRE(ok.status == 200);
  CHECK(ok.body_json()["resolved"] == true);
  CHECK(ok.body_json()["started"] == 1);
  CHECK(l.calls.size() == 2);
}

// A start's body is written from the event's view and input as text once per event; it must be the
// bytes the platform's writer gives the same object: {"event","input","workflow_run_id",
// "workflow_type"} in that order, with quotes, backslashes, control characters and non-ASCII (the
// line separator U+2028 included) escaped or kept exactly as dump_json does. With and without a mapper.
TEST_CASE("a workflow start's body is the platform writer's JSON of its object, byte for byte") {
  Ledger l;
  l.workflow("plain");
  l.workflow("mapped");
  l.subscribe("note.*", "plain");
  l.subscribe("note.*", "mapped",
              {{"input_mapper", {{"text", "$.payload.text"}, {"id", "$.entity_id"}}}});
  const std::string awkward = "say \"hi\" \\ \x01 tab\t é \xE2\x80\xA8 end";
  l.emit("note.added", {{"text", awkward}, {"n", 1.5}, {"list", {1, "two", nullptr}}},
         "note:" + std::string("a\"b"));
  l.emit("note.added", {{"text", "second"}});
  CHECK(l.drain()["started"] == 4);
  REQUIRE(l.calls.size() == 4);
  for (const json& call : l.calls) {
    const json& body = call["body"];
    std::string expected =
        ss::dump_json(ss::json_object({{"workflow_type", body["workflow_type"]},
                                       {"workflow_run_id", body["workflow_run_id"]},
                                       {"event", body["event"]},
                                       {"input", body["input"]}}));
    CHECK(call["text"] == expected);
  }
  json first_plain;
  json first_mapped;
  for (const json& call : l.calls) {
    if (call["body"]["event"]["payload"]["text"] != awkward) continue;
    (call["body"]["workflow_type"] == "plain" ? first_plain : first_mapped) = call["body"];
  }
  CHECK(first_plain["input"]["text"] == awkward);
  CHECK(first_mapped["input"] == json{{"text", awkward}, {"id", "a\"b"}});
}

TEST_CASE(
    "a start that failed for a passing reason is retried by the */2 cron, backing off, six "
    "attempts in all") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("order.*", "notify");
  l.subscribe("invoice.*", "nowhere");  // a workflow without a definition: fails every time
  std::string flaky = l.emit("order.placed");
  std::string poison = l.emit("invoice.sent");
  l.failing_events = {flaky};  // its target answers 500
  json report = l.drain();
  CHECK(report["quarantined"] == 2);
  auto row_of = [&](const std::string& id) {
    const json listed = l.admin("GET", "/admin/quarantine").body_json();
    for (const json& r : listed["quarantined"]) {
      if (r["event_id"] == id) return r;
    }
    return json();
  };
  auto cron = [&] {
    CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}})["ok"] == true);
  };
  // A missing definition would fail again: no automatic retry. A 500 may pass: due in 2 minutes.
  REQUIRE(row_of(poison).is_object());
  CHECK(row_of(poison)["retry_at"].is_null());
  json first = row_of(flaky);
  REQUIRE(first["retry_at"].is_string());
  const std::size_t starts = l.calls.size();
  // Not due yet: nothing is sent.
  l.mesh.now_ms += 60'000;
  cron();
  CHECK(l.calls.size() == starts);
  // Due, and still failing: attempt 2, the next one 4 minutes later.
  l.mesh.now_ms += 61'000;
  cron();
  CHECK(l.calls.size() == starts + 1);
  json second = row_of(flaky);
  CHECK(second["attempts"] == 2);
  REQUIRE(second["retry_at"].is_string());
  CHECK(second["retry_at"].get<std::string>() > first["retry_at"].get<std::string>());
  // Each retry waits twice as long; after the sixth attempt no retry is left.
  for (int attempt = 3; attempt <= ss::events::kMaxStartAttempts; ++attempt) {
    l.mesh.now_ms += (std::int64_t{2} << (attempt - 2)) * 60'000 + 1'000;
    cron();
    CAPTURE(attempt);
    CHECK(row_of(flaky)["attempts"] == attempt);
  }
  CHECK(row_of(flaky)["retry_at"].is_null());
  const std::size_t spent = l.calls.size();
  l.mesh.now_ms += 24 * 3'600'000LL;
  cron();
  CHECK(l.calls.size() == spent);  // by hand only now
  // The operator's retry (the target works again) starts it once and resolves the row.
  l.failing_events.clear();
  auto retried = l.admin("POST", "/admin/quarantine/workflow_runner/" + flaky + "/retry");
  REQUIRE(retried.status == 200);
  CHECK(retried.body_json()["started"] == 1);
  CHECK(row_of(flaky).is_null());
}

TEST_CASE(
    "a retried start that succeeds resolves its row, and what started before is not sent again") {
  Ledger l;
  l.workflow("notify");
  l.workflow("archive");
  l.subscribe("order.*", "notify");
  l.subscribe("order.*", "archive");
  std::string id = l.emit("order.placed");
  // notify's target answers 503 at first; archive's takes its start.
  auto base = l.mesh.fetch_stub;
  bool notify_down = true;
  l.mesh.fetch_stub = [&](const json& req) {
    ss::native::StubReply r = base(req);
    if (notify_down && req["url"].get<std::string>().find("/hooks/notify") != std::string::npos) {
      r.status = 503;
    }
    return r;
  };
  CHECK(l.drain()["quarantined"] == 1);
  REQUIRE(l.calls.size() == 2);
  notify_down = false;
  l.mesh.now_ms += 2 * 60'000 + 1'000;
  CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}})["ok"] == true);
  CHECK(l.admin("GET", "/admin/quarantine").body_json()["quarantined"].empty());
  // Only notify went out again; archive's start was a duplicate.
  REQUIRE(l.calls.size() == 3);
  CHECK(l.calls[2]["url"].get<std::string>().find("/hooks/notify") != std::string::npos);
  for (const std::string& k : l.keys()) CHECK(l.keys().count(k) <= 2);
}

TEST_CASE(
    "a start's head is its answer (bodyOptional); a 4xx would fail again: no automatic retry, 408 "
    "and 429 get one") {
  Ledger l;
  for (const char* type : {"gone", "slow", "busy"}) l.workflow(type);
  l.subscribe("a.*", "gone");
  l.subscribe("b.*", "slow");
  l.subscribe("c.*", "busy");
  auto base = l.mesh.fetch_stub;
  l.mesh.fetch_stub = [&](const json& req) {
    ss::native::StubReply r = base(req);
    const std::string url = req["url"];
    if (url.find("/hooks/gone") != std::string::npos) r.status = 404;
    if (url.find("/hooks/slow") != std::string::npos) r.status = 408;
    if (url.find("/hooks/busy") != std::string::npos) r.status = 429;
    return r;
  };
  std::string a = l.emit("a.x");
  std::string b = l.emit("b.x");
  std::string c = l.emit("c.x");
  CHECK(l.drain()["quarantined"] == 3);
  REQUIRE(l.calls.size() == 3);
  for (const json& call : l.calls) CHECK(call["body_optional"] == true);
  const json listed = l.admin("GET", "/admin/quarantine").body_json();
  std::map<std::string, json> retry_at;
  for (const json& r : listed["quarantined"]) retry_at[r["event_id"]] = r["retry_at"];
  CHECK(retry_at.at(a).is_null());
  CHECK(retry_at.at(b).is_string());
  CHECK(retry_at.at(c).is_string());
}
