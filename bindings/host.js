// The generic JS host of a SiteSwarm C++ core (docs/abi.md).
//
// A worker's shim is three lines:
//   import wasm from "../../dist/wasm/leads.wasm";
//   import { defineWorker } from "../../bindings/host.js";
//   export default defineWorker(wasm, { service: "siteswarm-leads-service" });
//
// The core is instantiated once per isolate and serves many concurrent runs. A run is driven by the
// effect loop below: the core issues effects, the host performs them against the real `env`, and
// feeds every settled result back until the core is done. A trap poisons the instance: every run on
// it answers 500 internal — except a run whose answer the core had already given in advance (docs/abi.md
// "Answers known in advance") and whose effects all succeeded — and the next request builds a fresh one.
import { hexBytes } from "./effects/http.js";
import { perform } from "./effects/index.js";
import { faultsRoute, hooksOn, InjectedTrap, performWithFaults } from "./faults.js";
import { Core, CoreTrap, newProfile } from "./instance.js";
import {
  bodilessRequestMessage,
  envelope,
  INTERNAL_ERROR,
  internalErrorResponse,
  JSON_ERROR_HEADERS,
  NO_CF,
  requestMessage,
  toResponse,
  UnreadableBody,
  unreadableBodyResponse,
} from "./messages.js";
import { mutates, ReplayMemo, stillHolds } from "./replay.js";
import { noStream, ResponseStream } from "./stream.js";

// Workers RPC needs a WorkerEntrypoint class from "cloudflare:workers", which exists only in workerd;
// plain-Node tests of this host get null and plain handler objects.
const WorkerEntrypoint = await import("cloudflare:workers").then(
  (m) => m.WorkerEntrypoint,
  () => null,
);

/**
 * @param source a WebAssembly.Module (what `import wasm from "x.wasm"` gives on Workers), or a
 *   function returning an instance-like `{ exports }` (tests drive a fake core this way).
 * @param options.service the wrangler name, used in log lines.
 * @param options.rpc names of the core's RPC methods. When given (and inside workerd), the result is
 *   a WorkerEntrypoint class: the same handlers, plus those methods over Workers RPC on the default
 *   entrypoint (`env.CMS_SERVICE.getContent(...)`). See also defineRpcEntrypoint (bindings/rpc.js).
 * @param options.cf the `request.cf` fields the core reads (e.g. `["country", "colo"]`); none by
 *   default, and then `request.cf` is never read (docs/abi.md).
 * @param options.parts the env names of the service bindings to this worker's parts (more workers
 *   built from its library: the ledger's `["EVENTS_RUNNER", "EVENTS_CONFIG"]`). With test hooks on,
 *   the host's own hooks (`/__test/faults`, bindings/faults.js) sent to this worker go to its parts
 *   too, so a test's faults hold wherever the worker's work runs. Nothing else changes.
 */
export function defineWorker(source, { service, rpc = [], cf = NO_CF, parts = [] } = {}) {
  const handlers = workerHandlers(hostFor(source, service), service, cf, parts);
  if (rpc.length === 0 || !WorkerEntrypoint) return handlers;

  class CoreWorker extends WorkerEntrypoint {
    fetch(request) {
      return handlers.fetch(request, this.env, this.ctx);
    }
    scheduled(controller) {
      return handlers.scheduled(controller, this.env, this.ctx);
    }
    queue(batch) {
      return handlers.queue(batch, this.env, this.ctx);
    }
  }
  addRpcMethods(CoreWorker, source, service, rpc);
  return CoreWorker;
}

/** Defines each method on `cls` as one `{"op":"rpc"}` run of the core. */
export function addRpcMethods(cls, source, service, methods) {
  for (const method of methods) {
    Object.defineProperty(cls.prototype, method, {
      value(...args) {
        return runRpc(source, service, this.env, method, args);
      },
    });
  }
}

