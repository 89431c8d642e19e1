#pragma once
// Fan-out decisions, without effects: which subscriptions an event starts, given what this consumer
// has already started. workflow_runner.cpp turns a plan into claims, starts and a commit.

#include "shared/json_util.h"
#include "workers/events/filter_expr.h"
#include "workers/events/input_mapper.h"
#include "workers/events/store.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ss::events {

// At most this many workflow starts per event; the rest are dropped and the cap hit is recorded.
inline constexpr std::size_t kMaxFanout = 8;

// An enabled subscription with its filter and mapper parsed once per drain.
struct Subscription {
  std::string id;
  std::string glob;
  std::string workflow_type;
  std::optional<FilterExpr> filter;
  std::optional<InputMapper> mapper;

  // A stored filter or mapper that no longer parses is an error: the drain skips that subscription.
  static Result<Subscription> compile(const SubscriptionRow& row);
};

// The per-consumer dedupe key of one start, also sent as the start's Idempotency-Key.
std::string idempotency_key(const std::string& consumer, const std::string& event_id,
                            const std::string& workflow_type);

struct FanoutDecision {
  const Subscription* subscription = nullptr;  // points into the subscriptions planned over
  std::string key;                             // idempotency_key(consumer, event, workflow)
};

struct FanoutPlan {
  std::size_t matched = 0;            // subscriptions whose glob and filter match
  std::vector<std::string> dropped;   // ids of the matches naming workflows beyond kMaxFanout
  std::vector<FanoutDecision> start;  // what to start, in subscription order
  int duplicates = 0;                 // matches already started, or naming a workflow twice
  bool over_budget = false;           // the meter passed its limit: matching stopped, plan unusable
  bool capped() const { return !dropped.empty(); }
};

// Match (glob, then filter); two subscriptions naming one workflow start it once (the later one is a
// duplicate); cap at kMaxFanout workflows in subscription order; then a start whose key is in `seen`
// is a duplicate.
// `event` is the API view of the event (what filters see). With a meter, each glob and filter tried
// adds its work, and matching stops (over_budget) as soon as the meter is over its limit.
FanoutPlan plan_fanout(const std::string& consumer, const json& event,
                       const std::vector<Subscription>& subscriptions,
                       const std::set<std::string>& seen, WorkMeter* meter = nullptr);

}  // namespace ss::events
