// The user-agent classifier: every example of the crawler list is a bot, a hand-assembled corpus of
// real browsers is not (and gets the expected device class and browser family), and the matcher is
// linear on hostile input.
#include "workers/analytics/user_agent.h"

#include "workers/analytics/crawlers.h"
#include "workers/analytics/rule_matcher.h"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

using ss::analytics::classify_user_agent;

namespace {
std::string testdata(const std::string& name) {
  return std::string(SS_SOURCE_DIR) + "/workers/analytics/testdata/" + name;
}
}  // namespace

TEST_CASE("analytics ua: every example user agent of the crawler list is filtered") {
  std::ifstream in(testdata("crawler-instances.txt"));
  REQUIRE(in.good());
  std::string line;
  int total = 0;
  int missed = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ++total;
    if (!classify_user_agent(line).bot()) {
      ++missed;
      MESSAGE("not filtered: " << line);
    }
  }
  CHECK(total > 1000);
  CHECK(missed == 0);
}

TEST_CASE("analytics ua: real browsers are people, with device class and browser family") {
  std::ifstream in(testdata("browsers.tsv"));
  REQUIRE(in.good());
  std::string line;
  int total = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto tab1 = line.find('\t');
    auto tab2 = line.find('\t', tab1 + 1);
    REQUIRE(tab2 != std::string::npos);
    std::string device = line.substr(0, tab1);
    std::string browser = line.substr(tab1 + 1, tab2 - tab1 - 1);
    std::string ua = line.substr(tab2 + 1);
    auto c = classify_user_agent(ua);
    INFO(ua);
    CHECK(c.bot_reason == "");
    CHECK(c.device == device);
    CHECK(c.browser == browser);
    ++total;
  }
  CHECK(total >= 40);
}

TEST_CASE("analytics ua: headless browsers, curl, the monitoring probe and empty agents are bots") {
  CHECK(classify_user_agent("").bot_reason == "empty_ua");
  CHECK(classify_user_agent("   ").bot_reason == "empty_ua");
  CHECK(
      classify_user_agent("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                          "HeadlessChrome/131.0.0.0 Safari/537.36")
          .bot_reason == "headless");
  CHECK(classify_user_agent("curl/8.5.0").bot());
  CHECK(classify_user_agent("SiteSwarm-Monitor/0.1 (+https://siteswarm.example/monitoring)")
            .bot_reason == "probe");
  CHECK(classify_user_agent(
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
            .bot_reason == "crawler");
  CHECK(classify_user_agent("Wget/1.21.4").bot_reason == "crawler");
}

TEST_CASE("analytics ua: anchored patterns only match where the regex would") {
  // ^Silk\/ is a crawler; Amazon's Silk browser says "Silk/" in the middle and is a person.
  CHECK(classify_user_agent("Silk/1.0").bot());
  CHECK_FALSE(
      classify_user_agent("Mozilla/5.0 (Linux; Android 11; KFTRWI) AppleWebKit/537.36 "
                          "(KHTML, like Gecko) Silk/130.4.1 like Chrome/130.0 Safari/537.36")
          .bot());
  // "SSL Labs$": only at the end.
  CHECK(classify_user_agent("Mozilla/5.0 SSL Labs").bot());
}

TEST_CASE("analytics ua: rule matcher semantics") {
  std::vector<std::string_view> rules = {"*abc", "^start", "$end", "*foo\x1f*bar"};
  ss::analytics::RuleMatcher m(rules);
  CHECK(m.match("xxABCxx") == 0);
  CHECK(m.match("starting") == 1);
  CHECK(m.match("a start") == -1);
  CHECK(m.match("the end") == 2);
  CHECK(m.match("endless") == -1);
  CHECK(m.match("bar then foo") == 3);
  CHECK(m.match("foo alone") == -1);
  CHECK(m.match("") == -1);
}

TEST_CASE("analytics ua: hostile user agents take linear time (no backtracking engine)") {
  // 64 KiB of near-misses for many patterns at once: finishes promptly and matches nothing.
  std::string hostile;
  while (hostile.size() < 65536) hostile += "googlebo bingbo spide crawle ";
  auto c = classify_user_agent(hostile);
  CHECK(c.bot_reason == "");
}
