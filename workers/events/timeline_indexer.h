#pragma once
// timeline_indexer: per entity, a summary row (count, first and last event; advanced only by events
// newer than the last one it holds, so a replayed window never double-counts) and the materialized
// list the UI reads, one entry per event (entity_timeline_entries; INSERT OR IGNORE, so a replay
// adds nothing). GET /api/entities/{type}/{id}/timeline reads that list up to the indexer's cursor
// and the events after it live from the ledger (docs/runbook-events.md, "Entity timelines").

#include "workers/events/cursor.h"

#include <string>
#include <string_view>

namespace ss::events {

// The display title of an entry, from the event type alone ("lead.received" → "Lead received",
// "workflow.run_failed" → "Workflow run failed"): dots and underscores become spaces and the first
// letter is upper case. Never from the payload: retention redacts payloads, and an entry must not
// keep what it removed. Migration 0007 backfills entries with the same rule written in SQL.
std::string timeline_title(std::string_view event_type);

Task<Status> run_timeline_batch(Context& ctx, DrainReport& report,
                                const std::vector<EventRow>& rows);

// The timeline's `after` refused: 400 invalid_request with "field":"after" and
// "fields":{"after":problem}.
inline constexpr const char* kTimelineAfterMalformed =
    "must be an event_id or a page's next (<event_id> or <event_id>.<seq>)";
inline constexpr const char* kTimelineAfterUnknown =
    "not an event of this timeline: use an event_id (or a page's next) from this entity's timeline";
Error timeline_after_error(const std::string& problem);

// A page of the timeline endpoint: {"events":[entry views],"next":<event_id>|null}; `next` is the
// page's last event_id when the page is full (`<event_id>.<seq>` across tenants). Tail entries (read
// live) get their title here. An `after` that names no event of this timeline for this reader (an
// unknown id, another tenant's or another entity's event, an id with another event's seq) is
// timeline_after_error(kTimelineAfterUnknown), one answer for all of them.
Task<Result<json>> read_timeline(const TimelineFilter& filter);

}  // namespace ss::events
