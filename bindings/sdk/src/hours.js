// The manifest's fallback snapshot read like cms-service would (zero lockout): content with only
// the announcements active now, and open/closed computed in the snapshot's IANA time zone.
import { ZONE_NAMES } from "./zones.gen.js";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
// nextChange is looked for a week ahead first (the usual answer), then, 8 days at a time, up to
// 400 days, as cms-service does (workers/cms/schedule.cpp): a closure of two weeks still has one.
const SCAN_DAYS = 8;
const MAX_SCAN_DAYS = 400;
// The zone's UTC offset is read (Intl) every 6 hours; a change between two reads is narrowed down to
// the second. Everything else is arithmetic on the offset, so no instant is formatted per minute.
const OFFSET_SAMPLE = 6 * 60 * MINUTE;
const DAY_KEYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const formatters = new Map();
/** @type {Set<string> | undefined} the names of zones.gen.js, made at the first zone checked */
let zoneNames;

/**
 * GET /v1/content from the snapshot (read as cms-service reads it: `cleanSnapshot`). `defaultZone`
 * is the manifest's `config.cms.timezone`, the zone of hours that name none.
 */
export function fallbackContent(appId, snapshot, now, defaultZone) {
  const clean = cleanSnapshot(snapshot, defaultZone);
  return {
    tenantId: appId,
    version: 0,
    hours: clean.hours,
    overrides: clean.overrides,
    announcements: clean.announcements.filter((a) => isActive(a, now)),
    source: "fallback",
  };
}

/** GET /v1/status?at= from the snapshot (read as `fallbackContent` reads it). */
export function fallbackStatus(snapshot, at, defaultZone) {
  const { hours, overrides } = cleanSnapshot(snapshot, defaultZone);
  const zone = hours.timezone;
  const t = at.getTime();
  const first = zoneOffsets(zone, t - DAY, t + SCAN_DAYS * DAY + DAY);
  const state = stateAt(hours, overrides, first, t);
  return { ...state, nextChange: nextChange(hours, overrides, zone, t, state.open, first), source: "fallback" };
}

/**
 * The first instant after `t` at which open/closed flips, as RFC 3339, or null (none within 400
 * days). Like cms-service, only the instants where it can flip are tried: a range's (or a day's)
 * first and last wall-clock minute, in each offset the zone has then; the zone's own changes (the
 * wall clock jumps); an emergency closure's start and end.
 */
function nextChange(hours, overrides, zone, t, open, first) {
  // Closed now by an emergency closure that has begun and names no end: nothing can flip until an
  // operator lifts it (the 400-day search would find nothing, at some cost per page render).
  const openEnded = (o) => o.closedNow === true && o.until == null && (o.from == null || instantMs(o.from) <= t);
  if (!open && overrides.some(openEnded)) return null;
  const minutes = new Set([0]);
  let ranges = 0;
  const addRanges = (list) => {
    for (const r of Array.isArray(list) ? list : []) {
      const from = toMinutes(r?.open);
      const to = toMinutes(r?.close);
      if (from === null || to === null) continue;
      ranges++;
      minutes.add(from);
      minutes.add(to % (24 * 60));
    }
  };
  for (const day of DAY_KEYS) addRanges(hours?.weekly?.[day]);
  for (const o of overrides) addRanges(o?.hours);
  // Never open: no range anywhere (counted, not read off the bounds: 00:00–24:00 adds only 0), so
  // nothing ever flips.
  if (ranges === 0 && !open && !overrides.some((o) => o?.closedNow === true)) return null;
  const emergencyBounds = [];
  for (const o of overrides) {
    if (o?.closedNow !== true) continue;
    if (o.from != null) emergencyBounds.push(instantMs(o.from));
    if (o.until != null) emergencyBounds.push(instantMs(o.until));
  }

  let scannedTo = t;
  for (let days = SCAN_DAYS; days <= MAX_SCAN_DAYS; days += SCAN_DAYS) {
    const end = t + days * DAY;
    const clock = days === SCAN_DAYS ? first : zoneOffsets(zone, scannedTo - DAY, end + DAY);
    const candidates = clock.transitions.concat(emergencyBounds.filter((b) => !Number.isNaN(b)));
    const firstDay = Math.floor((scannedTo + clock.offsetOf(scannedTo)) / DAY) - 1;
    const lastDay = Math.floor((end + clock.offsetOf(end)) / DAY) + 1;
    for (let day = firstDay; day <= lastDay; day++) {
      for (const m of minutes) {
        for (const offset of clock.offsets) {
          const when = day * DAY + m * MINUTE - offset;
          if (clock.offsetOf(when) === offset) candidates.push(when);
        }
      }
    }
    candidates.sort((a, b) => a - b);
    for (const when of candidates) {
      if (when <= scannedTo || when > end) continue;
      if (stateAt(hours, overrides, clock, when).open !== open) {
        return new Date(when).toISOString().replace(/\.\d{3}Z$/, "Z");
      }
    }
    scannedTo = end;
  }
  return null;
}

