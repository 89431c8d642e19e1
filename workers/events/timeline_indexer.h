#pragma once
// timeline_indexer: one summary row per entity (count, first and last event), advanced only by
// events newer than the last one it holds, so a replayed window never double-counts.

#include "workers/events/cursor.h"

namespace ss::events {

Task<Status> run_timeline_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows);

}  // namespace ss::events
