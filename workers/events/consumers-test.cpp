// The drainers beyond workflow_runner (anomaly_detector, reflexion_analyzer,
// customer_health_watcher), the operator alerts, /health on a stall, and the operator reads they
// feed — on the native mesh, in virtual time.
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/text.h"
#include "workers/events/alerts.h"
#include "workers/events/anomaly_detector.h"
#include "workers/events/customer_health_watcher.h"
#include "workers/events/reflexion_analyzer.h"
#include "workers/events/test_ledger.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

using namespace ss::events::testing;
using ss::json;

namespace {

constexpr std::int64_t kMinute = 60 * 1000;

std::string emit_for(Ledger& l, const std::string& tenant, const std::string& token,
                     const std::string& type, const json& payload, const std::string& ref) {
  auto h = Mesh::tenant_headers(tenant, token);
  h["Content-Type"] = "application/json";
  auto r = l.mesh.request("events", "POST", "/api/events", h,
                          json{{"event_type", type},
                               {"entity_ref", ref},
                               {"payload", payload.is_null() ? json::object() : payload}}
                              .dump());
  REQUIRE(r.status == 201);
  l.mesh.now_ms += 1;
  return r.body_json()["event_id"];
}

json anomalies(Ledger& l) {
  return l.db("SELECT * FROM events WHERE event_type = 'anomaly.detected' ORDER BY seq");
}

void configure_alerts(Ledger& l) {
  l.mesh.set_env("events", "ALERT_PAGERDUTY_ROUTING_KEY", "R0UT1NGKEY0000000000000000000000");
  l.mesh.set_env("events", "PAGERDUTY_EVENTS_URL", "http://127.0.0.1:9/v2/enqueue");
  l.mesh.set_env("events", "ALERT_SLACK_WEBHOOK_URL", "http://127.0.0.1:9/slack/T000/B000/XXXX");
}

std::vector<json> posts_to(const Ledger& l, const std::string& part) {
  std::vector<json> out;
  for (const json& p : l.alert_posts) {
    if (p["url"].get<std::string>().find(part) != std::string::npos) out.push_back(p["body"]);
  }
  return out;
}

}  // namespace

TEST_CASE("anomaly_detector judges a window once it has ended: emit, move past it, drain") {
  Ledger l;
  // 14:20 virtual: the window 14:15-14:30 is open.
  for (int i = 0; i < 25; ++i) l.emit("email.bounced");
  l.emit("email.parsed");
  // Time moves past the window before the detector runs (a */15 cron at 14:45).
  l.mesh.now_ms += 25 * kMinute;
  json report = l.drain("anomaly_detector");
  CHECK(report["read"] == 26);
  CHECK(report["anomalies"] == 1);
  json found = anomalies(l);
  REQUIRE(found.size() == 1);
  CHECK(found[0]["entity_id"] == "email.bounced");
  json payload = json::parse(found[0]["payload_json"].get<std::string>());
  CHECK(payload["rule"] == "rate");
  CHECK(payload["count"] == 25);
  CHECK(payload["baseline_per_window"] == 0.0);
  CHECK(payload["window_start"] == "2025-11-29T14:15:00Z");
  CHECK(payload["window_end"] == "2025-11-29T14:30:00Z");
  // Judged once: later runs read the alert itself and judge nothing again.
  l.mesh.now_ms += 15 * kMinute;
  CHECK(l.drain("anomaly_detector")["anomalies"] == 0);
  CHECK(anomalies(l).size() == 1);
  // And an operator alert was recorded for it.
  CHECK(l.db("SELECT * FROM events_alerts WHERE kind = 'anomaly'").size() == 1);
}

TEST_CASE("anomaly_detector does not judge the window still open, then judges it when it ends") {
  Ledger l;
  for (int i = 0; i < 25; ++i) l.emit("email.bounced");
  json report = l.drain("anomaly_detector");  // same instant: the window has not ended
  CHECK(report["read"] == 25);
  CHECK(anomalies(l).empty());
  l.mesh.now_ms += 10 * kMinute;  // 14:30: the window just ended; nothing new to read
  report = l.drain("anomaly_detector");
  CHECK(report["read"] == 0);
  CHECK(report["anomalies"] == 1);
  CHECK(anomalies(l).size() == 1);
}

TEST_CASE("anomaly_detector judges every completed window since its cursor, each once") {
  Ledger l;
  // Three windows with 20+ events each, no run in between; a quiet baseline makes each anomalous.
  for (int w = 0; w < 3; ++w) {
    for (int i = 0; i < 21; ++i) l.emit("order.placed");
    l.mesh.now_ms += 15 * kMinute;
  }
  json report = l.drain("anomaly_detector");
  CHECK(report["anomalies"].get<int>() >= 1);
  json found = anomalies(l);
  // Window 1 against an empty baseline; windows 2 and 3 against 21 and 42 events over 96 windows.
  CHECK(found.size() == 3);
  std::set<std::string> windows;
  for (const json& a : found) {
    windows.insert(json::parse(a["payload_json"].get<std::string>())["window_start"]);
  }
  CHECK(windows.size() == 3);
  l.mesh.now_ms += 60 * kMinute;
  l.drain("anomaly_detector");
  CHECK(anomalies(l).size() == 3);
}

TEST_CASE(
    "anomaly_detector: a burst of delivery failures of one tenant is an anomaly with evidence") {
  Ledger l;
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(l.emit("lead.delivery_failed", {{"channel", "email"}, {"error", "resend 503"}},
                         "lead:L" + std::to_string(i)));
  }
  l.mesh.now_ms += 15 * kMinute;
  l.drain("anomaly_detector");
  json found =
      l.db("SELECT * FROM events WHERE event_type = 'anomaly.detected' AND entity_type = 'tenant'");
  REQUIRE(found.size() == 1);
  CHECK(found[0]["tenant_id"] == "bakery");
  CHECK(found[0]["entity_id"] == "bakery");
  json payload = json::parse(found[0]["payload_json"].get<std::string>());
  CHECK(payload["rule"] == "delivery_failure_burst");
  CHECK(payload["count"] == 5);
  CHECK(payload["first_event_id"] == ids.front());
  CHECK(payload["last_event_id"] == ids.back());
  // Four failures are not a burst.
  Ledger quiet;
  for (int i = 0; i < 4; ++i) quiet.emit("lead.delivery_failed", {{"channel", "email"}});
  quiet.mesh.now_ms += 15 * kMinute;
  quiet.drain("anomaly_detector");
  CHECK(anomalies(quiet).empty());
}

TEST_CASE("anomaly_detector: a monitor that opens 3 incidents in 6 hours is flapping") {
  Ledger l;
  for (int i = 0; i < 3; ++i) {
    l.emit("monitor.incident_opened", {{"monitorId", "home"}}, "monitor:home");
    l.mesh.now_ms += 20 * kMinute;
    l.emit("monitor.incident_resolved", {{"monitorId", "home"}}, "monitor:home");
  }
  l.mesh.now_ms += 6 * 60 * kMinute;
  l.drain("anomaly_detector");
  json found = l.db(
      "SELECT * FROM events WHERE event_type = 'anomaly.detected' AND entity_type = 'monitor'");
  REQUIRE(found.size() == 1);
  CHECK(json::parse(found[0]["payload_json"].get<std::string>())["rule"] == "monitor_flapping");
}

