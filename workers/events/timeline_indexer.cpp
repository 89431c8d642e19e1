#include "workers/events/timeline_indexer.h"

namespace ss::events {

Task<Status> run_timeline_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows) {
  std::vector<D1Statement> statements;
  for (const EventRow& row : rows) statements.push_back(AggregateStore::timeline_statement(row));
  {
    auto awaited = co_await commit_with_cursor(ctx, report, rows, std::move(statements));
    co_return std::move(awaited);
  }
}

}  // namespace ss::events
