#pragma once
// Test-only (SITESWARM_TEST_HOOKS=1): runs the operator-supplied programs of a subscription or a
// schema — event-type glob, filter expression, input mapper, payload schema — on one event, with
// no D1 or other effect, so scripts/bench (tests/bench/worst-case-bench.mjs) can time their worst
// cases in the shipped wasm, the code path the ledger itself runs.
//
// POST /__test/programs {"glob"?, "filter"?, "mapper"?, "schema"?, "event", "compile"?, "run"?}
// Each program given is compiled `compile` times (default 1) and evaluated on `event` (the schema on
// event.payload) `run` times (default 1); the answer is what the last evaluation gave:
// {"glob": bool, "filter": bool, "filter_work": n, "mapper_bytes": n, "mapper_work": n,
// "violations": n} or the compile error (400); the *_work figures are the work units the drain
// counts for one evaluation (work_budget.h), so the bench can convert a unit to CPU time.

#include "shared/app.h"

namespace ss::events {

// Repetitions are capped so a mistyped bench cannot hold an isolate for minutes.
inline constexpr std::int64_t kMaxProgramRepeats = 10'000;

void add_test_program_routes(App& app);

}  // namespace ss::events
