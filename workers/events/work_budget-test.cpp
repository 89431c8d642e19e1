// The drain's work budget (work_budget.h): filters and mappers count their work, a run stops at an
// event boundary once the budget is spent and the next run continues, and an event over the whole
// budget on its own is quarantined instead of stopping the consumer run after run.
#include "workers/events/work_budget.h"
#include "shared/json_util.h"
#include "tests/native/harness.h"
#include "workers/events/cursor.h"
#include "workers/events/filter_expr.h"
#include "workers/events/input_mapper.h"
#include "workers/events/test_ledger.h"

#include <doctest/doctest.h>

#include <set>
#include <string>

using ss::json;
using namespace ss::events;
using namespace ss::events::testing;

namespace {

// A payload near the 64 KiB cap, so a handful of events spend the smallest budget allowed.
constexpr std::size_t kBigText = 50'000;

json big_payload(int n, bool needle) {
  std::string text(kBigText, 'a');
  if (needle) text.replace(kBigText / 2, 6, "needle");
  return {{"n", n}, {"text", text}};
}

// What a start delivered, without the ids that differ between two ledgers.
std::multiset<std::string> deliveries(const Ledger& l) {
  std::multiset<std::string> out;
  for (const json& c : l.calls) {
    out.insert(c["body"]["workflow_type"].get<std::string>() + " " + c["body"]["input"].dump());
  }
  return out;
}

void setup_two_subscriptions(Ledger& l) {
  l.workflow("audit");
  l.workflow("notify");
  l.subscribe("*", "audit");
  l.subscribe("order.*", "notify",
              {{"filter_expr", "contains(payload.text, \"needle\")"},
               {"input_mapper", {{"text", "$.payload.text"}, {"n", "$.payload.n"}}}});
}

}  // namespace

