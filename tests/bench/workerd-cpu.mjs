// CPU time of the workerd processes below this Node process (Miniflare's), from /proc: Linux only,
// null elsewhere. It counts everything those processes do — the workers, their queues, D1 (SQLite
// runs inside workerd under Miniflare) — so a per-request figure from it is an upper bound.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

let clockTicks;
function ticksPerSecond() {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

function procStat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = text.lastIndexOf(")");
    const comm = text.slice(text.indexOf("(") + 1, close);
    const fields = text.slice(close + 2).split(" "); // fields[0] is field 3 (state)
    return { pid, comm, ppid: Number(fields[1]), utime: Number(fields[11]), stime: Number(fields[12]) };
  } catch {
    return null;
  }
}

/** CPU ms used so far by every workerd process below this Node process, or null if unknown. */
export function workerdCpuMs() {
  const workerd = workerdStats();
  if (!workerd) return null;
  return (workerd.reduce((sum, s) => sum + s.utime + s.stime, 0) * 1000) / ticksPerSecond();
}

// The /proc stats of the workerd processes below this Node process, or null if there are none.
function workerdStats() {
  let entries;
  try {
    entries = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return null;
  }
  const stats = entries.map(procStat).filter(Boolean);
  const below = new Set([process.pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of stats) {
      if (!below.has(s.pid) && below.has(s.ppid)) {
        below.add(s.pid);
        grew = true;
      }
    }
  }
  const workerd = stats.filter((s) => below.has(s.pid) && s.comm.startsWith("workerd"));
  return workerd.length ? workerd : null;
}

/**
 * CPU ms so far of the workerd processes' threads, summed by thread name (`workerd` is the thread
 * that runs the workers' JavaScript and wasm; V8's background threads, which compile optimised code
 * and sweep the heap, have names of their own), or null if unknown. SS_THREADS=1 makes loadPhase
 * print each phase's split (docs/performance.md).
 */
export function workerdThreadCpuMs() {
  const workerd = workerdStats();
  if (!workerd) return null;
  const byName = {};
  for (const { pid } of workerd) {
    let tids;
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      const s = procStat(`${pid}/task/${tid}`);
      if (s) byName[s.comm] = (byName[s.comm] ?? 0) + ((s.utime + s.stime) * 1000) / ticksPerSecond();
    }
  }
  return byName;
}