function workerHandlers(host, service, cfFields, parts) {
  const handlers = {
    async fetch(request, env, ctx) {
      if (env?.LOCAL_CRON_TRIGGERS === "1" && request.url.includes("scheduled")) {
        const triggered = await localCronTrigger(request, env, handlers.scheduled);
        if (triggered) return triggered;
      }
      if (hooksOn(env)) {
        const injected = await faultsRoute(request, env, parts); // test hooks only (bindings/faults.js)
        if (injected) return injected;
      }
      const counts = env?.SS_COUNT_D1 === "1" ? { d1: 0 } : null;
      // SS_REPLAY=0 in the env turns replays off (a bench measures every request through the core).
      const replays = env?.SS_REPLAY === "0" ? null : host.replays;
      if (replays && request.method === "GET") {
        // An answer the core marked replayable, while its reads still give the same (bindings/replay.js).
        const asked = replays.generation;
        const answer = replays.find(request, Date.now());
        const holds =
          answer && (await stillHolds(replays, answer, (effect) => performWithFaults(effect, env, perform)));
        // Nothing was cleared and the answer's time did not run out while KV answered.
        if (holds && replays.generation === asked && Date.now() < answer.until) {
          const response = toResponse(answer.response);
          if (counts) response.headers.set(D1_ROUND_TRIPS_HEADER, "0");
          if (hooksOn(env)) response.headers.set(REPLAYED_HEADER, "1"); // tests tell a replay apart
          return response;
        }
      }
      const generation = replays?.generation;
      const trace = replays && request.method === "GET" ? [] : null;
      const stream = new ResponseStream();
      // A request without a body to read (a GET) is built at once: no await before the core runs.
      // The message the core gets (its body, should the core hand the request on). A body whose
      // stream fails before its end (a chunked body cut short, fewer bytes than Content-Length, the
      // client gone) is the client's fault: 400 before the core runs, never a 500 (docs/abi.md).
      let sent = bodilessRequestMessage(request, cfFields);
      if (!sent) {
        try {
          sent = await requestMessage(request, cfFields);
        } catch (err) {
          if (err instanceof UnreadableBody) return unreadableBodyResponse();
          throw err;
        }
      }
      const message = sent;
      const run = host.run(env, () => fetchMessage(env, message), stream, counts, trace);
      // A streamed body (docs/abi.md "Streamed responses") is answered when the core opens it, a
      // response sent early ("Answering early") when the core sends it; the run goes on in waitUntil
      // while the client reads (or after it has its answer).
      const first = await Promise.race([
        run.then((out) => ({ out })),
        stream.opened.then((response) => ({ response })),
      ]);
      if (first.response) {
        const done = run.then((out) => stream.finish(out));
        ctx?.waitUntil?.(done);
        return first.response;
      }
      const { out } = first;
      if (out?.streamed || out?.sent) {
        host.fail(new Error("the core ended a response it never opened or sent"));
        return internalErrorResponse();
      }
      try {
        if (!out) return internalErrorResponse();
        const handOnTo = out.headers?.[HAND_ON_HEADER];
        if (handOnTo) {
          // The body as it came: a body that is not UTF-8 crossed as hex (bindings/messages.js).
          const body = sent?.bodyHex !== undefined ? hexBytes(sent.bodyHex) : (sent?.body ?? "");
          return await handOn(request, body, env, String(handOnTo));
        }
        const response = toResponse(out);
        if (out.replay && trace) replays.record(request, out, trace, generation);
        if (counts) response.headers.set(D1_ROUND_TRIPS_HEADER, String(counts.d1));
        return response;
      } catch (err) {
        host.fail(err); // the core answered something that is not a valid Response
        return internalErrorResponse();
      }
    },

    async scheduled(controller, env, ctx) {
      const done = host.run(env, () => ({
        ...envelope("scheduled", env),
        cron: controller.cron,
        scheduledTime: controller.scheduledTime,
      }));
      ctx?.waitUntil(done);
      const out = await done;
      if (!out?.ok) throw new Error(`${service}: scheduled run "${controller.cron}" failed`);
    },

    async queue(batch, env, _ctx) {
      const run = (messages) =>
        host.run(env, () => ({
          ...envelope("queue", env),
          queue: batch.queue,
          messages: messages.map((m) => ({
            id: m.id,
            body: m.body,
            attempts: m.attempts,
            timestamp: +m.timestamp,
          })),
        }));
      let messages = batch.messages;
      let out = await run(messages);
      if (!out) {
        // A body no JSON can carry (a v8-serialised BigInt or cycle from some producer) fails the
        // message's build before the core runs: those are dropped with a log line, as the cores drop
        // a malformed one, and the rest of the batch runs, rather than all of it being retried until
        // it is dead-lettered for one bad message. Checked only after a failed run: no cost otherwise.
        const readable = messages.filter((m) => isJson(m.body));
        if (readable.length < messages.length) {
          for (const m of messages) {
            if (readable.includes(m)) continue;
            console.error(`${service}: queue message ${m.id} has a body that is not JSON: dropped`);
            m.ack();
          }
          messages = readable;
          out = messages.length > 0 ? await run(messages) : { ack: [] };
        }
      }
      settleBatch(batch, messages, out, service);
    },
  };
  return handlers;
}

