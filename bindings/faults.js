// Test-only fault injection for the effect loop (docs/testing.md, "Faults"). Honoured only when the
// worker's SITESWARM_TEST_HOOKS var is "1", which only the integration tests and the bench set; a
// deployed worker never has it, and then this file does nothing but one string comparison per run.
//
//   POST   /__test/faults  [{"kind":"d1.*","match":"INSERT INTO leads","rate":0.01,"when":"before",
//                            "delayMs":0,"seed":7}, …]   replaces this isolate's rules
//   DELETE /__test/faults                                 clears them
//   GET    /__test/faults                                 {"rules":n,"fired":[count per rule]}
//
// A worker deployed as several (the ledger: events and its parts, defineWorker's `parts`) passes each
// of these on to its parts: rules set on the entry hold in every part (faultsRoute).
//
// kind: an effect kind (`d1.run`) or a family (`d1.*`, `kv.*`, `queue.*`, `service`, `fetch`);
// match: a substring of the effect's SQL, URL, key or queue binding (optional); rate: the probability a
// matching effect fails (a seeded generator: a run is reproducible); when: "before" (the effect never
// happens: an outage) or "after" (it happens, then its answer is lost: the caller must not repeat it
// blindly) or "trap" (the effect never happens and the instance dies there, as on a wasm trap: every
// run on it ends, a response not sent yet is a 500, and the next request gets a fresh instance);
// delayMs: wait first (a slow dependency; with rate 1 and a long delay, a hang: an effect with its own
// `timeoutMs` shorter than the delay, such as a monitor's probe, then gets the timeout error its
// executor gives, at that timeout); times: the rule fires at most this often (a single trap that a test
// can wait for through GET); skip: the rule lets its first `skip` matching effects through (a trap at
// the 4th D1 batch of a drain).
import { seeded } from "./faults-random.js";

const ROUTE = "/__test/faults";
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let rules = [];

export const hooksOn = (env) => env?.SITESWARM_TEST_HOOKS === "1";

/** What performWithFaults throws for a `when: "trap"` rule; the host poisons the instance with it. */
export class InjectedTrap extends Error {
  constructor(kind) {
    super(`${kind}: injected test trap`);
    this.name = "InjectedTrap";
  }
}

/**
 * The answer to a `/__test/faults` request when hooks are on, else null (the core answers it).
 * @param parts the env names of the worker's parts' service bindings (defineWorker's `parts`: the
 *   ledger's entry has EVENTS_RUNNER and EVENTS_CONFIG). The same request goes to each part once this
 *   worker has taken it, so rules set on the entry apply to the whole worker; GET's `fired` is then
 *   the sum, rule by rule, over the entry and its parts (each holds its own copy of the rules: a
 *   `times` is per worker). The first part that refuses it (not 200) gives the answer.
 */
export async function faultsRoute(request, env, parts = []) {
  // Most requests are not for this route: a substring test first, no URL parse per request.
  if (!hooksOn(env) || !request.url.includes(ROUTE)) return null;
  const { pathname } = new URL(request.url);
  if (pathname !== ROUTE) return null;
  const fetchers = parts.filter((name) => typeof env[name]?.fetch === "function");
  if (fetchers.length === 0) return ownFaultsRoute(request);
  const body = request.method === "POST" ? await request.text() : undefined;
  const init = () => ({ method: request.method, headers: { "content-type": "application/json" }, body });
  const own = await ownFaultsRoute(new Request(request.url, init()));
  if (own.status !== 200) return own;
  const answers = [await own.json()];
  for (const name of fetchers) {
    const res = await env[name].fetch(request.url, init());
    if (res.status !== 200) return res;
    answers.push(await res.json());
  }
  if (request.method !== "GET") return Response.json(answers[0]);
  const fired = answers[0].fired.map((_, i) => answers.reduce((sum, a) => sum + (a.fired?.[i] ?? 0), 0));
  return Response.json({ rules: answers[0].rules, fired });
}

