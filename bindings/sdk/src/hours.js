// The manifest's fallback snapshot read like cms-service would (zero lockout): content with only
// the announcements active now, and open/closed computed in the snapshot's IANA time zone.

const MINUTE = 60_000;
const SCAN_LIMIT_MINUTES = 8 * 24 * 60; // nextChange is looked for over the coming 8 days
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
  const start = new Date(Math.floor(at.getTime() / MINUTE) * MINUTE);
  const state = stateAt(hours, overrides, zone, at);
  let nextChange = null;
  for (let i = 1; i <= SCAN_LIMIT_MINUTES; i++) {
    const t = new Date(start.getTime() + i * MINUTE);
    if (stateAt(hours, overrides, zone, t).open !== state.open) {
      nextChange = t.toISOString().replace(/\.\d{3}Z$/, "Z");
      break;
    }
  }
  return { ...state, nextChange, source: "fallback" };
}

function stateAt(hours, overrides, zone, at) {
  const emergency = overrides.find(
    (o) =>
      o?.closedNow === true &&
      (o.until == null || Date.parse(o.until) > at.getTime()) &&
      (o.from == null || !/T/.test(o.from) || Date.parse(o.from) <= at.getTime()),
  );
  if (emergency) return { open: false, reason: "override", override: emergency };

  const local = localParts(zone, at);
  // The calendar's day before (not 24 hours ago: a DST day has 23 or 25 hours).
  const yesterday = dayBefore(local.date);
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

const DAY_KEYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/** The local date before `date` (YYYY-MM-DD) and its weekday key. */
function dayBefore(date) {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - 1);
  return { date: d.toISOString().slice(0, 10), day: DAY_KEYS[d.getUTCDay()] };
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

function dateOverride(overrides, date) {
  return overrides.find(
    (o) =>
      o?.closedNow !== true &&
      typeof o?.from === "string" &&
      o.from.slice(0, 10) <= date &&
      (typeof o.to === "string" ? o.to.slice(0, 10) : o.from.slice(0, 10)) >= date,
  );
}

function localParts(zone, at) {
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
      weekday: "short",
    });
    formatters.set(zone, fmt);
  }
  const p = Object.fromEntries(fmt.formatToParts(at).map(({ type, value }) => [type, value]));
  return {
    date: `${p.year}-${p.month}-${p.day}`,
    day: p.weekday.slice(0, 3).toLowerCase(),
    minutes: (Number(p.hour) % 24) * 60 + Number(p.minute),
  };
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