TEST_CASE(
    "anomaly_detector: two tenants' monitors of one id flapping are two anomalies, two alerts") {
  Ledger l;
  configure_alerts(l);
  l.mesh.provision("auto-repair", "auto-token-0123456789", "auto-admin-0123456789", {}, "events");
  for (int i = 0; i < 3; ++i) {
    l.emit("monitor.incident_opened", {{"monitorId", "home"}}, "monitor:home");
    emit_for(l, "auto-repair", "auto-token-0123456789", "monitor.incident_opened",
             {{"monitorId", "home"}}, "monitor:home");
    l.mesh.now_ms += 20 * kMinute;
  }
  l.mesh.now_ms += 6 * 60 * kMinute;
  l.drain("anomaly_detector");
  json found = l.db(
      "SELECT tenant_id, idempotency_key FROM events WHERE event_type = 'anomaly.detected' "
      "ORDER BY tenant_id");
  REQUIRE(found.size() == 2);
  CHECK(found[0]["tenant_id"] == "auto-repair");
  CHECK(found[1]["tenant_id"] == "bakery");
  json alerts = l.db(
      "SELECT alert_key, summary FROM events_alerts WHERE kind = 'anomaly' "
      "ORDER BY alert_key");
  REQUIRE(alerts.size() == 2);
  for (int i = 0; i < 2; ++i) {
    std::string tenant = found[i]["tenant_id"];
    std::string key = alerts[i]["alert_key"];
    CHECK(key == found[i]["idempotency_key"]);
    CHECK(key.rfind("anomaly:monitor_flapping:tenant:" + tenant + ":monitor:home:", 0) == 0);
    CHECK(alerts[i]["summary"].get<std::string>().find("tenant:" + tenant + ":monitor:home") !=
          std::string::npos);
  }
}

TEST_CASE(
    "anomaly_detector: past ANOMALY_ALERTS_PER_HOUR, anomalies are events only, one alert says "
    "so") {
  // Anyone who can post can make anomalies (3 incidents of a made-up monitor): the operator's
  // pager is capped per clock hour; the evidence is kept whole.
  Ledger l;
  configure_alerts(l);
  l.mesh.set_env("events", "ANOMALY_ALERTS_PER_HOUR", "2");
  for (const std::string m : {"a", "b", "c", "d"}) {
    for (int i = 0; i < 3; ++i)
      l.emit("monitor.incident_opened", {{"monitorId", m}}, "monitor:" + m);
  }
  l.mesh.now_ms += 6 * 60 * kMinute;
  l.drain("anomaly_detector");
  CHECK(anomalies(l).size() == 4);
  CHECK(l.db("SELECT * FROM events_alerts WHERE kind = 'anomaly'").size() == 2);
  json capped = l.db("SELECT * FROM events_alerts WHERE kind = 'anomaly_alerts_capped'");
  REQUIRE(capped.size() == 1);
  CHECK(capped[0]["summary"].get<std::string>().find("more than 2 anomaly alerts") !=
        std::string::npos);
  json details = json::parse(capped[0]["details_json"].get<std::string>());
  CHECK(details["cap"] == 2);
  CHECK(details["first_left_out"].get<std::string>().rfind("anomaly:monitor_flapping:", 0) == 0);
  // The next run judges nothing new and raises nothing more.
  l.mesh.now_ms += 15 * kMinute;
  l.drain("anomaly_detector");
  CHECK(l.db("SELECT * FROM events_alerts").size() == 3);
  // Within the cap nothing is capped: a ledger left at the default raises each one.
  Ledger fresh;
  configure_alerts(fresh);
  for (const std::string m : {"a", "b", "c", "d"}) {
    for (int i = 0; i < 3; ++i) {
      fresh.emit("monitor.incident_opened", {{"monitorId", m}}, "monitor:" + m);
    }
  }
  fresh.mesh.now_ms += 6 * 60 * kMinute;
  fresh.drain("anomaly_detector");
  CHECK(fresh.db("SELECT * FROM events_alerts WHERE kind = 'anomaly'").size() == 4);
  CHECK(fresh.db("SELECT * FROM events_alerts WHERE kind = 'anomaly_alerts_capped'").empty());
}

TEST_CASE("anomaly_detector: windows under their rule's threshold do not crowd a burst out") {
  Ledger l;
  l.mesh.set_env("events", "ANOMALY_JUDGE_ROWS",
                 "2");  // a judge pass reads 2 candidates of each kind
  // Three monitors with one incident each sort before the flapping one.
  for (const std::string quiet : {"a", "b", "c"}) {
    l.emit("monitor.incident_opened", {{"monitorId", quiet}}, "monitor:" + quiet);
  }
  for (int i = 0; i < 3; ++i) l.emit("monitor.incident_opened", {{"monitorId", "z"}}, "monitor:z");
  l.mesh.now_ms += 6 * 60 * kMinute;
  l.drain("anomaly_detector");
  json found = l.db(
      "SELECT * FROM events WHERE event_type = 'anomaly.detected' AND entity_type = 'monitor'");
  REQUIRE(found.size() == 1);
  CHECK(found[0]["entity_id"] == "z");
}

TEST_CASE(
    "anomaly_detector: a judge pass that reads a full page leaves the rest to the next, none "
    "skipped") {
  Ledger l;
  l.mesh.set_env("events", "ANOMALY_JUDGE_ROWS", "2");
  // Three windows with two types over the rate rule's minimum each: six candidates, two a pass.
  std::map<std::string, std::string> last;  // "<type>@<window>" -> the last event counted
  for (int w = 0; w < 3; ++w) {
    for (int i = 0; i < 21; ++i) {
      for (const std::string type : {"order.placed", "order.paid"}) {
        last[type + "@" + std::to_string(w)] = l.emit(type);
      }
    }
    l.mesh.now_ms += 15 * kMinute;
  }
  for (int run = 0; run < 6; ++run) l.drain("anomaly_detector");
  json found = anomalies(l);
  CHECK(found.size() == 6);
  std::set<std::string> last_ids;
  for (const json& a : found) {
    json payload = json::parse(a["payload_json"].get<std::string>());
    CHECK(payload["rule"] == "rate");
    last_ids.insert(payload["last_event_id"].get<std::string>());
  }
  std::set<std::string> expected;
  for (const auto& [key, id] : last) expected.insert(id);
  CHECK(last_ids == expected);  // the evidence names each window's last event
  // Later runs judge nothing again.
  l.mesh.now_ms += 15 * kMinute;
  l.drain("anomaly_detector");
  CHECK(anomalies(l).size() == 6);
}

TEST_CASE("anomaly_detector: one window with more candidates than a page is judged whole") {
  Ledger l;
  l.mesh.set_env("events", "ANOMALY_JUDGE_ROWS", "2");
  // Five event types over the rate rule's minimum in the same window: a page holds two of them.
  const std::vector<std::string> types = {"order.placed", "order.paid", "order.packed",
                                          "order.shipped", "order.refunded"};
  for (int i = 0; i < 21; ++i) {
    for (const std::string& type : types) l.emit(type);
  }
  l.mesh.now_ms += 15 * kMinute;
  for (int run = 0; run < 4; ++run) l.drain("anomaly_detector");
  std::set<std::string> judged;
  for (const json& a : anomalies(l)) judged.insert(a["entity_id"].get<std::string>());
  CHECK(judged == std::set<std::string>(types.begin(), types.end()));
}

