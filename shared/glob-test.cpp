#include "shared/glob.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

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
  // An empty segment no event type has: refused, naming why.
  for (const char* never : {"probe..x", ".price.*", "price.", "*..*", "?.", "."}) {
    CAPTURE(never);
    CHECK_FALSE(is_valid_glob(never, &why));
    CHECK(why.find("never match") != std::string::npos);
  }
  CHECK(is_valid_glob("*.*"));
  CHECK(is_valid_glob("a.?.b"));
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

// Issue 14 item 7: a '*' in the subject was consumed as a literal by the pattern's '*' before the
// wildcard test, so glob_match("*", "*a") was false.
TEST_CASE("glob: wildcard characters in the subject are plain characters") {
  CHECK(glob_match("*", "*a"));
  CHECK(glob_match("*", "**"));
  CHECK(glob_match("*a", "*a"));
  CHECK(glob_match("a*", "a*b"));
  CHECK(glob_match("?", "*"));
  CHECK(glob_match("*.failed", "*.failed"));
  CHECK_FALSE(glob_match("a", "*"));
}

// Reference: the textbook recursive definition, exponential but fine on tiny inputs.
bool reference_match(std::string_view p, std::string_view t) {
  if (p.empty()) return t.empty();
  if (p[0] == '*')
    return reference_match(p.substr(1), t) || (!t.empty() && reference_match(p, t.substr(1)));
  return !t.empty() && (p[0] == '?' || p[0] == t[0]) && reference_match(p.substr(1), t.substr(1));
}

void all_strings(const std::string& alphabet, std::size_t max_len, std::vector<std::string>& out) {
  out = {""};
  for (std::size_t begin = 0, len = 1; len <= max_len; ++len) {
    std::size_t end = out.size();
    for (std::size_t i = begin; i < end; ++i)
      for (char c : alphabet) out.push_back(out[i] + c);
    begin = end;
  }
}

TEST_CASE("glob: agrees with the reference matcher on every short pattern and subject") {
  std::vector<std::string> patterns;
  std::vector<std::string> subjects;
  all_strings("a*?", 4, patterns);
  all_strings("ab*?", 4, subjects);
  for (const std::string& p : patterns) {
    for (const std::string& t : subjects) {
      if (glob_match(p, t) != reference_match(p, t)) {
        FAIL_CHECK("pattern '" << p << "' subject '" << t << "'");
      }
    }
  }
}

}  // namespace
}  // namespace ss
