#pragma once
// Every SQL statement of the analytics worker (migrations/analytics/), as named constants behind
// typed functions. Handlers never build SQL.

#include "shared/effects.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ss::analytics {

// One message batch of the queue consumer, already aggregated (see rollup.h).
struct RollupBatch {
  json totals = json::array();        // [tenant, day, pageviews, filtered]
  json dims = json::array();          // [tenant, day, dim, key, pageviews]
  json visitor_days = json::array();  // [tenant, day, visitor_hash, pageviews]
  json visitor_dims = json::array();  // [tenant, day, dim, key, visitor_hash]
};

struct Totals {
  std::int64_t pageviews = 0;
  std::int64_t visitors = 0;
  std::int64_t bounces = 0;
  std::int64_t filtered = 0;
  static Totals decode(RowReader& r);
};

// A finished day of one tenant, to announce to the ledger (analytics.day_summarized).
struct DaySummary {
  std::string tenant_id;
  std::string day;
  Totals totals;
  static DaySummary decode(RowReader& r);
};

struct KeyCount {
  std::string key;
  std::int64_t pageviews = 0;
  std::int64_t visitors = 0;
  static KeyCount decode(RowReader& r);
};

class AnalyticsStore {
 public:
  explicit AnalyticsStore(std::string binding) : db_(std::move(binding)) {}

  // ---- salts
  Task<Result<std::optional<std::string>>> find_salt(const std::string& day) const;
  // Keeps an existing salt (the first one written wins), so concurrent creators agree.
  Task<Status> create_salt(const std::string& day, const std::string& salt_hex,
                           const std::string& now) const;
  Task<Result<std::int64_t>> delete_salts_before(const std::string& day) const;
  Task<Result<std::vector<std::string>>> salt_days() const;

  // ---- rollups: the whole batch in ONE D1 batch (one transaction), at most four statements.
  Task<Status> apply(const RollupBatch& batch) const;

  // ---- retention
  Task<Status> purge_visitor_state_before(const std::string& day) const;
  Task<Status> purge_rollups_before(const std::string& day) const;
  // Days in [from, before) not announced yet, oldest first, at most `limit`.
  Task<Result<std::vector<DaySummary>>> unsummarized_days(const std::string& from,
                                                          const std::string& before,
                                                          int limit) const;
  Task<Status> mark_summarized(const std::vector<DaySummary>& days, const std::string& now) const;

  // ---- reads for /v1/stats and the dashboard (days inclusive, YYYY-MM-DD)
  Task<Result<Totals>> totals(const std::string& tenant, const std::string& from,
                              const std::string& to) const;
  Task<Result<std::vector<KeyCount>>> by_day(const std::string& tenant, const std::string& from,
                                             const std::string& to) const;
  Task<Result<std::vector<KeyCount>>> by_dimension(const std::string& tenant,
                                                   const std::string& dim, const std::string& from,
                                                   const std::string& to, int limit) const;

 private:
  D1 db_;
};

}  // namespace ss::analytics
