#pragma once
// Every SQL statement of the leads worker (migrations/leads), as named constants in store.cpp
// behind the typed functions below. Handlers never build SQL; every query on lead data binds
// tenant_id.

#include "shared/effects.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ss::leads {

// One notification to send: a (lead, channel[, recipient]) pair, stored in lead_deliveries.
struct Delivery {
  std::string id;
  std::string tenant_id;
  std::string lead_id;
  std::string channel;    // email | sms | webhook
  std::string provider;   // resend | sendgrid | twilio | webhook
  std::string recipient;  // sms: one number per delivery; empty otherwise
};

// lead_deliveries.provider holds "provider" or, for SMS, "provider:recipient".
std::string provider_column(const std::string& provider, const std::string& recipient);

struct LeadRow {
  std::string id;
  std::string tenant_id;
  json payload = json::object();  // the validated fields
  bool turnstile_verified = false;
  std::string created_at;

  static LeadRow decode(RowReader& r);
};

struct DeliveryRow {
  std::string id;
  std::string tenant_id;
  std::string lead_id;
  std::string channel;
  std::string provider;   // the provider part of the column
  std::string recipient;  // the part after ':' (SMS), else empty
  std::string status;     // pending | delivered | dead | cancelled
  std::int64_t attempts = 0;
  std::optional<std::string> last_error;
  std::string created_at;
  std::string updated_at;
  std::optional<std::string> delivered_at;

  static DeliveryRow decode(RowReader& r);
};

struct AttemptRow {
  std::string delivery_id;
  std::int64_t attempt = 0;
  std::string attempted_at;
  bool ok = false;
  std::optional<std::int64_t> http_status;
  std::optional<std::string> error;
  std::optional<std::int64_t> elapsed_ms;

  static AttemptRow decode(RowReader& r);
};

// A pending delivery that was never attempted, with what its queue message needs.
struct UnsentDelivery {
  DeliveryRow delivery;
  json lead = json::object();
  std::string submitted_at;

  static UnsentDelivery decode(RowReader& r);
};

// A delivery whose queue message was parked by the kill switch kill:notifications.
struct HeldDelivery {
  std::string id;
  std::string held_at;
  std::string message;  // the queue message body, JSON text

  static HeldDelivery decode(RowReader& r);
};

struct TenantConfigRow {
  std::string tenant_id;
  std::string config_json;  // parsed by the caller: one bad config must not stop the others

  static TenantConfigRow decode(RowReader& r);
};

struct RateWindow {
  std::int64_t hits = 0;
  std::int64_t expires_at_ms = 0;

  static RateWindow decode(RowReader& r);
};

// How long an Idempotency-Key's claim answers replays; the daily job deletes older claims.
inline constexpr std::int64_t kIdempotencyWindowMs = 24LL * 60 * 60 * 1000;

// Everything one accepted submission writes, in one transaction.
// A pending claim's lead id is stored behind this mark (a ULID never starts with it).
inline constexpr char kPendingClaimMark = '~';

// An Idempotency-Key's claim: the lead it names, and whether that lead is still pending — a lead
// that is not stored whose notifications are still being queued: its submission may yet fail
// (503) and take the claim back, so a twin must not be answered its id meanwhile.
struct Claim {
  std::string lead_id;
  bool pending = false;
};

struct NewLead {
  std::string tenant_id;
  std::string lead_id;
  std::optional<json> payload;  // nullopt: the tenant does not store submissions
  bool turnstile_verified = false;
  std::string created_at;             // RFC 3339
  std::string idempotency_key;        // empty: no claim
  std::int64_t now_ms = 0;            // the claim's time
  std::int64_t claim_expired_ms = 0;  // older claims of the same key are replaced
  // The claim is pending (Claim) until confirm_claim(): storeSubmissions:false, whose answer waits
  // for the notifications to be queued.
  bool claim_pending = false;
  std::vector<Delivery> deliveries;
};

// What one delivery attempt came to.
struct AttemptRecord {
  std::int64_t attempt = 0;
  bool ok = false;
  int http_status = 0;           // 0: no HTTP answer
  std::string error;             // empty: none
  std::int64_t elapsed_ms = -1;  // < 0: not measured
  std::string new_status;        // pending | delivered | dead
  std::string at;                // RFC 3339
};

// An intake's rate window and its Idempotency-Key's claim, read in one round trip.
struct RateAndClaim {
  RateWindow window;
  std::optional<Claim> claim;
};

class LeadStore {
 public:
  explicit LeadStore(std::string binding) : db_(std::move(binding)) {}

  // ---- intake
  // Counts one hit in the window of `bucket`; a window that expired by now_ms starts afresh.
  Task<Result<RateWindow>> hit_rate_window(const std::string& bucket, std::int64_t now_ms,
                                           std::int64_t expires_at_ms) const;
  // The claim an Idempotency-Key made after since_ms, if any; a pending claim made at or before
  // pending_since_ms counts as done (its submission had the time to confirm or take it back).
  Task<Result<std::optional<Claim>>> find_replay(const std::string& tenant_id,
                                                 const std::string& key, std::int64_t since_ms,
                                                 std::int64_t pending_since_ms) const;
  // hit_rate_window, then find_replay, in one D1 batch (one round trip): an intake with an
  // Idempotency-Key needs both, and neither waits on the other.
  Task<Result<RateAndClaim>> hit_rate_window_and_find_replay(
      const std::string& bucket, std::int64_t now_ms, std::int64_t expires_at_ms,
      const std::string& tenant_id, const std::string& key, std::int64_t since_ms,
      std::int64_t pending_since_ms) const;
  // A pending claim becomes the lead's answer (its notifications are queued).
  Task<Status> confirm_claim(const std::string& tenant_id, const std::string& key,
                             const std::string& lead_id) const;
  // The claim, the lead and its deliveries stand or fall together. A concurrent twin holding the
  // same key makes the claim's INSERT fail.
  Task<Status> insert(const NewLead& lead) const;
  // Undoes insert() for a lead that is not stored and whose queue messages could not all be sent
  // (answered 503): its idempotency claim and its deliveries not attempted yet are deleted.
  Task<Status> forget_unqueued(const std::string& tenant_id, const std::string& lead_id) const;

