#pragma once
// anomaly_detector: per-type event counts in 15-minute windows; appends anomaly.detected when a
// type's current window holds at least kMinAnomalyCount events and more than kAnomalyFactor times
// its trailing 24-hour average per window (once per type and window).

#include "workers/events/cursor.h"

namespace ss::events {

inline constexpr std::int64_t kRateWindowMs = 15 * 60 * 1000;
inline constexpr int kBaselineWindows = 96;  // 24 h of 15-minute windows
inline constexpr std::int64_t kMinAnomalyCount = 20;
inline constexpr std::int64_t kAnomalyFactor = 3;

Task<Status> run_anomaly_batch(Context& ctx, DrainReport& report,
                               const std::vector<EventRow>& rows);

}  // namespace ss::events
