#pragma once
// Notification delivery: one delivery per (lead, channel[, recipient]), sent through the leads
// worker's own queue (NOTIFY_QUEUE → siteswarm-leads-notify), each attempt recorded, retried with
// exponential backoff, and dead-lettered (visible in the tenant admin API, lead.delivery_failed
// emitted) after kMaxDeliveryAttempts. A redelivered message for a finished delivery is
// acknowledged without resending.

#include "shared/app.h"
#include "shared/effects.h"
#include "workers/leads/config.h"

#include <string>
#include <vector>

namespace ss::leads {

inline constexpr int kMaxDeliveryAttempts = 5;
inline constexpr int kDefaultBackoffSeconds = 30;
inline constexpr int kMaxBackoffSeconds = 3600;

struct Delivery {
  std::string id;
  std::string tenant_id;
  std::string lead_id;
  std::string channel;    // email | sms | webhook
  std::string provider;   // resend | sendgrid | twilio | webhook
  std::string recipient;  // sms: one number per delivery
};

Task<Result<std::vector<Delivery>>> plan_deliveries(Context& ctx, const std::string& tenant_id,
                                                    const std::string& lead_id,
                                                    const LeadsConfig& config);
D1Statement delivery_insert(const Delivery& d, const std::string& now);
// Sends one queue message per delivery. A failure is fatal only when the lead is not stored (the
// message is then its only copy); stored leads' deliveries are re-enqueued by the sweeper.
Task<Status> enqueue_deliveries(Context& ctx, const std::vector<Delivery>& deliveries,
                                const json& lead, const std::string& submitted_at, bool stored);

Task<QueueOutcome> deliver_batch(Context& ctx, std::vector<QueueMessage> batch);
// Cron: re-enqueues stored leads' deliveries that were never attempted (their enqueue failed).
Task<Status> sweep_unsent(Context& ctx);

// "t=<unix>,v1=<hex HMAC-SHA256 of "t.body">"
Task<Result<std::string>> webhook_signature(const std::string& secret, std::int64_t unix_seconds,
                                            const std::string& body);

}  // namespace ss::leads