TEST_CASE("reflexion_analyzer keeps failure patterns per workflow / event type, replay-safe") {
  Ledger l;
  std::string f1 = l.emit("workflow.run_failed",
                          {{"workflow_type", "notify"}, {"error", "target answered 503"}});
  l.emit("workflow.run_failed", {{"workflow_type", "notify"}, {"error", "target answered 502"}});
  l.emit("workflow.run_failed", {{"workflow_type", "notify"}, {"error_class", "timeout"}});
  l.emit("lead.delivery_failed",
         {{"channel", "email"}, {"provider", "resend"}, {"error", "resend answered 500"}});
  l.emit("lead.spam_absorbed", {{"reason", "honeypot"}}, "tenant:bakery");
  l.emit("price.changed", {{"amount", 3}});  // not a failure
  json report = l.drain("reflexion_analyzer");
  CHECK(report["read"] == 6);
  CHECK(report["patterns"] == 5);
  auto list = l.admin("GET", "/admin/reflexion");
  REQUIRE(list.status == 200);
  json patterns = list.body_json()["patterns"];
  REQUIRE(patterns.size() == 4);
  CHECK(patterns[0]["subject"] == "notify");
  CHECK(patterns[0]["error_class"] == "http_5xx");
  CHECK(patterns[0]["count"] == 2);
  CHECK(patterns[0]["example_event_ids"][0] == f1);
  CHECK(patterns[0]["tenants"] == json::array({"bakery"}));
  CHECK(patterns[0]["last_error"] == "target answered 502");
  // Times as the API writes them: whole seconds without ".000" (the events' recorded_at).
  for (const char* key : {"first_seen_at", "last_seen_at"}) {
    const std::string at = patterns[0][key].get<std::string>();
    CHECK_MESSAGE((at.size() == 20 && at.back() == 'Z'), at);
  }
  auto only = l.admin("GET", "/admin/reflexion?subject=lead.delivery_failed").body_json();
  REQUIRE(only["patterns"].size() == 1);
  CHECK(only["patterns"][0]["error_class"] == "email.resend:http_5xx");
  // Replay the window: nothing is counted twice.
  REQUIRE(l.admin("POST", "/admin/consumers/reflexion_analyzer/replay", {{"from_event_id", f1}})
              .status == 200);
  l.drain("reflexion_analyzer");
  CHECK(l.admin("GET", "/admin/reflexion").body_json()["patterns"][0]["count"] == 2);
  // Operators only.
  CHECK(l.mesh.request("events", "GET", "/admin/reflexion").status == 401);
  CHECK(l.admin("GET", "/admin/reflexion?limit=0").status == 400);
}

TEST_CASE(
    "customer_health_watcher scores a tenant and appends tenant.health_changed on a band change") {
  Ledger l;
  l.mesh.provision("auto-repair", "auto-token-0123456789", "auto-admin-0123456789", {}, "events");
  auto before = l.admin("GET", "/admin/tenants/bakery/health");
  REQUIRE(before.status == 200);
  CHECK(before.body_json()["score"] == 100);
  CHECK(before.body_json()["band"] == "healthy");

  l.emit("lead.received", {}, "lead:1");
  l.emit("lead.delivered", {}, "lead:1");
  l.emit("lead.delivered", {}, "lead:2");
  json report = l.drain("customer_health_watcher");
  CHECK(report["health_changes"] == 0);
  CHECK(l.admin("GET", "/admin/tenants/bakery/health").body_json()["score"] == 100);

  // 3 failures of 5 deliveries: -30 → watch.
  for (int i = 0; i < 3; ++i) l.emit("lead.delivery_failed", {{"channel", "email"}}, "lead:3");
  // Another tenant's trouble is not bakery's.
  emit_for(l, "auto-repair", "auto-token-0123456789", "monitor.incident_opened", {}, "monitor:m");
  report = l.drain("customer_health_watcher");
  CHECK(report["health_changes"] == 2);  // bakery, and auto-repair (below)
  json health = l.admin("GET", "/admin/tenants/bakery/health").body_json();
  CHECK(health["score"] == 70);
  CHECK(health["band"] == "watch");
  CHECK(health["signals"]["delivery_failures"] == 3.0);
  // Events' times, shown as the events show them (whole seconds: no ".000").
  CHECK(health["last_event_at"] == "2025-11-29T14:20:00Z");
  CHECK(health["band_changed_at"] == "2025-11-29T14:20:00Z");
  json changed = l.db(
      "SELECT * FROM events WHERE event_type = 'tenant.health_changed' AND tenant_id = 'bakery'");
  REQUIRE(changed.size() == 1);
  CHECK(changed[0]["tenant_id"] == "bakery");
  CHECK(changed[0]["entity_id"] == "bakery");
  json payload = json::parse(changed[0]["payload_json"].get<std::string>());
  CHECK(payload["from"] == "healthy");
  CHECK(payload["to"] == "watch");
  CHECK(payload["score"] == 75);  // the band changed at the second failure (2 of 4 deliveries)
  // Keyed by the trigger's event_id: the tenant reads this key, and no ledger-wide seq is in it.
  CHECK(changed[0]["idempotency_key"] ==
        "tenant.health_changed:bakery:" + payload["trigger_event_id"].get<std::string>());
  // auto-repair: one open incident (-20) and one opened recently (-5) = 75, watch.
  CHECK(l.admin("GET", "/admin/tenants/auto-repair/health").body_json()["score"] == 75);

  // An incident opens for bakery: 70 - 25 = 45 → at_risk; it resolves: 65 → watch again.
  l.emit("monitor.incident_opened", {}, "monitor:home");
  l.drain("customer_health_watcher");
  CHECK(l.admin("GET", "/admin/tenants/bakery/health").body_json()["band"] == "at_risk");
  l.emit("monitor.incident_resolved", {}, "monitor:home");
  l.drain("customer_health_watcher");
  health = l.admin("GET", "/admin/tenants/bakery/health").body_json();
  CHECK(health["score"] == 65);
  CHECK(health["band"] == "watch");
  CHECK(l.db("SELECT * FROM events WHERE event_type = 'tenant.health_changed' AND tenant_id = "
             "'bakery'")
            .size() == 3);

  // Its own events are read and ignored; a replay counts nothing twice.
  l.drain("customer_health_watcher");
  CHECK(l.admin("GET", "/admin/tenants/bakery/health").body_json()["score"] == 65);

  // Time heals: two half-lives later the failures weigh a quarter, the opened incident too.
  l.mesh.now_ms += 2 * ss::events::kHealthHalfLifeMs;
  l.emit("lead.delivered", {}, "lead:9");
  l.drain("customer_health_watcher");
  CHECK(l.admin("GET", "/admin/tenants/bakery/health").body_json()["band"] == "healthy");

  CHECK(l.admin("GET", "/admin/tenants/nobody/health").status == 404);
  CHECK(l.mesh.request("events", "GET", "/admin/tenants/bakery/health").status == 401);
  auto tenant_token = Mesh::tenant_headers("bakery", kToken);
  CHECK(l.mesh.request("events", "GET", "/admin/tenants/bakery/health", tenant_token).status ==
        401);
}

TEST_CASE("cron */30 runs reflexion_analyzer and */5 customer_health_watcher") {
  Ledger l;
  l.emit("workflow.run_failed", {{"workflow_type", "notify"}, {"error", "boom"}});
  CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/30 * * * *"}})["ok"] == true);
  CHECK(l.db("SELECT * FROM reflexion_log").size() == 1);
  CHECK(l.db("SELECT * FROM tenant_health").empty());
  CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/5 * * * *"}})["ok"] == true);
  CHECK(l.db("SELECT * FROM tenant_health").size() == 1);
  json cursors = l.db("SELECT consumer FROM event_drain_state ORDER BY consumer");
  std::set<std::string> names;
  for (const json& c : cursors) names.insert(c["consumer"]);
  CHECK(names.count("reflexion_analyzer") == 1);
  CHECK(names.count("customer_health_watcher") == 1);
}

