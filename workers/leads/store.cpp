#include "workers/leads/store.h"

#include "shared/json_util.h"

namespace ss::leads {

namespace {

// ---- intake

// A window per bucket, anchored at its first hit: an expired window restarts at 1 with a new end.
constexpr std::string_view kHitRateWindow = R"sql(
INSERT INTO rate_limit_windows (bucket, hits, expires_at_ms) VALUES (?1, 1, ?3)
ON CONFLICT (bucket) DO UPDATE SET
  hits = CASE WHEN rate_limit_windows.expires_at_ms <= ?2 THEN 1
              ELSE rate_limit_windows.hits + 1 END,
  expires_at_ms = CASE WHEN rate_limit_windows.expires_at_ms <= ?2 THEN ?3
                       ELSE rate_limit_windows.expires_at_ms END
RETURNING hits, expires_at_ms
)sql";

constexpr std::string_view kFindReplay = R"sql(
SELECT lead_id, created_at_ms FROM lead_idempotency
WHERE tenant_id = ?1 AND idempotency_key = ?2 AND created_at_ms > ?3
)sql";

constexpr std::string_view kDeleteExpiredClaim = R"sql(
DELETE FROM lead_idempotency
WHERE tenant_id = ?1 AND idempotency_key = ?2 AND created_at_ms <= ?3
)sql";

constexpr std::string_view kInsertClaim = R"sql(
INSERT INTO lead_idempotency (tenant_id, idempotency_key, lead_id, created_at_ms)
VALUES (?1, ?2, ?3, ?4)
)sql";

// A pending claim (storeSubmissions:false, its lead's notifications not queued yet) becomes the
// lead's once they are.
constexpr std::string_view kConfirmClaim = R"sql(
UPDATE lead_idempotency SET lead_id = ?3
WHERE tenant_id = ?1 AND idempotency_key = ?2 AND lead_id = '~' || ?3
)sql";

constexpr std::string_view kInsertLead = R"sql(
INSERT INTO leads (id, tenant_id, payload, turnstile_verified, created_at)
VALUES (?1, ?2, ?3, ?4, ?5)
)sql";

constexpr std::string_view kInsertDelivery = R"sql(
INSERT INTO lead_deliveries (id, tenant_id, lead_id, channel, provider, status, attempts,
                             created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, 'pending', 0, ?6, ?6)
)sql";

// Undoing a storeSubmissions:false submission whose queue messages could not all be sent (the client
// was answered 503 and submits again): its idempotency claim, so the retry is taken as new, and its
// deliveries not attempted yet, so a message that did reach the queue is dropped as unknown.
constexpr std::string_view kForgetClaimOf = R"sql(
DELETE FROM lead_idempotency WHERE tenant_id = ?1 AND lead_id IN (?2, '~' || ?2)
)sql";

constexpr std::string_view kForgetUnsentDeliveries = R"sql(
DELETE FROM lead_deliveries WHERE tenant_id = ?1 AND lead_id = ?2 AND attempts = 0
)sql";

// ---- tenant admin API

// A page of a tenant's leads, newest first, before the id ?2 ('' from the newest). The bound is
// written as a value (CASE, not OR; char(1114111), the last code point, sorts after every id) so
// that SQLite seeks idx_leads_tenant_id to it: with `?2 = '' OR id < ?2` it walked the index from
// the newest lead past every earlier page, and an export of n leads read O(n²) rows.
constexpr std::string_view kListLeads = R"sql(
SELECT id, tenant_id, payload, turnstile_verified, created_at FROM leads
WHERE tenant_id = ?1 AND id < CASE WHEN ?2 = '' THEN char(1114111) ELSE ?2 END
ORDER BY id DESC LIMIT ?3
)sql";

constexpr std::string_view kFindLead = R"sql(
SELECT id, tenant_id, payload, turnstile_verified, created_at FROM leads
WHERE tenant_id = ?1 AND id = ?2
)sql";

