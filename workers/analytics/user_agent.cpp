#include "workers/analytics/user_agent.h"

#include "workers/analytics/crawlers.h"
#include "workers/analytics/rule_matcher.h"

#include <string>

namespace ss::analytics {

namespace {

// Built once per instance (about 1,500 rules; a few milliseconds), then shared by every request.
const RuleMatcher& crawler_matcher() {
  static const RuleMatcher matcher(crawler_rules());
  return matcher;
}

// The project's own bot rules, beside the list: what the list does not name (or names only at the
// start of the string) but must never count as a person.
const RuleMatcher& extra_bot_matcher() {
  static const std::vector<std::string_view> rules = {"*headlesschrome", "*phantomjs", "*curl/",
                                                      std::string_view("*siteswarm-monitor")};
  static const RuleMatcher matcher(rules);
  return matcher;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string_view device_of(std::string_view ua) {
  if (contains(ua, "ipad") || contains(ua, "tablet") || contains(ua, "kindle") ||
      contains(ua, "silk/") || contains(ua, "; kf")) {
    return "tablet";
  }
  if (contains(ua, "windows phone") || contains(ua, "iphone") || contains(ua, "ipod"))
    return "mobile";
  if (contains(ua, "android")) return contains(ua, "mobi") ? "mobile" : "tablet";
  if (contains(ua, "mobi")) return "mobile";
  return "desktop";
}

std::string_view browser_of(std::string_view ua) {
  if (contains(ua, "edg/") || contains(ua, "edga/") || contains(ua, "edgios/") ||
      contains(ua, "edge/")) {
    return "Edge";
  }
  if (contains(ua, "opr/") || contains(ua, "opera")) return "Opera";
  if (contains(ua, "samsungbrowser/")) return "Samsung Internet";
  if (contains(ua, "yabrowser/")) return "Yandex";
  if (contains(ua, "vivaldi/")) return "Vivaldi";
  if (contains(ua, "silk/")) return "Silk";
  if (contains(ua, "firefox/") || contains(ua, "fxios/")) return "Firefox";
  if (contains(ua, "msie ") || contains(ua, "trident/")) return "Internet Explorer";
  if (contains(ua, "crios/") || contains(ua, "chrome/") || contains(ua, "chromium/"))
    return "Chrome";
  if (contains(ua, "safari/") && contains(ua, "version/")) return "Safari";
  return "Other";
}

}  // namespace

int crawler_rule_matching(std::string_view user_agent) {
  return crawler_matcher().match(user_agent);
}

UserAgentClass classify_user_agent(std::string_view user_agent) {
  // Only the labels leave this function; the lower-cased copy dies with it.
  std::string ua(user_agent);
  for (char& c : ua) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  UserAgentClass out;
  out.device = device_of(ua);
  out.browser = browser_of(ua);
  std::size_t first = ua.find_first_not_of(" \t");
  if (first == std::string::npos) {
    out.bot_reason = "empty_ua";
  } else if (int extra = extra_bot_matcher().match(ua); extra >= 0) {
    out.bot_reason = extra <= 1 ? "headless" : extra == 2 ? "tool" : "probe";
  } else if (crawler_matcher().match(ua) >= 0) {
    out.bot_reason = "crawler";
  }
  return out;
}

}  // namespace ss::analytics
