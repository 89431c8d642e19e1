#include "shared/emit.h"

#include "shared/app.h"
#include "shared/effects.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"

namespace ss {

json event_message(const EventDraft& draft, const std::string& event_id, const std::string& source,
                   std::int64_t now_ms) {
  json m =
      json_object({{"event_id", event_id},
                   {"event_type", draft.event_type},
                   {"entity_ref", draft.entity_ref},
                   {"payload", draft.payload.is_object() ? draft.payload : json::object()},
                   {"source_system", source},
                   {"occurred_at", format_rfc3339_stamp(now_ms)},
                   {"tenant_id", draft.tenant_id.empty() ? json(nullptr) : json(draft.tenant_id)}});
  if (!draft.idempotency_key.empty()) m["idempotency_key"] = draft.idempotency_key;
  if (!draft.caused_by.empty()) m["caused_by"] = draft.caused_by;
  if (!draft.workflow_run_id.empty()) m["workflow_run_id"] = draft.workflow_run_id;
  return m;
}

Task<Result<json>> new_event_message(Context& ctx, EventDraft draft) {
  // Inside a workflow run (a start from the ledger), the event is caused by that run unless the
  // producer names its own cause.
  const Context::Provenance& run = ctx.provenance();
  if (draft.workflow_run_id.empty()) draft.workflow_run_id = run.workflow_run_id;
  if (draft.caused_by.empty()) draft.caused_by = run.caused_by;
  SS_CO_TRY(std::string id, co_await ctx.new_ulid());
  co_return event_message(draft, id, ctx.app().service, ctx.now_ms());
}

Task<Result<std::string>> emit_event(Context& ctx, EventDraft draft) {
  SS_CO_TRY(json body, co_await new_event_message(ctx, std::move(draft)));
  std::string id = string_or(body, "event_id", "");
  SS_CO_CHECK(co_await queue_send(kEventsQueueBinding, std::move(body)));
  co_return id;
}

}  // namespace ss
