// Every zone of the tz database in the cms core (the real dist/wasm/cms.wasm, driven in plain Node
// through its test hook POST /__test/zone) against an independent implementation: Node's Intl
// (ICU's own copy of the tz database). For each zone: UTC offsets and open/closed answers on a few
// hundred instants from 2020 through 2099, and nextChange checked by scanning the week ahead; and
// the offsets at, just before and three days after every transition the tz database lists (its TZif files choose the instants,
// Intl answers for them).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { validZone } from "../../bindings/sdk/src/hours.js";
import { TZDATA_VERSION, ZONE_NAMES } from "../../bindings/sdk/src/zones.gen.js";
import { rawCoreExports } from "./raw-core.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const WASM = `${root}/dist/wasm/cms.wasm`;
const FROM = Date.UTC(2020, 0, 1) / 1000;
const TO = Date.UTC(2100, 0, 1) / 1000 - 8 * 86400; // nextChange looks up to 8 days ahead
const SAMPLES = 200; // instants per zone for offsets and open/closed
const SCANNED = 4; // instants per zone whose nextChange is checked by a full scan
const SLOT = 900; // every boundary below, offset and transition is a multiple of 15 minutes

// Ranges past midnight, at the hours DST changes happen, in the gaps and the repeats.
const WEEKLY = {
  sun: [{ open: "02:30", close: "05:00" }],
  mon: [
    { open: "07:00", close: "12:00" },
    { open: "13:00", close: "19:30" },
  ],
  tue: [],
  wed: [{ open: "22:00", close: "02:00" }],
  thu: [
    { open: "00:00", close: "01:30" },
    { open: "09:15", close: "17:45" },
  ],
  fri: [{ open: "01:00", close: "03:00" }],
  sat: [{ open: "23:30", close: "03:30" }],
};

function coreZones() {
  const source = readFileSync(`${root}/workers/cms/tzdata.gen.cpp`, "utf8");
  const block = source.slice(source.indexOf("kNames[] ="), source.indexOf("kNameStart"));
  return [...block.matchAll(/"([^"\\]+)\\0"/g)].map((m) => m[1]);
}

// The core's answer to one POST /__test/zone: `core(body)` is the 200 body (anything else fails the
// test); `core.answer(body)` is `{status, body}` as sent.
function loadCore() {
  const ex = rawCoreExports(WASM);
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const answer = (body) => {
    const message = JSON.stringify({
      op: "fetch",
      now: Date.now(),
      entropy: randomBytes(32).toString("hex"),
      env: { SITESWARM_TEST_HOOKS: "1" },
      request: {
        method: "POST",
        url: "https://cms.internal/__test/zone",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      },
    });
    const bytes = enc.encode(message);
    const ptr = ex.ss_alloc(bytes.length);
    new Uint8Array(ex.memory.buffer, ptr, bytes.length).set(bytes);
    const id = ex.ss_start(ptr, bytes.length);
    ex.ss_free(ptr);
    assert.equal(ex.ss_state(id), 1, "the zone hook performs no effects");
    const out = JSON.parse(dec.decode(new Uint8Array(ex.memory.buffer, ex.ss_data_ptr(id), ex.ss_data_len(id))));
    ex.ss_drop(id);
    return { status: out.status, body: JSON.parse(out.body) };
  };
  const core = (body) => {
    const out = answer(body);
    assert.equal(out.status, 200, JSON.stringify(out.body));
    return out.body;
  };
  core.answer = answer;
  return core;
}

// ---- the independent implementation -----------------------------------------------------------

const formatters = new Map();
function localParts(zone, t) {
  let fmt = formatters.get(zone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, fmt);
  }
  const p = {};
  for (const { type, value } of fmt.formatToParts(new Date(t * 1000))) p[type] = Number(value);
  return p;
}

function offsetOf(zone, t) {
  const p = localParts(zone, t);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour % 24, p.minute, p.second) / 1000 - t;
}

const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const minutes = (hhmm) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3));

// The wall clock that decides at t: its own, except on the second pass of a fall-back, where the
// wall clock just before the clock went back decides (nothing flips while times repeat). Found
// with Intl alone: an offset 3 hours ago larger than now's, and the change bisected to the second.
function wallSeconds(zone, t) {
  const offset = offsetOf(zone, t);
  const earlier = offsetOf(zone, t - 3 * 3600);
  if (earlier <= offset) return t + offset;
  let [lo, hi] = [t - 3 * 3600, t];
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (offsetOf(zone, mid) === offset) hi = mid;
    else lo = mid;
  }
  const before = offsetOf(zone, hi - 1);
  return t < hi + (before - offset) ? hi - 1 + before : t + offset;
}

