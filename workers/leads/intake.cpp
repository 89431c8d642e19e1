// POST /api/leads/submit (and /api/leads): the contract's order of checks, one step per function.
//   tenant auth → size/type → rate limit → honeypot → validation → Turnstile → store → answer →
//   enqueue + lead.received in the background (the 202 waits for the D1 commit, not for queues)
#include "workers/leads/intake.h"

#include "shared/bytes.h"
#include "shared/effects.h"
#include "shared/emit.h"
#include "shared/field_error.h"
#include "shared/form.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/text.h"
#include "workers/leads/client_ip.h"
#include "workers/leads/config.h"
#include "workers/leads/lead.h"
#include "workers/leads/notify.h"
#include "workers/leads/providers.h"
#include "workers/leads/store.h"

#include <algorithm>

namespace ss::leads {

namespace {

inline constexpr std::size_t kMaxIdempotencyKey = 200;
inline constexpr const char* kDefaultSiteverifyUrl =
    "https://challenges.cloudflare.com/turnstile/v0/siteverify";
inline constexpr int kSiteverifyTimeoutMs = 5000;

// How long a pending claim (a lead that is not stored, its notifications being queued) keeps a
// twin waiting: far longer than queueing takes; by then its submission confirmed the claim or took
// it back, or its instance died (the claim then answers as any other: the message-lost case).
inline constexpr std::int64_t kPendingClaimMs = 60 * 1000;

// A window per tenant + client network (IPv4 /32, IPv6 /64, or the shared no-IP window; see
// client_ip.h), counted in D1, anchored at its first hit (so a burst cannot straddle two
// clock-aligned windows and get twice the limit). The key is hashed before it is stored. With an
// Idempotency-Key to look up (`idempotency_key` not empty), its claim is read in the same D1 batch
// into `claim` (Claim{} when there is none; left nullopt when the batch failed): one round trip.
Task<Status> check_rate_limit(Context& ctx, const std::string& tenant, const std::string& ip,
                              const LeadsConfig& config, const std::string& idempotency_key,
                              std::optional<Claim>& claim) {
  std::int64_t period_ms = static_cast<std::int64_t>(config.rate_period_seconds) * 1000;
  std::string key = "leads-rate:" + rate_limit_subject(ip);  // g++-12: hoisted
  auto ip_hash = co_await sha256_hex(std::move(key));
  if (!ip_hash) {
    ctx.log("rate limit skipped: " + ip_hash.error().message);
    co_return Unit{};
  }
  std::string bucket = tenant + "|" + ip_hash->substr(0, 32);
  const std::int64_t now = ctx.now_ms();
  Result<RateWindow> window = Error{ErrorCode::internal, "no rate window"};
  if (idempotency_key.empty()) {
    window = co_await LeadStore(kDb).hit_rate_window(bucket, now, now + period_ms);
  } else {
    auto both = co_await LeadStore(kDb).hit_rate_window_and_find_replay(
        bucket, now, now + period_ms, tenant, idempotency_key, now - kIdempotencyWindowMs,
        now - kPendingClaimMs);
    if (both) {
      claim = std::move(both->claim).value_or(Claim{});
      window = both->window;
    } else {
      window = std::move(both).error();
    }
  }
  if (!window) {
    // Availability over strictness: a lead is worth more than a perfect counter.
    ctx.log("rate limit skipped: " + window.error().message);
    co_return Unit{};
  }
  if (window->hits > config.rate_limit) {
    Error e{ErrorCode::rate_limited, "too many submissions; try again later"};
    e.retry_after = static_cast<int>(
        std::max<std::int64_t>(1, (window->expires_at_ms - ctx.now_ms() + 999) / 1000));
    co_return e;
  }
  co_return Unit{};
}

// 32 hex digits in a version-4 UUID's form: the version nibble 4, the RFC 4122 variant.
std::string uuid_form(std::string hex) {
  hex[12] = '4';
  hex[16] = "89ab"[(hex[16] <= '9' ? hex[16] - '0' : hex[16] - 'a' + 10) & 3];
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20, 12);
}

Task<Result<std::string>> uuid_v4(Context& ctx) {
  SS_CO_TRY(std::string bytes, co_await ctx.random_bytes(16));
  co_return uuid_form(hex_encode(bytes));
}

enum class Verdict { passed, failed, unreachable };

// The siteverify idempotency key of a submission that carries an Idempotency-Key: the same for
// each repeat of it with the same token (a UUID's form from a digest of the tenant, the key and the
// token), so repeats that race the first one's commit re-validate the single-use token instead of
// spending it again (Cloudflare answers `timeout-or-duplicate` to a second key). Random otherwise.
Task<Result<std::string>> siteverify_key(Context& ctx, const std::string& tenant,
                                         const std::string& key, const std::string& token) {
  if (key.empty()) co_return co_await uuid_v4(ctx);
  std::string seed = tenant + "\n" + key + "\n" + token;  // g++-12: a named string across co_await
  SS_CO_TRY(std::string hex, co_await sha256_hex(std::move(seed)));
  co_return uuid_form(std::move(hex));
}

// Turnstile siteverify with the secret, the token, the client IP and an idempotency key.
Task<Result<Verdict>> verify_turnstile(Context& ctx, const std::string& token,
                                       const std::string& ip, const std::string& tenant,
                                       const std::string& key) {
  if (token.empty()) co_return Error{ErrorCode::turnstile_failed, "the Turnstile token is missing"};
  std::string secret = ctx.env("TURNSTILE_SECRET_KEY");
  if (secret.empty()) {
    ctx.log("turnstile: TURNSTILE_SECRET_KEY is not set; lead kept unverified");
    co_return Verdict::unreachable;
  }
  SS_CO_TRY(std::string idempotency, co_await siteverify_key(ctx, tenant, key, token));
  std::vector<std::pair<std::string, std::string>> form = {
      {"secret", secret}, {"response", token}, {"idempotency_key", idempotency}};
  if (!ip.empty()) form.emplace_back("remoteip", ip);
  HttpCall call;
  call.method = "POST";
  std::string url = ctx.env("TURNSTILE_VERIFY_URL");
  call.url = url.empty() ? kDefaultSiteverifyUrl : url;
  call.headers = {{"content-type", "application/x-www-form-urlencoded"}};
  call.body = encode_urlencoded(form);
  call.timeout_ms = kSiteverifyTimeoutMs;
  auto reply = co_await fetch(call);
  if (!reply) {
    ctx.log("turnstile: siteverify unreachable (" + reply.error().cause +
            "); lead kept unverified");
    co_return Verdict::unreachable;
  }
  int status = reply->status;
  auto body = parse_json(reply->body);
  if (status != 200 || !body || !get_bool(*body, "success").has_value()) {
    ctx.log("turnstile: siteverify answered " + std::to_string(status) + "; lead kept unverified");
    co_return Verdict::unreachable;
  }
  if (get_bool(*body, "success").value_or(false)) co_return Verdict::passed;
  const json* codes = find_field(*body, "error-codes");
  std::string why = codes && codes->is_array() && !codes->empty() && (*codes)[0].is_string()
                        ? (*codes)[0].get<std::string>()
                        : "rejected";
  // Siteverify's own trouble, or a refusal of this worker's secret: not the visitor's doing, so the
  // lead is kept unverified (as with a missing secret) instead of refusing everyone. `bad-request`
  // is not among them: the request carries the visitor's token, so a malformed one must not be a
  // way around the check.
  if (why == "internal-error" || why == "missing-input-secret" || why == "invalid-input-secret") {
    ctx.log("turnstile: siteverify answered " + why + "; lead kept unverified");
    co_return Verdict::unreachable;
  }
  co_return Error{ErrorCode::turnstile_failed, "Turnstile verification failed: " + why};
}

// The claim an Idempotency-Key already made within the window (an empty lead id: none).
Task<Result<Claim>> find_replay(const std::string& tenant, const std::string& key,
                                std::int64_t now_ms) {
  SS_CO_TRY(std::optional<Claim> first,
            co_await LeadStore(kDb).find_replay(tenant, key, now_ms - kIdempotencyWindowMs,
                                                now_ms - kPendingClaimMs));
  co_return first.value_or(Claim{});
}

// A twin of a submission whose notifications are still being queued: it may yet fail and take the
// key back, so the twin is told to come back rather than given a lead id that may never be sent.
Error claim_pending() {
  Error e{ErrorCode::conflict,
          "a submission with this Idempotency-Key is still being processed; retry shortly"};
  e.retry_after = 1;
  return std::move(name_field(e, "Idempotency-Key", "still being processed"));
}

Response accepted(const Request& req, const LeadsConfig& config, const std::string& lead_id) {
  // A redirect stored before the ASCII rule that breaks it is not followed (the JSON answer
  // instead).
  if (!config.redirect_url.empty() && is_redirect_safe(config.redirect_url) &&
      prefers_html(req.header("accept"))) {
    Response r = Response::empty(303);
    r.set_header("location", config.redirect_url);
    return r;
  }
  return Response::json_body(202, json_object({{"ok", true}, {"leadId", lead_id}}));
}

// What an Idempotency-Key's claim answers: 409 while its lead's notifications are being queued,
// that lead's id once it was taken; nothing when the key has no claim (or only an expired one).
std::optional<Result<Response>> claim_answer(const Request& req, const LeadsConfig& config,
                                             const Claim& claim) {
  if (claim.pending) return Result<Response>{claim_pending()};
  if (!claim.lead_id.empty()) return Result<Response>{accepted(req, config, claim.lead_id)};
  return std::nullopt;
}

// The event by emit_event() in the background (Context::wait_until): after the answer, whatever it
// takes.
Task<Status> emit_after_answer(Context& ctx, EventDraft draft) {
  std::string type = draft.event_type;
  auto emitted = co_await emit_event(ctx, std::move(draft));
  if (!emitted) ctx.log(type + " not emitted: " + emitted.error().message);
  co_return Unit{};
}

// A ledger event, sent after the client has its answer. When the message's entropy still holds its
// id, the id is drawn here and the background work is the send alone (wait_until_sent: the run ends
// without another crossing once it is queued); otherwise drawing it would cost a crossing before
// the answer, so it is emitted after the answer as a whole. Best effort, as it always was: a lost
// event costs a line in the ledger, never the lead.
Task<Status> announce(Context& ctx, EventDraft draft) {
  static constexpr std::size_t kUlidRandomBytes = 10;
  if (ctx.entropy_left() < kUlidRandomBytes) {
    ctx.wait_until(emit_after_answer(ctx, std::move(draft)));
    co_return Unit{};
  }
  std::string type = draft.event_type;
  auto message = co_await new_event_message(ctx, std::move(draft));
  if (!message) {
    ctx.log(type + " not emitted: " + message.error().message);
    co_return Unit{};
  }
  wait_until_sent(ctx, queue_send(kEventsQueueBinding, std::move(*message)), type + " not emitted");
  co_return Unit{};
}

// The notification messages of a stored lead, sent after the client has its 202: its D1 transaction
// committed the lead and its pending deliveries, so an enqueue that fails — or never happens because
// the instance died in between — is re-sent by the sweeper (sweep_unsent).
void notify_after_commit(Context& ctx, const std::vector<Delivery>& deliveries, const json& lead,
                         const std::string& submitted_at) {
  for (const Delivery& d : deliveries) {
    wait_until_sent(ctx,
                    queue_send(kNotifyQueue, NotifyMessage::of(d, lead, submitted_at).to_json()),
                    "notify: enqueue failed; the sweeper will retry");
  }
}

Task<Result<Response>> submit(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant(ctx, req));
  SS_CO_CHECK(require_body_within(req, kMaxSubmissionBody));
  SS_CO_CHECK(require_submission_type(req));
  auto config = parse_config(tenant.config, ctx.allow_local_outbound());
  if (!config) {
    ctx.log("tenant " + tenant.id + " has an invalid leads config: " + config.error().message);
    co_return Error{ErrorCode::service_unavailable, "this form is not configured correctly"};
  }
  // A config that neither stores leads nor has a channel to send them to is taken as the tenant
  // wrote it (the contract's storeSubmissions: false is "not stored"): each such lead says so in
  // the log, and its lead.received event names no channel and stored: false (docs/leads.md).
  if (!config->store_submissions && !config->email && !config->sms && !config->webhook) {
    ctx.log("tenant " + tenant.id +
            ": storeSubmissions is false and config.notify has no channel: this lead is kept "
            "nowhere");
  }
  std::string ip = req.client_ip();
  std::string key = req.header("idempotency-key");
  // A key that will be looked up has its claim read with the rate window (one round trip).
  // g++-12: a named string, not a temporary, across the co_await (its coroutines free a
  // temporary argument of a conditional expression twice).
  const std::string lookup_key =
      !key.empty() && key.size() <= kMaxIdempotencyKey ? key : std::string();
  std::optional<Claim> first_claim;
  if (Status allowed =
          co_await check_rate_limit(ctx, tenant.id, ip, *config, lookup_key, first_claim);
      !allowed) {
    // A repeat of a lead already taken is answered with its id even over the limit: a client that
    // lost the first answer learns its leadId, and nothing new is stored.
    if (allowed.error().code == ErrorCode::rate_limited && first_claim &&
        !first_claim->lead_id.empty() && !first_claim->pending)
      co_return accepted(req, *config, first_claim->lead_id);
    co_return std::move(allowed).error();
  }
  SS_CO_TRY(SentFields fields,
            read_submission(req));  // malformed bodies count against the window too
  SS_CO_TRY(Submission submission, validate_submission(fields, *config));