TEST_CASE("filters and mappers count their work in bytes scanned and copied, deterministically") {
  json event = {{"event_type", "order.placed"}, {"payload", {{"s", std::string(10'000, 'a')}}}};
  auto filter = FilterExpr::parse("contains(payload.s, \"ab\") || payload.s == \"x\"");
  REQUIRE(filter);
  WorkMeter first;
  CHECK_FALSE(filter->matches(event, first));
  CHECK(first.used >= 10'000);  // the search scanned the whole string
  CHECK(first.used < 10'100);
  WorkMeter again;
  filter->matches(event, again);
  CHECK(again.used == first.used);

  json whole = json::object();
  json picked = json::object();
  for (int i = 0; i < 8; ++i) whole["k" + std::to_string(i)] = "$";
  picked["n"] = "$.payload.missing";
  auto copies = InputMapper::parse(whole);
  auto small = InputMapper::parse(picked);
  REQUIRE(copies);
  REQUIRE(small);
  CHECK(copies->cost(event) >= 8 * 10'000);  // eight copies of the event
  CHECK(small->cost(event) < 100);
}

TEST_CASE("a budget-limited batch finishes over several runs: every start once, same results") {
  Ledger limited;
  Ledger unlimited;
  setup_two_subscriptions(limited);
  setup_two_subscriptions(unlimited);
  limited.mesh.set_env("events", "DRAIN_WORK_BUDGET", std::to_string(kMinDrainWorkBudget));
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    ids.push_back(limited.emit("order.placed", big_payload(i, i % 3 == 0)));
    unlimited.emit("order.placed", big_payload(i, i % 3 == 0));
  }

  json all = unlimited.drain();
  CHECK(all["read"] == 20);
  CHECK(all["started"] == 27);  // 20 audits, 7 notifies (i = 0, 3, …, 18)
  CHECK_FALSE(all.contains("budget_exhausted"));

  int runs = 0;
  int read = 0;
  int started = 0;
  while (true) {
    json report = limited.drain();
    if (report["read"] == 0) break;
    ++runs;
    REQUIRE(runs <= 20);
    read += report["read"].get<int>();
    started += report["started"].get<int>();
    if (read < 20) {
      CHECK(report["work_units"].get<std::uint64_t>() > 0);
      // Stopped at an event boundary: the cursor is the last event handled, nothing is claimed.
      CHECK(report["budget_exhausted"] == true);
      CHECK(report["work_budget_exhausted"] == true);
      CHECK(report["cursor"] == ids[static_cast<std::size_t>(read - 1)]);
      CHECK(limited.db("SELECT * FROM event_consumer_dedupe WHERE status = 'claimed'").empty());
    }
    if (read < 20) {
      // Counted: what the run took plus the event it planned and put back.
      CHECK(report["work_units"].get<std::uint64_t>() > kMinDrainWorkBudget);
    } else {
      CHECK_FALSE(report.contains("work_units"));  // an ordinary report keeps the contract's keys
    }
  }
  CHECK(runs >= 3);
  CHECK(read == 20);
  CHECK(started == 27);
  auto keys = limited.keys();
  CHECK(keys.size() == 27);
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == 27);  // each start once
  for (int i = 0; i < 20; ++i) {
    auto id = ids[static_cast<std::size_t>(i)];
    CHECK(keys.count("workflow_runner:" + id + ":audit") == 1);
    CHECK(keys.count("workflow_runner:" + id + ":notify") == (i % 3 == 0 ? 1 : 0));
  }
  CHECK(deliveries(limited) == deliveries(unlimited));
  CHECK(limited.db("SELECT * FROM events_quarantine").empty());
  CHECK(
      limited.db(
          "SELECT cursor FROM event_drain_state WHERE consumer = 'workflow_runner'")[0]["cursor"] ==
      ids.back());
}

TEST_CASE("an event over the whole work budget on its own is quarantined; the consumer moves on") {
  Ledger l;
  l.workflow("audit");
  l.workflow("copy");
  l.subscribe("*", "audit");
  json mapper = json::object();  // 64 copies of a 50 KB event: over the smallest budget alone
  for (std::size_t i = 0; i < kMaxMapperKeys; ++i) mapper["k" + std::to_string(i)] = "$";
  l.subscribe("big.*", "copy", {{"input_mapper", mapper}});
  l.mesh.set_env("events", "DRAIN_WORK_BUDGET", std::to_string(kMinDrainWorkBudget));
  std::string a = l.emit("small.one", {{"n", 1}});
  std::string big = l.emit("big.one", big_payload(2, false));
  std::string c = l.emit("small.one", {{"n", 3}});

  // The big event does not fit after another one: the run stops before it.
  json first = l.drain();
  CHECK(first["read"] == 1);
  CHECK(first["cursor"] == a);
  CHECK(first["work_budget_exhausted"] == true);
  // First of its run and still over the budget: quarantined without any start, cursor past it.
  json second = l.drain();
  CHECK(second["read"] == 1);
  CHECK(second["quarantined"] == 1);
  CHECK(second["started"] == 0);
  CHECK(second["work_budget_exhausted"] == true);
  CHECK(second["cursor"] == big);
  auto q = l.admin("GET", "/admin/quarantine?consumer=workflow_runner").body_json();
  REQUIRE(q["quarantined"].size() == 1);
  CHECK(q["quarantined"][0]["event_id"] == big);
  std::string reason = q["quarantined"][0]["reason"];
  CHECK(reason.find("work budget") != std::string::npos);
  CHECK(reason.find("DRAIN_WORK_BUDGET") != std::string::npos);
  json third = l.drain();
  CHECK(third["read"] == 1);
  CHECK(third["cursor"] == c);
  CHECK_FALSE(third.contains("budget_exhausted"));
  CHECK(l.calls.size() == 2);  // audit of a and c

  // A retry is held to the same budget: still quarantined, nothing sent.
  auto retried = l.admin("POST", "/admin/quarantine/workflow_runner/" + big + "/retry");
  REQUIRE(retried.status == 200);
  CHECK(retried.body_json()["resolved"] == false);
  CHECK(retried.body_json()["reason"].get<std::string>().find("work budget") != std::string::npos);
  CHECK(l.calls.size() == 2);

  // Narrowed (the mapper cleared), the retry starts both workflows once.
  json subs = l.admin("GET", "/admin/subscriptions").body_json()["subscriptions"];
  std::string copy_id;
  for (const json& s : subs) {
    if (s["workflow_type"] == "copy") copy_id = s["id"];
  }
  REQUIRE(l.admin("PATCH", "/admin/subscriptions/" + copy_id, {{"input_mapper", nullptr}}).status ==
          200);
  auto resolved = l.admin("POST", "/admin/quarantine/workflow_runner/" + big + "/retry");
  REQUIRE(resolved.status == 200);
  CHECK(resolved.body_json()["resolved"] == true);
  CHECK(resolved.body_json()["started"] == 2);
  auto keys = l.keys();
  CHECK(keys.size() == 4);
  CHECK(keys.count("workflow_runner:" + big + ":audit") == 1);
  CHECK(keys.count("workflow_runner:" + big + ":copy") == 1);
  CHECK(l.admin("GET", "/admin/quarantine").body_json()["quarantined"].empty());
}

TEST_CASE("DRAIN_WORK_BUDGET outside its range falls back to the default") {
  Ledger l;
  setup_two_subscriptions(l);
  l.mesh.set_env("events", "DRAIN_WORK_BUDGET", "10");  // would quarantine every event
  for (int i = 0; i < 5; ++i) l.emit("order.placed", big_payload(i, true));
  json report = l.drain();
  CHECK(report["read"] == 5);
  CHECK(report["started"] == 10);
  CHECK(report["quarantined"] == 0);
  CHECK_FALSE(report.contains("work_budget_exhausted"));
}

TEST_CASE("a release pass shares one work budget: it stops early and the next pass goes on") {
  // Held starts of a high-risk workflow (kill:high_risk_ops), released when the switch goes off.
  // Each held 50 KB event costs ~150,000 units to release (its payload parsed, then carried by the
  // start as the event and as the input), so 20 of them need ~3 M, over the smallest budget (2 M):
  // the pass releases what fits and leaves the rest held for the next pass, as a drain run leaves
  // the rest of a batch for the next run.
  Ledger l;
  REQUIRE(l.admin("PUT", "/admin/workflows/refund",
                  {{"target", {{"webhook", "http://127.0.0.1:9/hooks/refund"}}}, {"risk_level", 4}})
              .status == 201);
  l.subscribe("order.*", "refund");
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", true}}).status ==
          200);
  l.mesh.set_env("events", "DRAIN_WORK_BUDGET", std::to_string(kMinDrainWorkBudget));
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(l.emit("order.refunded", big_payload(i, false)));
  json drained = l.drain();
  REQUIRE(drained["read"] == 20);  // holding costs no start: the whole backlog fits one drain
  REQUIRE(drained["held"] == 20);
  REQUIRE(l.calls.empty());

  auto off = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  REQUIRE(off.status == 200);
  json pass = off.body_json()["released"];
  CAPTURE(pass);
  // Before: every one of the 20 released, each with a whole run's budget (~3 M units in one pass).
  int released = pass["released"].get<int>();
  CHECK(released >= 1);
  REQUIRE(released < 20);
  CHECK(pass["still_held"] == 20 - released);
  CHECK(pass["quarantined"] == 0);
  CHECK(pass["work_budget_exhausted"] == true);
  CHECK(l.calls.size() == static_cast<std::size_t>(released));
  // The oldest went first; the rest are still held (nothing lost, nothing quarantined).
  for (int i = 0; i < released; ++i) {
    CHECK(l.keys().count("workflow_runner:" + ids[static_cast<std::size_t>(i)] + ":refund") == 1);
  }
  json open =
      l.db("SELECT event_id, reason FROM events_quarantine WHERE resolved_at IS NULL ORDER BY seq");
  REQUIRE(open.size() == static_cast<std::size_t>(20 - released));
  if (released < 20 && !open.empty()) {  // (REQUIRE does not stop a test built without exceptions)
    CHECK(open[0]["event_id"] == ids[static_cast<std::size_t>(released)]);
  }
  for (const json& row : open) CHECK(row["reason"] == "held: kill:high_risk_ops");

  // The next pass (the */2 cron) releases the rest, each once.
  CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}})["ok"] == true);
  auto keys = l.keys();
  CHECK(keys.size() == 20);
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == 20);
  CHECK(l.db("SELECT * FROM events_quarantine WHERE resolved_at IS NULL").empty());
}

