// The cms zone rules and the opening-hours schedule (workers/cms/tz.h, schedule.h): input is
// "zone-name NUL posix-tz NUL content-json NUL at".
// - Zone::find agrees with a linear scan of the generated name table;
// - a POSIX TZ string that parses gives only its two offsets, and transitions() lists every
//   instant where offset_at changes (checked at sampled instants against the last transition);
// - local-time conversion: instants_of_local(local_seconds(t)) contains t, and every instant it
//   returns has that wall-clock time;
// - the Studio hours and overrides that validate give a status whose nextChange is the first flip:
//   the answer holds at sampled instants before it and differs at it.
// The instant is the status endpoint's `at` (RFC 3339, 1970–2099) or, when that does not parse,
// one derived from the input bytes; the zone is the name given, else one picked from the table.
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "tests/fuzz/fuzz_util.h"
#include "workers/cms/model.h"
#include "workers/cms/schedule.h"
#include "workers/cms/tz.h"
#include "workers/cms/tzdata.h"

#include <algorithm>
#include <string>
#include <vector>

namespace {

using ss::fuzz::require;

// The status endpoint's range of `at` (workers/cms/content.cpp).
constexpr std::int64_t kMinAt = ss::days_from_civil(1970, 1, 1) * 86400;
constexpr std::int64_t kMaxAt = ss::days_from_civil(2100, 1, 1) * 86400 - 1;
// Enough samples to catch a missed transition or flip, few enough to keep executions fast.
constexpr int kSamples = 8;
constexpr std::size_t kMaxOverrides = 4;

// A deterministic stream of numbers from the input (FNV-1a, then xorshift).
struct Stream {
  std::uint64_t x = 1469598103934665603ull;
  explicit Stream(std::string_view in) {
    for (unsigned char c : in) x = (x ^ c) * 1099511628211ull;
    if (x == 0) x = 1;
  }
  std::uint64_t next() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  }
  std::int64_t in(std::int64_t lo, std::int64_t hi) {  // [lo, hi]
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
};

std::string_view table_name(std::size_t i) {
  return std::string_view(ss::cms::tzdata::kNames + ss::cms::tzdata::kNameStart[i]);
}

bool in_table(std::string_view name) {
  for (std::size_t i = 0; i < ss::cms::tzdata::kZoneCount; ++i) {
    if (table_name(i) == name) return true;
  }
  return false;
}

std::vector<std::string_view> split(std::string_view in, std::size_t parts) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < parts) {
    auto [head, tail] = ss::fuzz::split2(in);
    out.push_back(head);
    in = tail;
  }
  out.push_back(in);
  return out;
}

// Offsets only change at the instants transitions() lists.
template <typename OffsetAt>
void check_transitions(const OffsetAt& offset_at, const std::vector<std::int64_t>& listed,
                       std::int64_t from, std::int64_t to, Stream& rng) {
  require(std::is_sorted(listed.begin(), listed.end()));
  for (std::int64_t t : listed) {
    require(t >= from && t <= to);
    require(offset_at(t) != offset_at(t - 1));
  }
  for (int i = 0; i < kSamples; ++i) {
    std::int64_t t = rng.in(from, to);
    auto last = std::upper_bound(listed.begin(), listed.end(), t);
    std::int64_t since = last == listed.begin() ? from : *(last - 1);
    require(offset_at(t) == offset_at(since));
  }
}

void check_posix_rule(std::string_view text, std::int64_t at, Stream& rng) {
  auto rule = ss::cms::PosixRule::parse(text);
  if (!rule) return;
  auto offset_at = [&](std::int64_t t) { return rule->offset_at(t); };
  std::int64_t from = at;
  std::int64_t to = std::min(kMaxAt, at + rng.in(0, 3 * 366 * 86400));
  std::vector<std::int64_t> listed;
  rule->transitions(from, to, listed);
  std::sort(listed.begin(), listed.end());
  check_transitions(offset_at, listed, from, to, rng);
  for (int i = 0; i < kSamples; ++i) {
    std::int64_t off = rule->offset_at(rng.in(from, to));
    require(off == rule->std_offset || (rule->dst_offset && off == *rule->dst_offset));
  }
}