  // Checked before the honeypot: a bot is answered exactly as a person would be, a bad key included.
  if (key.size() > kMaxIdempotencyKey) {
    Error e{ErrorCode::invalid_request, "Idempotency-Key is longer than 200 characters"};
    co_return std::move(name_field(e, "Idempotency-Key", "longer than 200 characters"));
  }
  if (!key.empty()) {
    if (!first_claim) {  // the rate window's batch failed (and was skipped): read it on its own
      SS_CO_TRY(Claim read, co_await find_replay(tenant.id, key, ctx.now_ms()));
      first_claim = std::move(read);
    }
    if (auto answer = claim_answer(req, *config, *first_claim)) co_return std::move(*answer);
  }

  if (submission.honeypot) {
    // Like a success, repeats included: with an Idempotency-Key the decoy id is kept as a real
    // lead's would be (the key's claim alone, as for a tenant that stores nothing — no lead, no
    // delivery), so a bot that sends the same key again gets the same id, not a tell-tale new one.
    SS_CO_TRY(std::string decoy, co_await ctx.new_ulid());
    if (!key.empty()) {
      NewLead claim;
      claim.tenant_id = tenant.id;
      claim.lead_id = decoy;
      claim.idempotency_key = key;
      claim.now_ms = ctx.now_ms();
      claim.claim_expired_ms = ctx.now_ms() - kIdempotencyWindowMs;
      Status kept = co_await LeadStore(kDb).insert(claim);
      if (!kept) {
        auto owner = co_await find_replay(tenant.id, key, ctx.now_ms());
        if (owner) {
          if (auto answer = claim_answer(req, *config, *owner)) co_return std::move(*answer);
        }
        co_return Error{ErrorCode::dependency_unavailable,
                        "the lead could not be stored; retry later"};
      }
    }
    EventDraft spam{
        "lead.spam_absorbed", "tenant:" + tenant.id, {{"reason", "honeypot"}}, tenant.id};
    spam.idempotency_key = "lead.spam_absorbed:" + decoy;  // a redelivered message lands once
    SS_CO_CHECK(co_await announce(ctx, std::move(spam)));
    co_return accepted(req, *config, decoy);
  }