TEST_CASE("a release pass whose first held event is over the whole budget quarantines it alone") {
  Ledger l;
  REQUIRE(l.admin("PUT", "/admin/workflows/refund",
                  {{"target", {{"webhook", "http://127.0.0.1:9/hooks/refund"}}}, {"risk_level", 4}})
              .status == 201);
  json mapper = json::object();  // 64 copies of a 50 KB event: over the smallest budget alone
  for (std::size_t i = 0; i < kMaxMapperKeys; ++i) mapper["k" + std::to_string(i)] = "$";
  l.subscribe("order.big", "refund", {{"input_mapper", mapper}});
  l.subscribe("order.small", "refund");
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", true}}).status ==
          200);
  l.mesh.set_env("events", "DRAIN_WORK_BUDGET", std::to_string(kMinDrainWorkBudget));
  std::string big = l.emit("order.big", big_payload(1, false));
  std::string small = l.emit("order.small", {{"n", 2}});
  REQUIRE(l.drain()["held"] == 2);

  // The big one alone is over the budget: quarantined with that reason (it would stop every pass),
  // and the pass ends there; the small one is released by the next pass.
  json first =
      l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}}).body_json();
  CAPTURE(first);
  CHECK(first["released"]["quarantined"] == 1);
  CHECK(first["released"]["released"] == 0);
  CHECK(first["released"]["still_held"] == 1);
  CHECK(l.calls.empty());
  json second =
      l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}}).body_json();
  CHECK(second["released"]["released"] == 1);
  CHECK(l.keys() == std::multiset<std::string>{"workflow_runner:" + small + ":refund"});
  json open = l.db("SELECT event_id, reason FROM events_quarantine WHERE resolved_at IS NULL");
  REQUIRE(open.size() == 1);
  CHECK(open[0]["event_id"] == big);
  CHECK(open[0]["reason"].get<std::string>().find("DRAIN_WORK_BUDGET") != std::string::npos);
}

