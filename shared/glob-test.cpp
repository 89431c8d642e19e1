#include "shared/glob.h"

#include <doctest/doctest.h>

#include <string>

namespace ss {
namespace {

TEST_CASE("glob: validation") {
  std::string why;
  CHECK(is_valid_glob("price.*"));
  CHECK(is_valid_glob("*"));
  CHECK(is_valid_glob("lead.?eceived"));
  CHECK(is_valid_glob("*.failed"));
  CHECK(is_valid_glob("monitor_check-v2.0"));
  CHECK(is_valid_glob(std::string(kMaxGlobLength, 'a')));
  CHECK_FALSE(is_valid_glob("", &why));
  CHECK(why == "glob is empty");
  CHECK_FALSE(is_valid_glob(std::string(kMaxGlobLength + 1, 'a'), &why));
  CHECK(why.find("longer") != std::string::npos);
  CHECK_FALSE(is_valid_glob("Price.*", &why));
  CHECK(why.find("only contain") != std::string::npos);
  CHECK_FALSE(is_valid_glob("price.[ab]"));
  CHECK_FALSE(is_valid_glob("price *"));
  CHECK_FALSE(is_valid_glob("price/*"));
  CHECK_FALSE(is_valid_glob(std::string_view("a\0b", 3)));
}

TEST_CASE("glob: exact and single-char matches") {
  CHECK(glob_match("lead.received", "lead.received"));
  CHECK_FALSE(glob_match("lead.received", "lead.receivedx"));
  CHECK_FALSE(glob_match("lead.received", "lead.receive"));
  CHECK(glob_match("lead.?eceived", "lead.received"));
  CHECK(glob_match("lead.?eceived", "lead.deceived"));
  CHECK_FALSE(glob_match("lead.?eceived", "lead.eceived"));
  CHECK(glob_match("???", "abc"));
  CHECK_FALSE(glob_match("???", "ab"));
}

TEST_CASE("glob: stars") {
  CHECK(glob_match("*", "anything.at.all"));
  CHECK(glob_match("*", ""));
  CHECK(glob_match("price.*", "price.changed"));
  CHECK(glob_match("price.*", "price.changed.twice"));  // dots included
  CHECK(glob_match("price.*", "price."));
  CHECK_FALSE(glob_match("price.*", "price"));
  CHECK_FALSE(glob_match("price.*", "prices.changed"));
  CHECK(glob_match("*.failed", "monitor.check.failed"));
  CHECK_FALSE(glob_match("*.failed", "monitor.check.failedx"));
  CHECK(glob_match("*a", "banana"));
  CHECK(glob_match("b*", "banana"));
  CHECK(glob_match("*nan*", "banana"));
  CHECK(glob_match("a**b", "ab"));
  CHECK(glob_match("a***b", "axxxb"));
  CHECK(glob_match("**", ""));
  CHECK(glob_match("*?*", "x"));
  CHECK_FALSE(glob_match("*?*", ""));
  CHECK(glob_match("*ab*ab", "abxabab"));
  CHECK_FALSE(glob_match("*ab*abc", "abxabab"));
}

TEST_CASE("glob: empty text and empty pattern") {
  CHECK(glob_match("", ""));
  CHECK_FALSE(glob_match("", "a"));
  CHECK_FALSE(glob_match("a", ""));
  CHECK_FALSE(glob_match("?", ""));
}

TEST_CASE("glob: backtracking killers finish") {
  const std::string many_a(5000, 'a');
  CHECK_FALSE(glob_match("a*a*a*a*a*a*a*a*a*a*a*a*b", many_a));
  CHECK(glob_match("a*a*a*a*a*a*a*a*a*a*a*a*a", many_a));
  CHECK_FALSE(glob_match("*a*a*a*a*a*a*a*a*a*a*a*a*a*b*", many_a));
  std::string star_pattern;
  for (int i = 0; i < 60; ++i) star_pattern += "*a";
  star_pattern += "b";
  CHECK_FALSE(glob_match(star_pattern, many_a));
  CHECK(glob_match(star_pattern, many_a + "b"));
}

}  // namespace
}  // namespace ss
