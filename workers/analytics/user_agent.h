#pragma once
// What a user agent says about a pageview: whether it is a bot (and why), the device class and the
// browser family. The user agent itself is never stored; only these labels are.
//
// Bots: an empty or missing user agent, headless browsers (HeadlessChrome, PhantomJS), command-line
// clients (curl), the platform's own monitoring probe (kMonitorProbeToken) and every pattern of the
// crawler-user-agents list compiled into the core (crawlers.gen.cpp).
//
// Device class, first match wins: "ipad", "tablet", Kindle ("kindle", "silk/", "kf…" builds) and
// Android without "mobile" → tablet; "mobi", "iphone", "ipod", "windows phone", "android" → mobile;
// anything else → desktop. iPadOS 13+ in desktop mode says "Macintosh" and counts as desktop.
//
// Browser family, first match wins (order matters: every Chromium fork also says "Chrome", and
// Chrome also says "Safari"): Edge (edg/, edga/, edgios/, edge/), Opera (opr/, opera), Samsung
// Internet, Yandex, Vivaldi, Silk, Firefox (firefox/, fxios/), Internet Explorer (msie, trident/),
// Chrome (crios/, chrome/, chromium/), Safari (safari/ with version/), else Other.

#include <string_view>

namespace ss::analytics {

// A substring of the User-Agent of the platform's synthetic-monitoring probes.
inline constexpr std::string_view kMonitorProbeToken = "siteswarm-monitor";

struct UserAgentClass {
  std::string_view bot_reason;  // "" for a person; else empty_ua, headless, tool, probe, crawler
  std::string_view device;      // mobile, tablet, desktop
  std::string_view browser;     // Chrome, Safari, Firefox, Edge, …, Other

  bool bot() const { return !bot_reason.empty(); }
};

UserAgentClass classify_user_agent(std::string_view user_agent);

// The crawler rule matching this user agent (for tests and diagnostics), or -1.
int crawler_rule_matching(std::string_view user_agent);

}  // namespace ss::analytics