// Local runs only (LOCAL_CRON_TRIGGERS=1 among workers/workers.json's local vars: scripts/dev and the
// tests; never deployed): each worker's own port runs one of its crons on `/__scheduled?cron=…`
// (wrangler dev's `--test-scheduled` route) or `/cdn-cgi/handler/scheduled?cron=…` (Miniflare's,
// which it serves on its entry port alone), `time=` (epoch ms) as the firing's scheduledTime, as
// wrangler and Miniflare take it. The answer waits for the scheduled run (not for the queue
// consumers it may feed) and is JSON: 200 `{"ok":true,…}`, or 500 when the run failed.
const CRON_TRIGGER_PATHS = new Set(["/__scheduled", "/cdn-cgi/handler/scheduled", "/cdn-cgi/mf/scheduled"]);

async function localCronTrigger(request, env, scheduled) {
  const url = new URL(request.url);
  if (!CRON_TRIGGER_PATHS.has(url.pathname)) return null;
  const cron = url.searchParams.get("cron") ?? "";
  const time = Number(url.searchParams.get("time") ?? Number.NaN);
  const scheduledTime = Number.isSafeInteger(time) && time > 0 ? time : Date.now();
  const waits = [];
  try {
    await scheduled({ cron, scheduledTime, noRetry() {} }, env, {
      waitUntil: (promise) => waits.push(promise),
      passThroughOnException() {},
    });
    await Promise.all(waits);
  } catch (err) {
    console.error(`local cron trigger "${cron}": ${err?.message ?? err}`);
    return Response.json(
      { error: { code: "internal", message: `the scheduled run "${cron}" failed` } },
      { status: 500, headers: { "cache-control": "no-store" } },
    );
  }
  return Response.json({ ok: true, cron, scheduledTime: new Date(scheduledTime).toISOString() });
}

function fetchMessage(env, request) {
  const message = envelope("fetch", env);
  message.request = request;
  message.bodyApart = true; // the output's body after its JSON, unescaped (docs/abi.md)
  return message;
}

/** Runs `{"op":"rpc"}` on the isolate's instance of `source`; `{ok:false,...}` on any failure. */
export async function runRpc(source, service, env, method, args) {
  const out = await hostFor(source, service).run(env, () => ({
    ...envelope("rpc", env),
    method,
    args,
  }));
  if (out) return out;
  // Arguments no JSON can carry (a BigInt, a cycle: Workers RPC clones them) fail the message's
  // build before the core runs. That is the caller's mistake, not the service's: 400, not 500.
  if (!isJson(args)) return { ok: false, status: 400, error: INVALID_RPC_ARGS };
  return { ok: false, status: 500, error: INTERNAL_ERROR };
}

const INVALID_RPC_ARGS = {
  code: "invalid_request",
  message: "the RPC arguments must be JSON values (no BigInt, no cycles)",
};

