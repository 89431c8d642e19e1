// A fake C++ core in JS: the exports of docs/abi.md over a real WebAssembly.Memory, so the host can
// be unit-tested in plain Node. Handlers are generator functions: `yield [effects]` suspends the run
// and resumes with the results in the same order once all of them have been delivered (the host may
// deliver them in several ss_resume calls, in the order they settle). `yield { effects, answer }`
// sends an answer known in advance with them (docs/abi.md): the output if every one succeeds.

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const PAGE = 65536;

/**
 * @param handlers `{ [op or "METHOD /path"]: function* (message, core) }`; a fetch whose route is
 *   unknown gets 404. Throwing `new WebAssembly.RuntimeError()` from a handler simulates a trap.
 * @returns a factory `() => ({ exports })` plus `stats` (instances, deliveries).
 */
export function fakeCore(handlers) {
  const stats = { instances: 0, deliveries: [], initialized: 0 };
  const factory = () => {
    stats.instances++;
    const exports = makeExports(handlers, stats);
    stats.exports = exports; // the latest instance's (its `runs` map among them)
    return { exports };
  };
  factory.stats = stats;
  return factory;
}

function makeExports(handlers, stats) {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 1024 });
  let top = 8; // bump allocator; grows memory like a real malloc would
  const runs = new Map();
  let nextRun = 1;

  const alloc = (len) => {
    const ptr = top;
    top += (len + 7) & ~7;
    if (top > memory.buffer.byteLength) memory.grow(Math.ceil((top - memory.buffer.byteLength) / PAGE));
    return ptr;
  };
  const read = (ptr, len) => decoder.decode(new Uint8Array(memory.buffer, ptr, len));

  function step(run, value) {
    const { done, value: out } = run.gen.next(value);
    if (done) {
      run.state = 1;
      run.data = out;
      return;
    }
    const list = Array.isArray(out) ? out : out.effects;
    const effects = list.map((e, i) => ({ id: run.nextEffect + i, ...e }));
    run.nextEffect += effects.length;
    run.waitingFor = effects.map((e) => e.id);
    run.results = new Map();
    run.pending = effects;
    run.answer = Array.isArray(out) ? null : out.answer;
  }

  // docs/abi.md "Body apart": a fetch output's string body after its JSON and one line feed.
  const outputText = (run, data) => {
    const apart = run.bodyApart && typeof data?.body === "string";
    const { body, ...rest } = apart ? data : {};
    return apart ? `${JSON.stringify(rest)}\n${body}` : JSON.stringify(data);
  };

  return {
    memory,
    _initialize() {
      stats.initialized++;
    },
    ss_alloc: (len) => (stats.failAlloc ? 0 : alloc(len)),
    ss_free() {},
    ss_start(ptr, len) {
      let message;
      try {
        message = JSON.parse(read(ptr, len));
      } catch {
        return 0;
      }
      const key =
        message.op === "fetch" ? `${message.request.method} ${new URL(message.request.url).pathname}` : message.op;
      const handler = handlers[key] ?? handlers[message.op] ?? notFound;
      const bodyApart = message.op === "fetch" && message.bodyApart === true;
      const run = { gen: handler(message), state: 0, nextEffect: 1, pending: [], bodyApart };
      const id = nextRun++;
      runs.set(id, run);
      step(run, undefined);
      return id;
    },
    ss_state: (id) => runs.get(id)?.state ?? -1,
    ss_data_ptr(id) {
      const run = runs.get(id);
      let text;
      if (run.state === 1) text = outputText(run, run.data);
      else {
        // An answer known in advance comes once, after the effects it belongs to.
        text = JSON.stringify(run.pending) + (run.answer ? `\n${outputText(run, run.answer)}` : "");
        run.pending = [];
        run.answer = null;
      }
      const bytes = encoder.encode(text);
      const ptr = alloc(bytes.length);
      new Uint8Array(memory.buffer, ptr, bytes.length).set(bytes);
      run.lastData = bytes.length;
      return ptr;
    },
    ss_data_len: (id) => runs.get(id).lastData,
    ss_resume(id, ptr, len) {
      const run = runs.get(id);
      const { now, results } = JSON.parse(read(ptr, len));
      if (typeof now !== "number" || !results.length) throw new Error("bad resume message");
      stats.deliveries.push(results.map((r) => r.id));
      for (const r of results) run.results.set(r.id, r);
      if (run.waitingFor.every((e) => run.results.has(e))) {
        step(
          run,
          run.waitingFor.map((e) => run.results.get(e)),
        );
      }
    },
    ss_drop(id) {
      runs.delete(id);
    },
    runs,
  };
}

function* notFound() {
  return json(404, { error: { code: "not_found", message: "no such route" } });
}

export function json(status, body, extra = {}) {
  return {
    status,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    ...extra,
  };
}
