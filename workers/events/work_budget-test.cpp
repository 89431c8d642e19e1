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
