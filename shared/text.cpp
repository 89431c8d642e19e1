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

bool has_control_chars(std::string_view text, bool allow_newlines) {
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u == 0x7F || (u < 0x20 && !(allow_newlines && (c == '\n' || c == '\r' || c == '\t')))) {
      return true;
    }
  }
  return false;
}

namespace {

constexpr CharClass kSemverIdentifier = CharClass(kAlnum).chars("-");

// A numeric identifier: "0" or digits without a leading zero, of any length (semver sets none).
bool semver_number(std::string_view part) {
  if (part.empty() || !kDigits.all_of(part)) return false;
  return part.size() == 1 || part[0] != '0';
}

// Dot-separated non-empty identifiers of [0-9A-Za-z-]; numeric ones (pre-release only) without
// a leading zero.
bool semver_identifiers(std::string_view list, bool numeric_rule) {
  for (;;) {
    std::size_t dot = list.find('.');
    std::string_view part = list.substr(0, dot);
    if (part.empty() || !kSemverIdentifier.all_of(part)) return false;
    if (numeric_rule && kDigits.all_of(part) && !semver_number(part)) return false;
    if (dot == std::string_view::npos) return true;
    list.remove_prefix(dot + 1);
  }
}

}  // namespace

std::optional<std::int64_t> semver_major(std::string_view text) {
  std::string_view core = text.substr(0, text.find_first_of("-+"));
  std::string_view rest = text.substr(core.size());
  const std::size_t dot1 = core.find('.');
  const std::size_t dot2 = dot1 == std::string_view::npos ? dot1 : core.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || core.find('.', dot2 + 1) != std::string_view::npos) {
    return std::nullopt;  // not exactly three numbers
  }
  std::string_view major = core.substr(0, dot1);
  if (!semver_number(major) || !semver_number(core.substr(dot1 + 1, dot2 - dot1 - 1)) ||
      !semver_number(core.substr(dot2 + 1))) {
    return std::nullopt;
  }
  if (!rest.empty() && rest[0] == '-') {
    std::size_t plus = rest.find('+');
    if (!semver_identifiers(rest.substr(1, plus == std::string_view::npos ? plus : plus - 1),
                            true)) {
      return std::nullopt;
    }
    rest.remove_prefix(plus == std::string_view::npos ? rest.size() : plus);
  }
  if (!rest.empty() && (rest[0] != '+' || !semver_identifiers(rest.substr(1), false))) {
    return std::nullopt;
  }
  // A major too large for an int64 is still a version, one nobody speaks.
  return parse_decimal(major, 0, INT64_MAX).value_or(INT64_MAX);
}

}  // namespace ss