constexpr std::string_view kDeliveriesOfLead = R"sql(
SELECT * FROM lead_deliveries WHERE tenant_id = ?1 AND lead_id = ?2 ORDER BY id
)sql";

// Attempts carry no tenant_id: they are reached through their tenant's deliveries.
constexpr std::string_view kAttemptsOfLead = R"sql(
SELECT a.* FROM delivery_attempts a
JOIN lead_deliveries d ON d.id = a.delivery_id
WHERE d.tenant_id = ?1 AND d.lead_id = ?2
ORDER BY a.delivery_id, a.attempt
)sql";

// Keyset paging on the delivery's ULID, as the lead list: ?4 the last id of the previous page ('' from
// the newest), a seek in idx_deliveries_tenant_status (0004).
constexpr std::string_view kDeliveriesByStatus = R"sql(
SELECT * FROM lead_deliveries
WHERE tenant_id = ?1 AND status = ?2 AND id < CASE WHEN ?4 = '' THEN char(1114111) ELSE ?4 END
ORDER BY id DESC LIMIT ?3
)sql";

// Erasure, in this order in one batch: the claims (only of a lead that is there: stored, or not
// stored but still in delivery — pending, a parked message, an error kept), the deliveries (only
// those with something to erase, so a second erasure finds nothing), the lead. The last two change
// counts say whether there was anything to erase; when there was not (an id never given, a
// honeypot's decoy, a lead erased before), nothing changes: the 404 leaves the decoy's claim, so
// its repeat still gets it.
constexpr std::string_view kEraseLead = R"sql(
DELETE FROM leads WHERE tenant_id = ?1 AND id = ?2
)sql";

constexpr std::string_view kEraseClaims = R"sql(
DELETE FROM lead_idempotency WHERE tenant_id = ?1 AND lead_id IN (?2, '~' || ?2)
  AND (EXISTS (SELECT 1 FROM leads WHERE tenant_id = ?1 AND id = ?2)
       OR EXISTS (SELECT 1 FROM lead_deliveries WHERE tenant_id = ?1 AND lead_id = ?2
                  AND (status = 'pending' OR held_message IS NOT NULL OR last_error IS NOT NULL)))
)sql";

constexpr std::string_view kCancelDeliveries = R"sql(
UPDATE lead_deliveries
SET last_error = NULL, held_at = NULL, held_message = NULL,
    status = CASE status WHEN 'pending' THEN 'cancelled' ELSE status END
WHERE tenant_id = ?1 AND lead_id = ?2
  AND (status = 'pending' OR held_message IS NOT NULL OR last_error IS NOT NULL)
)sql";

// ---- notifications

constexpr std::string_view kFindDelivery = R"sql(
SELECT * FROM lead_deliveries WHERE id = ?1 AND tenant_id = ?2
)sql";

constexpr std::string_view kClaimAttempt = R"sql(
UPDATE lead_deliveries SET attempts = ?4, updated_at = ?5
WHERE id = ?1 AND tenant_id = ?2 AND status = 'pending' AND attempts = ?3
)sql";

// Whether attempt ?3 of the delivery finished (was recorded, whatever its outcome), and when.
constexpr std::string_view kAttemptRecorded = R"sql(
SELECT a.attempted_at FROM delivery_attempts a
JOIN lead_deliveries d ON d.id = a.delivery_id
WHERE d.tenant_id = ?1 AND a.delivery_id = ?2 AND a.attempt = ?3
)sql";

constexpr std::string_view kRecordAttempt = R"sql(
INSERT OR REPLACE INTO delivery_attempts (delivery_id, attempt, attempted_at, ok, http_status,
                                          error, elapsed_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
)sql";

// A delivery that is finished (delivered or dead) keeps no parked message: one parked meanwhile by
// another copy would never be released, and would keep a storeSubmissions:false lead's fields.
// A delivery cancelled by an erasure while this attempt was being sent stays cancelled (nothing is
// sent again), unless the attempt succeeded: the receiver has the lead, and the delivery says so.
constexpr std::string_view kFinishAttempt = R"sql(
UPDATE lead_deliveries SET status = ?4, last_error = ?5, updated_at = ?6, delivered_at = ?7,
  held_at = CASE WHEN ?4 = 'pending' THEN held_at END,
  held_message = CASE WHEN ?4 = 'pending' THEN held_message END