  bool verified = true;
  if (config->turnstile_required) {
    SS_CO_TRY(Verdict verdict,
              co_await verify_turnstile(ctx, submission.turnstile_token, ip, tenant.id, key));
    verified = verdict == Verdict::passed;
  }

  SS_CO_TRY(std::string lead_id, co_await ctx.new_ulid());
  std::string now = format_rfc3339_stamp(ctx.now_ms());
  SS_CO_TRY(std::vector<Delivery> deliveries,
            co_await plan_deliveries(ctx, tenant.id, lead_id, *config));

  // One transaction: the idempotency claim, the lead and its deliveries stand or fall together. A
  // concurrent twin with the same key makes the claim's INSERT fail, and the twin's id is answered.
  NewLead row;
  row.tenant_id = tenant.id;
  row.lead_id = lead_id;
  if (config->store_submissions) row.payload = submission.lead;
  row.turnstile_verified = verified;
  row.created_at = now;
  row.idempotency_key = key;
  row.now_ms = ctx.now_ms();
  row.claim_expired_ms = ctx.now_ms() - kIdempotencyWindowMs;
  // Not stored: the key answers this lead only once its notifications are queued (below).
  row.claim_pending = !config->store_submissions && !deliveries.empty();
  row.deliveries = deliveries;
  Status stored = co_await LeadStore(kDb).insert(row);
  if (!stored) {
    // The transaction may have committed with only its answer lost: then this lead is stored, and
    // a 503 would have the client submit it again (two leads, the first delivered by the sweeper).
    // Its own rows tell: the key's claim naming this lead, else the lead (or its deliveries).
    bool committed = false;
    if (!key.empty()) {
      auto owner = co_await find_replay(tenant.id, key, ctx.now_ms());
      if (owner && owner->lead_id == lead_id) {
        committed = true;
      } else if (owner) {
        if (auto answer = claim_answer(req, *config, *owner)) co_return std::move(*answer);
      }
    } else if (config->store_submissions) {
      auto found = co_await LeadStore(kDb).find(tenant.id, lead_id);
      committed = found && found->has_value();
    } else if (!deliveries.empty()) {
      auto found = co_await LeadStore(kDb).deliveries_of(tenant.id, lead_id);
      committed = found && !found->empty();
    }
    if (!committed) {
      co_return Error{ErrorCode::dependency_unavailable,
                      "the lead could not be stored; retry later"};
    }
    ctx.log("lead " + lead_id + ": its transaction committed, its answer was lost");
  }
  if (deliveries.empty()) {
    // nobody to notify
  } else if (config->store_submissions) {
    notify_after_commit(ctx, deliveries, submission.lead, now);
  } else {
    // Not stored: the queue message is the lead's only copy and the sweeper cannot rebuild it, so
    // the client is answered only once it is queued (a failure is a 503: submit again). The 503
    // takes back what the transaction wrote: a retry with the same Idempotency-Key must not be
    // answered with this lead's id when its notifications never left.
    Status queued = co_await enqueue_deliveries(ctx, deliveries, submission.lead, now, false);
    if (!queued) {
      Status undone = co_await LeadStore(kDb).forget_unqueued(tenant.id, lead_id);
      if (!undone)
        ctx.log("lead " + lead_id + " not queued, not undone: " + undone.error().message);
      co_return std::move(queued).error();
    }
    if (!key.empty()) {
      // Queued: the key now answers this lead. Should this fail, the claim answers so anyway
      // once kPendingClaimMs has passed.
      Status confirmed = co_await LeadStore(kDb).confirm_claim(tenant.id, key, lead_id);
      if (!confirmed)
        ctx.log("lead " + lead_id + ": claim not confirmed: " + confirmed.error().message);
    }
  }

