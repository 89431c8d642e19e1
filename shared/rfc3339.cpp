#include "shared/rfc3339.h"

#include <algorithm>

namespace ss {

namespace {

constexpr std::size_t kMaxRfc3339Length = 64;  // generous: the longest sane input is ~35 chars
constexpr std::size_t kDateLength = 10;        // YYYY-MM-DD

bool is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned days_in_month(int y, unsigned m) {
  constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

// Floor division, so instants before 1970 land on the correct earlier day / second.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// Reads exactly `count` ASCII digits at `pos`; nullopt if any is not a digit or input is short.
std::optional<int> read_digits(std::string_view s, std::size_t pos, std::size_t count) {
  if (pos + count > s.size()) return std::nullopt;
  int value = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    value = value * 10 + (s[i] - '0');
  }
  return value;
}

void append_padded(std::string& out, std::int64_t value, std::size_t width) {
  const std::string digits = std::to_string(value);
  if (digits.size() < width) out.append(width - digits.size(), '0');
  out += digits;
}

std::string format(std::int64_t unix_ms, bool with_ms) {
  unix_ms = std::clamp(unix_ms, kMinRfc3339Ms, kMaxRfc3339Ms);
  const std::int64_t days = floor_div(unix_ms, kMsPerDay);
  const std::int64_t ms_of_day = unix_ms - days * kMsPerDay;
  const CivilDate date = civil_from_days(days);
  std::string out;
  out.reserve(24);
  append_padded(out, date.year, 4);
  out += '-';
  append_padded(out, date.month, 2);
  out += '-';
  append_padded(out, date.day, 2);
  out += 'T';
  append_padded(out, ms_of_day / 3'600'000, 2);
  out += ':';
  append_padded(out, ms_of_day / 60'000 % 60, 2);
  out += ':';
  append_padded(out, ms_of_day / 1000 % 60, 2);
  if (with_ms) {
    out += '.';
    append_padded(out, ms_of_day % 1000, 3);
  }
  out += 'Z';
  return out;
}

// Parses "YYYY-MM-DD" at the start of s into days since the epoch.
std::optional<std::int64_t> parse_date_days(std::string_view s) {
  const auto year = read_digits(s, 0, 4);
  const auto month = read_digits(s, 5, 2);
  const auto day = read_digits(s, 8, 2);
  if (!year || !month || !day || s[4] != '-' || s[7] != '-') return std::nullopt;
  if (*month < 1 || *month > 12) return std::nullopt;
  const auto m = static_cast<unsigned>(*month);
  if (*day < 1 || static_cast<unsigned>(*day) > days_in_month(*year, m)) return std::nullopt;
  return days_from_civil(*year, m, static_cast<unsigned>(*day));
}

}  // namespace

std::string format_rfc3339(std::int64_t unix_ms) { return format(unix_ms, false); }

std::string format_rfc3339_ms(std::int64_t unix_ms) { return format(unix_ms, true); }

std::string format_rfc3339_stamp(std::int64_t unix_ms) {
  // Within what RFC 3339 can write first (as format() clamps), so rounding down cannot overflow.
  std::int64_t ms = std::clamp(unix_ms, kMinRfc3339Ms, kMaxRfc3339Ms);
  std::int64_t within = ms % 1000;
  return format(ms - (within < 0 ? within + 1000 : within), true);
}

std::optional<std::string_view> rfc3339_whole_seconds(std::string_view stored) {
  constexpr std::string_view kZeroMs = ".000Z";
  if (stored.size() == 24 && stored.substr(19) == kZeroMs) return stored.substr(0, 19);
  return std::nullopt;
}

std::string shown_rfc3339(std::string_view stored) {
  auto seconds = rfc3339_whole_seconds(stored);
  return seconds ? std::string(*seconds) + "Z" : std::string(stored);
}

std::string shown_rfc3339_second(std::string_view stored) {
  std::optional<std::int64_t> ms = parse_rfc3339(stored);
  return ms ? format_rfc3339(*ms) : std::string(stored);
}

std::optional<std::int64_t> parse_date(std::string_view s) {
  if (s.size() != kDateLength) return std::nullopt;
  const auto days = parse_date_days(s);
  if (!days) return std::nullopt;
  return *days * kMsPerDay;
}

std::optional<std::int64_t> parse_rfc3339(std::string_view s) {
  if (s.size() > kMaxRfc3339Length || s.size() < kDateLength) return std::nullopt;
  const auto days = parse_date_days(s);
  if (!days) return std::nullopt;

  // "THH:MM:SS" after the date.
  std::size_t pos = kDateLength;
  if (pos >= s.size() || (s[pos] != 'T' && s[pos] != 't')) return std::nullopt;
  const auto hour = read_digits(s, pos + 1, 2);
  const auto minute = read_digits(s, pos + 4, 2);
  const auto second = read_digits(s, pos + 7, 2);
  if (!hour || !minute || !second || s[pos + 3] != ':' || s[pos + 6] != ':') return std::nullopt;
  if (*hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
  pos += 9;

  // Optional fraction, truncated to milliseconds.
  std::int64_t fraction_ms = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    const std::size_t start = pos;
    std::int64_t scale = 100;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      fraction_ms += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }

  // Mandatory offset.
  std::int64_t offset_minutes = 0;
  if (pos >= s.size()) return std::nullopt;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    const auto off_hour = read_digits(s, pos + 1, 2);
    const auto off_minute = read_digits(s, pos + 4, 2);
    if (!off_hour || !off_minute || s[pos + 3] != ':') return std::nullopt;
    if (*off_hour > 23 || *off_minute > 59) return std::nullopt;
    offset_minutes = (*off_hour * 60 + *off_minute) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;

  const std::int64_t local_seconds = *days * 86'400 + *hour * 3'600 + *minute * 60 + *second;
  const std::int64_t ms = (local_seconds - offset_minutes * 60) * 1000 + fraction_ms;
  // An offset can move a 0000-01-01 or 9999-12-31 local time outside what RFC 3339 can write
  // back; such an instant is refused rather than silently clamped on the way out.
  if (ms < kMinRfc3339Ms || ms > kMaxRfc3339Ms) return std::nullopt;
  return ms;
}

}  // namespace ss