namespace {

// Held starts of a high-risk workflow (refund, risk_level 4, on order.*) for `payloads`, with
// kill:high_risk_ops turned off again while kill:fanout was on: the PUT released nothing, so the
// next */2 cron's release pass releases them (and its drain then runs in the same invocation).
std::vector<std::string> held_for_the_cron(Ledger& l, const std::vector<json>& payloads) {
  REQUIRE(l.admin("PUT", "/admin/workflows/refund",
                  {{"target", {{"webhook", "http://127.0.0.1:9/hooks/refund"}}}, {"risk_level", 4}})
              .status == 201);
  l.subscribe("order.*", "refund");
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", true}}).status ==
          200);
  std::vector<std::string> ids;
  for (const json& p : payloads) ids.push_back(l.emit("order.refunded", p));
  json held = l.drain();
  REQUIRE(held["held"] == static_cast<int>(payloads.size()));
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", true}}).status == 200);
  auto off = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  REQUIRE(off.status == 200);
  REQUIRE(off.body_json()["released"]["released"] == 0);
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", false}}).status == 200);
  REQUIRE(l.calls.empty());
  return ids;
}

// Runs the */2 cron; returns the starts it made.
std::size_t cron_starts(Ledger& l) {
  std::size_t before = l.calls.size();
  CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}})["ok"] == true);
  return l.calls.size() - before;
}

// Every held and every new event started its workflow exactly once, nothing left held.
void each_started_once(Ledger& l, const std::vector<std::string>& held,
                       const std::vector<std::string>& fresh) {
  auto keys = l.keys();
  CHECK(keys.size() == held.size() + fresh.size());
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == keys.size());
  for (const std::string& id : held) CHECK(keys.count("workflow_runner:" + id + ":refund") == 1);
  for (const std::string& id : fresh) CHECK(keys.count("workflow_runner:" + id + ":notify") == 1);
  CHECK(l.db("SELECT * FROM events_quarantine WHERE resolved_at IS NULL").empty());
  CHECK(l.calls.size() == held.size() + fresh.size());
}

}  // namespace

