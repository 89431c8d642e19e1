#include "workers/events/retention.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "workers/events/ledger.h"

#include <map>

namespace ss::events {

Task<Result<json>> apply_retention(Context& ctx, int days) {
  std::int64_t cutoff_ms = ctx.now_ms() - static_cast<std::int64_t>(days) * kMsPerDay;
  if (cutoff_ms <= 0) co_return json_object({{"redacted", 0}});
  // Age is the ledger's clock (recorded_at), as the policy says: a producer's event_id can be
  // minted anywhere in time (queued late, or by a skewed clock) and must not decide when a payload goes.
  std::string cutoff = format_rfc3339_ms(cutoff_ms);
  SS_CO_TRY(std::vector<AgedEvent> rows, co_await EventStore::aged(cutoff, kRetentionBatch));
  if (rows.empty()) co_return json_object({{"redacted", 0}});

  // One tombstone per tenant, and a summary row per (day, tenant, type).
  struct Group {
    std::int64_t count = 0;
    std::string first, last;
  };
  std::map<std::string, std::map<std::pair<std::string, std::string>, Group>> by_tenant;
  // Each tenant's first and last event of the batch: its tombstone (which that tenant reads) names
  // only its own events, never another tenant's event_ids.
  std::map<std::string, Group> span;
  for (const AgedEvent& row : rows) {
    std::string day = row.recorded_at.substr(0, 10);
    std::string tenant = row.tenant_id.value_or("");
    Group& g = by_tenant[tenant][{day, row.event_type}];
    if (g.count++ == 0) g.first = row.event_id;
    g.last = row.event_id;
    Group& t = span[tenant];
    if (t.count++ == 0) t.first = row.event_id;
    t.last = row.event_id;
  }
  const std::string& first = rows.front().event_id;
  const std::string& last = rows.back().event_id;
  std::string now = format_rfc3339(ctx.now_ms());
  std::vector<D1Statement> statements;
  for (auto& [tenant, groups] : by_tenant) {
    const Group& own = span[tenant];
    NewEvent tomb;
    tomb.event_type = "events.tombstoned";
    tomb.entity_type = "retention";
    tomb.entity_id = own.first + ".." + own.last;
    if (!tenant.empty()) tomb.tenant_id = tenant;
    json summary = json::array();
    for (auto& [key, g] : groups) {
      summary.push_back({{"day", key.first},
                         {"event_type", key.second},
                         {"count", g.count},
                         {"first_event_id", g.first},
                         {"last_event_id", g.last}});
    }
    tomb.payload = {{"reason", "retention"}, {"retention_days", days}, {"summary", summary}};
    tomb.idempotency_key = std::string(kKeyRetention) + own.first + ":" + own.last;
    tomb.source_system = "siteswarm-events-service";
    SS_CO_TRY(Appended appended, co_await append_event(ctx, std::move(tomb)));
    for (auto& [key, g] : groups) {
      statements.push_back(AggregateStore::retention_summary_statement(
          key.first, tenant, key.second, g.count, g.first, g.last, appended.event_id));
    }
  }
  std::vector<std::int64_t> seqs;
  seqs.reserve(rows.size());
  for (const AgedEvent& row : rows) seqs.push_back(row.seq);
  statements.push_back(EventStore::redact_statement(seqs, now));
  SS_CO_CHECK(co_await commit(statements));
  co_return json_object(
      {{"redacted", rows.size()}, {"first_event_id", first}, {"last_event_id", last}});
}

}  // namespace ss::events
