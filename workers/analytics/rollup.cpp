#include "workers/analytics/rollup.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "workers/analytics/visitor.h"

#include <tuple>

namespace ss::analytics {

namespace {
constexpr std::size_t kMaxDimensionValue = 512;
}

const std::vector<std::string>& dimension_names() {
  static const std::vector<std::string> names = {"path",       "referrer",   "country",
                                                 "colo",       "device",     "browser",
                                                 "utm_source", "utm_medium", "utm_campaign"};
  return names;
}

json Hit::to_message() const {
  json body = json_object({{"t", tenant}, {"d", day}});
  if (filtered) body["f"] = true;
  if (!visitor.empty()) body["v"] = visitor;
  json m = json::object();
  for (const auto& [dim, key] : dims) m[dim] = key;
  body["m"] = std::move(m);
  return body;
}

std::optional<Hit> Hit::from_message(const json& body) {
  Hit hit;
  hit.tenant = string_or(body, "t", "");
  hit.day = string_or(body, "d", "");
  if (!is_valid_tenant_id(hit.tenant) || hit.day.size() != 10 || !parse_date(hit.day)) {
    return std::nullopt;
  }
  hit.filtered = get_bool(body, "f").value_or(false);
  hit.visitor = string_or(body, "v", "");
  if (hit.visitor.size() > 64) return std::nullopt;
  if (const json* m = find_field(body, "m"); m && m->is_object()) {
    for (const std::string& dim : dimension_names()) {
      std::optional<std::string> key = get_string(*m, dim);
      if (!key || key->empty()) continue;
      if (key->size() > kMaxDimensionValue) key->resize(kMaxDimensionValue);
      hit.dims[dim] = std::move(*key);
    }
  }
  return hit;
}

RollupBatch aggregate(const std::vector<Hit>& hits) {
  using DayKey = std::tuple<std::string, std::string>;                            // tenant, day
  using DimKey = std::tuple<std::string, std::string, std::string, std::string>;  // + dim, key
  std::map<DayKey, std::pair<std::int64_t, std::int64_t>> totals;  // pageviews, filtered
  std::map<DimKey, std::int64_t> dims;
  std::map<DayKey, std::map<std::string, std::int64_t>> visitors;  // hash → pageviews
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::string>, bool>
      visitor_dims;
  for (const Hit& hit : hits) {
    auto& total = totals[{hit.tenant, hit.day}];
    if (hit.filtered) {
      ++total.second;
      continue;
    }
    ++total.first;
    for (const auto& [dim, key] : hit.dims) {
      ++dims[{hit.tenant, hit.day, dim, key}];
      if (!hit.visitor.empty()) visitor_dims[{hit.tenant, hit.day, dim, key, hit.visitor}] = true;
    }
    if (!hit.visitor.empty()) ++visitors[{hit.tenant, hit.day}][hit.visitor];
  }
  RollupBatch out;
  for (const auto& [k, v] : totals) {
    out.totals.push_back(json::array({std::get<0>(k), std::get<1>(k), v.first, v.second}));
  }
  for (const auto& [k, n] : dims) {
    out.dims.push_back(
        json::array({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), n}));
  }
  for (const auto& [k, per_visitor] : visitors) {
    for (const auto& [hash, n] : per_visitor) {
      out.visitor_days.push_back(json::array({std::get<0>(k), std::get<1>(k), hash, n}));
    }
  }
  for (const auto& [k, unused] : visitor_dims) {
    out.visitor_dims.push_back(json::array(
        {std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), std::get<4>(k)}));
  }
  return out;
}

Task<QueueOutcome> consume_batch(Context& ctx, AnalyticsStore store,
                                 std::vector<QueueMessage> batch) {
  QueueOutcome outcome;
  std::vector<Hit> hits;
  std::vector<std::string> ids;
  // The per-visitor rows of days before yesterday are gone (the hourly job deletes them when D+2
  // begins, with D's salt): a late hit of such a day counts as a pageview only. Its hash would
  // make a new visitor_days row — the visitor (and a bounce) counted a second time, and a
  // per-visitor row kept past its 48 hours.
  const std::string visitor_state_from = utc_day(ctx.now_ms(), -1);
  std::size_t unlinked = 0;
  for (QueueMessage& m : batch) {
    std::optional<Hit> hit = Hit::from_message(m.body);
    if (!hit) {
      ctx.log("analytics queue: dropping malformed message " + m.id);
      outcome.ack.push_back(m.id);
      continue;
    }
    if (!hit->visitor.empty() && hit->day < visitor_state_from) {
      hit->visitor.clear();
      ++unlinked;
    }
    hits.push_back(std::move(*hit));
    ids.push_back(m.id);
  }
  if (unlinked > 0) {
    ctx.log("analytics queue: " + std::to_string(unlinked) + " hit(s) of days before " +
            visitor_state_from + " counted without their visitor");
  }
  RollupBatch rows = aggregate(hits);
  Status applied = co_await store.apply(rows);
  if (!applied) {
    ctx.log("analytics queue: rollup of " + std::to_string(ids.size()) +
            " hits failed, retrying: " + applied.error().message);
    for (auto& id : ids) outcome.retry.emplace_back(id, kRollupRetrySeconds);
    co_return outcome;
  }
  for (auto& id : ids) outcome.ack.push_back(id);
  co_return outcome;
}

}  // namespace ss::analytics