TEST_CASE(
    "/health/consumers is 503 with the reason while a consumer is stalled; a killed one is not") {
  Ledger l;
  l.emit("order.placed");
  l.mesh.now_ms += 59 * kMinute;
  CHECK(l.mesh.request("events", "GET", "/health/consumers").status == 200);
  l.mesh.now_ms += 2 * kMinute;
  auto stalled = l.mesh.request("events", "GET", "/health/consumers");
  CHECK(stalled.status == 503);
  // /health itself stays 200 ok:true with the contract's three keys; the operator's names the stall.
  auto plain = l.mesh.request("events", "GET", "/health");
  CHECK(plain.status == 200);
  CHECK(plain.body_json().size() == 3);
  CHECK(plain.body_json()["ok"] == true);
  json op = l.mesh.request("events", "GET", "/health", l.op(false)).body_json();
  CHECK(op["status"] == "stalled");
  CHECK(op["reason"] == stalled.body_json()["reason"]);
  CHECK(stalled.body_json()["status"] == "stalled");
  CHECK(stalled.body_json()["reason"].get<std::string>().find("workflow_runner") !=
        std::string::npos);
  // Every consumer drains: healthy again.
  for (const char* c : {"workflow_runner", "timeline_indexer", "anomaly_detector",
                        "reflexion_analyzer", "customer_health_watcher"}) {
    l.drain(c);
  }
  CHECK(l.mesh.request("events", "GET", "/health/consumers").status == 200);
  // A consumer stopped by its kill switch on purpose is reported, not a stall.
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", true}}).status == 200);
  l.emit("order.placed");
  for (const char* c :
       {"timeline_indexer", "anomaly_detector", "reflexion_analyzer", "customer_health_watcher"}) {
    l.drain(c);
  }
  l.mesh.now_ms += 2 * 60 * kMinute;
  for (const char* c :
       {"timeline_indexer", "anomaly_detector", "reflexion_analyzer", "customer_health_watcher"}) {
    l.drain(c);
  }
  CHECK(l.mesh.request("events", "GET", "/health/consumers").status == 200);
  auto killed = l.mesh.request("events", "GET", "/health", l.op(false));
  CHECK(killed.status == 200);
  CHECK(killed.body_json()["consumers"]["workflow_runner"]["killed"] == true);
  CHECK(killed.body_json()["consumers"]["workflow_runner"]["lagging"] == false);
}

TEST_CASE("alerts: a fan-out cap hit pages once per subscription and hour (PagerDuty v2 + Slack)") {
  Ledger l;
  configure_alerts(l);
  // Ten workflows on one glob (the cap counts workflows: ten subscriptions to one would start it once).
  for (int i = 0; i < 10; ++i) {
    l.workflow("notify" + std::to_string(i));
    l.subscribe("order.*", "notify" + std::to_string(i));
  }
  l.emit("order.placed");
  l.emit("order.placed");
  l.emit("order.placed");
  json report = l.drain();
  CHECK(report["capped"] == 3);
  auto delivered = l.admin("POST", "/admin/alerts/deliver");
  REQUIRE(delivered.status == 200);
  std::vector<json> pd = posts_to(l, "/v2/enqueue");
  std::vector<json> slack = posts_to(l, "/slack/");
  REQUIRE(pd.size() == 1);
  REQUIRE(slack.size() == 1);
  // PagerDuty Events API v2 trigger.
  CHECK(pd[0]["routing_key"] == "R0UT1NGKEY0000000000000000000000");
  CHECK(pd[0]["event_action"] == "trigger");
  CHECK(pd[0]["dedup_key"].get<std::string>().rfind("siteswarm-events:fanout_capped:", 0) == 0);
  CHECK(pd[0]["payload"]["source"] == "siteswarm-events-service");
  CHECK(pd[0]["payload"]["severity"] == "error");
  CHECK(pd[0]["payload"]["summary"].get<std::string>().find("matched 10") != std::string::npos);
  json details = pd[0]["payload"]["custom_details"];
  CHECK(details["event_type"] == "order.placed");
  CHECK(details["matched"] == 10);
  REQUIRE(details["dropped_patterns"].size() == 2);
  CHECK(details["dropped_patterns"][0]["event_type_glob"] == "order.*");
  CHECK(slack[0]["text"].get<std::string>().find("fanout_capped") != std::string::npos);
  // Delivered once: the next pass sends nothing.
  l.admin("POST", "/admin/alerts/deliver");
  CHECK(l.alert_posts.size() == 2);
  // In the next hour (15:05; no consumer lags an hour yet) the storm goes on: one more page.
  l.mesh.now_ms += 45 * kMinute;
  l.emit("order.placed");
  l.drain();
  l.admin("POST", "/admin/alerts/deliver");
  CHECK(posts_to(l, "/v2/enqueue").size() == 2);
  json listed = l.admin("GET", "/admin/alerts").body_json()["alerts"];
  CHECK(listed.size() == 2);
  // Times as the contract writes them: RFC 3339 UTC to the second (stored with milliseconds).
  for (const char* key : {"created_at", "pagerduty_sent_at", "slack_sent_at"}) {
    REQUIRE(listed[0][key].is_string());
    std::string at = listed[0][key];
    CHECK(at.size() == 20);
    CHECK(at.back() == 'Z');
    CHECK(ss::parse_rfc3339(at).has_value());
  }
}

TEST_CASE(
    "alerts: a failed delivery is retried on the next pass, then never again; no secret shows") {
  Ledger l;
  configure_alerts(l);
  l.workflow("notify");
  l.failing_events.insert(l.emit("order.placed"));
  l.subscribe("order.*", "notify");
  l.alert_status = 500;
  CHECK(l.drain()["quarantined"] == 1);
  l.admin("POST", "/admin/alerts/deliver");
  CHECK(l.alert_posts.size() == 2);  // both tried, both failed
  l.alert_status = 202;
  l.admin("POST", "/admin/alerts/deliver");
  CHECK(posts_to(l, "/v2/enqueue").size() == 2);
  CHECK(posts_to(l, "/slack/").size() == 2);
  l.admin("POST", "/admin/alerts/deliver");
  CHECK(l.alert_posts.size() == 4);
  json listed = l.admin("GET", "/admin/alerts").body_json();
  CHECK(listed["alerts"][0]["kind"] == "quarantine_growing");
  std::string text = listed.dump();
  CHECK(text.find("R0UT1NGKEY") == std::string::npos);
  CHECK(text.find("/slack/T000") == std::string::npos);
}

// Alerts configured, one event that every consumer but workflow_runner has drained: the runner is
// the one that will stall.
static void only_the_runner_behind(Ledger& l) {
  configure_alerts(l);
  l.emit("order.placed");
  for (const char* c :
       {"timeline_indexer", "anomaly_detector", "reflexion_analyzer", "customer_health_watcher"}) {
    l.drain(c);
  }
}

// `runs` alert passes (the */5 cron), five minutes apart.
static void alert_passes(Ledger& l, int runs) {
  for (int run = 0; run < runs; ++run) {
    CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/5 * * * *"}})["ok"] == true);
    l.mesh.now_ms += 5 * kMinute;
  }
}

TEST_CASE("alerts: a stalled consumer pages once per stall, not once per cron run") {
  Ledger l;
  only_the_runner_behind(l);
  l.mesh.now_ms += 2 * 60 * kMinute;
  alert_passes(l, 3);
  std::vector<json> pd = posts_to(l, "/v2/enqueue");
  REQUIRE(pd.size() == 1);
  CHECK(pd[0]["payload"]["custom_details"]["consumer"] == "workflow_runner");
  CHECK(pd[0]["payload"]["severity"] == "critical");
  CHECK(pd[0]["event_action"] == "trigger");
  // The stall ends: PagerDuty gets one resolve with the trigger's dedup_key (the incident closes by
  // itself), Slack one message; further runs send nothing more.
  l.drain("workflow_runner");
  for (int run = 0; run < 2; ++run) {
    CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/5 * * * *"}})["ok"] == true);
    l.mesh.now_ms += 5 * kMinute;
  }
  pd = posts_to(l, "/v2/enqueue");
  REQUIRE(pd.size() == 2);
  CHECK(pd[1]["event_action"] == "resolve");
  CHECK(pd[1]["dedup_key"] == pd[0]["dedup_key"]);
  CHECK(pd[1]["routing_key"] == pd[0]["routing_key"]);
  std::vector<json> slack = posts_to(l, "/slack/");
  REQUIRE(slack.size() == 2);
  CHECK(slack[1]["text"].get<std::string>().find("resolved") != std::string::npos);
  // Without channels nothing is sent, and the alert is still listed.
  Ledger quiet;
  quiet.emit("order.placed");
  quiet.mesh.now_ms += 2 * 60 * kMinute;
  quiet.admin("POST", "/admin/alerts/deliver");
  CHECK(quiet.alert_posts.empty());
  CHECK(quiet.admin("GET", "/admin/alerts").body_json()["alerts"].size() == 5);
}