WHERE id = ?1 AND tenant_id = ?2 AND attempts = ?3
  AND (status = 'pending' OR (status = 'cancelled' AND ?4 = 'delivered'))
)sql";

constexpr std::string_view kUnsentDeliveries = R"sql(
SELECT d.*, l.payload, l.created_at AS submitted_at
FROM lead_deliveries d
JOIN leads l ON l.id = d.lead_id AND l.tenant_id = d.tenant_id
WHERE d.status = 'pending' AND d.held_at IS NULL AND d.updated_at < ?1
  AND (d.attempts = 0 OR d.updated_at < ?3)
ORDER BY d.updated_at LIMIT ?2
)sql";

// Pending deliveries of a lead that is not stored (storeSubmissions:false: the queue message was its
// only copy), not held, unchanged since ?1: their message was lost.
constexpr std::string_view kLostUnstoredDeliveries = R"sql(
SELECT d.* FROM lead_deliveries d
WHERE d.status = 'pending' AND d.held_at IS NULL AND d.updated_at < ?1
  AND NOT EXISTS (SELECT 1 FROM leads l WHERE l.id = d.lead_id AND l.tenant_id = d.tenant_id)
ORDER BY d.updated_at LIMIT ?2
)sql";

// Only while it is as it was read: pending, not held, not changed since (?5).
constexpr std::string_view kGiveUpDelivery = R"sql(
UPDATE lead_deliveries SET status = 'dead', last_error = ?3, updated_at = ?4
WHERE id = ?1 AND tenant_id = ?2 AND status = 'pending' AND held_at IS NULL AND updated_at = ?5
)sql";

constexpr std::string_view kHoldDelivery = R"sql(
UPDATE lead_deliveries SET held_at = ?3, held_message = ?4, updated_at = ?3
WHERE tenant_id = ?1 AND id = ?2 AND status = 'pending'
)sql";

constexpr std::string_view kHeldDeliveries = R"sql(
SELECT id, held_at, held_message FROM lead_deliveries
WHERE held_at IS NOT NULL AND status = 'pending'
ORDER BY held_at LIMIT ?1
)sql";

constexpr std::string_view kReleaseDelivery = R"sql(
UPDATE lead_deliveries SET held_at = NULL, held_message = NULL, updated_at = ?3
WHERE id = ?1 AND held_at = ?2
)sql";

constexpr std::string_view kTouchDelivery = R"sql(
UPDATE lead_deliveries SET updated_at = ?2 WHERE id = ?1
)sql";

// ---- retention

constexpr std::string_view kTenantConfigs = R"sql(
SELECT tenant_id, config_json FROM tenants
)sql";

constexpr std::string_view kRetireAttempts = R"sql(
DELETE FROM delivery_attempts WHERE delivery_id IN (
  SELECT id FROM lead_deliveries WHERE tenant_id = ?1 AND lead_id < ?2)
)sql";

constexpr std::string_view kRetireDeliveries = R"sql(
DELETE FROM lead_deliveries WHERE tenant_id = ?1 AND lead_id < ?2
)sql";

constexpr std::string_view kRetireClaims = R"sql(
DELETE FROM lead_idempotency WHERE tenant_id = ?1 AND lead_id < ?2
)sql";

// Last in its batch: its change count is the number of leads removed.
constexpr std::string_view kRetireLeads = R"sql(
DELETE FROM leads WHERE tenant_id = ?1 AND id < ?2
)sql";

constexpr std::string_view kDeleteExpiredWindows = R"sql(
DELETE FROM rate_limit_windows WHERE expires_at_ms < ?1
)sql";

