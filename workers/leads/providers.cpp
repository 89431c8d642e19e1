#include "workers/leads/providers.h"

#include "shared/bytes.h"
#include "shared/form.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/text.h"
#include "shared/url_guard.h"

namespace ss::leads {

namespace {

std::string base_url(const Context& ctx, const char* var, const char* fallback) {
  std::string url = ctx.env(var);
  if (url.empty()) url = fallback;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// The plain-text body every channel shares: the standard fields first, then the tenant's extras.
std::string lead_text(const NotifyMessage& msg) {
  const json& lead = msg.lead;
  std::string text = "New lead for " + msg.tenant_id + "\n";
  for (const char* key : {"name", "email", "phone", "message"}) {
    if (auto v = get_string(lead, key)) text += std::string(key) + ": " + *v + "\n";
  }
  for (auto it = lead.begin(); it != lead.end(); ++it) {
    const std::string& k = it.key();
    if (k == "name" || k == "email" || k == "phone" || k == "message") continue;
    if (it.value().is_string()) text += k + ": " + it.value().get<std::string>() + "\n";
  }
  return text + "Lead id: " + msg.lead_id + "\n";
}

std::string subject_for(const json& lead) {
  std::string who = string_or(lead, "name", string_or(lead, "email", string_or(lead, "phone", "")));
  return who.empty() ? "New lead" : "New lead from " + utf8_prefix(who, 100);
}

// SendGrid's `from`: {"email"} alone takes no display name ("Name <address>" there is refused as
// an invalid address, a 400 that dead-letters every email), so the name goes in its own "name".
json sendgrid_sender(const std::string& from) {
  std::optional<Sender> sender = split_sender(from);
  if (!sender) return {{"email", from}};
  json out = {{"email", sender->address}};
  if (!sender->name.empty()) out["name"] = sender->name;
  return out;
}

HttpCall post(std::string url) {
  HttpCall call;
  call.method = "POST";
  call.url = std::move(url);
  call.timeout_ms = kProviderTimeoutMs;
  return call;
}

}  // namespace

NotifyMessage NotifyMessage::of(const Delivery& d, const json& lead,
                                const std::string& submitted_at) {
  return NotifyMessage{
      d.id,       d.tenant_id, d.lead_id,    d.channel,
      d.provider, d.recipient, submitted_at, lead.is_object() ? lead : json::object()};
}

std::optional<NotifyMessage> NotifyMessage::from_json(const json& body) {
  NotifyMessage m;
  m.delivery_id = string_or(body, "deliveryId", "");
  m.tenant_id = string_or(body, "tenantId", "");
  if (m.delivery_id.empty() || m.tenant_id.empty()) return std::nullopt;
  m.lead_id = string_or(body, "leadId", "");
  m.channel = string_or(body, "channel", "");
  m.provider = string_or(body, "provider", "");
  m.recipient = string_or(body, "recipient", "");
  m.submitted_at = string_or(body, "submittedAt", "");
  const json* lead = find_field(body, "lead");
  if (lead != nullptr && lead->is_object()) m.lead = *lead;
  return m;
}

json NotifyMessage::to_json() const {
  return json_object({{"deliveryId", delivery_id},
                      {"tenantId", tenant_id},
                      {"leadId", lead_id},
                      {"channel", channel},
                      {"provider", provider},
                      {"recipient", recipient},
                      {"submittedAt", submitted_at},
                      {"lead", lead}});
}

Result<HttpCall> resend_request(const Context& ctx, const NotifyMessage& msg,
                                const EmailChannel& email) {
  std::string key = ctx.env("RESEND_API_KEY");
  if (key.empty()) return Error{ErrorCode::dependency_unavailable, "RESEND_API_KEY is not set"};
  HttpCall call = post(base_url(ctx, "RESEND_API_URL", "https://api.resend.com") + "/emails");
  call.headers = {{"authorization", "Bearer " + key},
                  {"content-type", "application/json"},
                  {"idempotency-key", msg.delivery_id}};
  json body = json_object({{"from", email.from},
                           {"to", each_once(email.to, /*fold_case=*/true)},
                           {"subject", subject_for(msg.lead)},
                           {"text", lead_text(msg)}});
  std::string reply_to = string_or(msg.lead, "email", "");
  if (!reply_to.empty()) body["reply_to"] = reply_to;
  call.body = dump_json(body);
  return call;
}

Result<HttpCall> sendgrid_request(const Context& ctx, const NotifyMessage& msg,
                                  const EmailChannel& email) {
  std::string key = ctx.env("SENDGRID_API_KEY");
  if (key.empty()) return Error{ErrorCode::dependency_unavailable, "SENDGRID_API_KEY is not set"};
  HttpCall call =
      post(base_url(ctx, "SENDGRID_API_URL", "https://api.sendgrid.com") + "/v3/mail/send");
  call.headers = {{"authorization", "Bearer " + key}, {"content-type", "application/json"}};
  json to = json::array();
  for (const auto& addr : each_once(email.to, /*fold_case=*/true)) to.push_back({{"email", addr}});
  json body = json_object(
      {{"personalizations", json::array({{{"to", to}}})},
       {"from", sendgrid_sender(email.from)},
       {"subject", subject_for(msg.lead)},
       {"content", json::array({{{"type", "text/plain"}, {"value", lead_text(msg)}}})}});
  std::string reply_to = string_or(msg.lead, "email", "");
  if (!reply_to.empty()) body["reply_to"] = {{"email", reply_to}};
  call.body = dump_json(body);
  return call;
}

Result<HttpCall> twilio_request(const Context& ctx, const NotifyMessage& msg,
                                const SmsChannel& sms) {
  std::string sid = ctx.env("TWILIO_ACCOUNT_SID");
  std::string token = ctx.env("TWILIO_AUTH_TOKEN");
  std::string from = sms.from.empty() ? ctx.env("TWILIO_FROM_NUMBER") : sms.from;
  if (sid.empty() || token.empty() || from.empty()) {
    return Error{ErrorCode::dependency_unavailable,
                 "Twilio credentials or From number are not set"};
  }
  HttpCall call = post(base_url(ctx, "TWILIO_API_URL", "https://api.twilio.com") +
                       "/2010-04-01/Accounts/" + sid + "/Messages.json");
  call.headers = {{"authorization", "Basic " + base64_encode(sid + ":" + token)},
                  {"content-type", "application/x-www-form-urlencoded"}};
  call.body = encode_urlencoded(
      {{"To", msg.recipient}, {"From", from}, {"Body", utf8_prefix(lead_text(msg), kMaxSmsBody)}});
  return call;
}

Task<Result<HttpCall>> webhook_request(const Context& ctx, const NotifyMessage& msg,
                                       const WebhookChannel& webhook) {
  json body = json_object({{"event", "lead.received"},
                           {"deliveryId", msg.delivery_id},
                           {"tenantId", msg.tenant_id},
                           {"leadId", msg.lead_id},
                           {"submittedAt", shown_rfc3339(msg.submitted_at)},
                           {"lead", msg.lead}});
  // Judged again right before the call (the rules or ALLOW_LOCAL_OUTBOUND may have changed since
  // the tenant saved the URL); a refusal is permanent: retrying cannot make it pass.
  auto url = check_outbound_url(webhook.url, ctx.allow_local_outbound());
  if (!url) co_return Error{ErrorCode::conflict, "webhook URL refused: " + url.error().message};
  HttpCall call = post(url->href);
  call.body = dump_json(body);
  SS_CO_TRY(std::string signature,
            co_await webhook_signature(webhook.secret, ctx.now_ms() / 1000, call.body));
  call.headers = {{"content-type", "application/json"},
                  {"x-siteswarm-signature", signature},
                  {"x-siteswarm-delivery", msg.delivery_id},
                  {"user-agent", "SiteSwarm-Webhooks/1"}};
  co_return call;
}

Task<Result<HttpCall>> provider_request(const Context& ctx, const NotifyMessage& msg,
                                        const LeadsConfig& config) {
  const std::string& provider = msg.provider;
  if (provider == "resend" || provider == "sendgrid") {
    if (!config.email) co_return Error{ErrorCode::conflict, "email is no longer configured"};
    co_return provider == "resend" ? resend_request(ctx, msg, *config.email)
                                   : sendgrid_request(ctx, msg, *config.email);
  }
  if (provider == "twilio") {
    if (!config.sms) co_return Error{ErrorCode::conflict, "sms is no longer configured"};
    co_return twilio_request(ctx, msg, *config.sms);
  }
  if (provider == "webhook") {
    if (!config.webhook) {
      co_return Error{ErrorCode::conflict, "the webhook is no longer configured"};
    }
    SS_CO_RETURN_AWAIT(webhook_request(ctx, msg, *config.webhook));
  }
  co_return Error{ErrorCode::conflict, "unknown provider " + provider};
}

Task<Result<std::string>> webhook_signature(const std::string& secret, std::int64_t unix_seconds,
                                            const std::string& body) {
  std::string t = std::to_string(unix_seconds);
  SS_CO_TRY(std::string mac, co_await hmac_sha256_hex(secret, t + "." + body));
  co_return "t=" + t + ",v1=" + mac;
}

}  // namespace ss::leads
