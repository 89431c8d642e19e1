// One instantiated C++ core and the raw ABI calls on it (docs/abi.md).
//
// Why a class: the host keeps one Core per isolate and many runs on it; a trap anywhere poisons the
// whole Core, so every call goes through `#call`, which records the poisoning and rethrows.

const encoder = new TextEncoder();
const decoder = new TextDecoder();
// A body after the output's JSON is the handler's bytes as they are: a leading U+FEFF stays (the
// default decoder would drop it, which the body inside the JSON never did).
const bodyDecoder = new TextDecoder("utf-8", { ignoreBOM: true });
// Messages up to this many UTF-16 units are encoded into a 3×-sized allocation directly; larger ones
// (request bodies, D1 rows) are encoded first, so that memory never grows by 3× their size.
const DIRECT_ENCODE_MAX_CHARS = 16 * 1024;
const LINE_FEED = 0x0a;
// A run not resumed for this long has lost its invocation: Workers cancelled it (the client went
// away, a caller aborted its service-binding call) and never resumes what it awaited, so the host's
// `finally` that drops the run never runs. Longer than any one wait on I/O can last (a cron or queue
// handler has 15 minutes in all); a long stream is resumed for every chunk, so it stays. Such runs
// are dropped at the next start, at most once a minute (docs/abi.md "Runs the host never finishes").
const STALE_RUN_MS = 30 * 60 * 1000;
const SWEEP_EVERY_MS = 60 * 1000;

// WASI errno values we answer with.
const ERRNO_SUCCESS = 0;
const ERRNO_NOSYS = 52;
const ERRNO_SPIPE = 70;

/** Thrown for every call on a Core that has trapped (once) or was poisoned before. */
export class CoreTrap extends Error {
  constructor(cause) {
    super("wasm core trapped", { cause });
    this.name = "CoreTrap";
  }
}

export class Core {
  #exports;
  #poisoned = null;
  #lastEnv = undefined; // the env object of the last message the core accepted with one
  #lastActive = new Map(); // id → Date.now() at its start or last resume, of every run not dropped yet
  #swept = 0;

  /** @param source a WebAssembly.Module, or a function returning an instance-like `{ exports }`. */
  static create(source) {
    const core = new Core(null);
    const instance =
      typeof source === "function"
        ? source()
        : new WebAssembly.Instance(
            source,
            wasmImports(source, () => core.#exports.memory),
          );
    core.#exports = instance.exports;
    core.#call("_initialize", [], { optional: true });
    return core;
  }

  constructor(exports) {
    this.#exports = exports;
  }

  get poisoned() {
    return this.#poisoned !== null;
  }

  /**
   * Starts a run; returns its id (0 when the core rejected the message). `prof` (optional, see
   * newProfile) accumulates where the time goes; null costs nothing.
   */
  start(message, prof = null) {
    // An env this instance already holds (the same object as in its last accepted message: the
    // host hands every run of an isolate the one cached env, bindings/messages.js) is not sent,
    // parsed and copied again: `"envSame":true` tells the core to reuse it (docs/abi.md).
    const env = message.env;
    const sameEnv = env !== undefined && env === this.#lastEnv;
    if (sameEnv) {
      // The message is the host's own, built for this run: changed in place rather than copied.
      message.env = undefined;
      message.envSame = true;
    }
    try {
      const id = this.#withMessage(message, (ptr, len) => this.#call("ss_start", [ptr, len]), prof);
      if (id !== 0 && !sameEnv && env !== undefined) this.#lastEnv = env;
      if (id !== 0) this.#track(id);
      return id;
    } finally {
      if (sameEnv) {
        message.env = env;
        delete message.envSame;
      }
    }
  }

  /** 0 waiting on effects, 1 done, -1 unknown id. */
  state(id) {
    return this.#call("ss_state", [id]);
  }

  /** The output message of a done run, parsed. */
  data(id, prof = null) {
    return this.#read(id, prof, (bytes) => this.#output(bytes, prof));
  }

  /**
   * A waiting run's effects issued since the last call, and the answer known in advance that came
   * with them: the output message the run ends with if every one of them succeeds, or null
   * (docs/abi.md "Answers known in advance").
   */
  effects(id, prof = null) {
    return this.#read(id, prof, (bytes) => {
      // The effects' JSON holds no raw line feed: the first one starts the answer.
      const split = bytes.indexOf(LINE_FEED);
      const effects = this.#json(split < 0 ? bytes : bytes.subarray(0, split), prof);
      return { effects, answer: split < 0 ? null : this.#output(bytes.subarray(split + 1), prof) };
    });
  }