async function ownFaultsRoute(request) {
  if (request.method === "DELETE") {
    rules = [];
    return Response.json({ rules: 0 });
  }
  if (request.method === "GET") return Response.json({ rules: rules.length, fired: rules.map((r) => r.fired) });
  if (request.method !== "POST") return Response.json({ error: { code: "method_not_allowed" } }, { status: 405 });
  let list;
  try {
    list = await request.json();
  } catch {
    list = null;
  }
  if (!Array.isArray(list) || !list.every(validRule)) {
    return Response.json(
      {
        error: {
          code: "invalid_request",
          message:
            "expected an array of {kind, rate, match?, when? (before|after|trap), delayMs?, times?, skip?, seed?}",
        },
      },
      { status: 400 },
    );
  }
  rules = list.map((r, i) => ({
    ...r,
    when: r.when ?? "before",
    delayMs: r.delayMs ?? 0,
    skip: r.skip ?? 0,
    seen: 0,
    fired: 0,
    next: seeded(r.seed ?? i + 1),
  }));
  return Response.json({ rules: rules.length });
}

function validRule(r) {
  return (
    r &&
    typeof r.kind === "string" &&
    typeof r.rate === "number" &&
    r.rate >= 0 &&
    r.rate <= 1 &&
    (r.match === undefined || typeof r.match === "string") &&
    (r.when === undefined || ["before", "after", "trap"].includes(r.when)) &&
    (r.delayMs === undefined || (Number.isInteger(r.delayMs) && r.delayMs >= 0 && r.delayMs <= 60_000)) &&
    (r.times === undefined || (Number.isInteger(r.times) && r.times >= 1)) &&
    (r.skip === undefined || (Number.isInteger(r.skip) && r.skip >= 0))
  );
}

const subject = (effect) =>
  [
    effect.sql,
    effect.url,
    effect.key,
    effect.binding,
    effect.request?.url,
    ...(effect.statements ?? []).map((s) => s.sql),
  ]
    .filter((x) => typeof x === "string")
    .join("\n");

function ruleFor(effect) {
  const kind = String(effect.kind);
  const family = `${kind.split(".")[0]}.*`;
  for (const rule of rules) {
    if (rule.kind !== kind && rule.kind !== family) continue;
    if (rule.match && !subject(effect).includes(rule.match)) continue;
    if (rule.times !== undefined && rule.fired >= rule.times) continue;
    if (rule.seen++ < rule.skip) continue;
    if (rule.next() < rule.rate) {
      rule.fired++;
      return rule;
    }
  }
  return null;
}

/** `perform(effect, env)` with this isolate's rules applied (hooks on and rules set), else as is. */
export async function performWithFaults(effect, env, perform) {
  if (rules.length === 0 || !hooksOn(env)) return perform(effect, env);
  const rule = ruleFor(effect);
  if (!rule) return perform(effect, env);
  const timeoutMs = Number(effect.timeoutMs) || 0; // 0: the effect has no timeout of its own
  const hangs = rule.when !== "trap" && timeoutMs > 0 && rule.delayMs >= timeoutMs;
  if (hangs) {
    // The effect's own timeout ends the hang first, as its executor would (effects/service.js);
    // with "after" the effect still happens, its answer too late.
    await Promise.all([rule.when === "after" ? perform(effect, env) : null, sleep(timeoutMs)]);
    const message = `${effect.kind}: no answer within ${timeoutMs} ms (injected hang)`;
    return {
      id: effect.id,
      ok: false,
      error: { code: "timeout", message, elapsedMs: timeoutMs },
      elapsedMs: timeoutMs,
    };
  }
  if (rule.delayMs > 0) await sleep(rule.delayMs);
  if (rule.when === "trap") throw new InjectedTrap(String(effect.kind));
  if (rule.when === "after") await perform(effect, env);
  const family = String(effect.kind).split(".")[0];
  return {
    id: effect.id,
    ok: false,
    error: { code: `${family}_error`, message: `${effect.kind}: injected test fault` },
  };
}
