// V8's inspector protocol for the benches that profile a worker inside workerd (workerd-profile.mjs,
// beacon-profile.mjs): a minimal CDP client over the target's WebSocket, and a sampling profile summed
// by function (docs/performance.md "Profiles inside workerd").
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { WebSocket } from "ws";

/** A CDP session on `url` (a target's webSocketDebuggerUrl): `opened`, `send(method, params)`, `close()`. */
export function cdp(url) {
  const ws = new WebSocket(url);
  let id = 0;
  const waiting = new Map();
  ws.on("message", (data) => {
    const msg = JSON.parse(data);
    if (msg.id && waiting.has(msg.id)) {
      waiting.get(msg.id)(msg);
      waiting.delete(msg.id);
    }
  });
  const opened = new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  return {
    opened,
    send: (method, params = {}) =>
      new Promise((resolve) => {
        const n = ++id;
        waiting.set(n, resolve);
        ws.send(JSON.stringify({ id: n, method, params }));
      }),
    close: () => ws.close(),
  };
}

/**
 * Self time per function of a V8 `.cpuprofile`, idle left out: `{ total, wasm, idle, rows }`, µs, rows
 * `[name, µs]` largest first, a name being the function and its file. Wasm frames count in `wasm` too.
 */
export function selfTimes(profile) {
  const self = new Map();
  for (const node of profile.nodes) self.set(node.id, { node, us: 0 });
  for (let i = 0; i < profile.samples.length; i++) self.get(profile.samples[i]).us += profile.timeDeltas[i];
  const byName = new Map();
  let total = 0;
  let wasm = 0;
  let idle = 0;
  for (const { node, us } of self.values()) {
    const f = node.callFrame;
    if (f.functionName === "(idle)") {
      idle += us;
      continue;
    }
    const name = `${f.functionName || "(anonymous)"} ${f.url ? f.url.split("/").pop() : ""}`.trim();
    total += us;
    if (f.url.startsWith("wasm://") || /^wasm-function|^\$/.test(f.functionName)) wasm += us;
    byName.set(name, (byName.get(name) ?? 0) + us);
  }
  return { total, wasm, idle, rows: [...byName.entries()].sort((a, b) => b[1] - a[1]) };
}

/** Profiles `run()` in the inspector `target` at `intervalUs`: the `.cpuprofile`. */
export async function profileWhile(target, intervalUs, run) {
  const session = cdp(target.webSocketDebuggerUrl);
  await session.opened;
  try {
    await session.send("Profiler.enable");
    await session.send("Profiler.setSamplingInterval", { interval: intervalUs });
    await session.send("Profiler.start");
    await run();
    const { result } = await session.send("Profiler.stop");
    return result.profile;
  } finally {
    session.close();
  }
}

/**
 * `run()` with the isolates of the workers `names` profiled, when `port` (the Miniflare's
 * inspectorPort) is set: `{result, profiles}`, `profiles[name]` its selfTimes (busy µs = `total`,
 * wasm, top functions by self time); without a port, `profiles` is null.
 */
export async function profiled(port, names, run, intervalUs = 200) {
  if (!port) return { result: await run(), profiles: null };
  const targets = await (await fetch(`http://127.0.0.1:${port}/json`)).json();
  let result;
  let inner = async () => {
    result = await run();
  };
  const profiles = {};
  for (const name of names) {
    const target = targets.find((t) => t.title.includes(`core:user:${name}`));
    if (!target) throw new Error(`no inspector target for ${name}`);
    const next = inner;
    inner = async () => {
      const profile = await profileWhile(target, intervalUs, next);
      // SS_PROFILE_SAVE=<dir>: each raw profile kept as <dir>/<name>-<n>.cpuprofile (DevTools opens it).
      if (process.env.SS_PROFILE_SAVE) saveProfile(process.env.SS_PROFILE_SAVE, name, profile);
      profiles[name] = selfTimes(profile);
    };
  }
  await inner();
  return { result, profiles };
}

/** One line: a profile's busy ms (and wasm's share) and its `top` functions by self time. */
export function profileLine(name, times, top = 12) {
  const rows = times.rows.slice(0, top).map(([fn, us]) => `${(us / 1000).toFixed(0)} ${fn}`);
  return `${name} busy ${(times.total / 1000).toFixed(0)} ms (wasm ${(times.wasm / 1000).toFixed(0)}): ${rows.join(" | ")}`;
}

function saveProfile(dir, name, profile) {
  mkdirSync(dir, { recursive: true });
  const n = readdirSync(dir).filter((f) => f.startsWith(`${name}-`)).length + 1;
  writeFileSync(path.join(dir, `${name}-${n}.cpuprofile`), JSON.stringify(profile));
}