/**
 * The zone's UTC offsets over [from, to]: `offsetOf(t)` (ms to add to UTC for the wall clock), the
 * instants it changes (`transitions`) and the distinct `offsets`.
 */
function zoneOffsets(zone, from, to) {
  const start = Math.floor(from / 1000) * 1000;
  /** @type {{ at: number, offset: number }[]} */
  const segments = [{ at: -Infinity, offset: offsetAt(zone, start) }];
  let previous = start;
  for (let at = start + OFFSET_SAMPLE; previous < to; at += OFFSET_SAMPLE) {
    const offset = offsetAt(zone, at);
    if (offset !== segments[segments.length - 1].offset) {
      // Narrowed down to the second: the first instant of the new offset.
      let lo = previous;
      let hi = at;
      while (hi - lo > 1000) {
        const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
        if (offsetAt(zone, mid) === offset) hi = mid;
        else lo = mid;
      }
      segments.push({ at: hi, offset });
    }
    previous = at;
  }
  return {
    transitions: segments.slice(1).map((s) => s.at),
    offsets: [...new Set(segments.map((s) => s.offset))],
    offsetOf(t) {
      let offset = segments[0].offset;
      for (const s of segments) {
        if (s.at > t) break;
        offset = s.offset;
      }
      return offset;
    },
  };
}

/** The zone's UTC offset at `t` (ms), read from Intl. */
function offsetAt(zone, t) {
  let fmt = formatters.get(zone);
  if (!fmt) {
    fmt = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formatters.set(zone, fmt);
  }
  const p = Object.fromEntries(fmt.formatToParts(t).map(({ type, value }) => [type, Number(value)]));
  const wall = Date.UTC(p.year, p.month - 1, p.day, p.hour % 24, p.minute, p.second);
  return wall - Math.floor(t / 1000) * 1000;
}

/**
 * The wall clock that decides at `t` (ms): t's own, except on the second pass of a fall-back (the
 * clock went back and shows times it has shown already), where it is the wall clock just before the
 * clock went back: nothing flips on the second pass, as in cms-service (workers/cms/schedule.cpp
 * wall_clock).
 */
function wallClock(clock, t) {
  const offset = clock.offsetOf(t);
  const back = clock.transitions.filter((at) => at <= t).pop();
  if (back === undefined) return t + offset;
  const before = clock.offsetOf(back - 1000);
  const after = clock.offsetOf(back);
  return before > after && t < back + (before - after) ? back - 1000 + before : t + offset;
}

/** The wall clock at `t`: its date, weekday and minute of the day, and the day before's. */
function localParts(clock, t) {
  const wall = wallClock(clock, t);
  const day = Math.floor(wall / DAY);
  const dateOf = (d) => new Date(d * DAY).toISOString().slice(0, 10);
  const weekdayOf = (d) => DAY_KEYS[new Date(d * DAY).getUTCDay()];
  return {
    date: dateOf(day),
    day: weekdayOf(day),
    minutes: Math.floor((wall - day * DAY) / MINUTE),
    // The calendar's day before (not 24 hours ago: a DST day has 23 or 25 hours).
    yesterday: { date: dateOf(day - 1), day: weekdayOf(day - 1) },
  };
}

