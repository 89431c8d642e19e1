// plan_fanout is pure: every decision of the fan-out (match, filter, cap, dedupe) checked without
// a database, a network or a clock.
#include "workers/events/fanout.h"

#include <doctest/doctest.h>

#include <string>

namespace ss::events {
namespace {

const char* kConsumer = "workflow_runner";

json event(const std::string& type, const json& payload = json::object()) {
  return json{{"event_id", "01JH0000000000000000000001"},
              {"event_type", type},
              {"entity_type", "item"},
              {"entity_id", "1"},
              {"tenant_id", "bakery"},
              {"payload", payload}};
}

Subscription sub(const std::string& id, const std::string& glob, const std::string& workflow,
                 const std::string& filter = "") {
  SubscriptionRow row;
  row.subscription_id = id;
  row.event_type_glob = glob;
  row.workflow_type = workflow;
  if (!filter.empty()) row.filter_expr = filter;
  row.enabled = true;
  auto compiled = Subscription::compile(row);
  REQUIRE(compiled.ok());
  return std::move(compiled).value();
}

std::vector<std::string> started(const FanoutPlan& plan) {
  std::vector<std::string> out;
  for (const FanoutDecision& d : plan.start) out.push_back(d.subscription->workflow_type);
  return out;
}

TEST_CASE("plan_fanout matches by glob and filter, in subscription order") {
  std::vector<Subscription> subs = {sub("s1", "price.*", "notify"), sub("s2", "lead.*", "crm"),
                                    sub("s3", "*", "audit", "payload.amount > 100"),
                                    sub("s4", "price.changed", "reprice")};
  FanoutPlan small = plan_fanout(kConsumer, event("price.changed", {{"amount", 5}}), subs, {});
  CHECK(started(small) == std::vector<std::string>{"notify", "reprice"});
  CHECK(small.matched == 2);
  CHECK_FALSE(small.capped());
  CHECK(small.duplicates == 0);

  FanoutPlan big = plan_fanout(kConsumer, event("price.changed", {{"amount", 500}}), subs, {});
  CHECK(started(big) == std::vector<std::string>{"notify", "audit", "reprice"});
  CHECK(big.start[1].key == "workflow_runner:01JH0000000000000000000001:audit");

  CHECK(plan_fanout(kConsumer, event("order.placed"), subs, {}).start.empty());
}

TEST_CASE("plan_fanout caps at 8 starts and names the dropped subscriptions") {
  std::vector<Subscription> subs;
  for (int i = 0; i < 11; ++i) {
    subs.push_back(sub("s" + std::to_string(10 + i), "*", "wf" + std::to_string(10 + i)));
  }
  FanoutPlan plan = plan_fanout(kConsumer, event("price.changed"), subs, {});
  CHECK(plan.matched == 11);
  CHECK(plan.capped());
  CHECK(plan.start.size() == kMaxFanout);
  CHECK(plan.start.front().subscription->id == "s10");
  CHECK(plan.start.back().subscription->id == "s17");
  CHECK(plan.dropped == std::vector<std::string>{"s18", "s19", "s20"});
}

TEST_CASE("plan_fanout skips starts already made and a workflow named twice") {
  std::vector<Subscription> subs = {sub("s1", "price.*", "notify"), sub("s2", "*", "audit"),
                                    sub("s3", "price.changed", "notify"), sub("s4", "*", "crm")};
  std::set<std::string> seen = {idempotency_key(kConsumer, "01JH0000000000000000000001", "audit")};
  FanoutPlan plan = plan_fanout(kConsumer, event("price.changed"), subs, seen);
  CHECK(started(plan) == std::vector<std::string>{"notify", "crm"});
  CHECK(plan.duplicates == 2);  // audit already started; notify named by s1 and s3
  CHECK(plan.start[0].subscription->id == "s1");

  // Another consumer's keys are not this consumer's dedupe.
  std::set<std::string> other = {idempotency_key("other", "01JH0000000000000000000001", "audit")};
  CHECK(plan_fanout(kConsumer, event("price.changed"), subs, other).start.size() == 3);
}

TEST_CASE("the cap counts workflows: nine subscriptions to one workflow start it once, uncapped") {
  std::vector<Subscription> subs;
  for (int i = 0; i < 9; ++i) subs.push_back(sub("s" + std::to_string(i), "*", "wf"));
  FanoutPlan plan = plan_fanout(kConsumer, event("price.changed"), subs, {});
  CHECK(plan.start.size() == 1);
  CHECK(plan.start[0].subscription->id == "s0");
  CHECK(plan.matched == 9);
  CHECK(plan.duplicates == 8);
  CHECK_FALSE(plan.capped());

  // Eight workflows named by ten subscriptions (two of them twice) fit under the cap; a ninth
  // workflow is the one dropped.
  std::vector<Subscription> mixed;
  for (int i = 0; i < 8; ++i)
    mixed.push_back(sub("m" + std::to_string(i), "*", "wf" + std::to_string(i)));
  mixed.push_back(sub("again1", "*", "wf1"));
  mixed.push_back(sub("again2", "*", "wf2"));
  FanoutPlan fits = plan_fanout(kConsumer, event("price.changed"), mixed, {});
  CHECK(fits.start.size() == kMaxFanout);
  CHECK(fits.duplicates == 2);
  CHECK_FALSE(fits.capped());
  mixed.push_back(sub("ninth", "*", "wf8"));
  FanoutPlan over = plan_fanout(kConsumer, event("price.changed"), mixed, {});
  CHECK(over.matched == 11);
  CHECK(over.start.size() == kMaxFanout);
  CHECK(over.dropped == std::vector<std::string>{"ninth"});
  // A dropped workflow named twice: both of its subscriptions are dropped (the record lists every
  // one to cull), neither is a duplicate of a start that never happened.
  mixed.push_back(sub("ninth-again", "*", "wf8"));
  FanoutPlan twice = plan_fanout(kConsumer, event("price.changed"), mixed, {});
  CHECK(twice.dropped == std::vector<std::string>{"ninth", "ninth-again"});
  CHECK(twice.duplicates == 2);
}

TEST_CASE(
    "the cap applies before the dedupe of starts made: dropped ones are not replaced by later "
    "ones") {
  std::vector<Subscription> subs;
  for (int i = 0; i < 10; ++i)
    subs.push_back(sub("s" + std::to_string(i), "*", "wf" + std::to_string(i)));
  // An earlier run started wf0 and wf3: the rerun starts the other six under the cap, never wf8/wf9.
  std::set<std::string> seen = {idempotency_key(kConsumer, "01JH0000000000000000000001", "wf0"),
                                idempotency_key(kConsumer, "01JH0000000000000000000001", "wf3")};
  FanoutPlan plan = plan_fanout(kConsumer, event("price.changed"), subs, seen);
  CHECK(started(plan) == std::vector<std::string>{"wf1", "wf2", "wf4", "wf5", "wf6", "wf7"});
  CHECK(plan.duplicates == 2);
  CHECK(plan.dropped == std::vector<std::string>{"s8", "s9"});
}

TEST_CASE("a subscription whose stored filter or mapper no longer parses does not compile") {
  SubscriptionRow row;
  row.subscription_id = "s1";
  row.event_type_glob = "*";
  row.workflow_type = "wf";
  row.filter_expr = "payload.amount >";
  CHECK_FALSE(Subscription::compile(row).ok());
  row.filter_expr.reset();
  row.input_mapper = "{not json";
  CHECK_FALSE(Subscription::compile(row).ok());
  row.input_mapper = R"({"id":"$.entity_id"})";
  auto ok = Subscription::compile(row);
  REQUIRE(ok.ok());
  CHECK(ok->mapper->apply(event("a.b")) == json{{"id", "1"}});
}

}  // namespace
}  // namespace ss::events
