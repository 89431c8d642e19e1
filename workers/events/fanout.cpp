#include "workers/events/fanout.h"

#include "shared/glob.h"

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
  // from one run to the next.
  std::vector<const Subscription*> distinct;
  std::set<std::string> workflows;
  for (const Subscription* s : matched) {
    if (workflows.insert(s->workflow_type).second) {
      distinct.push_back(s);
    } else {
      ++plan.duplicates;
    }
  }
  if (distinct.size() > kMaxFanout) {
    for (std::size_t i = kMaxFanout; i < distinct.size(); ++i)
      plan.dropped.push_back(distinct[i]->id);
    distinct.resize(kMaxFanout);
  }
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