TEST_CASE("alerts: a new stall at the cursor of a resolved one pages again, once") {
  Ledger l;
  only_the_runner_behind(l);
  l.mesh.now_ms += 2 * 60 * kMinute;
  alert_passes(l, 2);
  REQUIRE(posts_to(l, "/v2/enqueue").size() == 1);
  // Stopped on purpose: the stall is resolved (the consumer has not moved).
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", true}}).status == 200);
  alert_passes(l, 2);
  std::vector<json> pd = posts_to(l, "/v2/enqueue");
  REQUIRE(pd.size() == 2);
  if (pd.size() != 2) return;  // REQUIRE does not stop a test built without exceptions
  CHECK(pd[1]["event_action"] == "resolve");
  // Switched back on and still not draining: a new stall at the same cursor, paged once however
  // many runs see it.
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", false}}).status == 200);
  alert_passes(l, 3);
  pd = posts_to(l, "/v2/enqueue");
  REQUIRE(pd.size() == 3);
  if (pd.size() != 3) return;  // REQUIRE does not stop a test built without exceptions
  CHECK(pd[2]["event_action"] == "trigger");
  CHECK(pd[2]["payload"]["custom_details"]["consumer"] == "workflow_runner");
  CHECK(pd[2]["dedup_key"] != pd[0]["dedup_key"]);  // a new incident, not the resolved one
  // It ends: its own resolve, and nothing more.
  l.drain("workflow_runner");
  alert_passes(l, 2);
  pd = posts_to(l, "/v2/enqueue");
  REQUIRE(pd.size() == 4);
  if (pd.size() != 4) return;  // REQUIRE does not stop a test built without exceptions
  CHECK(pd[3]["event_action"] == "resolve");
  CHECK(pd[3]["dedup_key"] == pd[2]["dedup_key"]);
  // A third stall at that cursor is impossible now (the cursor moved on); the first stall's
  // resolution is not sent twice.
  alert_passes(l, 2);
  CHECK(posts_to(l, "/v2/enqueue").size() == 4);
}

TEST_CASE("error_class_of buckets failures an operator can group by") {
  using ss::events::error_class_of;
  CHECK(error_class_of("workflow.run_failed", {{"error", "target answered 404"}}) == "http_4xx");
  CHECK(error_class_of("workflow.run_failed", {{"error", "fetch: timeout after 10000 ms"}}) ==
        "timeout");
  CHECK(error_class_of("workflow.run_failed", {{"error", "no workflow definition for x"}}) ==
        "no_workflow_definition");
  CHECK(error_class_of("workflow.run_failed", {{"error_class", "custom"}}) == "custom");
  CHECK(error_class_of("lead.delivery_failed", {{"channel", "sms"}, {"error", "12345 boom"}}) ==
        "sms:other");
  CHECK(error_class_of("monitor.probe_failed",
                       {{"probe", {{"reason", "selector_missing:form#contact"}}}}) ==
        "selector_missing");
  CHECK(error_class_of("lead.spam_absorbed", json::object()) == "unknown");
}

TEST_CASE("PATCH a subscription narrows it in place: validated, 404 for unknown ids") {
  Ledger l;
  l.workflow("notify");
  l.subscribe("price.*", "notify");
  std::string id = l.admin("GET", "/admin/subscriptions").body_json()["subscriptions"][0]["id"];
  auto expect = [&](const json& body, const std::string& field) {
    auto r = l.admin("PATCH", "/admin/subscriptions/" + id, body);
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["field"] == field);
    CHECK(r.body_json()["error"]["fields"][field].is_string());  // the contract's shape
  };
  expect({{"event_type_glob", "Price.*"}}, "event_type_glob");
  expect({{"workflow_type", "X Y"}}, "workflow_type");
  expect({{"filter_expr", "payload.amount >"}}, "filter_expr");
  expect({{"input_mapper", {{"a", "entity_id"}}}}, "input_mapper");
  expect({{"enabled", "no"}}, "enabled");
  expect({{"subscription_id", "x"}}, "subscription_id");
  expect(json::object(), "body");
  // A view's own fields pass as they are (the view read back, with a change), never changed.
  json view = l.admin("GET", "/admin/subscriptions/" + id).body_json();
  expect({{"id", "01HZZZZZZZZZZZZZZZZZZZZZZZ"}, {"enabled", false}}, "id");
  expect({{"created_at", "2020-01-01T00:00:00Z"}, {"enabled", false}}, "created_at");
  expect({{"id", id}, {"created_at", view["created_at"]}}, "body");  // nothing to change named
  json sent_back = view;
  sent_back["enabled"] = false;
  sent_back["id"] = ss::ascii_lower(id);  // a ULID reads in either case, as in the path
  auto from_view = l.admin("PATCH", "/admin/subscriptions/" + id, sent_back);
  REQUIRE(from_view.status == 200);
  CHECK(from_view.body_json()["enabled"] == false);
  CHECK(from_view.body_json()["id"] == id);
  CHECK(from_view.body_json()["created_at"] == view["created_at"]);
  REQUIRE(l.admin("PATCH", "/admin/subscriptions/" + id, {{"enabled", true}}).status == 200);
  CHECK(l.admin("PATCH", "/admin/subscriptions/01HZZZZZZZZZZZZZZZZZZZZZZZ", {{"enabled", false}})
            .status == 404);
  // An unknown id is 404 whatever the body: the path's record is looked at first.
  auto unknown_bad_body =
      l.mesh.request("events", "PATCH", "/admin/subscriptions/01HZZZZZZZZZZZZZZZZZZZZZZZ",
                     l.op(true), "{not json");
  CHECK(unknown_bad_body.status == 404);
  CHECK(unknown_bad_body.body_json()["error"]["code"] == "not_found");
  CHECK(l.mesh
            .request("events", "PATCH", "/admin/subscriptions/" + id,
                     {{"Content-Type", "application/json"}}, R"({"enabled":false})")
            .status == 401);
  // Still the broad one.
  CHECK(l.admin("GET", "/admin/subscriptions/" + id).body_json()["event_type_glob"] == "price.*");

  auto narrowed = l.admin("PATCH", "/admin/subscriptions/" + id,
                          {{"event_type_glob", "price.changed"},
                           {"filter_expr", "payload.amount > 100"},
                           {"input_mapper", {{"sku", "$.entity_id"}}}});
  REQUIRE(narrowed.status == 200);
  CHECK(narrowed.body_json()["event_type_glob"] == "price.changed");
  CHECK(narrowed.body_json()["input_mapper"] == json{{"sku", "$.entity_id"}});
  l.emit("price.changed", {{"amount", 5}});
  l.emit("price.bid_line_changed", {{"amount", 500}});
  l.emit("price.changed", {{"amount", 500}}, "item:42");
  l.drain();
  REQUIRE(l.calls.size() == 1);
  CHECK(l.calls[0]["body"]["input"] == json{{"sku", "42"}});
  // enabled=false stops it; null clears a filter.
  REQUIRE(l.admin("PATCH", "/admin/subscriptions/" + id, {{"enabled", false}}).status == 200);
  l.emit("price.changed", {{"amount", 500}});
  l.drain();
  CHECK(l.calls.size() == 1);
  auto cleared =
      l.admin("PATCH", "/admin/subscriptions/" + id, {{"filter_expr", nullptr}, {"enabled", true}});
  CHECK(cleared.body_json()["filter_expr"].is_null());
  CHECK(cleared.body_json()["enabled"] == true);
}

