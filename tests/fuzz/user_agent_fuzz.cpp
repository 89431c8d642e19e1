// The analytics bot filter (workers/analytics/user_agent.h, rule_matcher.h) against a naive
// reference: every rule checked part by part with plain substring tests.
// - First byte even: the rest is a User-Agent. classify_user_agent's bot verdict equals the naive
//   verdict over the same lists (empty, the project's own rules, the compiled crawler list), and a
//   crawler rule it reports matches naively; labels come from the documented sets.
// - First byte odd: "rule\nrule\n… NUL text" — any rules (parts joined by \x1f, each an anchor and a
//   literal), so the Aho-Corasick automaton is built from hostile literals too: it finds a match
//   exactly when the naive reference does, and the rule it names matches.
#include "tests/fuzz/fuzz_util.h"
#include "workers/analytics/crawlers.h"
#include "workers/analytics/rule_matcher.h"
#include "workers/analytics/user_agent.h"

#include <string>
#include <vector>

namespace {

using ss::fuzz::require;

// Keeps the naive pass over ~1,500 crawler rules cheap enough for many executions per second.
constexpr std::size_t kMaxNaiveText = 1024;
constexpr std::size_t kMaxRules = 64;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// A rule matches when it has at least one part (an anchor and one or more characters) and every
// part occurs: '^' at the start, '$' at the end, anything else anywhere. Case-insensitive (ASCII).
bool naive_rule(std::string_view rule, const std::string& text) {
  bool any = false;
  std::size_t start = 0;
  while (start <= rule.size()) {
    std::size_t end = rule.find('\x1f', start);
    if (end == std::string_view::npos) end = rule.size();
    std::string_view part = rule.substr(start, end - start);
    start = end + 1;
    if (part.size() < 2) continue;
    std::string literal = lower(part.substr(1));
    bool found = part[0] == '^' ? text.compare(0, literal.size(), literal) == 0
                 : part[0] == '$'
                     ? text.size() >= literal.size() &&
                           text.compare(text.size() - literal.size(), literal.size(), literal) == 0
                     : text.find(literal) != std::string::npos;
    if (!found) return false;
    any = true;
  }
  return any;
}

int naive_first(const std::vector<std::string_view>& rules, const std::string& text) {
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (naive_rule(rules[i], text)) return static_cast<int>(i);
  }
  return -1;
}

bool one_of(std::string_view v, std::initializer_list<std::string_view> set) {
  for (std::string_view s : set) {
    if (v == s) return true;
  }
  return false;
}

void check_user_agent(std::string_view ua) {
  ss::analytics::UserAgentClass got = ss::analytics::classify_user_agent(ua);
  require(one_of(got.device, {"mobile", "tablet", "desktop"}));
  require(one_of(got.browser, {"Edge", "Opera", "Samsung Internet", "Yandex", "Vivaldi", "Silk",
                               "Firefox", "Internet Explorer", "Chrome", "Safari", "Other"}));
  int crawler = ss::analytics::crawler_rule_matching(ua);
  const auto& rules = ss::analytics::crawler_rules();
  std::string text = lower(ua);
  if (crawler >= 0) require(naive_rule(rules[static_cast<std::size_t>(crawler)], text));
  if (ua.size() > kMaxNaiveText) return;
  require((crawler >= 0) == (naive_first(rules, text) >= 0));

  std::string_view want;
  static const std::vector<std::string_view> extra = {"*headlesschrome", "*phantomjs", "*curl/",
                                                      "*siteswarm-monitor"};
  if (text.find_first_not_of(" \t") == std::string::npos) {
    want = "empty_ua";
  } else if (int e = naive_first(extra, text); e >= 0) {
    want = e <= 1 ? "headless" : e == 2 ? "tool" : "probe";
  } else if (crawler >= 0) {
    want = "crawler";
  }
  // The project's rules are disjoint literals, so which one reports is not ambiguous unless two
  // occur; then only "a bot" is promised.
  require(got.bot() == !want.empty());
  if (got.bot_reason == "empty_ua" || want == "empty_ua" || want == "crawler") {
    require(got.bot_reason == want);
  }
}

void check_rules(std::string_view input) {
  auto [rule_text, subject] = ss::fuzz::split2(input);
  std::vector<std::string> owned;
  while (!rule_text.empty() && owned.size() < kMaxRules) {
    std::size_t nl = rule_text.find('\n');
    owned.emplace_back(rule_text.substr(0, nl));
    rule_text = nl == std::string_view::npos ? std::string_view() : rule_text.substr(nl + 1);
  }
  std::vector<std::string_view> rules(owned.begin(), owned.end());
  ss::analytics::RuleMatcher matcher(rules);
  require(matcher.rule_count() == rules.size());
  int got = matcher.match(subject);
  std::string text = lower(subject);
  if (got >= 0) {
    require(static_cast<std::size_t>(got) < rules.size());
    require(naive_rule(rules[static_cast<std::size_t>(got)], text));
  } else {
    require(naive_first(rules, text) < 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view rest = ss::fuzz::as_text(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    check_user_agent(rest);
  } else {
    check_rules(rest);
  }
  return 0;
}
