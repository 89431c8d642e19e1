#include "workers/leads/notify.h"

#include "shared/bytes.h"
#include "shared/emit.h"
#include "shared/form.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/url_guard.h"

#include <algorithm>

namespace ss::leads {

namespace {

inline constexpr std::int64_t kSweepAfterMs = 10 * 60 * 1000;
inline constexpr int kProviderTimeoutMs = 10000;

std::string base_url(const Context& ctx, const char* var, const char* fallback) {
  std::string url = ctx.env(var);
  if (url.empty()) url = fallback;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::string lead_text(const std::string& tenant, const std::string& lead_id, const json& lead) {
  std::string text = "New lead for " + tenant + "\n";
  for (const char* key : {"name", "email", "phone", "message"}) {
    if (auto v = get_string(lead, key)) text += std::string(key) + ": " + *v + "\n";
  }
  for (auto it = lead.begin(); it != lead.end(); ++it) {
    const std::string& k = it.key();
    if (k == "name" || k == "email" || k == "phone" || k == "message") continue;
    if (it.value().is_string()) text += k + ": " + it.value().get<std::string>() + "\n";
  }
  return text + "Lead id: " + lead_id + "\n";
}

std::string subject_for(const json& lead) {
  std::string who = string_or(lead, "name", string_or(lead, "email", string_or(lead, "phone", "")));
  return who.empty() ? "New lead" : "New lead from " + who.substr(0, 100);
}

json queue_body(const Delivery& d, const json& lead, const std::string& submitted_at) {
  return json{{"deliveryId", d.id},          {"tenantId", d.tenant_id},
              {"leadId", d.lead_id},         {"channel", d.channel},
              {"provider", d.provider},      {"recipient", d.recipient},
              {"submittedAt", submitted_at}, {"lead", lead}};
}

struct Attempt {
  bool ok = false;
  int http_status = 0;
  std::string error;
  std::int64_t elapsed_ms = -1;
};

// Builds the provider's real request for one delivery; an Error when the channel cannot be sent.
Task<Result<HttpCall>> provider_request(Context& ctx, const json& msg, const LeadsConfig& config) {
  std::string provider = string_or(msg, "provider", "");
  std::string tenant = string_or(msg, "tenantId", "");
  std::string lead_id = string_or(msg, "leadId", "");
  const json* lead_field = find_field(msg, "lead");
  json lead = lead_field && lead_field->is_object() ? *lead_field : json::object();
  std::string text = lead_text(tenant, lead_id, lead);
  HttpCall call;
  call.method = "POST";
  call.timeout_ms = kProviderTimeoutMs;
  if (provider == "resend" || provider == "sendgrid") {
    if (!config.email) co_return Error{ErrorCode::conflict, "email is no longer configured"};
    const EmailChannel& email = *config.email;
    std::string reply_to = string_or(lead, "email", "");
    if (provider == "resend") {
      std::string key = ctx.env("RESEND_API_KEY");
      if (key.empty())
        co_return Error{ErrorCode::dependency_unavailable, "RESEND_API_KEY is not set"};
      call.url = base_url(ctx, "RESEND_API_URL", "https://api.resend.com") + "/emails";
      call.headers = {{"authorization", "Bearer " + key}, {"content-type", "application/json"}};
      json body{
          {"from", email.from}, {"to", email.to}, {"subject", subject_for(lead)}, {"text", text}};
      if (!reply_to.empty()) body["reply_to"] = reply_to;
      call.headers["idempotency-key"] = string_or(msg, "deliveryId", "");
      call.body = dump_json(body);
    } else {
      std::string key = ctx.env("SENDGRID_API_KEY");
      if (key.empty())
        co_return Error{ErrorCode::dependency_unavailable, "SENDGRID_API_KEY is not set"};
      call.url = base_url(ctx, "SENDGRID_API_URL", "https://api.sendgrid.com") + "/v3/mail/send";
      call.headers = {{"authorization", "Bearer " + key}, {"content-type", "application/json"}};
      json to = json::array();
      for (const auto& addr : email.to) to.push_back({{"email", addr}});
      json body{{"personalizations", json::array({{{"to", to}}})},
                {"from", {{"email", email.from}}},
                {"subject", subject_for(lead)},
                {"content", json::array({{{"type", "text/plain"}, {"value", text}}})}};
      if (!reply_to.empty()) body["reply_to"] = {{"email", reply_to}};
      call.body = dump_json(body);
    }
    co_return call;
  }
  if (provider == "twilio") {
    if (!config.sms) co_return Error{ErrorCode::conflict, "sms is no longer configured"};
    std::string sid = ctx.env("TWILIO_ACCOUNT_SID");
    std::string token = ctx.env("TWILIO_AUTH_TOKEN");
    std::string from = config.sms->from.empty() ? ctx.env("TWILIO_FROM_NUMBER") : config.sms->from;
    if (sid.empty() || token.empty() || from.empty()) {
      co_return Error{ErrorCode::dependency_unavailable,
                      "Twilio credentials or From number are not set"};
    }
    static constexpr std::size_t kMaxSmsBody = 320;
    call.url = base_url(ctx, "TWILIO_API_URL", "https://api.twilio.com") + "/2010-04-01/Accounts/" +
               sid + "/Messages.json";
    call.headers = {{"authorization", "Basic " + base64_encode(sid + ":" + token)},
                    {"content-type", "application/x-www-form-urlencoded"}};
    call.body = encode_urlencoded({{"To", string_or(msg, "recipient", "")},
                                   {"From", from},
                                   {"Body", text.substr(0, kMaxSmsBody)}});
    co_return call;
  }
  if (provider == "webhook") {
    if (!config.webhook)
      co_return Error{ErrorCode::conflict, "the webhook is no longer configured"};
    json body{{"event", "lead.received"},
              {"deliveryId", string_or(msg, "deliveryId", "")},
              {"tenantId", tenant},
              {"leadId", lead_id},
              {"submittedAt", string_or(msg, "submittedAt", "")},
              {"lead", lead}};
    // Judged again right before the call (the rules or ALLOW_LOCAL_OUTBOUND may have changed since
    // the tenant saved the URL); a refusal is permanent: retrying cannot make it pass.
    auto url = check_outbound_url(config.webhook->url, ctx.allow_local_outbound());
    if (!url) {
      co_return Error{ErrorCode::conflict, "webhook URL refused: " + url.error().message};
    }
    call.url = url->href;
    call.body = dump_json(body);
    SS_CO_TRY(std::string signature,
              co_await webhook_signature(config.webhook->secret, ctx.now_ms() / 1000, call.body));
    call.headers = {{"content-type", "application/json"},
                    {"x-siteswarm-signature", signature},
                    {"x-siteswarm-delivery", string_or(msg, "deliveryId", "")},
                    {"user-agent", "SiteSwarm-Webhooks/1"}};
    co_return call;
  }
  co_return Error{ErrorCode::conflict, "unknown provider " + provider};
}

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

Task<MessageOutcome> deliver_one(Context& ctx, QueueMessage message) {
  MessageOutcome out{message.id};
  const json& msg = message.body;
  std::string delivery_id = string_or(msg, "deliveryId", "");
  std::string tenant = string_or(msg, "tenantId", "");
  if (delivery_id.empty() || tenant.empty()) {
    ctx.log("notify: dropping a malformed message " + message.id);
    co_return out;
  }
  D1 db(kDb);
  std::vector<Task<Result<json>>> loads;
  json dparams = json::array({delivery_id, tenant});
  json tparams = json::array({tenant});
  loads.push_back(
      as_task(db.first_json("SELECT status, attempts FROM lead_deliveries WHERE id = ?1 AND "
                            "tenant_id = ?2",
                            dparams)));
  loads.push_back(
      as_task(db.first_json("SELECT config_json FROM tenants WHERE tenant_id = ?1", tparams)));
  auto loaded = co_await when_all(std::move(loads));
  if (!loaded[0] || !loaded[1]) {
    out.ack = false;
    out.retry_delay = backoff_seconds(ctx, 1);
    co_return out;
  }
  const json* row = row_of(*loaded[0]);
  if (row == nullptr) {
    ctx.log("notify: delivery " + delivery_id + " is unknown (erased?); dropped");
    co_return out;
  }
  std::string status = string_or(*row, "status", "");
  if (status != "pending") co_return out;  // already delivered or dead-lettered: a redelivery
  int attempt = static_cast<int>(int_or(*row, "attempts", 0)) + 1;
  // Claim the attempt before sending: two copies of one message cannot both send, and an erasure
  // (status 'cancelled') that lands meanwhile is respected.
  {
    json claim =
        json::array({delivery_id, tenant, attempt - 1, attempt, format_rfc3339_ms(ctx.now_ms())});
    auto claimed = co_await db.run_json(
        "UPDATE lead_deliveries SET attempts = ?4, updated_at = ?5 WHERE id = ?1 "
        "AND tenant_id = ?2 AND status = 'pending' AND attempts = ?3",
        claim);
    if (!claimed) {
      out.ack = false;
      out.retry_delay = backoff_seconds(ctx, attempt);
      co_return out;
    }
    const json* meta = find_field(*claimed, "meta");
    if (meta == nullptr || int_or(*meta, "changes", 0) == 0) co_return out;  // another copy has it
  }

  const json* trow = row_of(*loaded[1]);
  auto config_doc = parse_json(trow ? string_or(*trow, "config_json", "{}") : "{}");
  auto config = parse_config(config_doc ? *config_doc : json::object(), ctx.allow_local_outbound());
  Attempt result;
  bool permanent = false;
  if (!config) {
    result.error = "tenant config is invalid";
    permanent = true;
  } else {
    auto call = co_await provider_request(ctx, msg, *config);
    if (!call) {
      result.error = call.error().message;
      permanent = call.error().code == ErrorCode::conflict;
    } else {
      auto reply = co_await fetch(*call);
      if (!reply) {
        result.error = reply.error().cause.empty() ? "network error" : reply.error().cause;
      } else {
        result.http_status = reply->status;
        result.elapsed_ms = reply->elapsed_ms;
        result.ok = result.http_status >= 200 && result.http_status < 300;
        if (!result.ok) result.error = "HTTP " + std::to_string(result.http_status);
      }
    }
  }

  bool dead = !result.ok && (permanent || attempt >= kMaxDeliveryAttempts);
  std::string new_status = result.ok ? "delivered" : dead ? "dead" : "pending";
  std::string now = format_rfc3339_ms(ctx.now_ms());
  std::vector<D1Statement> writes = {
      {"INSERT OR REPLACE INTO delivery_attempts (delivery_id, attempt, attempted_at, ok, "
       "http_status, "
       "error, elapsed_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
       json::array({delivery_id, attempt, now, result.ok ? 1 : 0,
                    result.http_status ? json(result.http_status) : json(nullptr),
                    result.error.empty() ? json(nullptr) : json(result.error),
                    result.elapsed_ms >= 0 ? json(result.elapsed_ms) : json(nullptr)})},
      {"UPDATE lead_deliveries SET status = ?4, last_error = ?5, updated_at = ?6, delivered_at = "
       "?7 "
       "WHERE id = ?1 AND tenant_id = ?2 AND attempts = ?3 AND status = 'pending'",
       json::array({delivery_id, tenant, attempt, new_status,
                    result.error.empty() ? json(nullptr) : json(result.error), now,
                    result.ok ? json(now) : json(nullptr)})}};
  auto recorded = co_await db.batch_json(writes);
  if (!recorded) {
    // The attempt happened but could not be recorded; retry the message (the provider may see it
    // twice — each request carries the delivery id for its own dedupe).
    out.ack = false;
    out.retry_delay = backoff_seconds(ctx, attempt);
    co_return out;
  }
  const json* update_meta =
      recorded->is_array() && recorded->size() == 2 ? find_field((*recorded)[1], "meta") : nullptr;
  if (update_meta == nullptr || int_or(*update_meta, "changes", 0) == 0) {
    ctx.log("notify: delivery " + delivery_id + " was cancelled (erased) while it was being sent");
    co_return out;
  }
  if (result.ok || dead) {
    EventDraft event{result.ok ? "lead.delivered" : "lead.delivery_failed",
                     "lead:" + string_or(msg, "leadId", ""),
                     {{"leadId", string_or(msg, "leadId", "")},
                      {"deliveryId", delivery_id},
                      {"channel", string_or(msg, "channel", "")},
                      {"provider", string_or(msg, "provider", "")},
                      {"attempts", attempt}},
                     tenant};
    if (dead) event.payload["error"] = result.error;
    event.idempotency_key = event.event_type + ":" + delivery_id;
    auto emitted = co_await emit_event(ctx, std::move(event));
    if (!emitted) ctx.log("notify: event not emitted: " + emitted.error().message);
    co_return out;
  }
  out.ack = false;
  out.retry_delay = backoff_seconds(ctx, attempt);
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
    for (const auto& to : config.sms->to) add("sms", "twilio", to);
  }
  if (config.webhook) add("webhook", "webhook", "");
  for (Delivery& d : out) {
    SS_CO_TRY(d.id, co_await ctx.new_ulid());
  }
  co_return out;
}

D1Statement delivery_insert(const Delivery& d, const std::string& now) {
  return D1Statement{
      "INSERT INTO lead_deliveries (id, tenant_id, lead_id, channel, provider, status, "
      "attempts, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, 'pending', 0, ?6, ?6)",
      json::array({d.id, d.tenant_id, d.lead_id, d.channel,
                   d.provider + (d.recipient.empty() ? "" : ":" + d.recipient), now})};
}

Task<Status> enqueue_deliveries(Context& ctx, const std::vector<Delivery>& deliveries,
                                const json& lead, const std::string& submitted_at, bool stored) {
  std::vector<Task<Result<Unit>>> sends;
  for (const Delivery& d : deliveries) {
    sends.push_back(as_task(queue_send(kNotifyQueue, queue_body(d, lead, submitted_at))));
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
  std::vector<Task<MessageOutcome>> work;
  for (QueueMessage& m : batch) work.push_back(deliver_one(ctx, std::move(m)));
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

Task<Status> sweep_unsent(Context& ctx) {
  static constexpr int kSweepBatch = 100;
  std::string cutoff = format_rfc3339_ms(ctx.now_ms() - kSweepAfterMs);
  json params = json::array({cutoff, kSweepBatch});
  SS_CO_TRY(json r,
            co_await D1(kDb).all_json(
                "SELECT d.*, l.payload, l.created_at AS submitted_at FROM lead_deliveries d "
                "JOIN leads l ON l.id = d.lead_id AND l.tenant_id = d.tenant_id "
                "WHERE d.status = 'pending' AND d.attempts = 0 AND d.created_at < ?1 "
                "ORDER BY d.created_at LIMIT ?2",
                params));
  int requeued = 0;
  for (const json& row : rows_of(r)) {
    Delivery d{string_or(row, "id", ""),       string_or(row, "tenant_id", ""),
               string_or(row, "lead_id", ""),  string_or(row, "channel", ""),
               string_or(row, "provider", ""), ""};
    auto colon = d.provider.find(':');
    if (colon != std::string::npos) {
      d.recipient = d.provider.substr(colon + 1);
      d.provider = d.provider.substr(0, colon);
    }
    auto lead = parse_json(string_or(row, "payload", "{}"));
    json fields = lead ? *lead : json::object();  // hoisted: see the g++-12 note in shared/app.cpp
    json body = queue_body(d, fields, string_or(row, "submitted_at", ""));
    auto sent = co_await queue_send(kNotifyQueue, std::move(body));
    if (sent) {
      ++requeued;
      json touch = json::array({d.id, format_rfc3339_ms(ctx.now_ms())});
      auto touched = co_await D1(kDb).run_json(
          "UPDATE lead_deliveries SET updated_at = ?2, created_at = ?2 "
          "WHERE id = ?1",
          touch);
      if (!touched) ctx.log("sweeper: could not touch " + d.id);
    }
  }
  if (requeued > 0) ctx.log("sweeper: re-enqueued " + std::to_string(requeued) + " deliveries");
  co_return Unit{};
}

Task<Result<std::string>> webhook_signature(const std::string& secret, std::int64_t unix_seconds,
                                            const std::string& body) {
  std::string t = std::to_string(unix_seconds);
  SS_CO_TRY(std::string mac, co_await hmac_sha256_hex(secret, t + "." + body));
  co_return "t=" + t + ",v1=" + mac;
}

}  // namespace ss::leads