TEST_CASE(
    "the runner records workflow.run_started / run_completed / run_failed caused by the event") {
  Ledger l;
  l.mesh.set_env("events", "WORKFLOW_RUN_EVENTS", "1");  // the default in every deployment
  l.workflow("notify");
  l.workflow("audit");
  l.subscribe("order.*", "notify");
  l.subscribe("order.*", "audit");
  std::string ok = l.emit("order.placed");
  l.failing_events.insert(l.emit("order.cancelled"));
  l.mesh.now_ms += 250;  // mid-second: the runner's own stamps are still whole seconds
  l.drain();
  REQUIRE(l.calls.size() == 4);
  // The run's identity travels in headers too (what a platform target stamps on its events).
  std::string run_id = l.calls[0]["body"]["workflow_run_id"];
  CHECK(l.calls[0]["headers"]["x-siteswarm-workflow-run-id"] == run_id);
  CHECK(l.calls[0]["headers"]["x-siteswarm-workflow-type"] == l.calls[0]["body"]["workflow_type"]);

  json started = l.db(
      "SELECT * FROM events WHERE event_type = 'workflow.run_started' ORDER BY workflow_run_id");
  REQUIRE(started.size() == 2);
  for (const json& e : started) {
    CHECK(e["caused_by"] == "event:" + ok);
    CHECK(e["tenant_id"] == "bakery");
    CHECK(e["entity_type"] == "workflow_run");
    CHECK(e["entity_id"] == e["workflow_run_id"]);
    // Stored fixed width with zero milliseconds, like every stamp the ledger makes itself.
    CHECK(e["recorded_at"].get<std::string>().ends_with(".000Z"));
    CHECK(e["occurred_at"] == e["recorded_at"]);
  }
  // Read back through the API they show as the contract writes times: no fraction.
  json listed = l.admin("GET", "/api/events?type=workflow.run_started").body_json();
  REQUIRE(listed["events"].size() == 2);
  for (const json& e : listed["events"]) {
    for (const char* key : {"recorded_at", "occurred_at"}) {
      const std::string shown = e[key].get<std::string>();
      CHECK_MESSAGE((shown.ends_with("Z") && shown.find('.') == std::string::npos), shown);
    }
  }
  json failed = l.db("SELECT * FROM events WHERE event_type = 'workflow.run_failed'");
  REQUIRE(failed.size() == 2);
  json payload = json::parse(failed[0]["payload_json"].get<std::string>());
  CHECK(payload["error_class"] == "http_5xx");
  CHECK(payload["http_status"] == 500);
  CHECK(l.db("SELECT * FROM events WHERE event_type = 'workflow.run_completed'").empty());

  // A synchronous target says it completed; a run triggered by a workflow.run_* event records
  // nothing itself (no feedback loop through workflow.* subscriptions).
  l.start_reply_body = R"({"status":"completed"})";
  l.subscribe("workflow.run_failed", "audit");
  l.emit("order.shipped");
  l.drain();
  CHECK(l.db("SELECT * FROM events WHERE event_type = 'workflow.run_completed'").size() == 2);
  l.drain();
  l.drain();
  CHECK(l.db("SELECT * FROM events WHERE event_type LIKE 'workflow.run_%'").size() == 8);
  // reflexion_analyzer reads the failures.
  l.drain("reflexion_analyzer");
  json patterns = l.admin("GET", "/admin/reflexion").body_json()["patterns"];
  REQUIRE(patterns.size() == 2);
  CHECK(patterns[0]["error_class"] == "http_5xx");
}

TEST_CASE("kill:high_risk_ops holds risk_level >= 4 starts, others go; off releases each once") {
  Ledger l;
  REQUIRE(l.admin("PUT", "/admin/workflows/refund",
                  {{"target", {{"webhook", "http://127.0.0.1:9/hooks/refund"}}}, {"risk_level", 4}})
              .status == 201);
  l.workflow("notify");
  l.subscribe("order.*", "refund");
  l.subscribe("order.*", "notify");
  CHECK(l.admin("PUT", "/admin/workflows/x",
                {{"target", {{"webhook", "http://127.0.0.1:9/x"}}}, {"risk_level", 9}})
            .body_json()["error"]["field"] == "risk_level");

  auto on = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", true}});
  REQUIRE(on.status == 200);
  CHECK(on.body_json()["shared"] == true);
  std::string a = l.emit("order.placed");
  std::string b = l.emit("order.refunded");
  json report = l.drain();
  CHECK(report["read"] == 2);
  CHECK(report["started"] == 2);  // notify, twice
  CHECK(report["held"] == 2);
  CHECK(report["quarantined"] == 0);
  for (const json& c : l.calls) CHECK(c["body"]["workflow_type"] == "notify");
  json held = l.admin("GET", "/admin/quarantine?consumer=workflow_runner").body_json();
  REQUIRE(held["quarantined"].size() == 2);
  CHECK(held["quarantined"][0]["reason"] == "held: kill:high_risk_ops");
  // A held event raises no quarantine alert.
  CHECK(l.db("SELECT * FROM events_alerts WHERE kind = 'quarantine_growing'").empty());
  // A retry while the switch holds it says why it is not resolved.
  json retried = l.admin("POST", "/admin/quarantine/workflow_runner/" + a + "/retry").body_json();
  CHECK(retried["resolved"] == false);
  CHECK(retried["reason"] == "held: kill:high_risk_ops");
  CHECK(l.calls.size() == 2);
  // Still held on the next runs: nothing lost, nothing started.
  l.drain();
  CHECK(l.calls.size() == 2);

  auto off = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  REQUIRE(off.status == 200);
  CHECK(off.body_json()["released"]["released"] == 2);
  CHECK(l.calls.size() == 4);
  std::multiset<std::string> keys = l.keys();
  CHECK(keys.count("workflow_runner:" + a + ":refund") == 1);
  CHECK(keys.count("workflow_runner:" + b + ":refund") == 1);
  CHECK(keys.count("workflow_runner:" + a + ":notify") == 1);
  // Flipping again releases nothing twice; the cron finds nothing held.
  l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", true}});
  l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}})["ok"] == true);
  CHECK(l.calls.size() == 4);
  CHECK(l.admin("GET", "/admin/quarantine?consumer=workflow_runner")
            .body_json()["quarantined"]
            .empty());
}

