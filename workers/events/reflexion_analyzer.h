#pragma once
// reflexion_analyzer (every 30 minutes): keeps reflexion_log, the failure patterns operators read at
// GET /admin/reflexion. It reads workflow.run_failed (patterns per workflow type) and the platform's
// rejection events — lead.delivery_failed, lead.spam_absorbed, hitl.rejected, monitor.probe_failed —
// (patterns per event type), and counts each into (subject, error class) with first/last seen, the
// latest error, the first 5 example event ids and the tenants seen. Replay-safe: a row only counts
// events with a higher seq than it already holds.

#include "workers/events/cursor.h"

namespace ss::events {

// The error class of a failure: a short, stable bucket an operator can group by (http_4xx,
// http_5xx, timeout, network, no_workflow_definition, url_refused, honeypot, ...).
std::string error_class_of(const std::string& event_type, const json& payload);

Task<Status> run_reflexion_batch(Context& ctx, DrainReport& report,
                                 const std::vector<EventRow>& rows);

}  // namespace ss::events
