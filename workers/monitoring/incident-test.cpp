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
  auto open = alerts_for(Transition::open, spec, c, "https://events.pd.test/v2/enqueue");
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
  CHECK(open[1].channel == "slack");
  CHECK(open[1].url == "https://hooks.slack.test/services/T/B/x");
  CHECK(open[1].body["text"].get<std::string>().find("home") != std::string::npos);

  auto resolved = alerts_for(Transition::resolve, spec, c, "https://events.pd.test/v2/enqueue");
  REQUIRE(resolved.size() == 2);
  CHECK(resolved[0].body["event_action"] == "resolve");
  CHECK(resolved[0].body["dedup_key"] == open[0].body["dedup_key"]);
  CHECK_FALSE(resolved[0].body.contains("payload"));
  CHECK(alerts_for(Transition::none, spec, c, "x").empty());

  MonitorSpec silent;
  CHECK(alerts_for(Transition::open, silent, c, "x").empty());
}
