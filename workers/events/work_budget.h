#pragma once
// The drain's work budget. Every operator-supplied program the fan-out runs (subscription globs,
// filters, input mappers) is capped one by one, but a batch of 500 events × many subscriptions can
// multiply those caps past Workers' CPU limit. So a workflow_runner run counts the work it does and
// stops at an event boundary once a budget is spent; the next run continues at the cursor.
//
// Work is counted, never timed: a drain must cut a backlog at the same events whatever the
// machine's load, so a replay or a re-run makes the same decisions. One work unit is about one
// byte of JSON scanned, compared, copied or serialised:
//   - each event: its stored payload's bytes (parsed, then viewed by filters);
//   - each subscription tried: its glob's and the event type's lengths; its filter's steps (one per
//     node, one per path segment, and the bytes each string comparison, startsWith() or contains()
//     scans; array and `in` membership count the values compared);
//   - each start: the event it carries (payload bytes + kEventEnvelopeWork) and its input (the
//     mapper's output, measured on the event without building it, or the payload).
// docs/performance.md converts a unit to CPU time with tests/bench/worst-case-bench.mjs.

#include "shared/error.h"

#include <cstdint>
#include <limits>

namespace ss::events {

// What a run may spend when DRAIN_WORK_BUDGET is not set: about 4 s of CPU at the slowest rate the
// worst-case bench measured (input mappers copying and serialising a 60 KB event, ~40 ns a unit),
// well under Workers' 30 s default CPU limit, which the run's own D1 and start traffic share.
// A batch of 500 ordinary events (1 KB payloads, 8 starts each) spends about 10 M.
inline constexpr std::int64_t kDefaultDrainWorkBudget = 100'000'000;
// DRAIN_WORK_BUDGET's range (a value outside it is ignored: the default applies). The minimum is
// above what an event at the 64 KiB payload cap costs when it starts 8 workflows with no mapper and
// no filter that scans the payload (~1.1 M). Filters count too and the number of subscriptions is not
// capped: about 15 subscriptions each running contains() over a 64 KiB payload reach ~1 M more, so a
// low budget can quarantine such an event (the reason names the budget; raise it or narrow them).
inline constexpr std::int64_t kMinDrainWorkBudget = 2'000'000;
inline constexpr std::int64_t kMaxDrainWorkBudget = 2'000'000'000;
// The event fields besides the payload that a start carries (ids, type, entity, times): a bound.
inline constexpr std::uint64_t kEventEnvelopeWork = 512;

// Counts work units; `limit` is where the caller stops starting new work (evaluation of the
// program in hand finishes: the overshoot is at most one filter evaluation or one start's input).
struct WorkMeter {
  std::uint64_t used = 0;
  std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();

  void add(std::uint64_t units) {
    used = units > std::numeric_limits<std::uint64_t>::max() - used
               ? std::numeric_limits<std::uint64_t>::max()
               : used + units;
  }
  bool over() const { return used > limit; }
};

}  // namespace ss::events
