#pragma once
// Notification delivery: one delivery per (lead, channel[, recipient]), sent through the leads
// worker's own queue (NOTIFY_QUEUE → siteswarm-leads-notify), each attempt recorded, retried with
// exponential backoff, and dead-lettered (visible in the tenant admin API, lead.delivery_failed
// emitted) after kMaxDeliveryAttempts. A redelivered message for a finished delivery is
// acknowledged without resending. The providers' requests are built in providers.cpp.

#include "shared/app.h"
#include "shared/effects.h"
#include "workers/leads/config.h"
#include "workers/leads/store.h"

#include <string>
#include <vector>

namespace ss::leads {

// The platform's kill switches live in the FLAGS KV namespace, written by the ledger (key = switch
// name, present = on; docs/runbook-events.md). While kill:notifications is on, the consumer parks
// every message on its delivery instead of sending it, and the sweeper re-sends them once it is off.
inline constexpr const char* kFlagsBinding = "FLAGS";
inline constexpr const char* kNotificationsSwitch = "kill:notifications";

inline constexpr int kMaxDeliveryAttempts = 5;
inline constexpr int kDefaultBackoffSeconds = 30;
inline constexpr int kMaxBackoffSeconds = 3600;

Task<Result<std::vector<Delivery>>> plan_deliveries(Context& ctx, const std::string& tenant_id,
                                                    const std::string& lead_id,
                                                    const LeadsConfig& config);
// Sends one queue message per delivery. A failure is fatal only when the lead is not stored (the
// message is then its only copy); stored leads' deliveries are re-enqueued by the sweeper.
Task<Status> enqueue_deliveries(Context& ctx, const std::vector<Delivery>& deliveries,
                                const json& lead, const std::string& submitted_at, bool stored);

// The queue consumer: each message of the batch is one delivery attempt.
Task<QueueOutcome> deliver_batch(Context& ctx, std::vector<QueueMessage> batch);
// Cron: re-enqueues stored leads' deliveries that were never attempted (their enqueue failed) or
// whose retry is long overdue (its message ran out of queue retries), and,
// while kill:notifications is off, the messages it held.
Task<Status> sweep_unsent(Context& ctx);

}  // namespace ss::leads
