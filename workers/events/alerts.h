#pragma once
// Operator alerts of the ledger: what a person must be told (a fan-out cap hit, a consumer stalled
// over an hour, a quarantine that grows, an anomaly), through an outbox so each alert is sent once.
//
// Raising an alert inserts a row keyed by its alert key into events_alerts (INSERT OR IGNORE): the
// key carries what makes an alert new (the subscription and hour of a cap hit, the cursor a consumer
// is stuck at, ...), so the same condition seen again — a replay, every cron run during a stall — is
// the same row. deliver_alerts() sends the unsent rows to every configured channel and marks each
// channel sent when it answered 2xx; a failed channel is retried on the next run (at most
// kMaxAlertAttempts times). PagerDuty also dedupes on dedup_key = "siteswarm-events:<alert key>".
//
// Configuration (events worker env): ALERT_PAGERDUTY_ROUTING_KEY (secret) with PAGERDUTY_EVENTS_URL
// (default https://events.pagerduty.com/v2/enqueue), and/or ALERT_SLACK_WEBHOOK_URL (secret). With
// neither, alerts are still recorded (GET /admin/alerts) and nothing is sent.

#include "shared/app.h"
#include "workers/events/store.h"

namespace ss::events {

inline constexpr int kMaxAlertAttempts = 10;
inline constexpr int kAlertBatch = 20;
inline constexpr std::int64_t kCapAlertPeriodMs = 60 * 60 * 1000;  // one per subscription per hour
inline constexpr const char* kDefaultPagerDutyUrl = "https://events.pagerduty.com/v2/enqueue";

struct AlertDraft {
  std::string key;  // what makes this alert distinct (see above)
  // fanout_capped | consumer_stalled | quarantine_growing | anomaly | anomaly_alerts_capped
  std::string kind;
  std::string severity = "error";  // PagerDuty severity: critical | error | warning | info
  std::string summary;
  json details = json::object();
};

D1Statement alert_statement(Context& ctx, const AlertDraft& alert);
// Records the alert now (one D1 write); a repeated key changes nothing.
Task<Status> raise_alert(Context& ctx, const AlertDraft& alert);

// The PagerDuty Events v2 body and the Slack message of an alert (pure: tested directly).
json pagerduty_body(const AlertRow& alert, const std::string& routing_key);
json slack_body(const AlertRow& alert);

// Sends what is pending: {"sent","failed","pending_channels":{"pagerduty","slack"}}.
Task<Result<json>> deliver_alerts(Context& ctx);

// From a consumer_health() snapshot: one consumer_stalled alert per stalled consumer and cursor
// (and per episode: a new stall at the cursor of a resolved one is "<key>#2", "#3", …), and one
// "resolved:<key>" alert for each earlier stall that is over (the consumer drains again,
// was stopped on purpose by its kill switch, or is stuck at another cursor, which is a new stall).
// A resolution goes to PagerDuty as event_action "resolve" with the stall's dedup_key, so the
// incident closes by itself, and to Slack as a message.
inline constexpr const char* kResolvedPrefix = "resolved:";
inline constexpr int kOpenStallLimit = 100;
Task<Status> raise_stall_alerts(Context& ctx, const json& health);

}  // namespace ss::events
