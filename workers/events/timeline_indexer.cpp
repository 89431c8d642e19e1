#include "workers/events/timeline_indexer.h"
#include "shared/field_error.h"
#include "shared/json_util.h"

namespace ss::events {

std::string timeline_title(std::string_view event_type) {
  std::string title(event_type);
  for (char& c : title) {
    if (c == '.' || c == '_') c = ' ';
  }
  if (!title.empty() && title[0] >= 'a' && title[0] <= 'z') {
    title[0] = static_cast<char>(title[0] - 'a' + 'A');
  }
  return title;
}

Error timeline_after_error(const std::string& problem) {
  Error e{ErrorCode::invalid_request, "after: " + problem};
  name_field(e, "after", problem);
  return e;
}

Task<Status> run_timeline_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows) {
  // The whole batch in a few bulk statements (summaries, then entries), committed with the cursor:
  // one D1 round trip, and the entries never run ahead of or behind the cursor the reader splits on.
  std::vector<D1Statement> statements = AggregateStore::timeline_statements(rows);
  std::vector<std::string> titles;
  titles.reserve(rows.size());
  for (const EventRow& row : rows) titles.push_back(timeline_title(row.event_type));
  for (D1Statement& s : AggregateStore::timeline_entry_statements(rows, titles)) {
    statements.push_back(std::move(s));
  }
  // A plain function returning the commit's task (the statements move into its frame).
  return commit_with_cursor(ctx, report, rows, std::move(statements));
}

Task<Result<json>> read_timeline(const TimelineFilter& filter) {
  SS_CO_TRY(TimelinePage page, co_await AggregateStore::timeline_page(filter));
  if (!page.after_known) {
    // Never an empty page, which reads as "nothing after it" (every later event skipped), nor the
    // list from the start (repeated): the client's cursor is wrong, and it is told so. One answer
    // whatever the cursor names, so it never tells that an id exists for another tenant or entity.
    co_return timeline_after_error(kTimelineAfterUnknown);
  }
  std::vector<TimelineEntry>& entries = page.entries;
  // The page was read one entry past its size: that entry says another page follows.
  const bool more = static_cast<int>(entries.size()) > filter.limit;
  if (more) entries.resize(static_cast<std::size_t>(filter.limit));
  json events = json::array();
  for (TimelineEntry& entry : entries) {
    if (!entry.indexed) entry.title = timeline_title(entry.event.event_type);
    events.push_back(entry.view(filter.with_seq));
  }
  json next = nullptr;
  if (more && !entries.empty()) {
    // Across tenants (the operator without tenant=) the id alone may name two events of the
    // entity: the position goes along, as on GET /api/events.
    const EventRow& last = entries.back().event;
    next = filter.tenant_id ? last.event_id : last.event_id + "." + std::to_string(last.seq);
  }
  co_return json_object({{"events", std::move(events)}, {"next", std::move(next)}});
}

}  // namespace ss::events
