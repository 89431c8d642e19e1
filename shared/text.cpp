#include "shared/text.h"

#include <charconv>
#include <cstdint>

namespace ss {

std::optional<std::int64_t> parse_decimal(std::string_view text, std::int64_t min,
                                          std::int64_t max) {
  if (text.empty() || !kDigits.all_of(text)) return std::nullopt;
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;  // overflow
  if (value < min || value > max) return std::nullopt;
  return value;
}

std::size_t code_points(std::string_view text) {
  std::size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

Utf8Lead utf8_lead(unsigned char c) {
  if (c >= 0xC2 && c <= 0xDF) return {1, 0x80, 0xBF};
  if (c == 0xE0) return {2, 0xA0, 0xBF};
  if (c == 0xED) return {2, 0x80, 0x9F};
  if (c >= 0xE1 && c <= 0xEF) return {2, 0x80, 0xBF};
  if (c == 0xF0) return {3, 0x90, 0xBF};
  if (c >= 0xF1 && c <= 0xF3) return {3, 0x80, 0xBF};
  if (c == 0xF4) return {3, 0x80, 0x8F};
  return {};
}

bool is_utf8(std::string_view text) {
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    const Utf8Lead lead = utf8_lead(c);
    const auto need = static_cast<std::size_t>(lead.continuations);
    if (need == 0 || n - i <= need) return false;
    for (std::size_t k = 1; k <= need; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if (next < (k == 1 ? lead.low : 0x80) || next > (k == 1 ? lead.high : 0xBF)) return false;
    }
    i += need + 1;
  }
  return true;
}

std::string utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  while (max_bytes > 0 && (static_cast<unsigned char>(text[max_bytes]) & 0xC0) == 0x80) --max_bytes;
  return std::string(text.substr(0, max_bytes));
}

std::string slack_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '&') {
      out += "&amp;";
    } else if (ch == '<') {
      out += "&lt;";
    } else if (ch == '>') {
      out += "&gt;";
    } else {
      out += ch;
    }
  }
  return out;
}

bool has_control_chars(std::string_view text, bool allow_newlines) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    if (u == 0x7F || (u < 0x20 && !(allow_newlines && (c == '\n' || c == '\r' || c == '\t')))) {
      return true;
    }
    // C1 (U+0080..U+009F) is UTF-8 C2 80..C2 9F.
    if (u == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      return true;
    }
  }
  return false;
}

namespace {
constexpr bool is_ascii_alnum(char c) {
  return is_ascii_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
// A numeric identifier at `i`: "0" or digits without a leading zero, of any length.
bool semver_number(std::string_view t, std::size_t& i) {
  const std::size_t start = i;
  while (i < t.size() && is_ascii_digit(t[i])) ++i;
  return i > start && (i - start == 1 || t[start] != '0');
}
}  // namespace

std::optional<std::int64_t> semver_major(std::string_view t) {
  std::size_t i = 0;
  if (!semver_number(t, i)) return std::nullopt;
  // The major's value, clamped: one too large for an int64 is still a version, one nobody speaks.
  std::int64_t major = i > 18 ? INT64_MAX : 0;  // 18 digits always fit
  for (std::size_t d = 0; d < i && i <= 18; ++d) major = major * 10 + (t[d] - '0');
  for (int part = 0; part < 2; ++part) {
    if (i >= t.size() || t[i] != '.') return std::nullopt;
    ++i;
    if (!semver_number(t, i)) return std::nullopt;
  }
  // "-pre.release" then "+build": dot-separated non-empty [0-9A-Za-z-] identifiers; a numeric
  // pre-release identifier has no leading zero.
  for (char sign : {'-', '+'}) {
    if (i >= t.size() || t[i] != sign) continue;
    do {
      const std::size_t start = ++i;
      bool digits = true;
      while (i < t.size() && (is_ascii_alnum(t[i]) || t[i] == '-'))
        digits &= is_ascii_digit(t[i++]);
      if (i == start) return std::nullopt;
      if (sign == '-' && digits && i - start > 1 && t[start] == '0') return std::nullopt;
    } while (i < t.size() && t[i] == '.');
  }
  if (i != t.size()) return std::nullopt;
  return major;
}

}  // namespace ss
