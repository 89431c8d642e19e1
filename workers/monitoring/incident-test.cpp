#include "workers/monitoring/incident.h"

#include <doctest/doctest.h>

using namespace ss::monitoring;

namespace {
MonitorState run(const std::vector<bool>& probes, std::vector<Transition>& seen,
                 bool maintenance = false) {
  MonitorState s;
  for (bool ok : probes) {
    Step st = step(s, ok, maintenance);
    if (st.transition != Transition::none) seen.push_back(st.transition);
    s = st.next;
  }
  return s;
}
}  // namespace

TEST_CASE("monitoring incident: 2 failures then a success open nothing") {
  std::vector<Transition> seen;
  MonitorState s = run({false, false, true}, seen);
  CHECK(seen.empty());
  CHECK(s.consecutive_failures == 0);
  CHECK_FALSE(s.incident_open);
}

TEST_CASE(
    "monitoring incident: the 3rd consecutive failure opens once, the first success resolves") {
  std::vector<Transition> seen;
  MonitorState s = run({false, false, false, false, false, true, true}, seen);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == Transition::open);
  CHECK(seen[1] == Transition::resolve);
  CHECK_FALSE(s.incident_open);
}

TEST_CASE("monitoring incident: failures separated by a success do not add up") {
  std::vector<Transition> seen;
  run({false, false, true, false, false, true}, seen);
  CHECK(seen.empty());
}

TEST_CASE("monitoring incident: a maintenance window opens nothing; an outage outlasting it does") {
  std::vector<Transition> seen;
  MonitorState s = run({false, false, false, false}, seen, /*maintenance=*/true);
  CHECK(seen.empty());
  CHECK(s.consecutive_failures == 4);
  Step after = step(s, false, false);
  CHECK(after.transition == Transition::open);
}

TEST_CASE(
    "monitoring incident: a recovery inside a window resolves at the first success after it") {
  MonitorState open{3, true};
  Step inside = step(open, true, /*in_maintenance=*/true);
  CHECK(inside.transition == Transition::none);
  CHECK(inside.next.incident_open);
  CHECK(inside.next.consecutive_failures == 0);
  // Another success in the window: still nothing; the first one after it resolves.
  Step again = step(inside.next, true, true);
  CHECK(again.transition == Transition::none);
  Step after = step(again.next, true, false);
  CHECK(after.transition == Transition::resolve);
  CHECK_FALSE(after.next.incident_open);
  // A failure in the window after the recovery changes nothing either.
  Step relapse = step(inside.next, false, true);
  CHECK(relapse.transition == Transition::none);
  CHECK(relapse.next.incident_open);
}

TEST_CASE("monitoring incident: PagerDuty and Slack messages in their real formats") {
  MonitorSpec spec;
  spec.pagerduty_routing_key = "R0UT1NGKEY";
  spec.slack_webhook_url = "https://hooks.slack.test/services/T/B/x";
  AlertContext c{"bakery",
                 "home",
                 "https://bakery.example/",
                 "01INCIDENT",
                 "status_mismatch",
                 "2026-05-25T14:23:11Z",
                 "siteswarm-synthetic-monitoring"};
  auto open = triggers_for(spec, c, "https://events.pd.test/v2/enqueue");
  REQUIRE(open.size() == 2);
  CHECK(open[0].channel == "pagerduty");
  CHECK(open[0].url == "https://events.pd.test/v2/enqueue");
  CHECK(open[0].body["routing_key"] == "R0UT1NGKEY");
  CHECK(open[0].body["event_action"] == "trigger");
  CHECK(open[0].body["dedup_key"] == "siteswarm/bakery/home/01INCIDENT");
  CHECK(open[0].body["payload"]["severity"] == "critical");
  CHECK(open[0].body["payload"]["source"] == "siteswarm-synthetic-monitoring");
  CHECK(open[0].body["payload"]["summary"].get<std::string>().find("status_mismatch") !=
        std::string::npos);
  // A monitored URL may be 2,048 characters; PagerDuty takes a summary of at most 1,024.
  AlertContext long_url = c;
  long_url.url = "https://bakery.example/" + std::string(2000, 'a');
  std::string summary = triggers_for(spec, long_url, "https://events.pd.test/v2/enqueue")[0]
                            .body["payload"]["summary"];
  CHECK(summary.size() == 1024);
  CHECK(summary.rfind("[bakery] home is down (status_mismatch): https://bakery.example/", 0) == 0);
  CHECK(open[1].channel == "slack");
  CHECK(open[1].url == "https://hooks.slack.test/services/T/B/x");
  CHECK(open[1].body["text"].get<std::string>().find("home") != std::string::npos);

  // The resolves go where the triggers went, from the outbox's records of them.
  std::vector<SentTrigger> sent;
  for (const AlertRequest& a : open) {
    sent.push_back({a.channel, json{{"url", a.url}, {"body", a.body}}});
  }
  auto resolved = resolves_for(sent, c, Closure::recovered);
  REQUIRE(resolved.size() == 2);
  CHECK(resolved[0].channel == "pagerduty");
  CHECK(resolved[0].url == "https://events.pd.test/v2/enqueue");
  CHECK(resolved[0].body["routing_key"] == "R0UT1NGKEY");
  CHECK(resolved[0].body["event_action"] == "resolve");
  CHECK(resolved[0].body["dedup_key"] == open[0].body["dedup_key"]);
  CHECK_FALSE(resolved[0].body.contains("payload"));
  CHECK(resolved[1].url == "https://hooks.slack.test/services/T/B/x");
  CHECK(resolved[1].body["text"].get<std::string>().find("back up") != std::string::npos);

  // What the tenant wrote (the URL, a selector in the reason) cannot make Slack links or mentions.
  AlertContext hostile = c;
  hostile.url = "https://bakery.example/?a=1&b=<x>";
  hostile.reason = "selector_missing:[data-x=\"<!channel>\"]";
  std::string down =
      triggers_for(spec, hostile, "https://events.pd.test/v2/enqueue")[1].body["text"];
  CHECK(down.find("https://bakery.example/?a=1&amp;b=&lt;x&gt;") != std::string::npos);
  CHECK(down.find("&lt;!channel&gt;") != std::string::npos);
  CHECK(down.find('<') == std::string::npos);
  std::string up = resolves_for(sent, hostile, Closure::recovered)[1].body["text"];
  CHECK(up.find("&amp;b=&lt;x&gt;") != std::string::npos);
  CHECK(up.find('<') == std::string::npos);

  MonitorSpec silent;
  CHECK(triggers_for(silent, c, "x").empty());
  CHECK(resolves_for({}, c, Closure::recovered).empty());
}

