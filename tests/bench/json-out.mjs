// `scripts/bench --json FILE`: every part of the bench (bench.mjs first, then cms, leads and analytics)
// merges its figures into FILE, so that one run leaves one file. bench.mjs starts the file afresh
// (`startFigures`); the later parts add their keys (`mergeFigures`). Without --json both do nothing.
// The keys the issue asks for: ratios.* (C++ over its plain-JS peer, higher = better; for latencies
// JS time over C++ time), gzip_kib.* (per worker, the ledger's parts events_runner and events_config,
// and the shared floor), leads_p99_ms.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** The number after `--name` on the command line, or `fallback`. */
export const option = (name, fallback, argv = process.argv) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? Number(argv[i + 1]) : fallback;
};

/** `x` with every number rounded (json-out's `round`), for a figures object. */
export const roundedFigures = (x) =>
  Object.fromEntries(Object.entries(x).map(([k, v]) => [k, typeof v === "number" ? round(v) : v]));

export function jsonOutPath(argv = process.argv) {
  const i = argv.indexOf("--json");
  if (i < 0) return null;
  if (!argv[i + 1] || argv[i + 1].startsWith("--")) throw new Error("--json needs a file name");
  return path.resolve(argv[i + 1]);
}

const isObject = (x) => x !== null && typeof x === "object" && !Array.isArray(x);
function deepMerge(into, patch) {
  for (const [k, v] of Object.entries(patch)) {
    into[k] = isObject(v) && isObject(into[k]) ? deepMerge(into[k], v) : v;
  }
  return into;
}

function commit() {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    return null;
  }
}

/** Writes FILE afresh: the run's metadata plus `figures`. */
export function startFigures(figures) {
  const file = jsonOutPath();
  if (!file) return;
  const meta = {
    date: new Date().toISOString(),
    commit: commit(),
    node: process.version,
    cpus: os.cpus().length,
    loadavg_1m: os.loadavg()[0],
  };
  writeFileSync(file, `${JSON.stringify(deepMerge({ meta }, figures), null, 2)}\n`);
}

/** Merges `figures` into FILE (written by startFigures earlier in the same run). */
export function mergeFigures(figures) {
  const file = jsonOutPath();
  if (!file) return;
  const current = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {};
  writeFileSync(file, `${JSON.stringify(deepMerge(current, figures), null, 2)}\n`);
}

/** Rounds for the file: ratios to 3 decimals, everything else to 2. */
export const round = (x, digits = 2) =>
  typeof x === "number" && Number.isFinite(x) ? Number(x.toFixed(digits)) : null;
