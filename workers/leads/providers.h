#pragma once
// The notification providers: one function per provider turns a NotifyMessage into that provider's
// real request (docs/leads.md "Notifications"). They only build requests; sending, recording and
// retrying is the queue consumer's job (notify.cpp).

#include "shared/app.h"
#include "shared/effects.h"
#include "workers/leads/config.h"
#include "workers/leads/store.h"

#include <optional>
#include <string>

namespace ss::leads {

inline constexpr int kProviderTimeoutMs = 10000;
inline constexpr std::size_t kMaxSmsBody = 320;

// The body of one siteswarm-leads-notify queue message: one delivery of one lead.
struct NotifyMessage {
  std::string delivery_id;
  std::string tenant_id;
  std::string lead_id;
  std::string channel;    // email | sms | webhook
  std::string provider;   // resend | sendgrid | twilio | webhook
  std::string recipient;  // sms only
  std::string submitted_at;
  json lead = json::object();  // the validated fields

  static NotifyMessage of(const Delivery& d, const json& lead, const std::string& submitted_at);
  // nullopt when the message has no delivery id or tenant (nothing can be done with it).
  static std::optional<NotifyMessage> from_json(const json& body);
  json to_json() const;
};

// An Error with code conflict means the channel can never be sent as configured (removed from
// the tenant's config): the delivery is dead-lettered at once. dependency_unavailable (a missing
// credential) is retried like a provider failure.
Result<HttpCall> resend_request(const Context& ctx, const NotifyMessage& msg,
                                const EmailChannel& email);
Result<HttpCall> sendgrid_request(const Context& ctx, const NotifyMessage& msg,
                                  const EmailChannel& email);
Result<HttpCall> twilio_request(const Context& ctx, const NotifyMessage& msg,
                                const SmsChannel& sms);
Task<Result<HttpCall>> webhook_request(const Context& ctx, const NotifyMessage& msg,
                                       const WebhookChannel& webhook);

// The request for msg's provider under the tenant's current config.
Task<Result<HttpCall>> provider_request(const Context& ctx, const NotifyMessage& msg,
                                        const LeadsConfig& config);

// "t=<unix>,v1=<hex HMAC-SHA256 of "t.body">"
Task<Result<std::string>> webhook_signature(const std::string& secret, std::int64_t unix_seconds,
                                            const std::string& body);

}  // namespace ss::leads
