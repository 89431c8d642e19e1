#!/usr/bin/env node
// Generates workers/cms/tzdata.gen.cpp from the IANA tz database as Debian's `tzdata` package ships
// it: the compiled TZif files under /usr/share/zoneinfo (RFC 8536, version 2 or later); and beside it
// bindings/sdk/src/zones.gen.js, the same names for the SDK (only the names: the SDK computes offsets
// with Intl, and checks a manifest's zone against these so that it takes exactly what cms takes).
//
//   node scripts/gen-tzdata.mjs [--zoneinfo /usr/share/zoneinfo] [--out workers/cms/tzdata.gen.cpp]
//                               [--sdk-out bindings/sdk/src/zones.gen.js]
//
// For every zone (and every link name) it reads the 64-bit transitions and the footer POSIX TZ rule,
// keeps only what the cms core needs for instants from 2020 through 2099:
//   - the offset in effect when the window opens,
//   - the explicit transitions inside the window that the footer rule does NOT already predict
//     (most zones need none: the rule covers every year once it is in force),
//   - the footer rule itself (parsed by the core at run time, workers/cms/tz.cpp).
// Zones whose data is identical in the window share one entry. Nothing here is typed by hand: a
// new tzdata release is `apt-get install tzdata` plus this script.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const ZONEINFO = option("--zoneinfo", "/usr/share/zoneinfo");
const OUT = path.resolve(ROOT, option("--out", "workers/cms/tzdata.gen.cpp"));
const SDK_OUT = path.resolve(ROOT, option("--sdk-out", "bindings/sdk/src/zones.gen.js"));

// The window the core answers for: 2020-01-01 minus a day (a local date needs the day before) up to
// 2100-01-02 (`at` is taken through 2099, and a local date needs the day after). Zones whose
// future is listed rather than ruled (Asia/Gaza and Asia/Hebron to 2086, Africa/Casablanca and
// Africa/El_Aaiun to 2087: Ramadan-based changes no POSIX rule can say) keep every listed transition:
// the core reads the footer rule only after the last one it holds.
const WINDOW_START = Date.UTC(2019, 11, 31) / 1000;
const WINDOW_END = Date.UTC(2100, 0, 2) / 1000;
// Directories and files under zoneinfo that are not zones of their own.
const SKIP = new Set(["posix", "right", "posixrules", "localtime", "Factory"]);

// ---- TZif ---------------------------------------------------------------------------------------

function readTzif(file) {
  const buf = readFileSync(file);
  if (buf.length < 44 || buf.toString("latin1", 0, 4) !== "TZif") return null;
  const version = buf[4];
  if (version < 0x32) throw new Error(`${file}: TZif version 1 has no 64-bit data or footer`);
  const counts = (at) => [0, 1, 2, 3, 4, 5].map((i) => buf.readUInt32BE(at + 20 + i * 4));
  // Skip the version 1 block (32-bit times).
  let [isut, isstd, leap, timecnt, typecnt, charcnt] = counts(0);
  let at = 44 + timecnt * 5 + typecnt * 6 + charcnt + leap * 8 + isstd + isut;
  [isut, isstd, leap, timecnt, typecnt, charcnt] = counts(at);
  at += 44;
  const times = [];
  for (let i = 0; i < timecnt; i++) times.push(Number(buf.readBigInt64BE(at + i * 8)));
  at += timecnt * 8;
  const typeIndex = [...buf.subarray(at, at + timecnt)];
  at += timecnt;
  const types = [];
  for (let i = 0; i < typecnt; i++) types.push(buf.readInt32BE(at + i * 6));
  at += typecnt * 6 + charcnt + leap * 12 + isstd + isut;
  const footer = buf.toString("latin1", at).split("\n")[1] ?? "";
  return { transitions: times.map((t, i) => [t, types[typeIndex[i]]]), initial: types[0], footer };
}

function listZones(dir, prefix = "") {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    if (SKIP.has(name) || name.includes(".")) continue;
    const full = path.join(dir, name);
    const rel = prefix ? `${prefix}/${name}` : name;
    if (statSync(full).isDirectory()) out.push(...listZones(full, rel));
    else if (/^[A-Za-z]/.test(name)) out.push([rel, full]);
  }
  return out;
}

// ---- POSIX TZ rules (the footer), the same algorithm as workers/cms/tz.cpp ------------------------