// The shop's wall clock decides: today's ranges, or yesterday's that run past midnight.
function openAt(zone, t) {
  const local = wallSeconds(zone, t);
  const day = Math.floor(local / 86400);
  const minute = Math.floor((local - day * 86400) / 60);
  const today = WEEKLY[DAYS[(((day + 4) % 7) + 7) % 7]];
  const yesterday = WEEKLY[DAYS[(((day + 3) % 7) + 7) % 7]];
  return (
    today.some(({ open, close }) => {
      const [o, c] = [minutes(open), minutes(close)];
      return c < o ? minute >= o : minute >= o && minute < c;
    }) ||
    yesterday.some(({ open, close }) => {
      const [o, c] = [minutes(open), minutes(close)];
      return c < o && minute < c;
    })
  );
}

function nextChangeOf(zone, t) {
  const state = openAt(zone, t);
  for (let s = Math.floor(t / SLOT) * SLOT + SLOT; s <= t + 8 * 86400; s += SLOT) {
    if (openAt(zone, s) !== state) return s;
  }
  return undefined;
}

// The transition instants a zone's TZif file lists (RFC 8536: the version 2+ block's 64-bit times),
// used only to choose instants to compare at.
function listedTransitions(zone) {
  let buf;
  try {
    buf = readFileSync(`/usr/share/zoneinfo/${zone}`);
  } catch {
    return [];
  }
  if (buf.toString("latin1", 0, 4) !== "TZif" || buf[4] < 0x32) return [];
  const counts = (at) => [0, 1, 2, 3, 4, 5].map((i) => buf.readUInt32BE(at + 20 + i * 4));
  const [isut, isstd, leap, timecnt, typecnt, charcnt] = counts(0);
  const at = 44 + timecnt * 5 + typecnt * 6 + charcnt + leap * 8 + isstd + isut;
  const n = counts(at)[3];
  const times = [];
  for (let i = 0; i < n; i++) times.push(Number(buf.readBigInt64BE(at + 44 + i * 8)));
  return times;
}

