#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ss {

// Calendar arithmetic on the proleptic Gregorian calendar, Howard Hinnant's algorithms
// (howardhinnant.github.io/date_algorithms.html). Day 0 is 1970-01-01; days before it are negative.
// constexpr so the range limits below are computed, not hand-copied.
struct CivilDate {
  int year;
  unsigned month;  // 1..12
  unsigned day;    // 1..31
};

constexpr std::int64_t days_from_civil(int y, unsigned m, unsigned d) {
  const std::int64_t year = static_cast<std::int64_t>(y) - (m <= 2 ? 1 : 0);
  const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
  const std::int64_t yoe = year - era * 400;                                       // [0, 399]
  const std::int64_t mp = m > 2 ? m - 3 : m + 9;                                   // March = 0
  const std::int64_t doy = (153 * mp + 2) / 5 + static_cast<std::int64_t>(d) - 1;  // [0, 365]
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;                  // [0, 146096]
  return era * 146097 + doe - 719468;
}

constexpr CivilDate civil_from_days(std::int64_t days) {
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;                                       // [0, 146096]
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                // [0, 365]
  const std::int64_t mp = (5 * doy + 2) / 153;                                     // [0, 11]
  const auto day = static_cast<unsigned>(doy - (153 * mp + 2) / 5 + 1);
  const auto month = static_cast<unsigned>(mp < 10 ? mp + 3 : mp - 9);
  const auto year = static_cast<int>(yoe + era * 400 + (month <= 2 ? 1 : 0));
  return CivilDate{year, month, day};
}

// 0 = Sunday .. 6 = Saturday (1970-01-01 was a Thursday).
constexpr int weekday_from_days(std::int64_t days) {
  return static_cast<int>(days >= -4 ? (days + 4) % 7 : (days + 5) % 7 + 6);
}

// RFC 3339 can only write four-digit years, so formatting clamps to [0000-01-01, 9999-12-31] and
// parsing only accepts instants in that range (an offset that moves 9999-12-31 local time past the end
// of the year 9999 UTC, or 0000-01-01 before its start, is refused).
inline constexpr std::int64_t kMsPerDay = 86'400'000;
inline constexpr std::int64_t kMinRfc3339Ms = days_from_civil(0, 1, 1) * kMsPerDay;
inline constexpr std::int64_t kMaxRfc3339Ms = days_from_civil(10000, 1, 1) * kMsPerDay - 1;

// "2026-05-25T14:23:11Z": UTC, whole seconds (milliseconds are floored, also before 1970).
std::string format_rfc3339(std::int64_t unix_ms);
// "2026-05-25T14:23:11.096Z".
std::string format_rfc3339_ms(std::int64_t unix_ms);
// The same for an instant the platform stamps on what a client reads back (a lead's createdAt, an
// event's recorded_at): the second it happened in, still fixed width ("…:11.000Z": stored times
// compare as strings), shown as the contract writes times by shown_rfc3339.
std::string format_rfc3339_stamp(std::int64_t unix_ms);
// A stored fixed-width time as clients see it: "….000Z" without its zero milliseconds
// ("2026-05-25T14:23:11Z", the contract's form); any other text as it is.
std::string shown_rfc3339(std::string_view stored);
// A stored time with milliseconds (kept for ordering and timers) as clients see it: the second it
// falls in, "2026-05-25T14:23:11.621Z" → "2026-05-25T14:23:11Z"; text that is not a time as it is.
std::string shown_rfc3339_second(std::string_view stored);
// Without copying: "2026-05-25T14:23:11" (no "Z") for a "….000Z" time, else nullopt (shown as is).
std::optional<std::string_view> rfc3339_whole_seconds(std::string_view stored);

// A full RFC 3339 date-time: "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±hh:mm)", 'T'/'t' and 'Z'/'z' in
// either case. The fraction may have any number of digits (up to the length limit) and is
// truncated to milliseconds. Rejects impossible dates (Feb 30), hour 24, leap second 60, a missing
// offset, and anything else, with std::nullopt.
std::optional<std::int64_t> parse_rfc3339(std::string_view s);

// "2026-12-24" -> unix ms at 00:00Z that day; validated like parse_rfc3339.
std::optional<std::int64_t> parse_date(std::string_view s);

}  // namespace ss
