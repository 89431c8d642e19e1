#pragma once
// IANA time zones for the cms core: UTC offsets for any instant from 2020 through 2099, from the
// generated tz data (tzdata.gen.cpp): the explicit transitions first, then the zone's POSIX TZ
// rule.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss::cms {

// A POSIX TZ string ("EST5EDT,M3.2.0,M11.1.0", "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"), as the
// footer of a TZif file carries it. Offsets are east of UTC, in seconds (the string's are west).
struct PosixRule {
  struct Date {
    char kind = 'M';  // 'M' month.week.day, 'J' Julian 1..365 without Feb 29, 'n' 0..365
    int month = 0, week = 0, weekday = 0, day = 0;
    std::int64_t time = 7200;  // seconds after local midnight; may be negative or over 24 h
  };
  std::int64_t std_offset = 0;
  std::optional<std::int64_t> dst_offset;  // none: no DST
  Date start, end;

  static std::optional<PosixRule> parse(std::string_view tz);
  std::int64_t offset_at(std::int64_t utc_seconds) const;
  // The instants where the offset changes, within [from, to].
  void transitions(std::int64_t from, std::int64_t to, std::vector<std::int64_t>& out) const;
};

class Zone {
 public:
  // nullopt for a name the tz database does not know (e.g. "Mars/Olympus").
  static std::optional<Zone> find(std::string_view name);
  static const char* data_version();

  const std::string& name() const { return name_; }
  // The UTC offset in seconds (east positive) at a UTC instant.
  std::int64_t offset_at(std::int64_t utc_seconds) const;
  std::int64_t local_seconds(std::int64_t utc_seconds) const {
    return utc_seconds + offset_at(utc_seconds);
  }
  // Every instant where the offset changes, within [from, to], ascending.
  std::vector<std::int64_t> transitions(std::int64_t from, std::int64_t to) const;
  // The UTC instants whose wall-clock time is `local` (seconds since 1970-01-01T00:00 local): one
  // normally, two in a repeated (fall-back) hour, none in a skipped (spring-forward) one.
  std::vector<std::int64_t> instants_of_local(std::int64_t local) const;

 private:
  std::string name_;
  std::size_t set_ = 0;
  std::optional<PosixRule> rule_;
};

}  // namespace ss::cms
