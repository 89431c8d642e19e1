#pragma once
// The cms content model: weekly hours in an IANA zone, date-range and emergency overrides, and
// announcements — validated from untrusted JSON (400 naming the field) and written back as the
// JSON of the contract. Limits are documented in docs/cms.md.

#include "shared/error.h"
#include "workers/cms/tz.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss::cms {

inline constexpr std::size_t kMaxRangesPerDay = 6;
inline constexpr std::size_t kMaxOverrides = 100;
inline constexpr std::size_t kMaxAnnouncements = 50;
inline constexpr std::size_t kMaxTextLength = 500;     // characters (UTF-8 code points)
inline constexpr std::size_t kMaxMessageLength = 500;  // characters
inline constexpr std::int64_t kMaxOverrideDays = 366;
// Dates and instants the zone data is exact for (scripts/gen-tzdata.mjs keeps 2020 through 2099).
inline constexpr int kFirstYear = 2020;
inline constexpr int kLastYear = 2099;

inline constexpr std::array<const char*, 7> kDayKeys = {"sun", "mon", "tue", "wed",
                                                        "thu", "fri", "sat"};  // by weekday 0..6

// The fields a Studio write of each kind reads (its parser below), and the ones its view adds,
// which a write lets through unread so that a read item can be sent back (docs/contract.md).
inline constexpr std::string_view kAnnouncementFields[] = {"text", "level", "startsAt", "endsAt"};
inline constexpr std::string_view kOverrideFields[] = {"closedNow", "from",  "to",     "until",
                                                       "closed",    "hours", "message"};
inline constexpr std::string_view kHoursFields[] = {"timezone", "weekly"};
inline constexpr std::string_view kItemViewFields[] = {"id", "createdAt", "updatedAt"};
// GET /admin/v1/content (and a Studio write's answer) beside its "hours".
inline constexpr std::string_view kContentViewFields[] = {"tenantId",  "version",       "updatedAt",
                                                          "overrides", "announcements", "source"};

// "07:00"–"15:00" as minutes of the local day; close < open runs past midnight, close may be 24:00.
struct TimeRange {
  int open = 0;
  int close = 0;
  bool past_midnight() const { return close < open; }
};
using DayRanges = std::vector<TimeRange>;

struct Hours {
  std::string timezone = "UTC";
  std::array<DayRanges, 7> weekly;  // by weekday, 0 = Sunday
};

struct Override {
  std::string id;
  bool closed_now = false;     // emergency closure from starts_at until `until` (or further notice)
  std::int64_t starts_at = 0;  // unix seconds (emergency closures)
  std::optional<std::int64_t> until;
  std::string from, to;                   // "YYYY-MM-DD" (date ranges)
  std::int64_t from_day = 0, to_day = 0;  // days since 1970-01-01
  bool closed = false;
  std::optional<DayRanges> hours;  // special hours for those days
  std::string message;
  std::string created_at;
};

struct Announcement {
  std::string id;
  std::string text;
  std::string level = "info";
  std::optional<std::int64_t> starts_at, ends_at;  // unix seconds
  std::string created_at, updated_at;
  bool active_at(std::int64_t t) const {
    return (!starts_at || *starts_at <= t) && (!ends_at || t < *ends_at);
  }
};

struct Content {
  std::string tenant_id;
  std::int64_t version = 0;
  Hours hours;
  std::vector<Override> overrides;
  std::vector<Announcement> announcements;
  std::string updated_at;
};

// ---- validation of Studio input (every error: 400 invalid_request with "field" and "fields")
Error field_error(const std::string& field, const std::string& problem);
std::optional<int> parse_hhmm(std::string_view s, bool allow_24);
// Stored hours (the object or {"hours": …}): the zone is required.
Result<Hours> parse_hours(const json& body);
// A Studio PUT /admin/v1/hours body: as parse_hours, but the zone may be left out (or null), and
// then `timezone` is "": the hours are in the tenant's current zone (docs/cms.md).
Result<Hours> parse_studio_hours(const json& body);
// A snapshot's hours (a tenant config's "fallback", a bundled seed), read as parse_hours reads them
// but the zone may be left out (or null): it is then `default_zone`, the tenant's (docs/cms.md);
// and only the object itself, {timezone, weekly}: never unwrapped from {"hours": …}.
Result<Hours> parse_seed_hours(const json& hours, const std::string& default_zone);
// `strict` (a Studio write): a range's key other than open and close is refused, naming it.
Result<DayRanges> parse_ranges(const json& value, const std::string& field, bool strict = false);
// A new override from POST /admin/v1/overrides; now is unix seconds.
Result<Override> parse_override(const json& body, std::int64_t now);
Result<Announcement> parse_announcement(const json& body);
// PATCH: the fields present replace the stored ones; the result is validated as a whole.
Result<Announcement> patch_announcement(Announcement current, const json& body);

// ---- JSON of the contract
std::string format_hhmm(int minutes);
json hours_json(const Hours& hours);
json ranges_json(const DayRanges& ranges);
json override_json(const Override& o);
json announcement_json(const Announcement& a);
// All of it: Studio's view and the KV document (announcements == all, scheduled too).
json content_json(const Content& c);
// GET /v1/content: only the announcements active at `now`.
json public_content_json(const Content& c, std::int64_t now, const std::string& source);
// A tenant config's "fallback" snapshot (provisioning): its hours, overrides and announcements
// must be what Studio would take, each error naming the field from the config's root
// ("config.fallback.overrides[0].date"); hours may leave their zone out (parse_seed_hours) and
// a level left out of an announcement reads as info.
Status validate_seed(const json& snapshot);
// One item of content_json() read back (ids and timestamps too; no "until ahead of now" check).
Result<Override> stored_override(const json& item);
// Reads content_json() back (KV document, isolate copy). Lenient on the seed: see from_seed.
Result<Content> content_from_json(const json& doc);
// The tenant's manifest snapshot ({"hours","overrides","announcements"}) as version-0 content;
// items that do not validate are left out, ids are fixed seed ULIDs.
Content content_from_seed(const std::string& tenant_id, const json& snapshot,
                          const std::string& default_timezone);
std::string seed_id(std::size_t index);

}  // namespace ss::cms
