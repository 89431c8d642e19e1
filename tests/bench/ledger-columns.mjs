// The ledger page's columns in the order its SELECT gives them (workers/events/store.cpp, the events
// read): the compact D1 form's `columns` (docs/abi.md) for the benches that hand the core a page.
export const EVENT_COLUMNS = [
  "seq",
  "event_id",
  "tenant_id",
  "event_type",
  "entity_type",
  "entity_id",
  "payload_json",
  "idempotency_key",
  "caused_by",
  "workflow_run_id",
  "source_system",
  "occurred_at",
  "recorded_at",
  "sequence_no",
  "redacted_at",
];