void check_zone(const ss::cms::Zone& zone, std::int64_t at, Stream& rng) {
  auto offset_at = [&](std::int64_t t) { return zone.offset_at(t); };
  std::int64_t to = std::min(kMaxAt, at + rng.in(0, 2 * 366 * 86400));
  check_transitions(offset_at, zone.transitions(at, to), at, to, rng);
  for (std::int64_t t : {at, rng.in(at, to)}) {
    std::int64_t local = zone.local_seconds(t);
    std::vector<std::int64_t> instants = zone.instants_of_local(local);
    require(std::find(instants.begin(), instants.end(), t) != instants.end());
    require(std::is_sorted(instants.begin(), instants.end()));
    for (std::int64_t u : instants) require(zone.local_seconds(u) == local);
  }
}

void check_schedule(const ss::cms::Zone& zone, std::string_view content_text, std::int64_t at,
                    Stream& rng) {
  auto doc = ss::parse_json(content_text);
  if (!doc || !doc->is_object()) return;
  ss::json hours{{"timezone", zone.name()}, {"weekly", ss::json::object()}};
  if (const ss::json* weekly = ss::find_field(*doc, "weekly")) hours["weekly"] = *weekly;
  ss::cms::Content content;
  auto parsed = ss::cms::parse_hours(hours);
  if (!parsed) {
    require(parsed.error().code == ss::ErrorCode::invalid_request);
    return;
  }
  content.hours = std::move(parsed).value();
  if (const ss::json* list = ss::find_field(*doc, "overrides"); list && list->is_array()) {
    for (const ss::json& item : *list) {
      if (content.overrides.size() == kMaxOverrides) break;
      auto o = ss::cms::parse_override(item, at);
      if (!o) {
        require(o.error().code == ss::ErrorCode::invalid_request);
        continue;
      }
      o->id = std::to_string(content.overrides.size());
      o->created_at = o->id;
      content.overrides.push_back(std::move(o).value());
    }
  }
  ss::cms::StatusAnswer answer = ss::cms::compute_status(content, zone, at);
  bool open = answer.state.open;
  std::int64_t until = at + ss::cms::kMaxScanDays * 86400;
  if (answer.next_change) {
    require(*answer.next_change > at && *answer.next_change <= until);
    require(ss::cms::state_at(content, zone, *answer.next_change).open != open);
    until = *answer.next_change - 1;
    require(ss::cms::state_at(content, zone, until).open == open);
  }
  for (int i = 0; i < kSamples; ++i) {
    require(ss::cms::state_at(content, zone, rng.in(at, until)).open == open);
  }
  (void)ss::cms::status_json(answer).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input = ss::fuzz::as_text(data, size);
  std::vector<std::string_view> part = split(input, 4);
  Stream rng(input);

  std::int64_t at = rng.in(kMinAt, kMaxAt);
  if (auto ms = ss::parse_rfc3339(part[3]); ms && *ms >= kMinAt * 1000 && *ms <= kMaxAt * 1000) {
    at = *ms / 1000;
  }

  std::optional<ss::cms::Zone> zone = ss::cms::Zone::find(part[0]);
  require(zone.has_value() == in_table(part[0]));
  if (zone) {
    require(zone->name() == part[0]);
  } else {
    std::size_t i = rng.next() % ss::cms::tzdata::kZoneCount;
    zone = ss::cms::Zone::find(table_name(i));
    require(zone.has_value());
  }

  check_posix_rule(part[1], at, rng);
  check_zone(*zone, at, rng);
  check_schedule(*zone, part[2], at, rng);
  return 0;
}
