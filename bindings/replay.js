// Replayable answers (docs/abi.md "Replayable answers"): a GET whose core marked its answer
// `replay: {until, headers}` is answered again by the host, without a run, for a request with the
// same URL and the same values of those headers, until `until`, as long as every effect of the
// recorded run — only reads the host can repeat: kv.get — gives the same result again. The core
// decides what may be replayed and for how long (cms: an answer from the KV document with the tenant
// cache standing for D1); the host only repeats the reads and compares.
//
// Whatever could change what the core would answer clears every recorded answer of the instance:
// any effect other than a read (a D1 statement, a KV write, a queue send, a service call, …), issued
// and again when its run ends, and a new instance. A run that started before such a clear records
// nothing.

// Effects that neither change stored state nor the core's instance state. A run issuing anything
// else clears the answers; a recorded run may only have issued REPEATABLE_KINDS.
const READ_KINDS = new Set(["kv.get", "crypto.sha256", "crypto.hmac_sha256", "crypto.random", "ae.write", "sleep"]);
const REPEATABLE_KINDS = new Set(["kv.get"]);
const MAX_ANSWERS = 512;
// The bytes of bodies and read values kept per instance: beyond it every answer is forgotten.
const MAX_BYTES = 4 * 1024 * 1024;

export const mutates = (kind) => !READ_KINDS.has(kind) && !String(kind).startsWith("response.");

export class ReplayMemo {
  #byUrl = new Map(); // url → Map(header names joined → { names, answers: Map(values key → answer) })
  #count = 0;
  #bytes = 0;
  #generation = 0;

  get generation() {
    return this.#generation;
  }

  get size() {
    return this.#count;
  }

  clear() {
    this.#generation++;
    if (this.#count === 0) return;
    this.#byUrl.clear();
    this.#count = 0;
    this.#bytes = 0;
  }

  /** The recorded answer for this request at `now`, or null. */
  find(request, now) {
    if (this.#count === 0 || request.method !== "GET") return null;
    const groups = this.#byUrl.get(request.url);
    if (!groups) return null;
    for (const group of groups.values()) {
      const key = valuesKey(request.headers, group.names);
      const answer = group.answers.get(key);
      if (!answer) continue;
      if (now < answer.until) return answer;
      this.forget(answer);
      return null;
    }
    return null;
  }

  forget(answer) {
    const { group } = answer;
    if (group.answers.get(answer.key) !== answer) return;
    group.answers.delete(answer.key);
    this.#count--;
    this.#bytes -= answer.bytes;
    if (group.answers.size > 0) return;
    const groups = this.#byUrl.get(answer.url);
    groups?.delete(group.namesKey);
    if (groups?.size === 0) this.#byUrl.delete(answer.url);
  }

  /**
   * Records a finished run's answer when the core marked it replayable, no clear happened since the
   * run began (`generation`), and each of its effects was a repeatable read that succeeded.
   * @param trace [{ effect, result }] in the order performed
   */
  record(request, out, trace, generation) {
    const replay = out?.replay;
    if (!replay || request.method !== "GET" || generation !== this.#generation) return;
    if (!(Number(replay.until) > Date.now()) || !Array.isArray(replay.headers)) return;
    if (!trace.every(({ effect, result }) => REPEATABLE_KINDS.has(effect.kind) && result?.ok)) return;
    const reads = trace.map(({ effect, result }) => ({ effect, value: result.value?.value }));
    const { replay: _, logs: __, ...response } = out;
    const bytes = String(response.body ?? "").length + reads.reduce((n, r) => n + String(r.value ?? "").length, 0);
    if (this.#count >= MAX_ANSWERS || this.#bytes + bytes > MAX_BYTES) this.clear();
    const names = replay.headers.map(String);
    let groups = this.#byUrl.get(request.url);
    if (!groups) {
      groups = new Map();
      this.#byUrl.set(request.url, groups);
    }
    const namesKey = names.join("\n");
    let group = groups.get(namesKey);
    if (!group) {
      group = { names, namesKey, answers: new Map() };
      groups.set(namesKey, group);
    }
    const key = valuesKey(request.headers, names);
    const previous = group.answers.get(key); // two runs of one request ended close together
    if (previous) {
      this.#count--;
      this.#bytes -= previous.bytes;
    }
    const answer = { url: request.url, group, key, until: Number(replay.until), reads, response, bytes };
    this.#count++;
    this.#bytes += bytes;
    group.answers.set(key, answer);
  }
}

// The values of `names` in `headers` (null for an absent one), as one string.
function valuesKey(headers, names) {
  return JSON.stringify(names.map((name) => headers.get(name)));
}

/**
 * Repeats the answer's reads through `performRead(effect)`; true when each gives what it gave when
 * the answer was recorded (else the answer is forgotten and the core must run).
 */
export async function stillHolds(memo, answer, performRead) {
  for (const { effect, value } of answer.reads) {
    let result = null;
    try {
      result = await performRead(effect);
    } catch {
      // An injected trap (bindings/faults.js) or a host bug: the core's own run meets it again.
    }
    if (!result?.ok || result.value?.value !== value) {
      memo.forget(answer);
      return false;
    }
  }
  return true;
}
