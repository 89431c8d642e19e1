#include "shared/glob.h"

#include <utility>

namespace ss {

namespace {

bool is_glob_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '*' ||
         c == '?' || c == '-';
}

bool fail(std::string* why, std::string message) {
  if (why != nullptr) *why = std::move(message);
  return false;
}

}  // namespace

bool is_valid_glob(std::string_view pattern, std::string* why) {
  if (pattern.empty()) return fail(why, "glob is empty");
  if (pattern.size() > kMaxGlobLength) {
    return fail(why, "glob is longer than " + std::to_string(kMaxGlobLength) + " characters");
  }
  for (char c : pattern) {
    if (!is_glob_char(c))
      return fail(why, "glob may only contain a-z, 0-9, '.', '_', '-', '*', '?'");
  }
  // An event type has no empty segment: a glob with one could never match, and is refused rather
  // than kept as a subscription that never fires.
  if (pattern.front() == '.' || pattern.back() == '.' ||
      pattern.find("..") != std::string_view::npos) {
    return fail(why, "glob can never match: an event type has no leading, trailing or doubled '.'");
  }
  return true;
}

// Classic two-pointer matcher: on a mismatch, resume just after the most recent '*' with that star
// swallowing one more character. Only the latest star matters, since any earlier star can absorb
// whatever a later one would have needed, so no deeper backtracking is ever required.
bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star = std::string_view::npos;  // position of the last '*' seen in pattern
  std::size_t star_text = 0;                  // text position that star currently extends to
  while (t < text.size()) {
    // The wildcard test comes first: a '*' in the subject must not be consumed as a literal by a
    // '*' in the pattern (that made glob_match("*", "*a") false).
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace ss