/** Open or closed at `t` (ms), as cms-service's state_at. */
function stateAt(hours, overrides, clock, t) {
  // Of the emergency closures in force, the one that lasts longest (one without an end first), as
  // cms names it: its `until` is when the shop can open again.
  let emergency = null;
  for (const o of overrides) {
    const inForce =
      o?.closedNow === true &&
      (o.until == null || instantMs(o.until) > t) &&
      (o.from == null || instantMs(o.from) <= t);
    if (!inForce) continue;
    if (
      emergency === null ||
      (emergency.until != null && (o.until == null || instantMs(o.until) > instantMs(emergency.until)))
    ) {
      emergency = o;
    }
  }
  if (emergency) return { open: false, reason: "override", override: emergency };

  const local = localParts(clock, t);
  const yesterday = local.yesterday;
  const todayOverride = dateOverride(overrides, local.date);
  const yesterdayOverride = dateOverride(overrides, yesterday.date);
  if (todayOverride?.closed === true) return { open: false, reason: "override", override: todayOverride };

  const todays = todayOverride && Array.isArray(todayOverride.hours) ? todayOverride.hours : weekly(hours, local.day);
  const yesterdays =
    yesterdayOverride?.closed === true
      ? []
      : yesterdayOverride && Array.isArray(yesterdayOverride.hours)
        ? yesterdayOverride.hours
        : weekly(hours, yesterday.day);

  const byToday = todays.some((r) => inRangeToday(r, local.minutes));
  const byLastNight = !byToday && yesterdays.some((r) => inRangePastMidnight(r, local.minutes));
  const open = byToday || byLastNight;
  if (todayOverride) return { open, reason: "override", override: todayOverride };
  // Open only by last night's special hours of an override: that override decides, as in cms.
  if (byLastNight && Array.isArray(yesterdayOverride?.hours)) {
    return { open, reason: "override", override: yesterdayOverride };
  }
  return { open, reason: open ? "regular_hours" : "closed", override: null };
}

function weekly(hours, day) {
  const ranges = hours?.weekly?.[day];
  return Array.isArray(ranges) ? ranges : [];
}

function inRangeToday(range, minutes) {
  const open = toMinutes(range?.open);
  const close = toMinutes(range?.close);
  if (open === null || close === null) return false;
  return close > open ? minutes >= open && minutes < close : minutes >= open; // past midnight: until 24:00
}

function inRangePastMidnight(range, minutes) {
  const open = toMinutes(range?.open);
  const close = toMinutes(range?.close);
  if (open === null || close === null || close > open) return false;
  return minutes < close;
}

/** "HH:MM" as minutes of the day: 00:00–23:59, and 24:00 (a close) when `allow24`; else null. */
function toMinutes(hhmm, allow24 = true) {
  const m = typeof hhmm === "string" ? /^([01]\d|2[0-4]):([0-5]\d)$/.exec(hhmm) : null;
  if (!m || (m[1] === "24" && (!allow24 || m[2] !== "00"))) return null;
  return Number(m[1]) * 60 + Number(m[2]);
}

// The date override deciding a local day. Where several cover it, cms-service takes the most recently
// created; a snapshot's items have no creation time and are numbered in order, so the last one listed.
function dateOverride(overrides, date) {
  let found;
  for (const o of overrides) {
    if (
      o?.closedNow !== true &&
      typeof o?.from === "string" &&
      o.from.slice(0, 10) <= date &&
      (typeof o.to === "string" ? o.to.slice(0, 10) : o.from.slice(0, 10)) >= date
    ) {
      found = o;
    }
  }
  return found;
}

/**
 * `zone` when cms-service takes it as a time zone, else undefined: a name of the IANA tz database
 * exactly as written, as the service's Zone::find looks it up (its names, zones.gen.js, are generated
 * with the service's table; links such as `US/Eastern` and `UTC` are names too), and one this
 * runtime's Intl knows (the offsets are read from it). Intl alone would take more than the service:
 * any case (`utc`, `europe/paris`) and ICU's own ids (`IST`, `SystemV/AST4`). docs/cms.md "Time zones".
 */
export function validZone(zone) {
  if (typeof zone !== "string") return undefined;
  zoneNames ??= new Set(ZONE_NAMES.split(/\s+/).filter(Boolean));
  if (!zoneNames.has(zone)) return undefined;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return zone;
  } catch {
    return undefined;
  }
}

function isActive(a, now) {
  if (a.startsAt != null && instantMs(a.startsAt) > now.getTime()) return false;
  if (a.endsAt != null && instantMs(a.endsAt) <= now.getTime()) return false;
  return true;
}