TEST_CASE("kill switches: any kill:<name>; one nothing obeys is stored with a warning") {
  Ledger l;
  for (const char* name : {"kill:fanout", "kill:high_risk_ops", "kill:notifications",
                           "kill:workflow_runner", "kill:timeline_indexer", "kill:anomaly_detector",
                           "kill:reflexion_analyzer", "kill:customer_health_watcher"}) {
    CAPTURE(name);
    auto r = l.admin("PUT", std::string("/admin/kill-switches/") + name, {{"enabled", false}});
    CHECK(r.status == 200);
    CHECK(r.body_json()["known"] == true);
    CHECK_FALSE(r.body_json().contains("warning"));
  }
  // Not a switch's name at all: 400 naming it, nothing stored.
  for (const char* name : {"fanout", "kill:", "Kill:fanout", "kill:Fanout", "kill:a b"}) {
    CAPTURE(name);
    auto r = l.admin("PUT", std::string("/admin/kill-switches/") + name, {{"enabled", true}});
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["field"] == "name");
    CHECK(r.body_json()["error"]["message"].get<std::string>().find("kill:fanout") !=
          std::string::npos);
  }
  // A well-formed name nothing obeys (a typo, or the seed guide's kill:ns_writes): stored and
  // listed, and the answer says nothing obeys it, naming the switches that something does.
  for (const char* name : {"kill:fan_out", "kill:ns_writes"}) {
    CAPTURE(name);
    auto r = l.admin("PUT", std::string("/admin/kill-switches/") + name, {{"enabled", true}});
    CHECK(r.status == 200);
    CHECK(r.body_json()["name"] == name);
    CHECK(r.body_json()["enabled"] == true);
    CHECK(r.body_json()["known"] == false);
    CHECK(r.body_json()["warning"].get<std::string>().find("kill:fanout") != std::string::npos);
  }
  json listed = l.admin("GET", "/admin/kill-switches").body_json()["kill_switches"];
  CHECK(listed.size() == 10);
  int unknown_on = 0;
  for (const json& s : listed) {
    CHECK(s["name"].get<std::string>().rfind("kill:", 0) == 0);
    if (s["known"] == false) unknown_on += s["enabled"] == true;
  }
  CHECK(unknown_on == 2);
  // A misspelt key is refused by name, nothing written; a listed switch sent back is taken.
  auto typo = l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enable", true}});
  CHECK(typo.status == 400);
  CHECK(typo.body_json()["error"]["field"] == "enable");
  auto extra =
      l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", true}, {"extra", 1}});
  CHECK(extra.status == 400);
  CHECK(extra.body_json()["error"]["field"] == "extra");
  json after_typos = l.admin("GET", "/admin/kill-switches").body_json()["kill_switches"];
  for (const json& s : after_typos) {
    if (s["name"] == "kill:fanout") CHECK(s["enabled"] == false);
  }
  // The PUT's own answer (with "shared", and "known") sent back is taken as well.
  auto answered = l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", false}});
  REQUIRE(answered.status == 200);
  CHECK(answered.body_json().contains("shared"));
  CHECK(l.admin("PUT", "/admin/kill-switches/kill:fanout", answered.body_json()).status == 200);
  json sent_back = listed[0];
  CHECK(l.admin("PUT", "/admin/kill-switches/" + sent_back["name"].get<std::string>(), sent_back)
            .status == 200);
  // One nothing obeys is deleted whole (row and FLAGS key); one something obeys is turned off with
  // PUT instead; a name never stored is 404.
  CHECK(l.mesh.kv_value("FLAGS", "kill:fan_out").has_value());
  auto gone = l.admin("DELETE", "/admin/kill-switches/kill:fan_out");
  CHECK(gone.status == 204);
  CHECK_FALSE(l.mesh.kv_value("FLAGS", "kill:fan_out").has_value());
  CHECK(l.admin("DELETE", "/admin/kill-switches/kill:fan_out").status == 404);
  auto kept = l.admin("DELETE", "/admin/kill-switches/kill:fanout");
  CHECK(kept.status == 400);
  CHECK(kept.body_json()["error"]["field"] == "name");
  CHECK(l.admin("DELETE", "/admin/kill-switches/fanout").status == 400);
  CHECK(l.admin("GET", "/admin/kill-switches").body_json()["kill_switches"].size() == 9);
  // A switch nothing obeys stops nothing: the drain still starts the subscribed workflow.
  l.workflow("wf");
  l.subscribe("order.*", "wf");
  l.emit("order.placed", {{"n", 1}});
  CHECK(l.drain()["started"] == 1);
}

TEST_CASE("kill:high_risk_ops off releases held events behind 500 other quarantined ones") {
  Ledger l;
  REQUIRE(l.admin("PUT", "/admin/workflows/refund",
                  {{"target", {{"webhook", "http://127.0.0.1:9/hooks/refund"}}}, {"risk_level", 4}})
              .status == 201);
  l.subscribe("order.*", "refund");
  l.subscribe("price.*", "missing");  // no workflow definition: each such event is quarantined
  for (int i = 0; i < 500; ++i) l.emit("price.changed", {{"n", i}});
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", true}}).status ==
          200);
  std::string held = l.emit("order.refunded");
  auto r = l.admin("POST", "/admin/events/drain?consumer=workflow_runner&batches=2");
  REQUIRE(r.status == 200);
  json report = r.body_json()["consumers"]["workflow_runner"];
  CHECK(report["read"] == 501);
  CHECK(report["quarantined"] == 500);
  CHECK(report["held"] == 1);
  CHECK(l.calls.empty());

  // Turning the switch off releases the held event, whatever else sits in the quarantine.
  auto off = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  REQUIRE(off.status == 200);
  CHECK(off.body_json()["released"]["released"] == 1);
  CHECK(l.keys() == std::multiset<std::string>{"workflow_runner:" + held + ":refund"});
  CHECK(l.db("SELECT * FROM events_quarantine WHERE resolved_at IS NULL AND reason LIKE 'held:%'")
            .empty());
}

// A high-risk workflow (refund, risk_level 4) subscribed to order.*, with kill:high_risk_ops on:
// every refund start is held.
static void hold_refunds(Ledger& l) {
  REQUIRE(l.admin("PUT", "/admin/workflows/refund",
                  {{"target", {{"webhook", "http://127.0.0.1:9/hooks/refund"}}}, {"risk_level", 4}})
              .status == 201);
  l.subscribe("order.*", "refund");
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", true}}).status ==
          200);
}

TEST_CASE(
    "a release pass reads the kill switches once; a stop turned on during it holds the next") {
  Ledger l;
  hold_refunds(l);
  for (int i = 0; i < 3; ++i) l.emit("order.refunded");
  CHECK(l.drain()["held"] == 3);
  REQUIRE(l.calls.empty());

  // The operator hits kill:fanout while the first held start goes out.
  auto stub = l.mesh.fetch_stub;
  bool stopped = false;
  l.mesh.fetch_stub = [&](const json& req) {
    if (!stopped) {
      stopped = true;
      CHECK(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", true}}).status == 200);
    }
    return stub(req);
  };
  int switch_reads = 0;
  l.mesh.fail_effect = [&](const json& e) {
    std::string sql = e.value("sql", "");
    if (sql.find("SELECT name FROM kill_switches") != std::string::npos) ++switch_reads;
    return false;
  };
  auto off = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  l.mesh.fetch_stub = stub;
  l.mesh.fail_effect = nullptr;
  REQUIRE(off.status == 200);
  // One read for the pass (kill:fanout, kill:workflow_runner, kill:high_risk_ops together). Before:
  // the stops again before each further event and kill:high_risk_ops once per event, 6 reads for
  // 3 events (up to 199 D1 queries a pass of 100, in the */2 cron's invocation with its drain).
  CHECK(switch_reads == 1);
  CHECK(off.body_json()["released"]["released"] == 3);
  CHECK(off.body_json()["released"]["still_held"] == 0);
  CHECK(l.calls.size() == 3);

  // The stop holds the next pass, as a drain's next batch: held events wait while it is on.
  l.emit("order.refunded");
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", false}}).status == 200);
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", true}}).status ==
          200);
  CHECK(l.drain()["held"] == 1);
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", true}}).status == 200);
  auto held = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  REQUIRE(held.status == 200);
  CHECK(held.body_json()["released"]["released"] == 0);
  CHECK(held.body_json()["released"]["still_held"] == 1);
  CHECK(l.calls.size() == 3);
  // Once the stop is off, the */2 cron releases it, once.
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:fanout", {{"enabled", false}}).status == 200);
  CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}})["ok"] == true);
  CHECK(l.calls.size() == 4);
  CHECK(l.db("SELECT * FROM events_quarantine WHERE resolved_at IS NULL").empty());
}

TEST_CASE("held starts are not released while kill:fanout or kill:workflow_runner is on") {
  Ledger l;
  hold_refunds(l);
  std::string held = l.emit("order.refunded");
  CHECK(l.drain()["held"] == 1);
  CHECK(l.calls.empty());

  for (const std::string stop : {"kill:fanout", "kill:workflow_runner"}) {
    CAPTURE(stop);
    // The emergency stop is on: the high-risk switch going off must not start anything, neither at
    // once nor on the */2 cron.
    REQUIRE(l.admin("PUT", "/admin/kill-switches/" + stop, {{"enabled", true}}).status == 200);
    auto off = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
    REQUIRE(off.status == 200);
    CHECK(off.body_json()["released"]["released"] == 0);
    CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}})["ok"] == true);
    CHECK(l.calls.empty());
    CHECK(l.db("SELECT * FROM events_quarantine WHERE resolved_at IS NULL").size() == 1);
    REQUIRE(l.admin("PUT", "/admin/kill-switches/" + stop, {{"enabled", false}}).status == 200);
    REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", true}}).status ==
            200);
  }

  // Every stop off: the next */2 cron releases it, once.
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}}).status ==
          200);
  CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}})["ok"] == true);
  CHECK(l.keys() == std::multiset<std::string>{"workflow_runner:" + held + ":refund"});
  CHECK(l.db("SELECT * FROM events_quarantine WHERE resolved_at IS NULL").empty());
}

