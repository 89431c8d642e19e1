#include "workers/events/alerts.h"

#include "shared/effects.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/text.h"
#include "shared/url_guard.h"

#include <set>

namespace ss::events {

namespace {

struct Channels {
  std::string pagerduty_url;
  std::string routing_key;
  std::string slack_url;
  bool pagerduty() const { return !routing_key.empty(); }
  bool slack() const { return !slack_url.empty(); }
};

Channels channels(const Context& ctx) {
  Channels c;
  c.routing_key = ctx.env("ALERT_PAGERDUTY_ROUTING_KEY");
  c.pagerduty_url = ctx.env("PAGERDUTY_EVENTS_URL");
  if (c.pagerduty_url.empty()) c.pagerduty_url = kDefaultPagerDutyUrl;
  c.slack_url = ctx.env("ALERT_SLACK_WEBHOOK_URL");
  return c;
}

// One POST; "" when the channel accepted it, else why not (never the URL: a Slack webhook URL is a
// secret).
Task<std::string> post_json(Context& ctx, const char* channel, const std::string& url,
                            const json& body) {
  auto checked = check_outbound_url(url, ctx.allow_local_outbound());
  if (!checked) co_return std::string(channel) + ": URL refused: " + checked.error().message;
  HttpCall call;
  call.method = "POST";
  call.url = checked->href;
  call.headers = {{"content-type", "application/json"}};
  call.body = dump_json(body);
  auto reply = co_await fetch(call);
  if (!reply) co_return std::string(channel) + ": " + reply.error().message;
  if (!reply->ok()) co_return std::string(channel) + " answered " + std::to_string(reply->status);
  co_return std::string();
}

struct Delivery {
  bool pagerduty_sent = false;
  bool slack_sent = false;
  std::string error;
};

Task<Delivery> deliver_one(Context& ctx, const Channels& ch, const AlertRow& alert) {
  Delivery d;
  d.pagerduty_sent = alert.pagerduty_sent_at.has_value();
  d.slack_sent = alert.slack_sent_at.has_value();
  if (ch.pagerduty() && !d.pagerduty_sent) {
    json body = pagerduty_body(alert, ch.routing_key);
    std::string error = co_await post_json(ctx, "pagerduty", ch.pagerduty_url, body);
    d.pagerduty_sent = error.empty();
    d.error = error;
  }
  if (ch.slack() && !d.slack_sent) {
    json body = slack_body(alert);
    std::string error = co_await post_json(ctx, "slack", ch.slack_url, body);
    d.slack_sent = error.empty();
    if (!error.empty()) d.error = d.error.empty() ? error : d.error + "; " + error;
  }
  co_return d;
}

}  // namespace

D1Statement alert_statement(Context& ctx, const AlertDraft& alert) {
  json details = alert.details;
  details["severity"] = alert.severity;
  return AlertStore::enqueue_statement(alert.key, alert.kind, alert.summary, details,
                                       format_rfc3339_ms(ctx.now_ms()));
}

Task<Status> raise_alert(Context& ctx, const AlertDraft& alert) {
  std::vector<D1Statement> statements = {alert_statement(ctx, alert)};
  SS_CO_CHECK(co_await commit(statements));
  ctx.log("alert raised: " + alert.key);
  co_return Unit{};
}

json pagerduty_body(const AlertRow& alert, const std::string& routing_key) {
  auto details = parse_json(alert.details_json);
  json custom = details ? *details : json::object();
  if (auto resolves = get_string(custom, "resolves")) {
    // Events v2 resolve: the routing key, the action and the trigger's dedup_key are all it reads.
    return json_object({{"routing_key", routing_key},
                        {"event_action", "resolve"},
                        {"dedup_key", "siteswarm-events:" + *resolves}});
  }
  std::string severity = string_or(custom, "severity", "error");
  return json_object({{"routing_key", routing_key},
                      {"event_action", "trigger"},
                      {"dedup_key", "siteswarm-events:" + alert.alert_key},
                      {"payload",
                       {{"summary", alert.summary},
                        {"source", "siteswarm-events-service"},
                        {"severity", severity},
                        {"component", "event-ledger"},
                        {"group", "siteswarm-events"},
                        {"class", alert.kind},
                        {"timestamp", alert.created_at},
                        {"custom_details", custom}}}});
}

json slack_body(const AlertRow& alert) {
  if (alert.alert_key.rfind(kResolvedPrefix, 0) == 0) {
    return json_object(
        {{"text",
          ":white_check_mark: *siteswarm-events* resolved: " + slack_escaped(alert.summary) +
              " (alert " +
              slack_escaped(alert.alert_key.substr(std::string(kResolvedPrefix).size())) + ")"}});
  }
  // A summary and key may quote what a tenant sent (an entity id such as `monitor:<!channel>`).
  return json_object({{"text", ":rotating_light: *siteswarm-events* " + alert.kind + ": " +
                                   slack_escaped(alert.summary) + " (alert " +
                                   slack_escaped(alert.alert_key) + ")"}});
}

Task<Result<json>> deliver_alerts(Context& ctx) {
  Channels ch = channels(ctx);
  if (!ch.pagerduty() && !ch.slack()) {
    co_return json_object({{"sent", 0}, {"failed", 0}, {"channels", json::array()}});
  }
  SS_CO_TRY(
      std::vector<AlertRow> rows,
      co_await AlertStore::pending(ch.pagerduty(), ch.slack(), kMaxAlertAttempts, kAlertBatch));
  std::vector<Task<Delivery>> work;
  for (const AlertRow& row : rows) work.push_back(deliver_one(ctx, ch, row));
  std::vector<Delivery> results = co_await when_all(std::move(work));
  std::vector<D1Statement> statements;
  std::string now = format_rfc3339_ms(ctx.now_ms());
  int sent = 0;
  int failed = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Delivery& d = results[i];
    if (d.error.empty()) {
      ++sent;
    } else {
      ++failed;
      ctx.log("alert " + rows[i].alert_key + " not delivered: " + d.error);
    }
    statements.push_back(AlertStore::attempt_statement(rows[i].alert_key, d.pagerduty_sent,
                                                       d.slack_sent, d.error, now));
  }
  SS_CO_CHECK(co_await commit(statements));
  json used = json::array();
  if (ch.pagerduty()) used.push_back("pagerduty");
  if (ch.slack()) used.push_back("slack");
  co_return json_object({{"sent", sent}, {"failed", failed}, {"channels", used}});
}