TEST_CASE(
    "monitoring incident: a monitor that stops being watched closes what its trigger opened") {
  AlertContext c;
  c.tenant_id = "bakery";
  c.monitor_id = "home";
  c.incident_id = "01INCIDENT";
  std::vector<SentTrigger> sent{
      {"pagerduty", json{{"url", "https://events.pd.test/v2/enqueue"},
                         {"body", {{"routing_key", "OLDKEY"}, {"event_action", "trigger"}}}}},
      {"slack", json{{"url", "https://hooks.slack.test/old"}, {"body", {{"text", "down"}}}}},
      // Records that cannot be answered are skipped, not sent somewhere else.
      {"pagerduty", json{{"url", "https://events.pd.test/v2/enqueue"}, {"body", json::object()}}},
      {"slack", json{{"body", {{"text", "down"}}}}},
      {"email", json{{"url", "https://mail.test/"}}}};
  for (Closure why : {Closure::monitor_deleted, Closure::monitor_disabled, Closure::tenant_disabled,
                      Closure::superseded}) {
    CAPTURE(closure_name(why));
    CHECK(closure_from(closure_name(why)) == why);
    auto out = resolves_for(sent, c, why);
    REQUIRE(out.size() == 2);
    CHECK(out[0].body == json{{"routing_key", "OLDKEY"},
                              {"event_action", "resolve"},
                              {"dedup_key", "siteswarm/bakery/home/01INCIDENT"}});
    CHECK(out[1].url == "https://hooks.slack.test/old");
    std::string text = out[1].body["text"];
    CHECK(text.find(why == Closure::superseded ? "made anew" : "no longer monitored") !=
          std::string::npos);
    CHECK(text.find("01INCIDENT closed") != std::string::npos);
  }
  CHECK(closure_from("anything else") == Closure::recovered);
}

TEST_CASE("monitoring incident: SLACK_API_URL stands in for hooks.slack.com, path and query kept") {
  const std::string hook = "https://hooks.slack.com/services/T000/B000/XXXX";
  const std::string stub = "http://127.0.0.1:8799/slack";
  // Unset (production): every webhook goes as given.
  CHECK(slack_webhook_target(hook, "") == hook);
  CHECK(slack_webhook_target(hook, stub) == stub + "/services/T000/B000/XXXX");
  CHECK(slack_webhook_target(hook, stub + "/") == stub + "/services/T000/B000/XXXX");
  CHECK(slack_webhook_target(hook + "?x=1&y=%20#frag", stub) ==
        stub + "/services/T000/B000/XXXX?x=1&y=%20");
  // The host as the URL parser sees it: any case, a trailing dot, the default port named.
  CHECK(slack_webhook_target("https://HOOKS.Slack.COM./services/T/B/X", stub) ==
        stub + "/services/T/B/X");
  CHECK(slack_webhook_target("https://hooks.slack.com:443/services/T/B/X", stub) ==
        stub + "/services/T/B/X");
  // The path as a client fetches it: dot segments, plain or encoded, cannot leave the base.
  CHECK(slack_webhook_target("https://hooks.slack.com/services/../../x", stub) == stub + "/x");
  CHECK(slack_webhook_target("https://hooks.slack.com/services/%2e%2e/%2E%2e/v2/enqueue", stub) ==
        stub + "/v2/enqueue");
  // Another host or port, http://, a user-info, or no URL at all: as given (the guard judges it).
  for (const std::string other :
       {"https://hooks.slack.test/services/T/B/X", "https://hooks.slack.com.evil.test/services/x",
        "https://evil.test/hooks.slack.com/services/x", "https://hooks.slack.com:8443/services/x",
        "http://hooks.slack.com/services/T/B/X", "https://user@evil.test@hooks.slack.com/x",
        "not a url"}) {
    CAPTURE(other);
    CHECK(slack_webhook_target(other, stub) == other);
  }
}