// Counts the D1 round trips (d1.all, d1.first, d1.run, d1.batch) and the statements they carry
// while it is installed (a d1.batch counts each of its statements).
struct D1Count {
  int round_trips = 0;
  int statements = 0;
  void install(Ledger& l) {
    l.mesh.fail_effect = [this](const json& e) {
      std::string kind = e.value("kind", "");
      if (kind.rfind("d1.", 0) == 0) {
        ++round_trips;
        statements += kind == "d1.batch" ? static_cast<int>(e["statements"].size()) : 1;
      }
      return false;
    };
  }
};

TEST_CASE("a release pass of 100 held events reads its fan-out context once: a few D1 queries") {
  Ledger l;
  hold_refunds(l);
  l.workflow("notify");
  l.subscribe("order.*", "notify");
  for (int i = 0; i < 100; ++i) l.emit("order.refunded", {{"n", i}});
  json report = l.drain();
  CHECK(report["held"] == 100);
  CHECK(report["started"] == 100);  // notify goes; refund is held
  REQUIRE(l.calls.size() == 100);

  D1Count count;
  count.install(l);
  auto off = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  l.mesh.fail_effect = nullptr;
  REQUIRE(off.status == 200);
  CHECK(off.body_json()["released"]["released"] == 100);
  CHECK(off.body_json()["released"]["still_held"] == 0);
  // The switch's own write, then the pass: the held rows with the switches, the subscriptions,
  // the workflows, the events and their started keys, one claims batch and one commit. Before:
  // about 7 per held event (the row, the event, the subscriptions, the workflows, the started keys,
  // the claims, the commit), 700 for this pass: the */2 cron's drain then had 300 of D1's 1,000 left.
  CAPTURE(count.round_trips);
  CAPTURE(count.statements);
  CHECK(count.round_trips <= 12);
  CHECK(count.statements <= 24);
  // Every held start went out once; the notify starts were not sent again.
  REQUIRE(l.calls.size() == 200);
  std::multiset<std::string> keys = l.keys();
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == 200);
  CHECK(l.db("SELECT * FROM events_quarantine WHERE resolved_at IS NULL").empty());

  // A second pass (the */2 cron) sends nothing new, with the same few queries.
  count = D1Count{};
  count.install(l);
  REQUIRE(l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}}).status ==
          200);
  l.mesh.fail_effect = nullptr;
  CHECK(count.round_trips <= 4);
  CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}})["ok"] == true);
  CHECK(l.calls.size() == 200);
}

TEST_CASE("a held event that is gone or unreadable does not stop the release of the others") {
  Ledger l;
  hold_refunds(l);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(l.emit("order.refunded", {{"n", i}}));
  CHECK(l.drain()["held"] == 4);
  REQUIRE(l.calls.empty());
  // The second event's row is gone; the third's payload is no longer a JSON object.
  l.db("DELETE FROM events WHERE event_id = '" + ids[1] + "'");
  l.db("UPDATE events SET payload_json = 'not json' WHERE event_id = '" + ids[2] + "'");

  auto off = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  // The switch was written: the answer says so, and what the release did.
  REQUIRE(off.status == 200);
  CHECK(off.body_json()["enabled"] == false);
  json released = off.body_json()["released"];
  CHECK(released["released"] == 2);
  CHECK(released["still_held"] == 0);
  // Both quarantined with their reason (no longer held: they cannot stall the passes to come).
  CHECK(released["quarantined"] == 2);
  CHECK(l.keys() == std::multiset<std::string>{"workflow_runner:" + ids[0] + ":refund",
                                               "workflow_runner:" + ids[3] + ":refund"});
  json open =
      l.db("SELECT event_id, reason FROM events_quarantine WHERE resolved_at IS NULL ORDER BY seq");
  REQUIRE(open.size() == 2);
  CHECK(open[0]["event_id"] == ids[1]);
  CHECK(open[0]["reason"].get<std::string>().find("gone from the ledger") != std::string::npos);
  CHECK(open[1]["event_id"] == ids[2]);
  CHECK(open[1]["reason"] == "payload is not a JSON object");
  off = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  REQUIRE(off.status == 200);
  CHECK(off.body_json()["released"]["released"] == 0);
  CHECK(l.calls.size() == 2);
}

TEST_CASE("a release pass that fails still answers the kill-switch PUT: the switch was written") {
  Ledger l;
  hold_refunds(l);
  l.emit("order.refunded");
  CHECK(l.drain()["held"] == 1);
  // The held rows cannot be read: the pass fails, the switch is off all the same.
  l.mesh.fail_effect = [](const json& e) {
    return e.value("sql", "").find("FROM events_quarantine") != std::string::npos;
  };
  auto off = l.admin("PUT", "/admin/kill-switches/kill:high_risk_ops", {{"enabled", false}});
  l.mesh.fail_effect = nullptr;
  REQUIRE(off.status == 200);
  CHECK(off.body_json()["enabled"] == false);
  CHECK(off.body_json()["released"]["released"] == 0);
  CHECK(off.body_json()["released"]["error"].is_string());
  CHECK(l.calls.empty());
  // The */2 cron releases it.
  CHECK(l.mesh.message("events", {{"op", "scheduled"}, {"cron", "*/2 * * * *"}})["ok"] == true);
  CHECK(l.calls.size() == 1);
}

TEST_CASE("a created subscription and a saved workflow answer the times they were stored with") {
  // Time moves while D1 answers (each effect's result carries the host's clock): the answer must
  // show the stored created_at / updated_at, not a second reading of the clock after the write.
  Ledger l;
  l.mesh.observe_effects = [&](const json&) { l.mesh.now_ms += 1500; };
  auto wf = l.admin("PUT", "/admin/workflows/notify",
                    {{"target", {{"webhook", "http://127.0.0.1:9/hooks/notify"}}}});
  REQUIRE(wf.status == 201);
  auto sub = l.admin("POST", "/admin/subscriptions",
                     {{"event_type_glob", "order.*"}, {"workflow_type", "notify"}});
  REQUIRE(sub.status == 201);
  l.mesh.observe_effects = nullptr;
  json stored_wf = l.admin("GET", "/admin/workflows/notify").body_json();
  CHECK(wf.body_json()["updated_at"] == stored_wf["updated_at"]);
  std::string id = sub.body_json()["id"];
  json stored_sub = l.admin("GET", "/admin/subscriptions/" + id).body_json();
  CHECK(sub.body_json()["created_at"] == stored_sub["created_at"]);
}

TEST_CASE(
    "operator alerts to Slack escape what a tenant sent (an entity id cannot mention @channel)") {
  ss::events::AlertRow alert;
  alert.kind = "monitor_flapping";
  alert.alert_key = "anomaly:monitor_flapping:bakery:monitor:<!channel>:2026-12-06T12";
  alert.summary = "monitor:<!channel> opened 3 incidents in an hour (a&b)";
  std::string text = ss::events::slack_body(alert)["text"];
  CHECK(text.find('<') == std::string::npos);
  CHECK(text.find("monitor:&lt;!channel&gt; opened 3 incidents in an hour (a&amp;b)") !=
        std::string::npos);
  alert.alert_key = "resolved:" + alert.alert_key;
  std::string resolved = ss::events::slack_body(alert)["text"];
  CHECK(resolved.find('<') == std::string::npos);
}