const MAX_RETRY_DELAY_SECONDS = 43_200;

function isJson(value) {
  try {
    JSON.stringify(value);
    return true;
  } catch {
    return false;
  }
}

// Every message must be either acked or retried: a message the core forgot is retried, not lost.
// `messages`: those of the batch the core was given (all of them, unless some were dropped).
function settleBatch(batch, messages, out, service) {
  if (!out) {
    if (messages === batch.messages) return batch.retryAll();
    for (const message of messages) message.retry();
    return;
  }
  const acked = new Set(out.ack ?? []);
  const retries = new Map((out.retry ?? []).map((r) => [r.id, r]));
  for (const message of messages) {
    if (acked.has(message.id)) {
      message.ack();
      continue;
    }
    if (!retries.has(message.id)) {
      console.error(`${service}: queue message ${message.id} neither acked nor retried: retry`);
    }
    // Queues refuse a delay over 12 hours (and retry() would throw part-way through the batch).
    const delaySeconds = Math.min(retries.get(message.id)?.delaySeconds, MAX_RETRY_DELAY_SECONDS);
    message.retry(delaySeconds > 0 ? { delaySeconds } : undefined);
  }
}

// Profiling (docs/performance.md): with SS_PROFILE=1 in a worker's env, each run's time split
// (instance.js newProfile) goes to the sink set here, or to the log as one `ss-profile {…}` line. Off,
// a run pays one property read.
let profileSink = null;

// D1 round trips (docs/performance.md, the five-drainer bench): with SS_COUNT_D1=1 in a worker's env,
// a fetch answer that is not streamed or sent early names how many calls its run made to D1 bindings.
// Each d1.* effect is one call: d1.all, d1.first and d1.run one statement, d1.batch one batch().
const D1_ROUND_TRIPS_HEADER = "x-ss-d1-round-trips";
// A core's answer naming one of its Service Bindings: the host sends the request there as received
// and answers with that worker's response (docs/abi.md "Handing a request on").
const HAND_ON_HEADER = "x-ss-hand-on";

const unavailable = (message) =>
  new Response(JSON.stringify({ error: { code: "dependency_unavailable", message } }), {
    status: 503,
    headers: JSON_ERROR_HEADERS,
  });

/**
 * The request as received (method, URL, headers; its body as read for the core, which refused one
 * over the limit before naming a binding), sent to `env[binding]`; that worker's response as it
 * streams, neither read nor capped here. A binding that is missing or throws, or a 5xx that is not
 * JSON (the platform's, not the worker's), is 503 `dependency_unavailable`.
 */
async function handOn(request, body, env, binding) {
  const target = env?.[binding];
  if (typeof target?.fetch !== "function") return unavailable(`${binding} is not bound`);
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  const hasBody = request.method !== "GET" && request.method !== "HEAD" && body.length !== 0; // text or bytes
  let response;
  try {
    response = await target.fetch(
      new Request(request.url, { method: request.method, headers, body: hasBody ? body : undefined }),
    );
  } catch (err) {
    console.log(`${binding} did not answer: ${err?.message ?? err}`);
    return unavailable(`${binding} did not answer`);
  }
  if (response.status >= 500 && !/^application\/json/.test(response.headers.get("content-type") ?? "")) {
    await response.body?.cancel().catch(() => {});
    return unavailable(`${binding} did not answer`);
  }
  return response;
}
// With test hooks on, a replayed answer (bindings/replay.js) says so.
const REPLAYED_HEADER = "x-ss-replayed";
/** @param sink null, or a function receiving `{service, op, ...profile}` after each profiled run */
export function setProfileSink(sink) {
  profileSink = sink;
}

// Effects that settle at once and whose result the core does not need at once: while other effects
// are in flight, their results ride along with the next resume instead of costing a resume of their
// own — the analytics beacon's AE point beside its queue send (docs/performance.md "A cheaper
// boundary"), and `response.send` beside the background work's first effects, whose outcome the core
// reads only when that work is done (docs/abi.md "Answering early"). The core sees the same results,
// a little later, never out of order.
const QUIET_KINDS = new Set(["ae.write", "response.send"]);