// ---- The snapshot read as cms-service reads a tenant's seed (workers/cms/model.cpp,
// content_from_seed): hours that do not validate are left out as a whole (closed all week, in the
// default zone), hours that name no zone are in the default zone (UTC unless the manifest's
// config.cms.timezone names one); each override or announcement that does not validate is left out;
// a left-out level is "info". The limits are the service's (docs/cms.md "Model"). What is kept is
// written as the service writes it (model.cpp hours_json, override_json, announcement_json): every
// weekday, the seed items' fixed ids, instants in UTC to the second, null where there is none.

const MAX_RANGES_PER_DAY = 6;
const MAX_OVERRIDES = 100;
const MAX_ANNOUNCEMENTS = 50;
const MAX_TEXT = 500; // characters (code points), for an announcement's text and a message
const MAX_OVERRIDE_DAYS = 366;
const FIRST_DAY = "2020-01-01"; // dates the service's zone data covers
const LAST_DAY = "2099-12-31";
const LEVELS = ["info", "warning", "emergency"];
const WEEK = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
// What RFC 3339 can write (shared/rfc3339.cpp refuses instants outside it).
const MIN_INSTANT = Date.parse("0000-01-01T00:00:00.000Z");
const MAX_INSTANT = Date.parse("9999-12-31T23:59:59.999Z");

/**
 * The snapshot as cms-service answers it at version 0: `{hours: {timezone, weekly}, overrides,
 * announcements}`, every item valid by the service's rules and in the shape of its answers
 * (`GET /v1/content`), item for item.
 * @param {any} snapshot the manifest's `fallback`
 * @param {unknown} [defaultZone] the manifest's `config.cms.timezone`
 */
export function cleanSnapshot(snapshot, defaultZone) {
  const zone = validZone(defaultZone) ?? "UTC";
  const s = isPlainObject(snapshot) ? snapshot : {};
  let hours = { timezone: zone, weekly: Object.fromEntries(WEEK.map((day) => [day, []])) };
  if (isPlainObject(s.hours)) {
    const timezone = s.hours.timezone == null ? zone : validZone(s.hours.timezone);
    const weekly = s.hours.weekly;
    const valid =
      timezone !== undefined &&
      isPlainObject(weekly) &&
      Object.entries(weekly).every(([day, ranges]) => DAY_KEYS.includes(day) && validRanges(ranges));
    if (valid) hours = { timezone, weekly: Object.fromEntries(WEEK.map((day) => [day, rangesOf(weekly[day])])) };
  }
  const list = (v) => (Array.isArray(v) ? v : []);
  // Items are numbered as the service numbers them (overrides first, left-out ones counted too):
  // the n-th is the seed id n (model.cpp seed_id), the id Studio addresses it by once it is edited.
  let n = 0;
  const overrides = [];
  for (const o of list(s.overrides)) {
    n++;
    if (validOverride(o) && overrides.length < MAX_OVERRIDES) overrides.push(overrideItem(o, seedId(n)));
  }
  const announcements = [];
  for (const a of list(s.announcements)) {
    n++;
    if (validAnnouncement(a) && announcements.length < MAX_ANNOUNCEMENTS) {
      announcements.push(announcementItem(a, seedId(n)));
    }
  }
  return { hours, overrides, announcements };
}

/** A seed item's fixed ULID: time 0, `index` as its random part (model.cpp seed_id). */
function seedId(index) {
  const id = Array(26).fill("0");
  for (let i = 25; index > 0; i--, index = Math.floor(index / 32)) id[i] = CROCKFORD[index % 32];
  return id.join("");
}

/** A valid day's ranges as the service writes them: `{open, close}` only; absent → []. */
function rangesOf(ranges) {
  return Array.isArray(ranges) ? ranges.map((r) => ({ open: r.open, close: r.close })) : [];
}

/** A valid RFC 3339 instant as the service writes it: UTC, to the second; absent or null → null. */
function instantOrNull(v) {
  return v == null ? null : formatInstant(instantMs(v));
}