  #read(id, prof, parse) {
    const ptr = this.#call("ss_data_ptr", [id]);
    const len = this.#call("ss_data_len", [id]);
    if (prof) prof.bytes_out += len;
    try {
      return parse(new Uint8Array(this.#exports.memory.buffer, ptr, len));
    } catch (err) {
      throw this.#poison(err); // the core wrote something that is not JSON: a core bug
    }
  }

  // An output message: its JSON, and a fetch output's body after the first line feed when there is
  // one (a compact JSON text holds none), neither escaped by the core nor unescaped here (docs/abi.md).
  #output(bytes, prof) {
    const split = bytes.indexOf(LINE_FEED);
    const out = this.#json(split < 0 ? bytes : bytes.subarray(0, split), prof);
    if (split >= 0) {
      const t0 = prof ? performance.now() : 0;
      const body = bytes.subarray(split + 1);
      if (Array.isArray(out.splice)) {
        // Cut and joined with the held values by bindings/host.js, where a bad splice fails this run
        // alone (here it would poison the instance, as an output that is not JSON does).
        out.bodyBytes = body.slice();
      } else {
        out.body = bodyDecoder.decode(body);
      }
      if (prof) prof.copy_out_ms += performance.now() - t0;
    }
    return out;
  }

  #json(bytes, prof) {
    if (!prof) return JSON.parse(decoder.decode(bytes));
    const t0 = performance.now();
    const text = decoder.decode(bytes);
    const t1 = performance.now();
    const value = JSON.parse(text);
    prof.copy_out_ms += t1 - t0;
    prof.host_parse_ms += performance.now() - t1;
    return value;
  }

  resume(id, message, prof = null) {
    if (this.#lastActive.has(id)) this.#lastActive.set(id, Date.now()); // alive: a stream's every chunk
    this.#withMessage(message, (ptr, len) => this.#call("ss_resume", [id, ptr, len]), prof);
  }

  /** Poisons the instance as a trap would (test fault injection, bindings/faults.js); the CoreTrap. */
  kill(cause) {
    return this.#poisoned ?? this.#poison(cause);
  }

  drop(id) {
    this.#lastActive.delete(id);
    if (!this.poisoned) this.#call("ss_drop", [id]);
  }

  // Records a new run, and drops the runs whose invocation was cancelled (STALE_RUN_MS).
  #track(id) {
    const now = Date.now();
    if (now - this.#swept >= SWEEP_EVERY_MS) {
      this.#swept = now;
      for (const [old, at] of this.#lastActive) {
        if (now - at < STALE_RUN_MS) continue;
        this.#lastActive.delete(old);
        this.#call("ss_drop", [old]);
        console.error(`run ${old} was still waiting after ${Math.round((now - at) / 60000)} min idle: dropped`);
      }
    }
    this.#lastActive.set(id, now);
  }

  #withMessage(message, fn, prof = null) {
    const t0 = prof ? performance.now() : 0;
    const text = JSON.stringify(message);
    const t1 = prof ? performance.now() : 0;
    let ptr;
    let length;
    if (text.length <= DIRECT_ENCODE_MAX_CHARS) {
      // Small messages (every /health) are encoded straight into wasm memory: UTF-8 takes at most
      // 3 bytes per UTF-16 unit, so the allocation always holds it; no intermediate buffer.
      ptr = this.#allocate(text.length * 3);
      // Views on memory.buffer are rebuilt after every call: the allocation may have grown memory.
      length = encoder.encodeInto(text, new Uint8Array(this.#exports.memory.buffer, ptr, text.length * 3)).written;
    } else {
      const bytes = encoder.encode(text);
      length = bytes.length;
      ptr = this.#allocate(length);
      new Uint8Array(this.#exports.memory.buffer, ptr, length).set(bytes);
    }
    const t2 = prof ? performance.now() : 0;
    try {
      return fn(ptr, length);
    } finally {
      if (prof) {
        const t3 = performance.now();
        prof.host_stringify_ms += t1 - t0;
        prof.copy_in_ms += t2 - t1;
        prof.core_ms += t3 - t2;
        prof.core_calls++;
        prof.bytes_in += length;
      }
      if (!this.poisoned) this.#call("ss_free", [ptr]);
    }
  }

  // malloc answers 0 when memory cannot grow: writing the message there would overwrite the stack
  // and static data, so the instance is given up as after a trap.
  #allocate(length) {
    const ptr = this.#call("ss_alloc", [length]);
    if (ptr === 0) throw this.#poison(new Error(`ss_alloc(${length}) failed: out of memory`));
    return ptr;
  }

  #call(name, args, { optional = false } = {}) {
    if (this.#poisoned) throw this.#poisoned;
    const fn = this.#exports[name];
    if (typeof fn !== "function") {
      if (optional) return undefined;
      throw this.#poison(new Error(`wasm export ${name} is missing`));
    }
    try {
      return fn(...args);
    } catch (err) {
      throw this.#poison(err);
    }
  }

  #poison(err) {
    this.#poisoned = new CoreTrap(err);
    return this.#poisoned;
  }
}

