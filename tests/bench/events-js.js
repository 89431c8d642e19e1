// The bench's plain-JS baseline for the ledger (tests/bench/events-bench.mjs): the same emit and
// workflow_runner drain as events.wasm, written directly against the same D1 schema
// (migrations/events) with the same SQL, so that the figures compare the C++ core + effect host with
// what a hand-written Worker would do. Not a product: no subscriptions API (the bench writes
// subscriptions and workflow definitions with SQL), no filter_expr / input_mapper, no fan-out cap
// record, no quarantine, no workflow.run_failed / run_completed (the bench's starts all succeed and
// none completes; workflow.run_started is written, as events.wasm does), and no claim-before-start
// (events.wasm claims every start in D1 first, so overlapping runs can never start a workflow twice;
// that costs it the extra work in each D1 batch); only what the bench exercises. One difference the
// other way: an emit's schema and idempotency lookups are two concurrent queries here, then the insert,
// as a user writes them, where events.wasm sends one D1 batch — the insert, guarded against a schema
// to check first and against a duplicate, then both lookups in one statement — and a second round
// trip only for a type with a schema (docs/performance.md "An emit in one D1 round trip"): part of
// the emit ratio is that SQL, not the language.
//
//   POST /api/events               tenant headers, {event_type, entity_ref, payload, idempotency_key?}
//   GET  /api/events?limit=&after= operator: read a batch
//   POST /admin/events/drain       operator: one workflow_runner batch → {read, started, duplicates, cursor}

import { authenticateTenant } from "./peer-common.js";

const CONSUMER = "workflow_runner";
const BATCH = 500;
const MAX_PAYLOAD = 64 * 1024;
const LOCK_TTL_MS = 5 * 60 * 1000;
const EVENT_TYPE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

const json = (status, body) => Response.json(body, { status });
const error = (status, code, message, field) => json(status, { error: { code, message, ...(field && { field }) } });

// Monotonic ULIDs (per isolate), like shared/ulid.
let lastMs = -1;
let lastRandom = null;
function ulid(now = Date.now()) {
  if (now <= lastMs && lastRandom) {
    for (let i = lastRandom.length - 1; i >= 0; i--) {
      if (lastRandom[i] < 31) {
        lastRandom[i]++;
        break;
      }
      lastRandom[i] = 0;
    }
    now = lastMs;
  } else {
    lastRandom = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b & 31);
    lastMs = now;
  }
  let time = "";
  for (let t = now, i = 0; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  return time + lastRandom.map((v) => CROCKFORD[v]).join("");
}

function constantTimeEqual(a, b) {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

function isOperator(request, env) {
  const auth = request.headers.get("authorization") ?? "";
  return !!env.PLATFORM_ADMIN_TOKEN && constantTimeEqual(auth, `Bearer ${env.PLATFORM_ADMIN_TOKEN}`);
}

async function emit(request, env) {
  // The tenant check of shared/tenant.cpp, with its per-isolate row cache and known tokens, as the
  // other peers do it (peer-common.js).
  const auth = await authenticateTenant(request, env.EVENTS_DB);
  if (auth.error) return auth.error;
  const tenant = auth.row.tenant_id;
  if (!(request.headers.get("content-type") ?? "").startsWith("application/json")) {
    return error(415, "unsupported_media_type", "send application/json");
  }
  const text = await request.text();
  if (text.length > MAX_PAYLOAD + 16 * 1024) return error(413, "payload_too_large", "body too large");
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    return error(400, "invalid_json", "body is not JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return error(400, "invalid_json", "body must be a JSON object");
  }
  const { event_type, entity_ref, payload, idempotency_key } = body;
  if (typeof event_type !== "string" || !EVENT_TYPE.test(event_type)) {
    return error(400, "invalid_event", "event_type: must be a dotted lower-case name", "event_type");
  }
  const colon = typeof entity_ref === "string" ? entity_ref.indexOf(":") : -1;
  if (colon <= 0 || colon === entity_ref.length - 1) {
    return error(400, "invalid_event", "entity_ref: must look like type:id", "entity_ref");
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    return error(400, "invalid_event", "payload: must be a JSON object", "payload");
  }
  const payloadJson = JSON.stringify(payload);
  if (payloadJson.length > MAX_PAYLOAD)
    return error(413, "payload_too_large", "payload: larger than 64 KiB", "payload");

  // The schema lookup and the idempotency lookup together (no schema is registered in the bench).
  const db = env.EVENTS_DB;
  const [, existing] = await Promise.all([
    db.prepare("SELECT schema_json FROM events_schema WHERE event_type = ?1").bind(event_type).first(),
    idempotency_key
      ? db
          .prepare("SELECT event_id FROM events WHERE COALESCE(tenant_id, '') = ?1 AND idempotency_key = ?2")
          .bind(tenant, idempotency_key)
          .first()
      : null,
  ]);
  if (existing) return json(200, { event_id: existing.event_id, duplicate: true });
  const eventId = ulid();
  const now = new Date().toISOString();
  const inserted = await db
    .prepare(
      "INSERT OR IGNORE INTO events (event_id, tenant_id, event_type, entity_type, entity_id, payload_json, " +
        "idempotency_key, caused_by, workflow_run_id, source_system, occurred_at, recorded_at, sequence_no) " +
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, NULL, NULL, ?8, ?8, NULL)",
    )
    .bind(
      eventId,
      tenant,
      event_type,
      entity_ref.slice(0, colon),
      entity_ref.slice(colon + 1),
      payloadJson,
      idempotency_key ?? null,
      now,
    )
    .run();
  if (inserted.meta.changes !== 1) {
    const row = await db
      .prepare("SELECT event_id FROM events WHERE COALESCE(tenant_id, '') = ?1 AND idempotency_key = ?2")
      .bind(tenant, idempotency_key ?? null)
      .first();
    return json(200, { event_id: row?.event_id, duplicate: true });
  }
  return json(201, { event_id: eventId });
}