namespace {
// The open stall row of `base` ("consumer_stalled:<consumer>:<cursor>", or a later episode of it,
// "<base>#<n>"), if any.
const AlertRow* open_episode(const std::vector<AlertRow>& open, const std::string& base) {
  for (const AlertRow& row : open) {
    if (row.alert_key == base || row.alert_key.rfind(base + "#", 0) == 0) return &row;
  }
  return nullptr;
}
}  // namespace

Task<Status> raise_stall_alerts(Context& ctx, const json& health) {
  const json* consumers = find_field(health, "consumers");
  if (consumers == nullptr || !consumers->is_object()) co_return Unit{};
  SS_CO_TRY(std::vector<AlertRow> open, co_await AlertStore::open_stalls(kOpenStallLimit));
  std::vector<D1Statement> statements;
  std::set<std::string> stalled_now;
  for (auto it = consumers->begin(); it != consumers->end(); ++it) {
    const json& c = it.value();
    if (!get_bool(c, "lagging").value_or(false)) continue;
    // Keyed by the cursor the consumer is stuck at: one alert per stall, a new one only if it moves
    // and sticks again, or sticks again at the same cursor after that stall was resolved (a kill
    // switch turned on and off, say): then it is the stall's next episode, "<key>#<n>". The first
    // episode keeps the plain key, the one rows written before episodes existed carry.
    std::string at = string_or(c, "cursor", "start");  // null cursor: never advanced
    std::string base = "consumer_stalled:" + it.key() + ":" + at;
    std::string key = base;
    if (const AlertRow* row = open_episode(open, base)) {
      key = row->alert_key;  // the stall goes on: the same row, nothing new is sent
    } else {
      // Every earlier episode at this cursor is resolved (or there is none): the next number. Two
      // passes at once count the same rows and write the same key, so still one alert.
      SS_CO_TRY(std::int64_t episodes, co_await AlertStore::stall_episodes(base));
      if (episodes > 0) key = base + "#" + std::to_string(episodes + 1);
    }
    AlertDraft alert;
    alert.key = key;
    alert.kind = "consumer_stalled";
    alert.severity = "critical";
    alert.summary = "events consumer " + it.key() + " is stalled: oldest unread event " +
                    std::to_string(int_or(c, "lag_seconds", 0) / 60) + " minutes old";
    alert.details = {{"consumer", it.key()},
                     {"cursor", c.contains("cursor") ? c["cursor"] : json(nullptr)},
                     {"lag_seconds", int_or(c, "lag_seconds", 0)}};
    stalled_now.insert(alert.key);
    statements.push_back(alert_statement(ctx, alert));
  }
  for (const AlertRow& row : open) {
    if (stalled_now.count(row.alert_key) != 0) continue;
    // No conditional temporaries in a coroutine body (g++-12 mis-destroys them): plain statements.
    std::string consumer;
    if (auto stall = parse_json(row.details_json)) consumer = string_or(*stall, "consumer", "");
    AlertDraft resolved;
    resolved.key = kResolvedPrefix + row.alert_key;
    resolved.kind = "consumer_stalled_resolved";
    resolved.severity = "info";
    resolved.summary = "events consumer " + consumer + " is no longer stalled where it was";
    resolved.details = {{"resolves", row.alert_key}, {"consumer", consumer}};
    statements.push_back(alert_statement(ctx, resolved));
  }
  SS_CO_CHECK(co_await commit(statements));
  co_return Unit{};
}

}  // namespace ss::events
