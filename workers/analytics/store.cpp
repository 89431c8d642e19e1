#include "workers/analytics/store.h"

#include "shared/json_util.h"

namespace ss::analytics {

namespace {

constexpr std::string_view kFindSalt = R"sql(SELECT salt_hex FROM salts WHERE day = ?1)sql";

constexpr std::string_view kCreateSalt = R"sql(
INSERT OR IGNORE INTO salts (day, salt_hex, created_at) VALUES (?1, ?2, ?3)
)sql";

constexpr std::string_view kDeleteSaltsBefore = R"sql(DELETE FROM salts WHERE day < ?1)sql";

constexpr std::string_view kSaltDays = R"sql(SELECT day AS key FROM salts ORDER BY day)sql";

// The batch's rows travel as one JSON parameter each (json_each), so a statement's size does not
// grow with the batch and D1's bound-parameter limit never applies. "WHERE true" keeps SQLite from
// reading ON CONFLICT as a join constraint.
constexpr std::string_view kUpsertTotals = R"sql(
INSERT INTO daily_totals (tenant_id, day, pageviews, filtered)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
       json_extract(value, '$[3]')
  FROM json_each(?1) WHERE true
ON CONFLICT (tenant_id, day) DO UPDATE SET pageviews = pageviews + excluded.pageviews,
                                           filtered = filtered + excluded.filtered
)sql";

constexpr std::string_view kUpsertDims = R"sql(
INSERT INTO daily_dims (tenant_id, day, dim, key, pageviews)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
       json_extract(value, '$[3]'), json_extract(value, '$[4]')
  FROM json_each(?1) WHERE true
ON CONFLICT (tenant_id, dim, day, key) DO UPDATE SET pageviews = pageviews + excluded.pageviews
)sql";

// Triggers (0002_pageviews.sql) move daily_totals.visitors / bounces with these rows.
constexpr std::string_view kUpsertVisitorDays = R"sql(
INSERT INTO visitor_days (tenant_id, day, visitor_hash, pageviews)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
       json_extract(value, '$[3]')
  FROM json_each(?1) WHERE true
ON CONFLICT (tenant_id, day, visitor_hash) DO UPDATE SET pageviews = pageviews + excluded.pageviews
)sql";

// A trigger moves daily_dims.visitors for each row actually inserted.
constexpr std::string_view kInsertVisitorDims = R"sql(
INSERT OR IGNORE INTO visitor_dims (tenant_id, day, dim, key, visitor_hash)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
       json_extract(value, '$[3]'), json_extract(value, '$[4]')
  FROM json_each(?1)
)sql";

constexpr std::string_view kPurgeVisitorDays = R"sql(DELETE FROM visitor_days WHERE day < ?1)sql";
constexpr std::string_view kPurgeVisitorDims = R"sql(DELETE FROM visitor_dims WHERE day < ?1)sql";
constexpr std::string_view kPurgeTotals = R"sql(DELETE FROM daily_totals WHERE day < ?1)sql";
constexpr std::string_view kPurgeDims = R"sql(DELETE FROM daily_dims WHERE day < ?1)sql";

constexpr std::string_view kUnsummarizedDays = R"sql(
SELECT tenant_id, day, pageviews, visitors, bounces, filtered FROM daily_totals
 WHERE day >= ?1 AND day < ?2 AND summarized_at IS NULL
 ORDER BY day, tenant_id LIMIT ?3
)sql";

constexpr std::string_view kMarkSummarized = R"sql(
UPDATE daily_totals SET summarized_at = ?3 WHERE tenant_id = ?1 AND day = ?2
)sql";

constexpr std::string_view kTotals = R"sql(
SELECT COALESCE(SUM(pageviews), 0) AS pageviews, COALESCE(SUM(visitors), 0) AS visitors,
       COALESCE(SUM(bounces), 0) AS bounces, COALESCE(SUM(filtered), 0) AS filtered
  FROM daily_totals WHERE tenant_id = ?1 AND day BETWEEN ?2 AND ?3
)sql";

constexpr std::string_view kByDay = R"sql(
SELECT day AS key, pageviews, visitors FROM daily_totals
 WHERE tenant_id = ?1 AND day BETWEEN ?2 AND ?3 ORDER BY day
)sql";

constexpr std::string_view kByDimension = R"sql(
SELECT key, SUM(pageviews) AS pageviews, SUM(visitors) AS visitors FROM daily_dims
 WHERE tenant_id = ?1 AND dim = ?2 AND day BETWEEN ?3 AND ?4
 GROUP BY key ORDER BY pageviews DESC, visitors DESC, key ASC LIMIT ?5
)sql";

struct SaltRow {
  std::string salt_hex;
  static SaltRow decode(RowReader& r) { return SaltRow{r.text("salt_hex")}; }
};

}  // namespace

Totals Totals::decode(RowReader& r) {
  return Totals{r.integer("pageviews"), r.integer("visitors"), r.integer("bounces"),
                r.integer("filtered")};
}

DaySummary DaySummary::decode(RowReader& r) {
  DaySummary d;
  d.tenant_id = r.text("tenant_id");
  d.day = r.text("day");
  d.totals = Totals::decode(r);
  return d;
}