// Held columns (docs/abi.md): a d1.all asking to `hold` a column (JSON text the core only passes
// on to its answer, e.g. a ledger page's event views written by SQLite) has that column's values
// taken out of its rows (bindings/effects/d1.js) and kept here, a handle in their place. The run's
// output names where in its body they go ("splice"); they are joined in here, so those bytes never
// cross into wasm and back.
function holdColumn(result, held) {
  const value = result?.ok ? result.value : null;
  if (!value?.heldValues) return result;
  held.push(value.heldValues);
  value.held = held.length;
  delete value.heldValues;
  return result;
}

const bodyEncoder = new TextEncoder();
// As bindings/instance.js decodes a body: a leading U+FEFF stays.
const pieceDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

// A body's UTF-8 bytes cut at each splice's byte offset, the pieces decoded apart: the held values
// go in between them.
function bodyPieces(bytes, splices) {
  const pieces = [];
  let from = 0;
  for (const { at } of splices) {
    if (!(at >= from && at <= bytes.length)) throw new Error("a splice outside its body");
    if (at < bytes.length && (bytes[at] & 0xc0) === 0x80) throw new Error("a splice inside a character");
    pieces.push(pieceDecoder.decode(bytes.subarray(from, at)));
    from = at;
  }
  pieces.push(pieceDecoder.decode(bytes.subarray(from)));
  return pieces;
}

// An output whose body names held values: the body's pieces (cut at each splice's byte offset; the
// bytes of a body that came apart are kept by bindings/instance.js) with the values joined in between.
function spliceHeld(out, held) {
  if (!Array.isArray(out?.splice)) return out;
  const splices = out.splice;
  const pieces = bodyPieces(out.bodyBytes ?? bodyEncoder.encode(out.body ?? ""), splices);
  delete out.splice;
  delete out.bodyBytes;
  let body = pieces[0];
  for (let i = 0; i < splices.length; i++) {
    const values = held[splices[i].held - 1];
    if (!values) throw new Error("a splice of values the run never held");
    held[splices[i].held - 1] = null; // spliced once
    body += values.join(String(splices[i].sep ?? "")) + pieces[i + 1];
  }
  out.body = body;
  return out;
}

const hosts = new WeakMap(); // source → Host: one instance per isolate, whoever asks

function hostFor(source, service) {
  if (!hosts.has(source)) hosts.set(source, new Host(source, service));
  return hosts.get(source);
}

class Host {
  #source;
  #service;
  #core = null;
  /** This instance's replayable answers (bindings/replay.js). */
  replays = new ReplayMemo();

  constructor(source, service) {
    this.#source = source;
    this.#service = service ?? "siteswarm-worker";
  }

