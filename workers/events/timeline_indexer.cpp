#include "workers/events/timeline_indexer.h"

namespace ss::events {

Task<Status> run_timeline_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows) {
  // The whole batch in a few bulk statements, committed with the cursor: one D1 round trip.
  std::vector<D1Statement> statements = AggregateStore::timeline_statements(rows);
  SS_CO_RETURN_AWAIT(commit_with_cursor(ctx, report, rows, std::move(statements)));
}

}  // namespace ss::events