function eventView(row) {
  return {
    event_id: row.event_id,
    tenant_id: row.tenant_id,
    event_type: row.event_type,
    entity_type: row.entity_type,
    entity_id: row.entity_id,
    entity_ref: `${row.entity_type}:${row.entity_id}`,
    payload: JSON.parse(row.payload_json),
    idempotency_key: row.idempotency_key,
    caused_by: row.caused_by,
    workflow_run_id: row.workflow_run_id,
    source_system: row.source_system,
    occurred_at: row.occurred_at,
    recorded_at: row.recorded_at,
    sequence_no: row.sequence_no,
  };
}

async function read(url, env) {
  const limit = Number(url.searchParams.get("limit") ?? 100);
  const after = url.searchParams.get("after") ?? "";
  // Insertion order, the cursor's own position (as the ledger reads; the bench reads its first page).
  const { results } = await env.EVENTS_DB.prepare(
    "SELECT * FROM events WHERE (?1 = '' OR seq > (SELECT MIN(seq) FROM events WHERE event_id = ?1)) ORDER BY seq LIMIT ?2",
  )
    .bind(after, limit)
    .all();
  const events = results.map(eventView);
  return json(200, { events, next: events.length === limit ? events.at(-1).event_id : null });
}

const globCache = new Map();
function globMatch(glob, type) {
  let re = globCache.get(glob);
  if (!re) {
    const source = glob
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".");
    re = new RegExp(`^${source}$`);
    globCache.set(glob, re);
  }
  return re.test(type);
}