  // ---- tenant admin API
  // Newest first; `before` empty: from the newest.
  Task<Result<std::vector<LeadRow>>> list(const std::string& tenant_id, const std::string& before,
                                          int limit) const;
  Task<Result<std::optional<LeadRow>>> find(const std::string& tenant_id,
                                            const std::string& lead_id) const;
  Task<Result<std::vector<DeliveryRow>>> deliveries_of(const std::string& tenant_id,
                                                       const std::string& lead_id) const;
  // Every attempt of every delivery of the lead, by delivery then attempt.
  Task<Result<std::vector<AttemptRow>>> attempts_of(const std::string& tenant_id,
                                                    const std::string& lead_id) const;
  // Newest first, from the one before `before` ('' from the newest).
  Task<Result<std::vector<DeliveryRow>>> deliveries_by_status(const std::string& tenant_id,
                                                              const std::string& status,
                                                              const std::string& before,
                                                              int limit) const;
  // Deletes the lead and its idempotency claim, clears delivery errors, cancels pending
  // deliveries. false: no such lead.
  Task<Result<bool>> erase(const std::string& tenant_id, const std::string& lead_id) const;

  // ---- notifications
  Task<Result<std::optional<DeliveryRow>>> find_delivery(const std::string& tenant_id,
                                                         const std::string& delivery_id) const;
  // Takes attempt number `attempt` of a pending delivery; false when another copy of the message
  // took it, or the delivery is no longer pending (an erasure cancelled it).
  Task<Result<bool>> claim_attempt(const std::string& tenant_id, const std::string& delivery_id,
                                   std::int64_t attempt, const std::string& now) const;
  // When attempt `attempt` of the delivery was recorded (finished: its attempted_at); nullopt
  // while it is in flight, or when the instance sending it died before recording it.
  Task<Result<std::optional<std::string>>> attempt_recorded(const std::string& tenant_id,
                                                            const std::string& delivery_id,
                                                            std::int64_t attempt) const;
  // Records the attempt and the delivery's new status; false when the delivery stopped being
  // pending meanwhile (cancelled by an erasure).
  Task<Result<bool>> record_attempt(const std::string& tenant_id, const std::string& delivery_id,
                                    const AttemptRecord& record) const;
  // Pending deliveries never attempted whose last change (their creation, or the sweeper's last
  // re-enqueue) is before `cutoff` (RFC 3339), and pending deliveries already attempted whose last
  // change is before `stalled_cutoff` (their retry message ran out of queue retries), oldest change
  // first. A delivery's created_at is never moved: the sweeper's clock is updated_at.
  Task<Result<std::vector<UnsentDelivery>>> unsent_deliveries(const std::string& cutoff,
                                                              const std::string& stalled_cutoff,
                                                              int limit) const;
  // Pending deliveries of leads that are not stored (storeSubmissions:false), not held, unchanged
  // since `cutoff`: their queue message, the lead's only copy, was lost. Oldest change first.
  Task<Result<std::vector<DeliveryRow>>> lost_unstored_deliveries(const std::string& cutoff,
                                                                  int limit) const;
  // Marks such a delivery dead with `error`, if it is still as `row` was read (pending, not held,
  // the same updated_at); false when it moved meanwhile.
  Task<Result<bool>> give_up_delivery(const DeliveryRow& row, const std::string& error,
                                      const std::string& now) const;
  // Moves a re-enqueued delivery's clock (updated_at) so the sweeper leaves it alone for another
  // period.
  Task<Status> touch_delivery(const std::string& delivery_id, const std::string& now) const;
  // Parks a pending delivery's queue message while kill:notifications is on; false when the
  // delivery is no longer pending.
  Task<Result<bool>> hold_delivery(const std::string& tenant_id, const std::string& delivery_id,
                                   const std::string& message, const std::string& now) const;
  // Pending deliveries with a parked message, oldest hold first.
  Task<Result<std::vector<HeldDelivery>>> held_deliveries(int limit) const;
  // Clears a hold once its message is queued again; only the hold that was read (held_at), so a
  // hold made again meanwhile (the switch flipped back on) is kept. Moves the delivery's clock as
  // touch_delivery does: the unsent sweep leaves the message to the queue for another period.
  Task<Status> release_delivery(const std::string& delivery_id, const std::string& held_at,
                                const std::string& now) const;

  // ---- retention (cron)
  Task<Result<std::vector<TenantConfigRow>>> tenant_configs() const;
  // Deletes the tenant's leads with ids below `cutoff_ulid`, with their deliveries, attempts and
  // claims; the number of leads deleted.
  Task<Result<std::int64_t>> delete_leads_before(const std::string& tenant_id,
                                                 const std::string& cutoff_ulid) const;
  Task<Status> delete_expired_windows(std::int64_t now_ms) const;
  // Idempotency claims made at or before `before_ms` (past their window), of every tenant.
  Task<Status> delete_expired_claims(std::int64_t before_ms) const;

 private:
  D1 db_;
};

}  // namespace ss::leads