  /**
   * Builds the message, runs it to the end; the output message, or null after logging why. `stream`
   * (fetch runs only) performs the `response.*` effects.
   */
  async run(env, buildMessage, stream = null, counts = null, trace = null) {
    try {
      let message = buildMessage();
      if (message instanceof Promise) message = await message;
      const prof = env?.SS_PROFILE === "1" ? newProfile() : null;
      const started = prof ? performance.now() : 0;
      const out = await this.#drive(this.#instance(), message, env, stream, prof, counts, trace);
      for (const line of out.logs ?? []) console.log(line);
      if (prof) {
        prof.total_ms = performance.now() - started;
        const record = { service: this.#service, op: message.op, ...prof };
        if (profileSink) profileSink(record);
        else console.log(`ss-profile ${JSON.stringify(record)}`);
      }
      return out;
    } catch (err) {
      this.fail(err);
      return null;
    }
  }

  /** Logs a failure without its stack or any message content; a trap once per instance. */
  fail(err) {
    if (err instanceof CoreTrap) {
      this.replays.clear(); // what the trapped instance answered is not the next one's
      if (err.logged) return;
      err.logged = true;
      const cause = err.cause?.message ?? String(err.cause);
      console.error(`${this.#service}: wasm trap (${cause}); the instance is dropped`);
      return;
    }
    console.error(`${this.#service}: ${err?.message ?? err}`);
  }

  #instance() {
    if (!this.#core || this.#core.poisoned) this.#core = Core.create(this.#source);
    return this.#core;
  }

  // The effect loop: start, then perform effects and resume with whatever has settled. `trace`
  // (an array, or null) receives each performed effect with its result.
  async #drive(core, message, env, stream, prof, counts, trace) {
    const id = core.start(message, prof);
    if (id === 0) throw new Error("the core rejected the input message");
    const inFlight = new Map();
    const settled = [];
    const quiet = new Set(); // ids of settled-at-once effects whose result need not resume the core
    let failure = null; // a performer that threw: an injected trap (bindings/faults.js) or a host bug
    let mutated = false; // an effect that may change what a replayable answer would be: see finally
    const held = []; // the values of d1.all's held columns, handle n at n - 1 (docs/abi.md)
    try {
      for (;;) {
        const state = core.state(id);
        if (state === 1) return spliceHeld(core.data(id, prof), held);
        if (state !== 0) throw new Error(`run ${id} is unknown to the core`);
        const { effects, answer } = core.effects(id, prof);
        const t0 = prof ? performance.now() : 0;
        for (const effect of effects) {
          if (counts && String(effect.kind).startsWith("d1.")) counts.d1++;
          if (mutates(effect.kind)) {
            mutated = true;
            this.replays.clear();
          }
          let performed = String(effect.kind).startsWith("response.")
            ? (stream?.perform(effect) ?? Promise.resolve(noStream(effect)))
            : performWithFaults(effect, env, perform);
          if (effect.kind === "d1.all" && effect.hold !== undefined) {
            performed = performed.then((result) => holdColumn(result, held));
          }
          // Traced when issued, its result filled in when it settles: a run whose effect is still in
          // flight at its end has a trace entry without a result, and is not recorded.
          const traced = { effect, result: null };
          const done = performed.then(
            (result) => {
              inFlight.delete(done);
              settled.push(result);
              traced.result = result;
            },
            (err) => {
              inFlight.delete(done);
              failure ??= err;
            },
          );
          inFlight.set(done, effect.id);
          trace?.push(traced);
          if (QUIET_KINDS.has(effect.kind)) quiet.add(effect.id);
        }
        const t1 = prof ? performance.now() : 0;
        // An answer known in advance (docs/abi.md): these effects are all the run waits for, and if
        // every one succeeds the run ends with it — no resume of the core is needed.
        if (answer) while (!failure && inFlight.size > 0) await Promise.race(inFlight.keys());
        const answered = answer !== null && !failure && settled.every((r) => r.ok === true);
        // Waits for a result worth a resume: one that is not quiet, or the last one in flight.
        while (!answered && !failure && !settled.some((r) => !quiet.has(r.id))) {
          if (inFlight.size === 0) {
            if (settled.length === 0) throw new Error(`run ${id} waits with no effect in flight`);
            break;
          }
          await Promise.race(inFlight.keys());
        }
        for (const r of settled) quiet.delete(r.id);
        // An injected trap kills the instance as a real one would: every run on it ends.
        if (failure) throw failure instanceof InjectedTrap ? core.kill(failure) : failure;
        if (prof) {
          prof.perform_ms += t1 - t0;
          prof.io_wait_ms += performance.now() - t1;
          prof.effects += effects.length;
        }
        if (answered) return spliceHeld(answer, held);
        core.resume(id, { now: Date.now(), results: settled.splice(0) }, prof);
      }
    } finally {
      // Again at the end: an answer recorded while this run's writes were in flight may predate them.
      if (mutated) this.replays.clear();
      if (!core.poisoned) core.drop(id);
    }
  }
}
