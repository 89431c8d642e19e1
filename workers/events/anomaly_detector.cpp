#include "workers/events/anomaly_detector.h"

#include "shared/rfc3339.h"
#include "shared/ulid.h"
#include "workers/events/ledger.h"

#include <set>

namespace ss::events {

namespace {

// The ledger's own records (alerts, cap hits, tombstones) are not traffic.
bool counts_for_rates(const std::string& type) {
  return type.rfind("anomaly.", 0) != 0 && type.rfind("events.", 0) != 0;
}

}  // namespace

Task<Status> run_anomaly_batch(Context& ctx, DrainReport& report,
                               const std::vector<EventRow>& rows) {
  std::vector<D1Statement> statements;
  std::set<std::string> types;
  for (const EventRow& row : rows) {
    if (!counts_for_rates(row.event_type)) continue;
    std::int64_t at = ulid_time_ms(row.event_id).value_or(ctx.now_ms());
    types.insert(row.event_type);
    statements.push_back(
        AggregateStore::rate_statement(row.event_type, at - at % kRateWindowMs, row.event_id));
  }
  SS_CO_CHECK(co_await commit_with_cursor(ctx, report, rows, std::move(statements)));

  // Compare each type's current window with its trailing 24 h average.
  std::int64_t window = ctx.now_ms() - ctx.now_ms() % kRateWindowMs;
  for (const std::string& type : types) {
    SS_CO_TRY(RateSums sums, co_await AggregateStore::rate_sums(
                                 type, window, window - kBaselineWindows * kRateWindowMs));
    double baseline = static_cast<double>(sums.trailing) / kBaselineWindows;
    if (sums.current < kMinAnomalyCount ||
        static_cast<double>(sums.current) <= kAnomalyFactor * baseline) {
      continue;
    }
    NewEvent alert;
    alert.event_type = "anomaly.detected";
    alert.entity_type = "event_type";
    alert.entity_id = type;
    alert.payload = {{"event_type", type},
                     {"window_start", format_rfc3339(window)},
                     {"count", sums.current},
                     {"baseline_per_window", baseline},
                     {"window_minutes", kRateWindowMs / 60000}};
    alert.idempotency_key = "anomaly:" + type + ":" + std::to_string(window);
    alert.source_system = "siteswarm-events-service";
    SS_CO_TRY(Appended appended, co_await append_event(ctx, std::move(alert)));
    if (!appended.duplicate) ctx.log("anomaly.detected for " + type);
  }
  co_return Unit{};
}

}  // namespace ss::events