function random(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

// The SDK's copy of the names (scripts/gen-tzdata.mjs writes both): the same, in the same release.
it("the SDK's zone names are the core's, from the same tzdata release", () => {
  assert.deepEqual(ZONE_NAMES.split(/\s+/).filter(Boolean), coreZones());
  const source = readFileSync(`${root}/workers/cms/tzdata.gen.cpp`, "utf8");
  assert.equal(source.match(/kVersion\[\] = "([^"]+)"/)?.[1], TZDATA_VERSION);
});

const built = existsSync(WASM);
describe("cms time zones against Intl", {
  skip: built ? false : "dist/wasm/cms.wasm not built (scripts/build)",
}, () => {
  it("knows every zone Intl knows, and refuses Mars/Olympus", () => {
    const core = loadCore();
    const known = new Set(coreZones());
    const missing = Intl.supportedValuesOf("timeZone").filter((z) => !known.has(z));
    assert.deepEqual(missing, []);
    assert.ok(known.size > 500, `only ${known.size} zones`);
    const out = core({ zone: "America/New_York", instants: [] });
    assert.match(out.version, /^20\d\d[a-z]$/);
  });

  // The SDK reads a manifest's zone as the service does (docs/cms.md "Time zones"): a name of the
  // tz database exactly as written. Intl alone would also take other spellings ("utc", "europe/paris",
  // "us/eastern") and ICU's own ids ("IST", "PST", "SystemV/AST4", "Factory"), which the core refuses.
  it("the SDK's validZone accepts exactly the names the core accepts", () => {
    const core = loadCore();
    const names = [...coreZones(), ...Intl.supportedValuesOf("timeZone")];
    const candidates = new Set([
      ...names,
      ...names.map((z) => z.toLowerCase()),
      ...names.map((z) => z.toUpperCase()),
      ...["utc", "Utc", "etc/utc", "US/Eastern", "us/eastern", "US/EASTERN", "europe/paris", "Asia/Kolkata"],
      ...["Asia/Calcutta", "Europe/Kyiv", "Europe/Kiev", "IST", "PST", "EST", "ACT", "AET", "CTT", "Factory"],
      ...["SystemV/AST4", "SystemV/EST5EDT", "US/Pacific-New", "Canada/East-Saskatchewan", "Etc/Unknown"],
      ...["Mars/Olympus", "", " UTC", "UTC ", "+01:00", "GMT+1", "Etc/GMT+1", "America/New_York/", "posix/UTC"],
      ...["right/UTC", "localtime", "posixrules", "America/New_York\u0000"],
    ]);
    const mismatches = [];
    let accepted = 0;
    for (const zone of candidates) {
      const out = core.answer({ zone, instants: [] });
      assert.ok(out.status === 200 || out.body.error?.field === "zone", JSON.stringify(out.body));
      const service = out.status === 200;
      const sdk = validZone(zone) === zone;
      if (service) accepted++;
      if (sdk !== service) mismatches.push(`${JSON.stringify(zone)}: cms ${service}, SDK ${sdk}`);
    }
    assert.deepEqual(mismatches, []);
    assert.equal(accepted, coreZones().length);
    for (const notAName of [undefined, null, 7, {}, ["UTC"]]) assert.equal(validZone(notAName), undefined);
  });

  // Asia/Gaza, Asia/Hebron, Africa/Casablanca and Africa/El_Aaiun list their transitions to 2086–2087;
  // until 2026-12-06 the core held them only to 2038 and read the footer rule after the last one, an
  // hour wrong for weeks each autumn (the random instants above missed it).
  it("matches Intl around every transition the tz database lists, 2020–2099", () => {
    const core = loadCore();
    const mismatches = [];
    let compared = 0;
    for (const zone of coreZones()) {
      const instants = listedTransitions(zone)
        .filter((t) => t >= FROM && t < TO)
        .flatMap((t) => [t - 1, t, t + 3 * 86400]);
      if (instants.length === 0) continue;
      const out = core({ zone, instants });
      instants.forEach((t, i) => {
        compared++;
        const offset = offsetOf(zone, t);
        if (out.offsets[i] !== offset) mismatches.push(`${zone} @${t}: offset ${out.offsets[i]} ≠ Intl ${offset}`);
      });
    }
    assert.deepEqual(mismatches.slice(0, 20), [], `${mismatches.length} mismatches`);
    assert.ok(compared > 15_000, `${compared} instants`);
    // Gaza's summer time ended on Friday 2037-10-09 at 23:00Z: three days later it is UTC+2.
    const gaza = core({ zone: "Asia/Gaza", instants: [Date.UTC(2037, 9, 12, 6, 30) / 1000] });
    assert.deepEqual(gaza.offsets, [7200]);
  });

  it("matches Intl for every zone: offsets, open/closed and nextChange, 2020–2099", () => {
    const core = loadCore();
    const mismatches = [];
    let compared = 0;
    let zones = 0;
    for (const zone of coreZones()) {
      try {
        new Intl.DateTimeFormat("en-US", { timeZone: zone });
      } catch {
        mismatches.push(`${zone}: Intl does not know it`);
        continue;
      }
      zones++;
      const rand = random([...zone].reduce((h, c) => h * 31 + c.charCodeAt(0), 7));
      const instants = [];
      for (let i = 0; i < SAMPLES; i++) instants.push(FROM + Math.floor(rand() * (TO - FROM)));
      const first = core({ zone, weekly: WEEKLY, instants });
      // The instants where the core says the answer flips, and a second either side of them.
      const edges = first.nextChange.filter((n) => n !== null && n < TO).flatMap((n) => [n - 1, n, n + 1]);
      const all = [...instants, ...edges];
      const out = edges.length ? core({ zone, weekly: WEEKLY, instants: all }) : first;
      all.forEach((t, i) => {
        compared++;
        const offset = offsetOf(zone, t);
        if (out.offsets[i] !== offset) mismatches.push(`${zone} @${t}: offset ${out.offsets[i]} ≠ Intl ${offset}`);
        const open = openAt(zone, t);
        if (out.open[i] !== open) mismatches.push(`${zone} @${t}: open ${out.open[i]} ≠ ${open}`);
      });
      for (let i = 0; i < SCANNED; i++) {
        const expected = nextChangeOf(zone, instants[i]);
        if (expected !== undefined && out.nextChange[i] !== expected) {
          mismatches.push(`${zone} @${instants[i]}: nextChange ${out.nextChange[i]} ≠ ${expected}`);
        }
      }
    }
    assert.deepEqual(mismatches.slice(0, 20), [], `${mismatches.length} mismatches`);
    assert.ok(zones > 500 && compared > 100_000, `${zones} zones, ${compared} instants`);
  });
});