constexpr std::string_view kDeleteExpiredClaims = R"sql(
DELETE FROM lead_idempotency WHERE created_at_ms <= ?1
)sql";

struct ClaimRow {
  std::string lead_id;
  std::int64_t created_at_ms = 0;
  static ClaimRow decode(RowReader& r) {
    return ClaimRow{r.text("lead_id"), r.integer("created_at_ms")};
  }
};

json nullable(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

Result<RateWindow> window_of(const D1Result& r) {
  Result<std::optional<RateWindow>> window = r.first_as<RateWindow>();
  if (!window) return std::move(window).error();
  if (!*window) return Error{ErrorCode::internal, "the rate-limit upsert returned no row"};
  return **window;
}

Result<std::optional<Claim>> claim_of(const D1Result& r, std::int64_t pending_since_ms) {
  Result<std::optional<ClaimRow>> row = r.first_as<ClaimRow>();
  if (!row) return std::move(row).error();
  if (!*row) return std::optional<Claim>{};
  Claim claim{std::move((*row)->lead_id)};
  if (!claim.lead_id.empty() && claim.lead_id[0] == kPendingClaimMark) {
    claim.lead_id.erase(0, 1);
    claim.pending = (*row)->created_at_ms > pending_since_ms;
  }
  return std::optional<Claim>{std::move(claim)};
}

}  // namespace

std::string provider_column(const std::string& provider, const std::string& recipient) {
  return recipient.empty() ? provider : provider + ":" + recipient;
}

LeadRow LeadRow::decode(RowReader& r) {
  LeadRow row;
  row.id = r.text("id");
  row.tenant_id = r.text("tenant_id");
  row.payload = r.json_text("payload");
  row.turnstile_verified = r.flag("turnstile_verified");
  row.created_at = r.text("created_at");
  return row;
}

DeliveryRow DeliveryRow::decode(RowReader& r) {
  DeliveryRow row;
  row.id = r.text("id");
  row.tenant_id = r.text("tenant_id");
  row.lead_id = r.text("lead_id");
  row.channel = r.text("channel");
  row.provider = r.text("provider");
  if (auto colon = row.provider.find(':'); colon != std::string::npos) {
    row.recipient = row.provider.substr(colon + 1);
    row.provider.resize(colon);
  }
  row.status = r.text("status");
  row.attempts = r.integer("attempts");
  row.last_error = r.nullable_text("last_error");
  row.created_at = r.text("created_at");
  row.updated_at = r.text("updated_at");
  row.delivered_at = r.nullable_text("delivered_at");
  return row;
}

AttemptRow AttemptRow::decode(RowReader& r) {
  AttemptRow row;
  row.delivery_id = r.text("delivery_id");
  row.attempt = r.integer("attempt");
  row.attempted_at = r.text("attempted_at");
  row.ok = r.flag("ok");
  row.http_status = r.nullable_integer("http_status");
  row.error = r.nullable_text("error");
  row.elapsed_ms = r.nullable_integer("elapsed_ms");
  return row;
}

UnsentDelivery UnsentDelivery::decode(RowReader& r) {
  UnsentDelivery row;
  row.delivery = DeliveryRow::decode(r);
  row.lead = r.json_text("payload");
  row.submitted_at = r.text("submitted_at");
  return row;
}

HeldDelivery HeldDelivery::decode(RowReader& r) {
  HeldDelivery row;
  row.id = r.text("id");
  row.held_at = r.text("held_at");
  row.message = r.text("held_message");
  return row;
}

TenantConfigRow TenantConfigRow::decode(RowReader& r) {
  TenantConfigRow row;
  row.tenant_id = r.text("tenant_id");
  row.config_json = r.text("config_json");
  return row;
}

RateWindow RateWindow::decode(RowReader& r) {
  RateWindow row;
  row.hits = r.integer("hits");
  row.expires_at_ms = r.integer("expires_at_ms");
  return row;
}

// ---- intake

