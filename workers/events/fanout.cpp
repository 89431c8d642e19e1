#include "workers/events/fanout.h"

#include "shared/glob.h"

#include <map>

namespace ss::events {

Result<Subscription> Subscription::compile(const SubscriptionRow& row) {
  Subscription s;
  s.id = row.subscription_id;
  s.glob = row.event_type_glob;
  s.workflow_type = row.workflow_type;
  if (row.filter_expr && !row.filter_expr->empty()) {
    auto parsed = FilterExpr::parse(*row.filter_expr);
    if (!parsed) return std::move(parsed).error();
    s.filter = std::move(parsed).value();
  }
  if (row.input_mapper && !row.input_mapper->empty()) {
    auto doc = parse_json(*row.input_mapper);
    if (!doc) return std::move(doc).error();
    auto parsed = InputMapper::parse(*doc);
    if (!parsed) return std::move(parsed).error();
    s.mapper = std::move(parsed).value();
  }
  return s;
}

std::string idempotency_key(const std::string& consumer, const std::string& event_id,
                            const std::string& workflow_type) {
  return consumer + ":" + event_id + ":" + workflow_type;
}

FanoutPlan plan_fanout(const std::string& consumer, const json& event,
                       const std::vector<Subscription>& subscriptions,
                       const std::set<std::string>& seen, WorkMeter* meter) {
  FanoutPlan plan;
  std::string type = string_or(event, "event_type", "");
  std::string event_id = string_or(event, "event_id", "");
  std::vector<const Subscription*> matched;
  WorkMeter uncounted;
  WorkMeter& m = meter != nullptr ? *meter : uncounted;
  for (const Subscription& s : subscriptions) {
    if (m.over()) {
      plan.over_budget = true;  // checked between programs: one evaluation is the overshoot
      return plan;
    }
    m.add(s.glob.size() + type.size());
    if (glob_match(s.glob, type) && (!s.filter || s.filter->matches(event, m))) {
      matched.push_back(&s);
    }
  }
  plan.matched = matched.size();
  // Two subscriptions naming one workflow start it once (the start's key names the workflow, not
  // the subscription): the later ones are duplicates, and the cap counts workflows, not
  // subscriptions. That depends on the subscriptions alone, so the cap below stays where it was
  // from one run to the next. Every subscription naming a workflow past the cap is dropped (the
  // cap's record lists them all, in subscription order), none of them a duplicate.
  std::vector<const Subscription*> distinct;
  std::map<std::string, std::size_t> position;  // workflow -> its index in `distinct`
  for (const Subscription* s : matched) {
    if (position.emplace(s->workflow_type, distinct.size()).second) distinct.push_back(s);
  }
  for (const Subscription* s : matched) {
    std::size_t at = position[s->workflow_type];
    if (at >= kMaxFanout) {
      plan.dropped.push_back(s->id);
    } else if (distinct[at] != s) {
      ++plan.duplicates;
    }
  }
  if (distinct.size() > kMaxFanout) distinct.resize(kMaxFanout);
  // Starts already made are skipped after the cap: a later workflow never takes the place of one
  // started in an earlier run.
  for (const Subscription* s : distinct) {
    std::string key = idempotency_key(consumer, event_id, s->workflow_type);
    if (seen.count(key) != 0) {
      ++plan.duplicates;
      continue;
    }
    plan.start.push_back(FanoutDecision{s, std::move(key)});
  }
  return plan;
}

}  // namespace ss::events
