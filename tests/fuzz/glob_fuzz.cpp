// Event-type globs (shared/glob.h) against a reference matcher: pattern NUL subject. Whenever the
// pattern is valid, glob_match must agree with a dynamic-programming matcher of the same language.
#include "shared/glob.h"
#include "tests/fuzz/fuzz_util.h"

#include <string>
#include <vector>

namespace {

// Reference: dynamic programming over (pattern prefix, subject prefix); '*' matches any run,
// '?' exactly one character, everything else itself.
bool reference(std::string_view p, std::string_view s) {
  std::vector<std::vector<char>> m(p.size() + 1, std::vector<char>(s.size() + 1, 0));
  m[0][0] = 1;
  for (std::size_t i = 1; i <= p.size(); ++i) {
    for (std::size_t j = 0; j <= s.size(); ++j) {
      if (p[i - 1] == '*') {
        m[i][j] = m[i - 1][j] || (j > 0 && m[i][j - 1]);
      } else if (j > 0 && (p[i - 1] == '?' || p[i - 1] == s[j - 1])) {
        m[i][j] = m[i - 1][j - 1];
      }
    }
  }
  return m[p.size()][s.size()] != 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto [pattern, subject] = ss::fuzz::split2(ss::fuzz::as_text(data, size));
  bool got = ss::glob_match(pattern, subject);
  if (ss::is_valid_glob(pattern) && pattern.size() <= 64 && subject.size() <= 128) {
    ss::fuzz::require(got == reference(pattern, subject));
  }
  return 0;
}
