// The manifest's fallback snapshot read like cms-service would (zero lockout): content with only
// the announcements active now, and open/closed computed in the snapshot's IANA time zone.

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

/** GET /v1/content from the snapshot. */
export function fallbackContent(appId, snapshot, now) {
  const announcements = (Array.isArray(snapshot.announcements) ? snapshot.announcements : []).filter((a) =>
    isActive(a, now),
  );
  return {
    tenantId: appId,
    version: 0,
    hours: snapshot.hours ?? null,
    overrides: Array.isArray(snapshot.overrides) ? snapshot.overrides : [],
    announcements,
    source: "fallback",
  };
}

/** GET /v1/status?at= from the snapshot. */
export function fallbackStatus(snapshot, at) {
  const hours = snapshot.hours;
  const zone = validZone(hours?.timezone) ?? "UTC";
  const overrides = Array.isArray(snapshot.overrides) ? snapshot.overrides : [];
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
  const openEnded = (o) =>
    o?.closedNow === true && o.until == null && (o.from == null || !/T/.test(o.from) || Date.parse(o.from) <= t);
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
    if (typeof o.from === "string" && /T/.test(o.from)) emergencyBounds.push(Date.parse(o.from));
    if (o.until != null) emergencyBounds.push(Date.parse(o.until));
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

/** The wall clock at `t`: its date, weekday and minute of the day, and the day before's. */
function localParts(clock, t) {
  const wall = t + clock.offsetOf(t);
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
  const emergency = overrides.find(
    (o) =>
      o?.closedNow === true &&
      (o.until == null || Date.parse(o.until) > t) &&
      (o.from == null || !/T/.test(o.from) || Date.parse(o.from) <= t),
  );
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

  const open =
    todays.some((r) => inRangeToday(r, local.minutes)) || yesterdays.some((r) => inRangePastMidnight(r, local.minutes));
  if (todayOverride) return { open, reason: "override", override: todayOverride };
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

function toMinutes(hhmm) {
  const m = /^([01]\d|2[0-4]):([0-5]\d)$/.exec(hhmm ?? "");
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
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

/** `zone` when it is an IANA time zone this runtime knows (Intl), else undefined. */
export function validZone(zone) {
  if (typeof zone !== "string") return undefined;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return zone;
  } catch {
    return undefined;
  }
}

function isActive(a, now) {
  if (a?.startsAt && Date.parse(a.startsAt) > now.getTime()) return false;
  if (a?.endsAt && Date.parse(a.endsAt) <= now.getTime()) return false;
  return true;
}
