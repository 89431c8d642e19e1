#pragma once
// Open or closed, and until when: a pure function of the content, the zone and an instant.
//
// The rule is the shop's wall clock: at instant t the tenant's local date and time decide (that
// day's ranges, or yesterday's ranges that run past midnight; a date-range override replaces the
// weekly ranges of its days; an emergency closure wins over everything while it lasts). So in a
// skipped spring-forward hour a range opening at 02:30 opens at the jump (03:00 wall time), a
// range spanning the repeated fall-back hour lasts one hour longer, and nothing flips on that
// hour's second pass (its boundaries happened on the first: the wall clock just before the clock
// went back decides). nextChange is the first instant after t at which the answer flips.

#include "workers/cms/model.h"
#include "workers/cms/tz.h"

#include <cstdint>
#include <optional>

namespace ss::cms {

struct OpenState {
  bool open = false;
  const Override* override = nullptr;  // the override that decides the day, if any
  const char* reason() const { return override ? "override" : open ? "regular_hours" : "closed"; }
};

struct StatusAnswer {
  OpenState state;
  std::optional<std::int64_t> next_change;  // unix seconds; none within kMaxScanDays
};

inline constexpr std::int64_t kMaxScanDays = 400;

OpenState state_at(const Content& content, const Zone& zone, std::int64_t t);
// How many times this process has evaluated state_at (tests bound a scan's work with it).
std::size_t state_evaluations();
StatusAnswer compute_status(const Content& content, const Zone& zone, std::int64_t t);
// {"open","reason","override","nextChange"}
json status_json(const StatusAnswer& answer);

}  // namespace ss::cms
