// The notification queue consumer and its producers: planning a lead's deliveries, enqueueing one
// message per delivery, attempting each (claim → provider request → record), and the sweeper.
#include "workers/leads/notify.h"

#include "shared/text.h"

#include "shared/emit.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant_store.h"
#include "workers/leads/providers.h"

#include <algorithm>

namespace ss::leads {

namespace {

inline constexpr std::int64_t kSweepAfterMs = 10 * 60 * 1000;
// Recording a finished attempt: tries, and the pause before each retry (×1, ×2).
inline constexpr int kRecordTries = 3;
inline constexpr int kRecordRetryMs = 50;
inline constexpr int kSweepBatch = 100;
// How long a claimed attempt counts as in flight: the provider call (kProviderTimeoutMs) and its
// recording take far less; a claim older than this belongs to an instance that died before
// recording it, and the next attempt may go.
inline constexpr std::int64_t kClaimLeaseMs = 60 * 1000;
// How long Cloudflare Queues keep a message nobody consumed: the default retention (4 days;
// wrangler/leads.jsonc sets none). A delivery of a lead that is not stored is given up only when no
// copy of its message can be left in the queue — earlier, a slow or paused consumer's backlog would
// find it dead and drop a notification that could still go out.
inline constexpr std::int64_t kQueueRetentionMs = 4LL * 24 * 60 * 60 * 1000;
// The last_error of a delivery whose queue message, the only copy of a lead that is not stored, was
// lost.
inline constexpr const char* kMessageLostError =
    "message_lost: the lead is not stored and its queue message was lost; it cannot be sent";
// Held messages released per sweep: pages of kSweepBatch, one sendBatch() each.
inline constexpr int kMaxReleasePages = 10;

int backoff_seconds(const Context& ctx, int attempt) {
  auto base = ctx.env_int("NOTIFY_BACKOFF_SECONDS", kDefaultBackoffSeconds, 0, 99999);
  long long delay = static_cast<long long>(base) << std::min(attempt - 1, 16);
  return static_cast<int>(std::min<long long>(delay, kMaxBackoffSeconds));
}

struct MessageOutcome {
  std::string message_id;
  bool ack = true;
  int retry_delay = 0;
};

// One provider call for the delivery; `permanent` when retrying cannot help; `retry_after` the
// pause (seconds) the provider asked for before the next attempt, 0 when it named none.
struct SendResult {
  AttemptRecord record;
  bool permanent = false;
  int retry_after = 0;
};

// Answers that refuse the message itself — a malformed or invalid request (400, 422: a number
// Twilio will not text, an address Resend will not take), one too large (413, 414), of a type not
// taken (415), or a target that is gone for good (410) — cannot succeed on a later try: the delivery
// is dead at once instead of after kMaxDeliveryAttempts. Every other failure is retried with
// backoff: 401, 403 and 404 too, since a key or a webhook route may be fixed meanwhile, and 408, 425
// and 429, which ask to come back later.
bool refused_for_good(int status) {
  switch (status) {
    case 400:
    case 410:
    case 413:
    case 414:
    case 415:
    case 422:
      return true;
    default:
      return false;
  }
}

// Retry-After in seconds (RFC 9110 §10.2.3; the HTTP-date form is not read), capped at the longest
// backoff; 0 when absent or unreadable.
int retry_after_seconds(const FetchReply& reply) {
  std::string value = reply.header("retry-after");
  // delta-seconds is 1*DIGIT of any length (leading zeros are zeros): more digits than an int64
  // holds is a long pause too, capped like any other.
  std::size_t first = value.find_first_not_of('0');
  std::string_view digits = first == std::string::npos && !value.empty()
                                ? std::string_view("0")
                                : std::string_view(value).substr(std::min(first, value.size()));
  if (digits.size() > 18 && digits.find_first_not_of("0123456789") == std::string_view::npos)
    return kMaxBackoffSeconds;
  auto seconds = parse_decimal(digits, 0, INT64_MAX);
  return seconds ? static_cast<int>(std::min<std::int64_t>(*seconds, kMaxBackoffSeconds)) : 0;
}

Task<SendResult> send(Context& ctx, const NotifyMessage& msg, const Result<LeadsConfig>& config) {
  SendResult out;
  AttemptRecord& a = out.record;
  if (!config) {
    a.error = "tenant config is invalid";
    out.permanent = true;
    co_return out;
  }
  auto call = co_await provider_request(ctx, msg, config.value());
  if (!call) {
    a.error = call.error().message;
    out.permanent = call.error().code == ErrorCode::conflict;
    co_return out;
  }
  auto reply = co_await fetch(*call);
  if (!reply) {
    a.error = reply.error().cause.empty() ? "network error" : reply.error().cause;
    co_return out;
  }
  a.http_status = reply->status;
  a.elapsed_ms = reply->elapsed_ms;
  a.ok = reply->ok();
  if (!a.ok) {
    a.error = "HTTP " + std::to_string(a.http_status);
    out.permanent = refused_for_good(a.http_status);
    out.retry_after = retry_after_seconds(*reply);
  }
  co_return out;
}

// Whether kill:notifications is on. A FLAGS read that fails counts as off (logged): notifications
// keep flowing rather than stall on a KV hiccup; the switch acts again on the next batch.
Task<bool> notifications_held(Context& ctx) {
  auto flag = co_await Kv(kFlagsBinding).get(kNotificationsSwitch);
  if (!flag) {
    ctx.log(std::string("notify: ") + kNotificationsSwitch +
            " could not be read; treated as off: " + flag.error().message);
    co_return false;
  }
  co_return flag->has_value();
}

Task<MessageOutcome> deliver_one(Context& ctx, QueueMessage message, bool held) {
  MessageOutcome out{message.id};
  std::optional<NotifyMessage> parsed = NotifyMessage::from_json(message.body);
  if (!parsed) {
    ctx.log("notify: dropping a malformed message " + message.id);
    co_return out;
  }
  const NotifyMessage& msg = *parsed;
  LeadStore store(kDb);
  TenantStore tenants(kDb);
  auto [delivery, tenant] = co_await when_all(store.find_delivery(msg.tenant_id, msg.delivery_id),
                                              tenants.find(msg.tenant_id));
  if (!delivery || !tenant) {
    out.ack = false;
    out.retry_delay = backoff_seconds(ctx, 1);
    co_return out;
  }
  if (!*delivery) {
    ctx.log("notify: delivery " + msg.delivery_id + " is unknown (erased?); dropped");
    co_return out;
  }
  // Already delivered, dead-lettered or cancelled: a redelivery.
  if ((*delivery)->status != "pending") co_return out;
  int attempt = static_cast<int>((*delivery)->attempts) + 1;
  if (held) {
    // kill:notifications: parked on the delivery (the message is acknowledged: the queue would
    // dead-letter it after its retries), sent again by the sweeper once the switch is off.
    std::string body = dump_json(message.body);
    auto parked = co_await store.hold_delivery(msg.tenant_id, msg.delivery_id, body,
                                               format_rfc3339_ms(ctx.now_ms()));
    if (!parked) {
      out.ack = false;
      out.retry_delay = backoff_seconds(ctx, attempt);
    }
    co_return out;
  }
  // The previous attempt is claimed but not recorded yet: another copy of this message (the
  // queue's at-least-once delivery, the sweeper) is sending it right now. Claiming the next attempt
  // would send a second time; this copy comes back once the claim's lease is over. Recorded (it
  // failed) less than its backoff ago: this copy is not the retry the queue holds back for that
  // long, and comes back when the backoff is over instead of spending the next attempt now.
  if (attempt > 1) {
    std::optional<std::int64_t> changed_at = parse_rfc3339((*delivery)->updated_at);
    std::int64_t age = changed_at ? ctx.now_ms() - *changed_at : kClaimLeaseMs;
    std::int64_t backoff_ms = backoff_seconds(ctx, attempt - 1) * 1000LL;
    // updated_at is never before the previous attempt's end: older than both, nothing to read.
    if (age < std::max(kClaimLeaseMs, backoff_ms)) {
      auto finished = co_await store.attempt_recorded(msg.tenant_id, msg.delivery_id, attempt - 1);
      std::optional<std::int64_t> ended_at;
      if (finished && *finished) ended_at = parse_rfc3339(**finished);
      if ((!finished || !*finished) && age < kClaimLeaseMs) {
        out.ack = false;
        out.retry_delay =
            static_cast<int>((kClaimLeaseMs - std::max<std::int64_t>(age, 0)) / 1000) + 1;
        co_return out;
      }
      if (ended_at && ctx.now_ms() < *ended_at + backoff_ms) {
        out.ack = false;
        out.retry_delay = static_cast<int>((*ended_at + backoff_ms - ctx.now_ms() + 999) / 1000);
        co_return out;
      }
    }
  }
  // Claim the attempt before sending: two copies of one message cannot both send, and an erasure
  // (status 'cancelled') that lands meanwhile is respected.
  auto claimed = co_await store.claim_attempt(msg.tenant_id, msg.delivery_id, attempt,
                                              format_rfc3339_ms(ctx.now_ms()));
  if (!claimed) {
    out.ack = false;
    out.retry_delay = backoff_seconds(ctx, attempt);
    co_return out;
  }
  if (!*claimed) co_return out;  // another copy has it

  json config_doc = *tenant ? (*tenant)->config : json::object();
  Result<LeadsConfig> config = parse_config(config_doc, ctx.allow_local_outbound());
  SendResult sent = co_await send(ctx, msg, config);
  AttemptRecord& record = sent.record;
  bool dead = !record.ok && (sent.permanent || attempt >= kMaxDeliveryAttempts);
  record.attempt = attempt;
  record.new_status = record.ok ? "delivered" : dead ? "dead" : "pending";
  record.at = format_rfc3339_ms(ctx.now_ms());
  auto recorded = co_await store.record_attempt(msg.tenant_id, msg.delivery_id, record);
  // The provider has the message now: failing to record that means a second send when the queue
  // retries, so a failed write is tried again here first (a D1 blip rarely fails three times in a
  // row). A write that committed but whose answer was lost finds the row already finished: no change.
  bool tried_again = false;
  for (int retry = 1; !recorded && retry < kRecordTries; ++retry) {
    auto slept = co_await sleep_ms(kRecordRetryMs * retry);
    if (!slept) break;
    tried_again = true;
    recorded = co_await store.record_attempt(msg.tenant_id, msg.delivery_id, record);
  }
  if (recorded && !*recorded && tried_again) {
    // No change on a second try: either an erasure cancelled the delivery, or the first try
    // committed and only its answer was lost. In that case the outcome is ours and its event due.
    // A failed look-up tells neither: the message is retried (below), not taken for an erasure.
    auto row = co_await store.find_delivery(msg.tenant_id, msg.delivery_id);
    if (!row) {
      recorded = std::move(row).error();
    } else if (*row && (*row)->status == record.new_status &&
               (*row)->attempts == static_cast<std::int64_t>(attempt)) {
      recorded = true;
    }
  }
  if (!recorded) {
    // The attempt happened but could not be recorded; retry the message (the provider may see it
    // twice — each request carries the delivery id for its own dedupe).
    out.ack = false;
    out.retry_delay = backoff_seconds(ctx, attempt);
    co_return out;
  }
  if (!*recorded) {
    ctx.log("notify: delivery " + msg.delivery_id +
            " was cancelled (erased) while it was being sent");
    co_return out;
  }
  if (record.ok || dead) {
    EventDraft event{record.ok ? "lead.delivered" : "lead.delivery_failed",
                     "lead:" + msg.lead_id,
                     {{"leadId", msg.lead_id},
                      {"deliveryId", msg.delivery_id},
                      {"channel", msg.channel},
                      {"provider", msg.provider},
                      {"attempts", attempt}},
                     msg.tenant_id};
    if (dead) event.payload["error"] = record.error;
    event.idempotency_key = event.event_type + ":" + msg.delivery_id;
    auto emitted = co_await emit_event(ctx, std::move(event));
    if (!emitted) ctx.log("notify: event not emitted: " + emitted.error().message);
    co_return out;
  }
  out.ack = false;
  // The provider's Retry-After (a 429's, a 503's) when it asks for a longer pause than the backoff.
  out.retry_delay = std::max(backoff_seconds(ctx, attempt), sent.retry_after);
  co_return out;
}

}  // namespace

Task<Result<std::vector<Delivery>>> plan_deliveries(Context& ctx, const std::string& tenant_id,
                                                    const std::string& lead_id,
                                                    const LeadsConfig& config) {
  std::vector<Delivery> out;
  auto add = [&](std::string channel, std::string provider, std::string recipient) {
    out.push_back(Delivery{"", tenant_id, lead_id, std::move(channel), std::move(provider),
                           std::move(recipient)});
  };
  if (config.email) add("email", config.email->provider, "");
  if (config.sms) {
    for (const auto& to : each_once(config.sms->to, /*fold_case=*/false)) add("sms", "twilio", to);
  }
  if (config.webhook) add("webhook", "webhook", "");
  for (Delivery& d : out) {
    SS_CO_TRY(d.id, co_await ctx.new_ulid());
  }
  co_return out;
}

Task<Status> enqueue_deliveries(Context& ctx, const std::vector<Delivery>& deliveries,
                                const json& lead, const std::string& submitted_at, bool stored) {
  std::vector<Task<Result<Unit>>> sends;
  for (const Delivery& d : deliveries) {
    sends.push_back(
        as_task(queue_send(kNotifyQueue, NotifyMessage::of(d, lead, submitted_at).to_json())));
  }
  auto results = co_await when_all(std::move(sends));
  for (auto& r : results) {
    if (r) continue;
    if (!stored) {
      co_return Error{ErrorCode::dependency_unavailable,
                      "notifications could not be queued; retry later"};
    }
    ctx.log("notify: enqueue failed (" + r.error().message + "); the sweeper will retry");
  }
  co_return Unit{};
}

Task<QueueOutcome> deliver_batch(Context& ctx, std::vector<QueueMessage> batch) {
  bool held = co_await notifications_held(ctx);
  std::vector<Task<MessageOutcome>> work;
  for (QueueMessage& m : batch) work.push_back(deliver_one(ctx, std::move(m), held));
  std::vector<MessageOutcome> results = co_await when_all(std::move(work));
  QueueOutcome outcome;
  for (const MessageOutcome& r : results) {
    if (r.ack) {
      outcome.ack.push_back(r.message_id);
    } else {
      outcome.retry.emplace_back(r.message_id, r.retry_delay);
    }
  }
  co_return outcome;
}

// Re-sends what kill:notifications held (the switch is off), oldest hold first, each message once.
Task<Status> release_held(Context& ctx) {
  LeadStore store(kDb);
  int released = 0;
  for (int page = 0; page < kMaxReleasePages; ++page) {
    SS_CO_TRY(std::vector<HeldDelivery> held, co_await store.held_deliveries(kSweepBatch));
    if (held.empty()) break;
    std::vector<json> bodies;
    for (const HeldDelivery& h : held) {
      auto body = parse_json(h.message);
      if (body) {
        bodies.push_back(std::move(*body));
      } else {
        ctx.log("sweeper: held message of " + h.id + " is not JSON; dropped");
      }
    }
    // Sent before the holds are cleared: a failure here leaves them for the next sweep, and a
    // message sent twice is attempted once (the consumer's claim).
    if (!bodies.empty()) SS_CO_CHECK(co_await queue_send_batch(kNotifyQueue, std::move(bodies)));
    std::string now = format_rfc3339_ms(ctx.now_ms());
    std::vector<Task<Status>> clears;
    for (const HeldDelivery& h : held)
      clears.push_back(store.release_delivery(h.id, h.held_at, now));
    std::vector<Status> cleared = co_await when_all(std::move(clears));
    for (const Status& c : cleared) {
      if (!c) co_return c.error();  // left held: the next sweep sends it again (deduplicated)
    }
    released += static_cast<int>(held.size());
    if (held.size() < static_cast<std::size_t>(kSweepBatch)) break;
  }
  if (released > 0)
    ctx.log("sweeper: released " + std::to_string(released) + " held notifications");
  co_return Unit{};
}

namespace {
// A lead that is not stored (storeSubmissions:false) lives only in its queue messages: a delivery
// whose message was lost (dead-lettered after its retries, or past the queue's retention) cannot be
// sent any more. It is not left pending forever: it is dead, with lead.delivery_failed, like any other
// delivery that gave up, so the tenant sees it (GET /api/leads/deliveries?status=dead).
Task<Status> give_up_lost_unstored(Context& ctx, const LeadStore& store,
                                   const std::string& cutoff) {
  SS_CO_TRY(std::vector<DeliveryRow> lost,
            co_await store.lost_unstored_deliveries(cutoff, kSweepBatch));
  for (const DeliveryRow& row : lost) {
    auto given_up =
        co_await store.give_up_delivery(row, kMessageLostError, format_rfc3339_ms(ctx.now_ms()));
    if (!given_up) {
      ctx.log("sweeper: could not give up " + row.id + ": " + given_up.error().message);
      continue;
    }
    if (!*given_up) continue;  // it moved meanwhile: a live message after all
    EventDraft event{"lead.delivery_failed",
                     "lead:" + row.lead_id,
                     {{"leadId", row.lead_id},
                      {"deliveryId", row.id},
                      {"channel", row.channel},
                      {"provider", row.provider},
                      {"attempts", row.attempts},
                      {"error", kMessageLostError}},
                     row.tenant_id};
    event.idempotency_key = event.event_type + ":" + row.id;
    auto emitted = co_await emit_event(ctx, std::move(event));
    if (!emitted) ctx.log("sweeper: event not emitted: " + emitted.error().message);
  }
  co_return Unit{};
}
}  // namespace

Task<Status> sweep_unsent(Context& ctx) {
  bool held = co_await notifications_held(ctx);
  if (held) {
    ctx.log(std::string("sweeper: ") + kNotificationsSwitch + " is on; nothing sent");
    co_return Unit{};
  }
  SS_CO_CHECK(co_await release_held(ctx));
  LeadStore store(kDb);
  std::string cutoff = format_rfc3339_ms(ctx.now_ms() - kSweepAfterMs);
  // A retry is due at most kMaxBackoffSeconds after its attempt was recorded; one still pending
  // well after that lost its queue message (max_retries ran out on D1 blips or crashes, and the
  // dead-letter queue is not read): queued again, or it would stay pending forever.
  std::string stalled_cutoff =
      format_rfc3339_ms(ctx.now_ms() - kMaxBackoffSeconds * 1000LL - kSweepAfterMs);
  SS_CO_TRY(std::vector<UnsentDelivery> unsent,
            co_await store.unsent_deliveries(cutoff, stalled_cutoff, kSweepBatch));
  int requeued = 0;
  for (const UnsentDelivery& u : unsent) {
    const DeliveryRow& row = u.delivery;
    Delivery d{row.id, row.tenant_id, row.lead_id, row.channel, row.provider, row.recipient};
    json body = NotifyMessage::of(d, u.lead, u.submitted_at).to_json();
    auto sent = co_await queue_send(kNotifyQueue, std::move(body));
    if (!sent) continue;
    ++requeued;
    auto touched = co_await store.touch_delivery(d.id, format_rfc3339_ms(ctx.now_ms()));
    if (!touched) ctx.log("sweeper: could not touch " + d.id);
  }
  if (requeued > 0) ctx.log("sweeper: re-enqueued " + std::to_string(requeued) + " deliveries");
  SS_CO_CHECK(co_await give_up_lost_unstored(
      ctx, store, format_rfc3339_ms(ctx.now_ms() - kQueueRetentionMs - kSweepAfterMs)));
  co_return Unit{};
}

}  // namespace ss::leads
