#include "workers/analytics/retention.h"

#include "shared/app.h"
#include "shared/emit.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "workers/analytics/visitor.h"

namespace ss::analytics {

namespace {

// Announces every finished (tenant, day) of daily_totals to the event ledger, once:
// `analytics.day_summarized` (entity `tenant:<id>`, payload day + totals), the traffic signal of the
// ledger's customer_health_watcher. A day is finished an hour after it ended (pageviews still in
// the queue have been rolled up by then; pageviews rolled up later still count in /v1/stats but are
// not announced again); days up to kSummaryLookbackDays back are caught up after an outage. A day
// of bot hits only is marked, not announced. The events go out in sendBatch()es of kSummaryPage, then the rows are marked in
// one D1 batch: a failure between the two sends them again next hour, and the ledger drops the
// repeat by its idempotency key (`analytics.day_summarized:<day>`, unique per tenant).
constexpr int kSummaryPage = 100;  // queue.sendBatch's maximum
constexpr int kSummaryPagesPerRun = 10;
constexpr int kSummaryLookbackDays = 7;
constexpr std::int64_t kSummaryDelayMs = 3'600'000;

Task<Status> announce_finished_days(Context& ctx, const AnalyticsStore& store, std::int64_t now) {
  const std::string before = utc_day(now - kSummaryDelayMs);
  const std::string from = utc_day(now, -kSummaryLookbackDays);
  for (int page = 0; page < kSummaryPagesPerRun; ++page) {
    SS_CO_TRY(std::vector<DaySummary> days,
              co_await store.unsummarized_days(from, before, kSummaryPage));
    if (days.empty()) break;
    SS_CO_TRY(std::vector<std::string> ids, co_await ctx.new_ulids(days.size()));
    std::vector<json> bodies;
    bodies.reserve(days.size());
    for (std::size_t i = 0; i < days.size(); ++i) {
      const DaySummary& d = days[i];
      if (d.totals.pageviews == 0)
        continue;  // bots only: no traffic to announce (marked all the same)
      EventDraft draft;
      draft.event_type = "analytics.day_summarized";
      draft.entity_ref = "tenant:" + d.tenant_id;
      draft.tenant_id = d.tenant_id;
      draft.idempotency_key = "analytics.day_summarized:" + d.day;
      draft.payload = json_object({{"day", d.day},
                                   {"pageviews", d.totals.pageviews},
                                   {"visitors", d.totals.visitors},
                                   {"bounces", d.totals.bounces},
                                   {"filtered", d.totals.filtered}});
      bodies.push_back(event_message(draft, ids[i], ctx.app().service, now));
    }
    if (!bodies.empty()) {
      SS_CO_CHECK(co_await queue_send_batch(kEventsQueueBinding, std::move(bodies)));
    }
    SS_CO_CHECK(co_await store.mark_summarized(days, format_rfc3339(now)));
    if (static_cast<int>(days.size()) < kSummaryPage) break;
  }
  co_return Unit{};
}

}  // namespace

Task<Status> run_maintenance(Context& ctx, AnalyticsStore store, std::int64_t now) {
  // Each step runs even when one before it failed (the job then fails with the first error): the
  // 48-hour deletions must never wait on drawing tomorrow's salt, nor the other way round.
  // Rows of day D go when D+2 begins, like D's salt.
  Status purged = co_await store.purge_visitor_state_before(utc_day(now, -1));
  Status rotated = co_await rotate_salts(ctx, store, now);
  const std::int64_t keep = ctx.env_int("ANALYTICS_RETENTION_DAYS", kDefaultRollupRetentionDays,
                                        kMinRollupRetentionDays, kMaxRollupRetentionDays);
  Status trimmed = co_await store.purge_rollups_before(utc_day(now, -static_cast<int>(keep) + 1));
  for (Status* step : {&purged, &rotated, &trimmed}) {
    if (!*step) co_return std::move(*step).error();
  }
  // Last, and never failing the job: the salts and the purges matter more than the announcement,
  // which the next hourly run repeats.
  Status announced = co_await announce_finished_days(ctx, store, now);
  if (!announced) ctx.log("analytics: day summaries not announced: " + announced.error().message);
  co_return Unit{};
}

}  // namespace ss::analytics