function parsePosix(tz) {
  let i = 0;
  const name = () => {
    if (tz[i] === "<") {
      const end = tz.indexOf(">", i);
      i = end + 1;
    } else {
      while (i < tz.length && /[A-Za-z]/.test(tz[i])) i++;
    }
  };
  const time = () => {
    let sign = 1;
    if (tz[i] === "+" || tz[i] === "-") sign = tz[i++] === "-" ? -1 : 1;
    const m = /^(\d+)(?::(\d+))?(?::(\d+))?/.exec(tz.slice(i));
    if (!m) throw new Error(`bad time in ${tz}`);
    i += m[0].length;
    return sign * (Number(m[1]) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0));
  };
  const date = () => {
    const rest = tz.slice(i);
    const month = /^M(\d+)\.(\d)\.(\d)/.exec(rest);
    const julian = /^J(\d+)/.exec(rest);
    const plain = /^(\d+)/.exec(rest);
    const m = month ?? julian ?? plain;
    if (!m) throw new Error(`bad date rule in ${tz}`);
    const rule = month
      ? { kind: "M", m: +m[1], w: +m[2], d: +m[3] }
      : julian
        ? { kind: "J", n: +m[1] }
        : { kind: "n", n: +m[1] };
    i += m[0].length;
    rule.time = 7200;
    if (tz[i] === "/") {
      i++;
      rule.time = time();
    }
    return rule;
  };
  name();
  const std = -time();
  if (i >= tz.length) return { std, dst: null };
  name();
  let dst = std + 3600;
  if (tz[i] !== "," && i < tz.length) dst = -time();
  if (tz[i] !== ",") throw new Error(`no DST rule in ${tz}`);
  i++;
  const start = date();
  if (tz[i++] !== ",") throw new Error(`bad rule in ${tz}`);
  const end = date();
  return { std, dst, start, end };
}

const daysFromCivil = (y, m, d) => Date.UTC(y, m - 1, d) / 86400000;
const isLeap = (y) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

// Seconds since the epoch of 00:00 local (no offset applied) of the rule's day in `year`.
function ruleDay(rule, year) {
  if (rule.kind === "J") {
    let n = rule.n - 1; // 1..365, Feb 29 never counted
    if (isLeap(year) && rule.n >= 60) n++;
    return (daysFromCivil(year, 1, 1) + n) * 86400;
  }
  if (rule.kind === "n") return (daysFromCivil(year, 1, 1) + rule.n) * 86400;
  const first = daysFromCivil(year, rule.m, 1);
  const firstWeekday = (((first + 4) % 7) + 7) % 7;
  let day = first + ((rule.d - firstWeekday + 7) % 7) + (rule.w - 1) * 7;
  const monthDays = daysFromCivil(rule.m === 12 ? year + 1 : year, rule.m === 12 ? 1 : rule.m + 1, 1) - first;
  while (day - first >= monthDays) day -= 7;
  return day * 86400;
}

