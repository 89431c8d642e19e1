#pragma once
// Small text helpers every parser of the platform shares: decimal integers through std::from_chars
// (no locale, no exceptions, no overflow) and character classes built once, checked in O(n).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ss {

// A plain decimal integer (ASCII digits only: no sign, space or "+") within [min, max].
std::optional<std::int64_t> parse_decimal(std::string_view text, std::int64_t min,
                                          std::int64_t max);

// The major version of a Semantic Versioning 2.0.0 string (MAJOR.MINOR.PATCH, then optional
// "-pre.release" and "+build" identifiers; numbers without leading zeros, of any length), nullopt
// for anything else; a major past the int64 range is INT64_MAX.
std::optional<std::int64_t> semver_major(std::string_view text);

// Characters of valid UTF-8 text (its bytes that do not continue a sequence).
std::size_t code_points(std::string_view text);
// A UTF-8 lead byte: how many continuation bytes it needs (0: it cannot start a sequence) and the
// range the first of them must be in (Unicode's table 3-7: no overlong forms, no surrogates, nothing
// past U+10FFFF).
struct Utf8Lead {
  int continuations = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
};
Utf8Lead utf8_lead(unsigned char c);
// Well-formed UTF-8, by that table (text decoded from a form or a URL is raw bytes until checked).
bool is_utf8(std::string_view text);
// At most `max_bytes` bytes of UTF-8 text, cut before a character rather than through it.
std::string utf8_prefix(std::string_view text, std::size_t max_bytes);
// A control character of UTF-8 text: C0, DEL or C1 (U+0080..U+009F, bytes C2 80..C2 9F); with
// allow_newlines, \n, \r and \t are text (a message, an announcement), without, they are controls
// too (a name, a single-line field).
bool has_control_chars(std::string_view text, bool allow_newlines);
// Text someone else wrote (a URL, a selector, an entity id) inside a Slack message: Slack reads
// `<…>` as a link or a mention (`<!channel>`), so its three control characters are escaped as Slack
// asks (&amp; &lt; &gt;).
std::string slack_escaped(std::string_view text);

// A set of bytes, built from ranges and lists: CharClass().range('a', 'z').chars("-_").
class CharClass {
 public:
  constexpr CharClass() = default;
  constexpr CharClass& range(char first, char last) {
    for (int c = static_cast<unsigned char>(first); c <= static_cast<unsigned char>(last); ++c) {
      bits_[static_cast<std::size_t>(c)] = true;
    }
    return *this;
  }
  constexpr CharClass& chars(std::string_view list) {
    for (char c : list) bits_[static_cast<unsigned char>(c)] = true;
    return *this;
  }
  constexpr bool contains(char c) const { return bits_[static_cast<unsigned char>(c)]; }
  constexpr bool all_of(std::string_view s) const {
    for (char c : s) {
      if (!contains(c)) return false;
    }
    return true;
  }

 private:
  std::array<bool, 256> bits_{};
};

// ASCII only (never the C locale's tolower): header names, schemes, media types, hosts.
constexpr char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}
constexpr bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
// The value of one hexadecimal digit (either case), -1 for any other byte.
constexpr int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

inline constexpr CharClass kDigits = CharClass().range('0', '9');
inline constexpr CharClass kLowerAlnum = CharClass().range('a', 'z').range('0', '9');
inline constexpr CharClass kAlnum = CharClass().range('a', 'z').range('A', 'Z').range('0', '9');

}  // namespace ss