  json channels = json::array();
  for (const Delivery& d : deliveries) channels.push_back(d.channel);
  EventDraft received{"lead.received",
                      "lead:" + lead_id,
                      {{"leadId", lead_id},
                       {"stored", config->store_submissions},
                       {"turnstileVerified", verified},
                       {"channels", channels}},
                      tenant.id};
  received.idempotency_key = "lead.received:" + lead_id;
  SS_CO_CHECK(co_await announce(ctx, std::move(received)));
  co_return accepted(req, *config, lead_id);
}

// A qvalue in thousandths (RFC 9110 §12.4.2: "0" [ "." 0*3DIGIT ] or "1" [ "." 0*3("0") ]); one
// that is not a qvalue ("abc", "0x", "01", "0.5000") counts as 1.
int qvalue_thousandths(std::string_view q) {
  if (q.empty() || (q[0] != '0' && q[0] != '1') || q.size() > 5) return 1000;
  if (q.size() > 1 && q[1] != '.') return 1000;
  int value = q[0] == '1' ? 1000 : 0;
  int scale = 100;
  for (std::size_t i = 2; i < q.size(); ++i, scale /= 10) {
    if (q[i] < '0' || q[i] > '9' || (q[0] == '1' && q[i] != '0')) return 1000;
    value += (q[i] - '0') * scale;
  }
  return value;
}

}  // namespace

bool prefers_html(std::string_view accept) {
  int html = -1;  // the weight of each, in thousandths; -1: not listed
  int json = -1;
  while (!accept.empty()) {
    std::size_t comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    std::size_t semi = range.find(';');
    std::string type = ascii_lower(trim_ows(range.substr(0, semi)));
    int q = 1000;
    while (semi != std::string_view::npos) {
      range = range.substr(semi + 1);
      semi = range.find(';');
      std::string_view param = trim_ows(range.substr(0, semi));
      if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
        q = qvalue_thousandths(param.substr(2));
      }
    }
    if (type == "text/html") html = std::max(html, q);
    if (type == "application/json") json = std::max(json, q);
  }
  return html > 0 && html >= json;
}

void add_intake_routes(App& app) {
  app.router.add("POST", "/api/leads/submit", submit).add("POST", "/api/leads", submit);
}

}  // namespace ss::leads