Task<Result<RateWindow>> LeadStore::hit_rate_window(const std::string& bucket, std::int64_t now_ms,
                                                    std::int64_t expires_at_ms) const {
  json params = json::array({bucket, now_ms, expires_at_ms});
  SS_CO_TRY(D1Result r, co_await db_.first(kHitRateWindow, params));
  co_return window_of(r);
}

Task<Result<RateAndClaim>> LeadStore::hit_rate_window_and_find_replay(
    const std::string& bucket, std::int64_t now_ms, std::int64_t expires_at_ms,
    const std::string& tenant_id, const std::string& key, std::int64_t since_ms,
    std::int64_t pending_since_ms) const {
  std::vector<D1Statement> batch{
      {std::string(kHitRateWindow), json::array({bucket, now_ms, expires_at_ms})},
      {std::string(kFindReplay), json::array({tenant_id, key, since_ms})}};
  SS_CO_TRY(std::vector<D1Result> results, co_await db_.batch(batch));
  SS_CO_CHECK(check_batch_answered(results, batch.size()));
  SS_CO_TRY(RateWindow window, window_of(results[0]));
  SS_CO_TRY(std::optional<Claim> claim, claim_of(results[1], pending_since_ms));
  co_return RateAndClaim{window, std::move(claim)};
}

Task<Result<std::optional<Claim>>> LeadStore::find_replay(const std::string& tenant_id,
                                                          const std::string& key,
                                                          std::int64_t since_ms,
                                                          std::int64_t pending_since_ms) const {
  json params = json::array({tenant_id, key, since_ms});
  SS_CO_TRY(D1Result r, co_await db_.first(kFindReplay, params));
  co_return claim_of(r, pending_since_ms);
}

Task<Status> LeadStore::confirm_claim(const std::string& tenant_id, const std::string& key,
                                      const std::string& lead_id) const {
  json params = json::array({tenant_id, key, lead_id});  // not inside co_await: the g++-12 bug
  SS_CO_TRY(D1Result done, co_await db_.run(kConfirmClaim, std::move(params)));
  co_return Unit{};
}

Task<Status> LeadStore::insert(const NewLead& lead) const {
  std::vector<D1Statement> writes;
  if (!lead.idempotency_key.empty()) {
    writes.push_back({std::string(kDeleteExpiredClaim),
                      json::array({lead.tenant_id, lead.idempotency_key, lead.claim_expired_ms})});
    std::string owner = lead.claim_pending ? kPendingClaimMark + lead.lead_id : lead.lead_id;
    writes.push_back({std::string(kInsertClaim),
                      json::array({lead.tenant_id, lead.idempotency_key, owner, lead.now_ms})});
  }
  if (lead.payload) {
    writes.push_back({std::string(kInsertLead),
                      json::array({lead.lead_id, lead.tenant_id, dump_json(*lead.payload),
                                   lead.turnstile_verified ? 1 : 0, lead.created_at})});
  }
  for (const Delivery& d : lead.deliveries) {
    writes.push_back({std::string(kInsertDelivery),
                      json::array({d.id, d.tenant_id, d.lead_id, d.channel,
                                   provider_column(d.provider, d.recipient), lead.created_at})});
  }
  if (writes.empty()) co_return Unit{};
  SS_CO_TRY(std::vector<D1Result> done, co_await db_.batch(writes));
  co_return Unit{};
}

Task<Status> LeadStore::forget_unqueued(const std::string& tenant_id,
                                        const std::string& lead_id) const {
  json p = json::array({tenant_id, lead_id});
  std::vector<D1Statement> writes = {{std::string(kForgetClaimOf), p},
                                     {std::string(kForgetUnsentDeliveries), p}};
  SS_CO_TRY(std::vector<D1Result> done, co_await db_.batch(writes));
  co_return Unit{};
}

// ---- tenant admin API

Task<Result<std::vector<LeadRow>>> LeadStore::list(const std::string& tenant_id,
                                                   const std::string& before, int limit) const {
  json params = json::array({tenant_id, before, limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kListLeads, params));
  co_return r.as<LeadRow>();
}