TEST_CASE("the */2 cron's release pass and its drain share one subrequest budget") {
  // 10 held starts released by the cron's pass, 20 new single-start events for its drain, in an
  // invocation of DRAIN_SUBREQUEST_BUDGET 30. The pass spends 8 D1 calls (the held rows with the
  // switches, the fan-out context's 4 reads, its claims and its commit) and 10 starts; the drain 7
  // D1 calls (its opening, the context's 4 reads, a claims batch, its commit) and one per start. So
  // the invocation has room for 30 - 8 - 7 = 15 starts; the drain's first event always goes.
  Ledger l;
  l.mesh.set_env("events", "DRAIN_SUBREQUEST_BUDGET", "30");
  std::vector<json> payloads;
  for (int i = 0; i < 10; ++i) payloads.push_back({{"n", i}});
  std::vector<std::string> held = held_for_the_cron(l, payloads);
  l.workflow("notify");
  l.subscribe("signup.*", "notify");
  std::vector<std::string> fresh;
  for (int i = 0; i < 20; ++i) fresh.push_back(l.emit("signup.created", {{"n", i}}));

  std::size_t first = cron_starts(l);
  // Before: the pass's 10 and the drain's 20, 30 starts and 15 D1 calls, 45 subrequests.
  CHECK(first <= 15);
  CHECK(first > 10);  // every held start, and the drain took at least its first event
  for (const std::string& id : held) {
    CHECK(l.keys().count("workflow_runner:" + id + ":refund") == 1);
  }
  // The drain's cursor stopped where the budget did; the next run goes on from there.
  std::size_t runs = 1;
  while (l.calls.size() < held.size() + fresh.size() && runs < 10) {
    CHECK(cron_starts(l) <= 30 - 2 - 7);  // the pass only reads (nothing held), the drain's rest
    ++runs;
  }
  CHECK(runs == 2);
  CHECK(cron_starts(l) == 0);  // nothing left, nothing sent again
  each_started_once(l, held, fresh);
  CHECK(l.db("SELECT cursor FROM event_drain_state WHERE consumer = "
             "'workflow_runner'")[0]["cursor"] == fresh.back());
}

TEST_CASE("the */2 cron's release pass and its drain share one work budget") {
  // Each 50 KB event costs ~150,000 units to start (its payload parsed, then carried as the event
  // and as the input): the pass's 10 held ones ~1.5 M of the smallest budget (2 M), so the drain
  // in the same invocation has room for ~3 more, where it took ~13 on a budget of its own.
  Ledger l;
  l.mesh.set_env("events", "DRAIN_WORK_BUDGET", std::to_string(kMinDrainWorkBudget));
  std::vector<json> payloads;
  for (int i = 0; i < 10; ++i) payloads.push_back(big_payload(i, false));
  std::vector<std::string> held = held_for_the_cron(l, payloads);
  l.workflow("notify");
  l.subscribe("signup.*", "notify");
  std::vector<std::string> fresh;
  for (int i = 0; i < 20; ++i) fresh.push_back(l.emit("signup.created", big_payload(i, false)));

  std::size_t first = cron_starts(l);
  // One start's work is over 3 × kBigText: the invocation's starts fit the budget (+ the drain's
  // first event, which always goes). Before: 10 + 13.
  constexpr std::size_t kPerStart = 3 * kBigText;
  CHECK(first > 10);
  CHECK(first <= static_cast<std::size_t>(kMinDrainWorkBudget) / kPerStart + 1);
  std::size_t runs = 1;
  while (l.calls.size() < held.size() + fresh.size() && runs < 10) {
    cron_starts(l);
    ++runs;
  }
  CHECK(runs >= 2);
  CHECK(cron_starts(l) == 0);
  each_started_once(l, held, fresh);
}

TEST_CASE("a release pass stops before DRAIN_SUBREQUEST_BUDGET; the next pass releases the rest") {
  // 15 held starts, a budget of 20: the pass's 8 D1 calls leave room for 12 starts.
  Ledger l;
  l.mesh.set_env("events", "DRAIN_SUBREQUEST_BUDGET", "20");
  std::vector<json> payloads;
  for (int i = 0; i < 15; ++i) payloads.push_back({{"n", i}});
  std::vector<std::string> held = held_for_the_cron(l, payloads);
  json pass =
      l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}}).body_json();
  CAPTURE(pass);
  CHECK(pass["released"]["released"] == 12);
  CHECK(pass["released"]["still_held"] == 3);
  CHECK(pass["released"]["budget_exhausted"] == true);
  CHECK(l.calls.size() == 12);
  CHECK(cron_starts(l) == 3);
  each_started_once(l, held, {});
}