function formatInstant(ms) {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A valid override as model.cpp override_json writes it (a seed item has no creation time). */
function overrideItem(o, id) {
  const message = o.message ?? "";
  if (o.closedNow === true) {
    // An emergency closure without `from` started at the epoch, as the service reads it.
    const from = o.from == null ? formatInstant(0) : instantOrNull(o.from);
    return { id, closedNow: true, from, until: instantOrNull(o.until), message, createdAt: null };
  }
  const item = { id, from: o.from, to: o.to ?? o.from, closed: o.closed === true };
  if (o.hours != null) item.hours = rangesOf(o.hours);
  return { ...item, message, createdAt: null };
}

/** A valid announcement as model.cpp announcement_json writes it. */
function announcementItem(a, id) {
  return {
    id,
    text: a.text,
    level: a.level ?? "info",
    startsAt: instantOrNull(a.startsAt),
    endsAt: instantOrNull(a.endsAt),
    createdAt: null,
    updatedAt: null,
  };
}

function isPlainObject(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** At most 6 `{open, close}` of a day: open 00:00–23:59, close 00:00–24:00, open ≠ close. */
function validRanges(ranges) {
  if (!Array.isArray(ranges) || ranges.length > MAX_RANGES_PER_DAY) return false;
  return ranges.every((r) => {
    if (!isPlainObject(r)) return false;
    const open = toMinutes(r.open, false);
    const close = toMinutes(r.close, true);
    return open !== null && close !== null && open !== close;
  });
}

/** Absent, null or a string of at most 500 characters (the service's optional text). */
function optionalText(v) {
  return v == null || (typeof v === "string" && [...v].length <= MAX_TEXT);
}

/** Absent, null or an RFC 3339 date-time. */
function optionalInstant(v) {
  return v == null || rfc3339Ms(v) !== null;
}

/** "YYYY-MM-DD", a real date from 2020 through 2099; its day number, else null. */
function dayOf(v) {
  if (typeof v !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(v) || v < FIRST_DAY || v > LAST_DAY) return null;
  const ms = Date.UTC(Number(v.slice(0, 4)), Number(v.slice(5, 7)) - 1, Number(v.slice(8, 10)));
  return new Date(ms).toISOString().slice(0, 10) === v ? ms / DAY : null;
}

function validOverride(o) {
  if (!isPlainObject(o) || !optionalText(o.message)) return false;
  if (o.closedNow != null && o.closedNow !== false) {
    return o.closedNow === true && optionalInstant(o.until) && optionalInstant(o.from);
  }
  const from = dayOf(o.from);
  const to = o.to == null ? from : dayOf(o.to);
  if (from === null || to === null || to < from || to - from >= MAX_OVERRIDE_DAYS) return false;
  if (o.closed != null && typeof o.closed !== "boolean") return false;
  if (o.hours != null) return o.closed !== true && validRanges(o.hours);
  return o.closed === true;
}

function validAnnouncement(a) {
  if (!isPlainObject(a) || typeof a.text !== "string" || a.text === "" || [...a.text].length > MAX_TEXT) return false;
  if (a.level != null && !LEVELS.includes(a.level)) return false;
  if (!optionalInstant(a.startsAt) || !optionalInstant(a.endsAt)) return false;
  return a.startsAt == null || a.endsAt == null || instantMs(a.endsAt) > instantMs(a.startsAt);
}

/** A valid RFC 3339 instant, as the service keeps it: to the second (ms, rounded down). */
function instantMs(v) {
  return Math.floor(/** @type {number} */ (rfc3339Ms(v)) / 1000) * 1000;
}

/**
 * An RFC 3339 date-time (`2026-05-25T14:00:00Z`, `…T16:00:00.5+02:00`) as ms since the epoch, else
 * null: the service's grammar (shared/rfc3339.cpp), not everything Date.parse would guess at.
 */
export function rfc3339Ms(v) {
  if (typeof v !== "string" || v.length > 64) return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/.exec(v);
  if (!m) return null;
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number);
  const day = new Date(0);
  day.setUTCFullYear(y, mo - 1, d); // years before 100 too (Date.UTC would read 0050 as 1950)
  const date = day.getTime();
  if (mo < 1 || mo > 12 || day.getUTCDate() !== d || h > 23 || mi > 59 || se > 59) return null;
  const offset = m[8] ? (m[8] === "-" ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10])) : 0;
  if (m[8] && (Number(m[9]) > 23 || Number(m[10]) > 59)) return null;
  const fraction = m[7] ? Number(`${m[7]}000`.slice(0, 3)) : 0;
  const ms = date + ((h * 60 + mi) * 60 + se) * 1000 + fraction - offset * MINUTE;
  // An offset may move a local time of year 0000 or 9999 out of what RFC 3339 can write back: the
  // service refuses it (shared/rfc3339.cpp), so does the snapshot's reader.
  return ms < MIN_INSTANT || ms > MAX_INSTANT ? null : ms;
}