Task<Result<std::optional<LeadRow>>> LeadStore::find(const std::string& tenant_id,
                                                     const std::string& lead_id) const {
  json params = json::array({tenant_id, lead_id});
  SS_CO_TRY(D1Result r, co_await db_.first(kFindLead, params));
  co_return r.first_as<LeadRow>();
}

Task<Result<std::vector<DeliveryRow>>> LeadStore::deliveries_of(const std::string& tenant_id,
                                                                const std::string& lead_id) const {
  json params = json::array({tenant_id, lead_id});
  SS_CO_TRY(D1Result r, co_await db_.all(kDeliveriesOfLead, params));
  co_return r.as<DeliveryRow>();
}

Task<Result<std::vector<AttemptRow>>> LeadStore::attempts_of(const std::string& tenant_id,
                                                             const std::string& lead_id) const {
  json params = json::array({tenant_id, lead_id});
  SS_CO_TRY(D1Result r, co_await db_.all(kAttemptsOfLead, params));
  co_return r.as<AttemptRow>();
}

Task<Result<std::vector<DeliveryRow>>> LeadStore::deliveries_by_status(const std::string& tenant_id,
                                                                       const std::string& status,
                                                                       const std::string& before,
                                                                       int limit) const {
  json params = json::array({tenant_id, status, limit, before});
  SS_CO_TRY(D1Result r, co_await db_.all(kDeliveriesByStatus, params));
  co_return r.as<DeliveryRow>();
}

Task<Result<bool>> LeadStore::erase(const std::string& tenant_id,
                                    const std::string& lead_id) const {
  json p = json::array({tenant_id, lead_id});
  std::vector<D1Statement> writes = {{std::string(kEraseClaims), p},
                                     {std::string(kCancelDeliveries), p},
                                     {std::string(kEraseLead), p}};
  SS_CO_TRY(std::vector<D1Result> done, co_await db_.batch(writes));
  co_return done.size() == 3 && (done[1].meta.changes > 0 || done[2].meta.changes > 0);
}

// ---- notifications

Task<Result<std::optional<DeliveryRow>>> LeadStore::find_delivery(
    const std::string& tenant_id, const std::string& delivery_id) const {
  json params = json::array({delivery_id, tenant_id});
  SS_CO_TRY(D1Result r, co_await db_.first(kFindDelivery, params));
  co_return r.first_as<DeliveryRow>();
}

Task<Result<bool>> LeadStore::claim_attempt(const std::string& tenant_id,
                                            const std::string& delivery_id, std::int64_t attempt,
                                            const std::string& now) const {
  json params = json::array({delivery_id, tenant_id, attempt - 1, attempt, now});
  SS_CO_TRY(D1Result r, co_await db_.run(kClaimAttempt, params));
  co_return r.meta.changes > 0;
}

Task<Result<std::optional<std::string>>> LeadStore::attempt_recorded(const std::string& tenant_id,
                                                                     const std::string& delivery_id,
                                                                     std::int64_t attempt) const {
  json params = json::array({tenant_id, delivery_id, attempt});
  SS_CO_TRY(D1Result r, co_await db_.first(kAttemptRecorded, params));
  std::optional<json> row = r.first();
  if (!row) co_return std::optional<std::string>{};
  co_return std::optional<std::string>{string_or(*row, "attempted_at", "")};
}

Task<Result<bool>> LeadStore::record_attempt(const std::string& tenant_id,
                                             const std::string& delivery_id,
                                             const AttemptRecord& a) const {
  json http_status = a.http_status ? json(a.http_status) : json(nullptr);
  json elapsed = a.elapsed_ms >= 0 ? json(a.elapsed_ms) : json(nullptr);
  std::vector<D1Statement> writes = {
      {std::string(kRecordAttempt), json::array({delivery_id, a.attempt, a.at, a.ok ? 1 : 0,
                                                 http_status, nullable(a.error), elapsed})},
      {std::string(kFinishAttempt),
       json::array({delivery_id, tenant_id, a.attempt, a.new_status, nullable(a.error), a.at,
                    a.ok ? json(a.at) : json(nullptr)})}};
  SS_CO_TRY(std::vector<D1Result> done, co_await db_.batch(writes));
  co_return done.size() == 2 && done[1].meta.changes > 0;
}