// One batch of workflow_runner, shaped like drain.cpp: kill switch, lock, cursor, batch, then per event
// match → dedupe → start concurrently → commit dedupe rows + run log + cursor in one D1 batch.
async function drain(env) {
  const db = env.EVENTS_DB;
  const report = { read: 0, started: 0, duplicates: 0, quarantined: 0, capped: 0, cursor: null };
  const killed = await db
    .prepare("SELECT name FROM kill_switches WHERE enabled = 1 AND name IN (?1, ?2) LIMIT 1")
    .bind(`kill:${CONSUMER}`, "kill:fanout")
    .first();
  if (killed) return { ...report, killed: true };
  const holder = ulid();
  const lock = `drain:${CONSUMER}`;
  const now = Date.now();
  const acquired = await db
    .prepare(
      "INSERT INTO cron_locks (name, holder, expires_at_ms) VALUES (?1, ?2, ?3) ON CONFLICT (name) DO UPDATE SET " +
        "holder = excluded.holder, expires_at_ms = excluded.expires_at_ms WHERE cron_locks.expires_at_ms <= ?4",
    )
    .bind(lock, holder, now + LOCK_TTL_MS, now)
    .run();
  if (acquired.meta.changes === 0) return { ...report, locked: true };
  try {
    // Insertion order (events.seq), like drain.cpp: never the producer-minted event_id.
    const state = await db
      .prepare("SELECT cursor, cursor_seq FROM event_drain_state WHERE consumer = ?1")
      .bind(CONSUMER)
      .first();
    const cursorSeq = state?.cursor_seq ?? 0;
    report.cursor = state?.cursor || null;
    const { results: rows } = await db
      .prepare("SELECT * FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2")
      .bind(cursorSeq, BATCH)
      .all();
    if (rows.length === 0) return report;
    const last = rows.at(-1).seq;
    const [subs, workflows, done] = await Promise.all([
      db.prepare("SELECT * FROM event_subscriptions WHERE enabled = 1 ORDER BY subscription_id").all(),
      db.prepare("SELECT workflow_type, target_json FROM workflow_definitions").all(),
      db
        .prepare("SELECT seq, dedupe_key FROM event_consumer_dedupe WHERE consumer = ?1 AND seq > ?2 AND seq <= ?3")
        .bind(CONSUMER, cursorSeq, last)
        .all(),
    ]);
    const targets = new Map(workflows.results.map((w) => [w.workflow_type, JSON.parse(w.target_json)]));
    const doneKeys = new Set(done.results.map((r) => `${r.seq}/${r.dedupe_key}`));
    for (const row of rows) {
      const event = eventView(row);
      const matched = subs.results.filter((s) => globMatch(s.event_type_glob, event.event_type));
      if (matched.length > 8) report.capped++; // kMaxFanout (the bench never hits it)
      const seen = new Set();
      const todo = [];
      for (const sub of matched.slice(0, 8)) {
        const key = `${CONSUMER}:${event.event_id}:${sub.workflow_type}`;
        if (doneKeys.has(`${row.seq}/${key}`) || seen.has(sub.workflow_type)) {
          report.duplicates++;
          continue;
        }
        seen.add(sub.workflow_type);
        todo.push({ sub, key });
      }
      const stamp = new Date().toISOString();
      const results = await Promise.all(
        todo.map(async ({ sub, key }) => {
          const runId = `run_${ulid()}`;
          const target = targets.get(sub.workflow_type);
          const init = {
            method: "POST",
            headers: { "content-type": "application/json", "idempotency-key": key },
            body: JSON.stringify({
              workflow_type: sub.workflow_type,
              workflow_run_id: runId,
              event,
              input: event.payload,
            }),
          };
          let status = 0;
          try {
            const res = target.service
              ? await env[target.service].fetch(`https://${target.service.toLowerCase()}.internal${target.path}`, init)
              : await fetch(target.webhook, init);
            await res.arrayBuffer();
            status = res.status;
          } catch {}
          return { sub, key, runId, status, started: status >= 200 && status < 300 };
        }),
      );
      const statements = [];
      for (const r of results) {
        if (r.started) {
          report.started++;
          // The run's provenance, as workflow_runner.cpp writes it in the same commit as the start
          // (workflow.run_started; the bench's target never answers "completed").
          const payload = {
            workflow_type: r.sub.workflow_type,
            workflow_run_id: r.runId,
            subscription_id: r.sub.subscription_id,
            trigger_event_id: event.event_id,
            trigger_event_type: event.event_type,
            idempotency_key: r.key,
            http_status: r.status,
          };
          statements.push(
            db
              .prepare(
                "INSERT OR IGNORE INTO events (event_id, tenant_id, event_type, entity_type, entity_id, payload_json, " +
                  "idempotency_key, caused_by, workflow_run_id, source_system, occurred_at, recorded_at) " +
                  "VALUES (?1, ?2, 'workflow.run_started', 'workflow_run', ?3, ?4, ?5, ?6, ?3, 'siteswarm-events-service', ?7, ?7)",
              )
              .bind(
                ulid(),
                row.tenant_id,
                r.runId,
                JSON.stringify(payload),
                `workflow.run_started:${r.key}`,
                `event:${event.event_id}`,
                stamp,
              ),
          );
          statements.push(
            db
              .prepare(
                "INSERT OR IGNORE INTO event_consumer_dedupe (consumer, seq, dedupe_key, event_id, created_at) " +
                  "VALUES (?1, ?5, ?2, ?3, ?4)",
              )
              .bind(CONSUMER, r.key, event.event_id, stamp, row.seq),
          );
        }
        statements.push(
          db
            .prepare(
              "INSERT OR IGNORE INTO workflow_run_log (workflow_run_id, consumer, workflow_type, event_id, subscription_id, " +
                "status, http_status, started_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .bind(
              r.runId,
              CONSUMER,
              r.sub.workflow_type,
              event.event_id,
              r.sub.subscription_id,
              r.started ? "started" : "failed",
              r.status || null,
              stamp,
            ),
        );
      }
      statements.push(
        db
          .prepare(
            "INSERT INTO event_drain_state (consumer, cursor, cursor_seq, last_run_at, events_read) " +
              "VALUES (?1, ?2, ?4, ?3, 1) ON CONFLICT (consumer) DO UPDATE SET cursor = excluded.cursor, " +
              "cursor_seq = excluded.cursor_seq, last_run_at = excluded.last_run_at, " +
              "events_read = events_read + excluded.events_read",
          )
          .bind(CONSUMER, event.event_id, stamp, row.seq),
      );
      await db.batch(statements);
      report.read++;
      report.cursor = event.event_id;
    }
    return report;
  } finally {
    await db.prepare("DELETE FROM cron_locks WHERE name = ?1 AND holder = ?2").bind(lock, holder).run();
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/api/events" && request.method === "POST") return emit(request, env);
    if (!isOperator(request, env)) return error(401, "unauthorized", "operator endpoint");
    if (url.pathname === "/api/events" && request.method === "GET") return read(url, env);
    if (url.pathname === "/admin/events/drain" && request.method === "POST") {
      return json(200, { consumers: { [CONSUMER]: await drain(env) } });
    }
    return error(404, "not_found", "no route");
  },
};