/**
 * An empty profile of one run (bindings/host.js fills it when the worker's env has SS_PROFILE=1;
 * docs/performance.md). Times in ms of performance.now(): host_stringify = JSON.stringify of the
 * messages into the core; copy_in = UTF-8 encode + ss_alloc + copy into wasm memory; core = inside
 * ss_start / ss_resume (the core's JSON parse, its logic and its JSON encode of what it answers);
 * copy_out = UTF-8 decode of ss_data; host_parse = JSON.parse of it; perform = the host's synchronous
 * part of starting effects; io_wait = awaiting effect results. Note: inside workerd, performance.now()
 * only advances across I/O, so the CPU buckets read 0 there; they are measured with the same host in
 * Node (tests/bench/profile.mjs).
 */
export function newProfile() {
  return {
    host_stringify_ms: 0,
    copy_in_ms: 0,
    core_ms: 0,
    copy_out_ms: 0,
    host_parse_ms: 0,
    perform_ms: 0,
    io_wait_ms: 0,
    total_ms: 0,
    core_calls: 0,
    effects: 0,
    bytes_in: 0,
    bytes_out: 0,
  };
}

/**
 * Imports for a clang wasm32-wasi or emscripten (STANDALONE_WASM) reactor. The core does no I/O:
 * stdout/stderr go to console.error, there is no clock and no randomness (those come in messages),
 * and any import we do not know gets a stub that fails loudly if the core ever calls it.
 */
export function wasmImports(module, memory) {
  const stdio = { 1: "", 2: "" };
  const flush = (fd, text) => {
    const lines = (stdio[fd] + text).split("\n");
    stdio[fd] = lines.pop();
    for (const line of lines) console.error(line);
  };
  const view = () => new DataView(memory().buffer);

  const wasi = {
    fd_write(fd, iovs, iovsLen, nwrittenPtr) {
      const dv = view();
      let written = 0;
      let text = "";
      for (let i = 0; i < iovsLen; i++) {
        const ptr = dv.getUint32(iovs + i * 8, true);
        const len = dv.getUint32(iovs + i * 8 + 4, true);
        text += decoder.decode(new Uint8Array(memory().buffer, ptr, len));
        written += len;
      }
      if (fd === 1 || fd === 2) flush(fd, text);
      dv.setUint32(nwrittenPtr, written, true);
      return ERRNO_SUCCESS;
    },
    fd_fdstat_get(_fd, statPtr) {
      const dv = view(); // a character device without seek rights: libc line-buffers stdout
      dv.setUint8(statPtr, 2);
      dv.setUint16(statPtr + 2, 0, true);
      dv.setBigUint64(statPtr + 8, 0n, true);
      dv.setBigUint64(statPtr + 16, 0n, true);
      return ERRNO_SUCCESS;
    },
    fd_close: () => ERRNO_SUCCESS,
    fd_seek: () => ERRNO_SPIPE,
    proc_exit(code) {
      throw new WebAssembly.RuntimeError(`proc_exit(${code})`);
    },
    environ_sizes_get(countPtr, sizePtr) {
      view().setUint32(countPtr, 0, true);
      view().setUint32(sizePtr, 0, true);
      return ERRNO_SUCCESS;
    },
    environ_get: () => ERRNO_SUCCESS,
    args_sizes_get(countPtr, sizePtr) {
      view().setUint32(countPtr, 0, true);
      view().setUint32(sizePtr, 0, true);
      return ERRNO_SUCCESS;
    },
    args_get: () => ERRNO_SUCCESS,
    clock_time_get: () => ERRNO_NOSYS, // the core gets `now` in every message
    random_get: () => ERRNO_NOSYS, // the core gets `entropy` in every message
  };
  const env = {
    emscripten_notify_memory_growth() {},
    emscripten_memcpy_big(dest, src, num) {
      new Uint8Array(memory().buffer).copyWithin(dest, src, src + num);
    },
  };
  const known = { wasi_snapshot_preview1: wasi, wasi_unstable: wasi, env };

  const imports = {};
  for (const { module: mod, name, kind } of WebAssembly.Module.imports(module)) {
    if (kind !== "function") continue;
    imports[mod] ??= {};
    imports[mod][name] =
      known[mod]?.[name] ??
      (mod.startsWith("wasi")
        ? () => ERRNO_NOSYS
        : () => {
            throw new Error(`wasm import ${mod}.${name} is not provided by the host`);
          });
  }
  return imports;
}