Task<Result<std::vector<UnsentDelivery>>> LeadStore::unsent_deliveries(
    const std::string& cutoff, const std::string& stalled_cutoff, int limit) const {
  json params = json::array({cutoff, limit, stalled_cutoff});
  SS_CO_TRY(D1Result r, co_await db_.all(kUnsentDeliveries, params));
  co_return r.as<UnsentDelivery>();
}

Task<Result<std::vector<DeliveryRow>>> LeadStore::lost_unstored_deliveries(
    const std::string& cutoff, int limit) const {
  json params = json::array({cutoff, limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kLostUnstoredDeliveries, params));
  co_return r.as<DeliveryRow>();
}

Task<Result<bool>> LeadStore::give_up_delivery(const DeliveryRow& row, const std::string& error,
                                               const std::string& now) const {
  json params = json::array({row.id, row.tenant_id, error, now, row.updated_at});
  SS_CO_TRY(D1Result r, co_await db_.run(kGiveUpDelivery, params));
  co_return r.meta.changes > 0;
}

Task<Status> LeadStore::touch_delivery(const std::string& delivery_id,
                                       const std::string& now) const {
  json params = json::array({delivery_id, now});
  SS_CO_TRY(D1Result r, co_await db_.run(kTouchDelivery, params));
  co_return Unit{};
}

Task<Result<bool>> LeadStore::hold_delivery(const std::string& tenant_id,
                                            const std::string& delivery_id,
                                            const std::string& message,
                                            const std::string& now) const {
  json params = json::array({tenant_id, delivery_id, now, message});
  SS_CO_TRY(D1Result r, co_await db_.run(kHoldDelivery, params));
  co_return r.meta.changes > 0;
}

Task<Result<std::vector<HeldDelivery>>> LeadStore::held_deliveries(int limit) const {
  json params = json::array({limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kHeldDeliveries, params));
  co_return r.as<HeldDelivery>();
}

Task<Status> LeadStore::release_delivery(const std::string& delivery_id, const std::string& held_at,
                                         const std::string& now) const {
  json params = json::array({delivery_id, held_at, now});
  SS_CO_TRY(D1Result r, co_await db_.run(kReleaseDelivery, params));
  co_return Unit{};
}

// ---- retention

Task<Result<std::vector<TenantConfigRow>>> LeadStore::tenant_configs() const {
  SS_CO_TRY(D1Result r, co_await db_.all(kTenantConfigs));
  co_return r.as<TenantConfigRow>();
}

Task<Result<std::int64_t>> LeadStore::delete_leads_before(const std::string& tenant_id,
                                                          const std::string& cutoff_ulid) const {
  json p = json::array({tenant_id, cutoff_ulid});
  std::vector<D1Statement> writes = {{std::string(kRetireAttempts), p},
                                     {std::string(kRetireDeliveries), p},
                                     {std::string(kRetireClaims), p},
                                     {std::string(kRetireLeads), p}};
  SS_CO_TRY(std::vector<D1Result> done, co_await db_.batch(writes));
  co_return done.size() == writes.size() ? done.back().meta.changes : 0;
}

Task<Status> LeadStore::delete_expired_windows(std::int64_t now_ms) const {
  json params = json::array({now_ms});
  SS_CO_TRY(D1Result r, co_await db_.run(kDeleteExpiredWindows, params));
  co_return Unit{};
}

Task<Status> LeadStore::delete_expired_claims(std::int64_t before_ms) const {
  json params = json::array({before_ms});
  SS_CO_TRY(D1Result r, co_await db_.run(kDeleteExpiredClaims, params));
  co_return Unit{};
}

}  // namespace ss::leads