KeyCount KeyCount::decode(RowReader& r) {
  KeyCount k;
  k.key = r.text("key");
  k.pageviews = r.has("pageviews") ? r.integer("pageviews") : 0;
  k.visitors = r.has("visitors") ? r.integer("visitors") : 0;
  return k;
}

Task<Result<std::optional<std::string>>> AnalyticsStore::find_salt(const std::string& day) const {
  json params = json::array({day});
  SS_CO_TRY(D1Result r, co_await db_.first(kFindSalt, params));
  SS_CO_TRY(std::optional<SaltRow> row, r.first_as<SaltRow>());
  if (!row) co_return std::optional<std::string>{};
  co_return std::optional<std::string>{row->salt_hex};
}

Task<Status> AnalyticsStore::create_salt(const std::string& day, const std::string& salt_hex,
                                         const std::string& now) const {
  json params = json::array({day, salt_hex, now});
  SS_CO_TRY(D1Result ignored, co_await db_.run(kCreateSalt, params));
  co_return Unit{};
}

Task<Result<std::int64_t>> AnalyticsStore::delete_salts_before(const std::string& day) const {
  json params = json::array({day});
  SS_CO_TRY(D1Result r, co_await db_.run(kDeleteSaltsBefore, params));
  co_return r.meta.changes;
}

Task<Result<std::vector<std::string>>> AnalyticsStore::salt_days() const {
  SS_CO_TRY(D1Result r, co_await db_.all(kSaltDays));
  SS_CO_TRY(std::vector<KeyCount> rows, r.as<KeyCount>());
  std::vector<std::string> days;
  for (auto& row : rows) days.push_back(std::move(row.key));
  co_return days;
}

Task<Status> AnalyticsStore::apply(const RollupBatch& batch) const {
  std::vector<D1Statement> statements;
  // Order matters: the rollup rows must exist before the per-visitor rows whose triggers update
  // them.
  if (!batch.totals.empty())
    statements.push_back({std::string(kUpsertTotals), json::array({dump_json(batch.totals)})});
  if (!batch.dims.empty())
    statements.push_back({std::string(kUpsertDims), json::array({dump_json(batch.dims)})});
  if (!batch.visitor_days.empty()) {
    statements.push_back(
        {std::string(kUpsertVisitorDays), json::array({dump_json(batch.visitor_days)})});
  }
  if (!batch.visitor_dims.empty()) {
    statements.push_back(
        {std::string(kInsertVisitorDims), json::array({dump_json(batch.visitor_dims)})});
  }
  if (statements.empty()) co_return Unit{};
  SS_CO_TRY(std::vector<D1Result> ignored, co_await db_.batch(statements));
  co_return Unit{};
}

Task<Status> AnalyticsStore::purge_visitor_state_before(const std::string& day) const {
  std::vector<D1Statement> statements = {{std::string(kPurgeVisitorDays), json::array({day})},
                                         {std::string(kPurgeVisitorDims), json::array({day})}};
  SS_CO_TRY(std::vector<D1Result> ignored, co_await db_.batch(statements));
  co_return Unit{};
}

Task<Status> AnalyticsStore::purge_rollups_before(const std::string& day) const {
  std::vector<D1Statement> statements = {{std::string(kPurgeTotals), json::array({day})},
                                         {std::string(kPurgeDims), json::array({day})}};
  SS_CO_TRY(std::vector<D1Result> ignored, co_await db_.batch(statements));
  co_return Unit{};
}

Task<Result<std::vector<DaySummary>>> AnalyticsStore::unsummarized_days(const std::string& from,
                                                                        const std::string& before,
                                                                        int limit) const {
  json params = json::array({from, before, limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kUnsummarizedDays, params));
  co_return r.as<DaySummary>();
}

Task<Status> AnalyticsStore::mark_summarized(const std::vector<DaySummary>& days,
                                             const std::string& now) const {
  if (days.empty()) co_return Unit{};
  std::vector<D1Statement> statements;
  statements.reserve(days.size());
  for (const DaySummary& d : days) {
    statements.push_back({std::string(kMarkSummarized), json::array({d.tenant_id, d.day, now})});
  }
  SS_CO_TRY(std::vector<D1Result> ignored, co_await db_.batch(statements));
  co_return Unit{};
}

Task<Result<Totals>> AnalyticsStore::totals(const std::string& tenant, const std::string& from,
                                            const std::string& to) const {
  json params = json::array({tenant, from, to});
  SS_CO_TRY(D1Result r, co_await db_.first(kTotals, params));
  SS_CO_TRY(std::optional<Totals> row, r.first_as<Totals>());
  co_return row.value_or(Totals{});
}

Task<Result<std::vector<KeyCount>>> AnalyticsStore::by_day(const std::string& tenant,
                                                           const std::string& from,
                                                           const std::string& to) const {
  json params = json::array({tenant, from, to});
  SS_CO_TRY(D1Result r, co_await db_.all(kByDay, params));
  co_return r.as<KeyCount>();
}

Task<Result<std::vector<KeyCount>>> AnalyticsStore::by_dimension(const std::string& tenant,
                                                                 const std::string& dim,
                                                                 const std::string& from,
                                                                 const std::string& to,
                                                                 int limit) const {
  json params = json::array({tenant, dim, from, to, limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kByDimension, params));
  co_return r.as<KeyCount>();
}

}  // namespace ss::analytics
