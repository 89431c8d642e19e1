#pragma once
// The zone data the cms core carries, generated from Debian's tzdata by scripts/gen-tzdata.mjs into
// tzdata.gen.cpp. Only what instants from 2020 through 2099 need: per rule set, the offset when the
// window opens, the explicit transitions the footer POSIX TZ rule does not predict, and that rule.
// Zone names (links included) that share identical data share one rule set.

#include <cstddef>
#include <cstdint>

namespace ss::cms::tzdata {

struct RuleSet {
  std::int16_t initial_offset_minutes;  // UTC offset in effect at the start of the window
  std::uint16_t first_transition;       // index into kTransitionTimes / kTransitionOffsets
  std::uint16_t transition_count;
  std::uint16_t footer;  // index into kFooters ("" = the last offset holds)
};

extern const char kVersion[];
extern const std::size_t kZoneCount;
extern const char kNames[];                      // sorted names, each ended by '\0'
extern const std::uint16_t kNameStart[];         // kZoneCount offsets into kNames
extern const std::uint16_t kNameRuleSet[];       // kZoneCount rule set indexes
extern const std::int64_t kTransitionTimes[];    // UTC seconds
extern const std::int16_t kTransitionOffsets[];  // UTC offset in minutes from that instant on
extern const char* const kFooters[];
extern const RuleSet kRuleSets[];
extern const std::size_t kRuleSetCount;

}  // namespace ss::cms::tzdata