// The rule's offset at t: the last of the start (→ DST) and end (→ standard) instants of the
// years around t that is not after t. Ties put DST last, so "J365/25"-style all-year DST holds.
// Two years back: an end of year y-2 can land in y-1 after y-1's own start (workers/cms/tz.cpp).
function posixOffset(rule, t) {
  if (rule.dst === null) return rule.std;
  const year = new Date(t * 1000).getUTCFullYear();
  const events = [];
  for (const y of [year - 2, year - 1, year, year + 1]) {
    events.push([ruleDay(rule.end, y) + rule.end.time - rule.dst, 0]);
    events.push([ruleDay(rule.start, y) + rule.start.time - rule.std, 1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let dst = !events[0][1];
  for (const [at, isDst] of events) if (at <= t) dst = Boolean(isDst);
  return dst ? rule.dst : rule.std;
}

// Instants where the rule changes offset in [from, to].
function posixTransitions(rule, from, to) {
  if (rule.dst === null) return [];
  const out = [];
  const y0 = new Date(from * 1000).getUTCFullYear() - 1;
  const y1 = new Date(to * 1000).getUTCFullYear() + 1;
  for (let y = y0; y <= y1; y++) {
    out.push(ruleDay(rule.start, y) + rule.start.time - rule.std);
    out.push(ruleDay(rule.end, y) + rule.end.time - rule.dst);
  }
  return out.filter((t) => t >= from && t <= to);
}

// ---- One zone's data in the window ------------------------------------------------------------

function windowData(tzif) {
  const rule = tzif.footer ? parsePosix(tzif.footer) : null;
  let initial = tzif.initial;
  const inWindow = [];
  for (const [t, off] of tzif.transitions) {
    if (t <= WINDOW_START) initial = off;
    else if (t <= WINDOW_END) inWindow.push([t, off]);
  }
  // The truth in the window: the listed transitions, then (after the last) the footer rule.
  const last = tzif.transitions.length ? tzif.transitions[tzif.transitions.length - 1][0] : -Infinity;
  const all = tzif.transitions;
  const truth = (t) => {
    if (t >= last && rule) return posixOffset(rule, t);
    let lo = 0;
    let hi = all.length; // first transition after t
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (all[mid][0] <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? tzif.initial : all[lo - 1][1];
  };
  // Keep the shortest prefix of transitions after which the rule alone is right to the end.
  const checkpoints = (from) => {
    const set = new Set([from]);
    for (const [t] of inWindow) if (t >= from) for (const d of [-1, 0, 1]) set.add(t + d);
    if (rule) for (const t of posixTransitions(rule, from, WINDOW_END)) for (const d of [-1, 0, 1]) set.add(t + d);
    return [...set].filter((t) => t >= from && t <= WINDOW_END);
  };
  let keep = inWindow.length;
  if (rule) {
    keep = -1;
    for (let k = 0; k <= inWindow.length; k++) {
      const from = k === 0 ? WINDOW_START : inWindow[k - 1][0];
      if (checkpoints(from).every((t) => posixOffset(rule, t) === truth(t))) {
        keep = k;
        break;
      }
    }
    // The core reads the rule after the last transition it holds: were the rule still wrong after
    // every one in the window, the data would be wrong there (never silently).
    if (keep < 0) throw new Error("the footer rule disagrees with the listed transitions to the window's end");
  }
  const kept = inWindow.slice(0, keep);
  for (const [, off] of [[0, initial], ...kept]) {
    if (off % 60 !== 0) throw new Error(`offset ${off}s is not whole minutes`);
  }
  if (rule && rule.dst !== null && (rule.std % 60 || rule.dst % 60)) throw new Error("rule offset not whole minutes");
  return { initial, transitions: kept, footer: rule ? tzif.footer : "" };
}

// ---- Output ---------------------------------------------------------------------------------

const zones = listZones(ZONEINFO);
const version = /# version (\S+)/.exec(readFileSync(path.join(ZONEINFO, "tzdata.zi"), "latin1"))?.[1] ?? "unknown";
const sets = new Map(); // key → index
const setList = [];
const names = [];
for (const [name, file] of zones) {
  const tzif = readTzif(file);
  if (!tzif) continue;
  let data;
  try {
    data = windowData(tzif);
  } catch (err) {
    throw new Error(`${name}: ${err.message}`);
  }
  const key = JSON.stringify(data);
  if (!sets.has(key)) {
    sets.set(key, setList.length);
    setList.push(data);
  }
  names.push([name, sets.get(key)]);
}
names.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

const footers = [...new Set(setList.map((s) => s.footer))];
const times = [];
const offsets = [];
const setRows = setList.map((s) => {
  const first = times.length;
  for (const [t, off] of s.transitions) {
    times.push(t);
    offsets.push(off / 60);
  }
  return `{${s.initial / 60}, ${first}, ${s.transitions.length}, ${footers.indexOf(s.footer)}}`;
});
let nameText = "";
const nameStarts = [];
for (const [name] of names) {
  nameStarts.push(nameText.length);
  nameText += `${name}\\0`.replace("\\0", "\0");
}
const wrap = (items, per = 12) => {
  const lines = [];
  for (let i = 0; i < items.length; i += per) lines.push(`    ${items.slice(i, i + per).join(", ")},`);
  return lines.join("\n");
};
const cString = (s) =>
  s
    .split("\0")
    .slice(0, -1)
    .map((n) => `    "${n}\\0"`)
    .join("\n");

const source = `// GENERATED by scripts/gen-tzdata.mjs from the IANA tz database ${version} (Debian tzdata,
// /usr/share/zoneinfo). Do not edit: rerun the script. ${names.length} zone names, ${setList.length} distinct
// rule sets, ${times.length} explicit transitions; see workers/cms/tzdata.h for the layout.
// clang-format off
#include "workers/cms/tzdata.h"

namespace ss::cms::tzdata {

const char kVersion[] = "${version}";
const std::size_t kZoneCount = ${names.length};

const char kNames[] =
${cString(nameText)};

const std::uint16_t kNameStart[] = {
${wrap(nameStarts)}
};

const std::uint16_t kNameRuleSet[] = {
${wrap(
  names.map(([, s]) => s),
  20,
)}
};

const std::int64_t kTransitionTimes[] = {
${wrap(times.length ? times : [0], 8)}
};

const std::int16_t kTransitionOffsets[] = {
${wrap(offsets.length ? offsets : [0], 16)}
};

const char* const kFooters[] = {
${footers.map((f) => `    "${f}",`).join("\n")}
};

const RuleSet kRuleSets[] = {
${wrap(setRows, 4)}
};
const std::size_t kRuleSetCount = ${setList.length};

}  // namespace ss::cms::tzdata
`;
writeFileSync(OUT, source);

// The SDK's copy of the names, space-separated in lines of at most 100 characters (a template
// literal, so the formatter leaves it as written).
const nameLines = [""];
for (const [name] of names) {
  const last = nameLines.length - 1;
  if (nameLines[last] === "") nameLines[last] = name;
  else if (nameLines[last].length + 1 + name.length <= 100) nameLines[last] += ` ${name}`;
  else nameLines.push(name);
}
const sdkSource = `// GENERATED by scripts/gen-tzdata.mjs from the IANA tz database ${version} (Debian tzdata,
// /usr/share/zoneinfo), with workers/cms/tzdata.gen.cpp. Do not edit: rerun the script.
// The ${names.length} zone and link names cms knows (workers/cms/tz.cpp Zone::find), as written: the
// SDK takes a zone only when it is one of them (bindings/sdk/src/hours.js validZone, docs/cms.md).

export const TZDATA_VERSION = "${version}";

/** Space-separated. */
export const ZONE_NAMES = \`
${nameLines.join("\n")}
\`;
`;
writeFileSync(SDK_OUT, sdkSource);
console.log(
  `gen-tzdata: tzdata ${version}: ${names.length} names, ${setList.length} rule sets, ` +
    `${times.length} transitions, ${footers.length} footers → ${path.relative(ROOT, OUT)}, ` +
    path.relative(ROOT, SDK_OUT),
);
