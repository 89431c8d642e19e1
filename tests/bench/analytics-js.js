// The plain-JS peer of the analytics worker's beacon intake, for the bench (tests/bench/analytics-peer.mjs):
// what a Workers user would write by hand for POST /beacon, doing the same work as analytics.wasm
// (workers/analytics/intake.cpp) so that the two can be compared at the same concurrency.
//
// Same: tenant auth (peer-common.js), the 4 KiB limit (413), text/plain or JSON (415), the beacon's
// fields and their checks (u absolute http(s), r string, w 0..100000: 400 invalid_request naming the
// field), user-agent classification (device, browser; empty, headless, tools, our own probes and every
// pattern of the crawler-user-agents list are bots), page dimensions (path without query, the three
// utm_* values, referrer host without www. or "(direct)" for the site's own hosts), country and colo
// from request.cf, the daily salt read from D1 once per isolate and day, the visitor hash (SHA-256 of
// salt, tenant, IP and user agent; none under DNT or Sec-GPC), one Analytics Engine point with the same
// blobs and doubles, one queue message in the same shape, then 202 with an empty body.
// Differs: the crawler list is matched with the list's own regular expressions joined into one
// RegExp (what a JS user would do; the C++ core compiles them to literal rules for Aho-Corasick, see
// scripts/gen-analytics.mjs), given to the worker as the CRAWLER_PATTERNS binding; URLs go through
// `new URL` (the core splits them by hand); a missing salt is a 503 here (the bench stores it first;
// the core draws one).
import { authenticateTenant, fail, sha256 } from "./peer-common.js";

const MAX_BEACON = 4096;
const MAX_WIDTH = 100_000;
const MAX_PATH = 512;
const MAX_UTM = 100;
const MAX_HOST = 253;
const MAX_CF = 16;
const DIRECT = "(direct)";
const UNKNOWN = "(unknown)";
const HEADLESS = /headlesschrome|phantomjs/;
const TOOL = /curl\//;
const PROBE = /siteswarm-monitor/;

let crawlers = null; // one RegExp of every crawler pattern, built on the first beacon
let salt = { day: "", hex: "" };

const has = (s, ...needles) => needles.some((n) => s.includes(n));
function device(ua) {
  if (has(ua, "ipad", "tablet", "kindle", "silk/", "; kf")) return "tablet";
  if (has(ua, "windows phone", "iphone", "ipod")) return "mobile";
  if (ua.includes("android")) return ua.includes("mobi") ? "mobile" : "tablet";
  return ua.includes("mobi") ? "mobile" : "desktop";
}
function browser(ua) {
  if (has(ua, "edg/", "edga/", "edgios/", "edge/")) return "Edge";
  if (has(ua, "opr/", "opera")) return "Opera";
  if (ua.includes("samsungbrowser/")) return "Samsung Internet";
  if (ua.includes("yabrowser/")) return "Yandex";
  if (ua.includes("vivaldi/")) return "Vivaldi";
  if (ua.includes("silk/")) return "Silk";
  if (has(ua, "firefox/", "fxios/")) return "Firefox";
  if (has(ua, "msie ", "trident/")) return "Internet Explorer";
  if (has(ua, "crios/", "chrome/", "chromium/")) return "Chrome";
  if (ua.includes("safari/") && ua.includes("version/")) return "Safari";
  return "Other";
}
function botReason(raw, env) {
  const ua = raw.toLowerCase();
  if (ua.trim() === "") return "empty_ua";
  if (HEADLESS.test(ua)) return "headless";
  if (TOOL.test(ua)) return "tool";
  if (PROBE.test(ua)) return "probe";
  crawlers ??= new RegExp(JSON.parse(env.CRAWLER_PATTERNS).join("|"), "i");
  return crawlers.test(raw) ? "crawler" : "";
}

const invalid = (field, why) => fail("invalid_request", `beacon: "${field}" ${why}`, { field });
function parseBeacon(text) {
  let j;
  try {
    j = JSON.parse(text);
  } catch {
    return { error: fail("invalid_json", "the body is not valid JSON") };
  }
  if (!j || typeof j !== "object" || Array.isArray(j)) return { error: fail("invalid_request", "send a JSON object") };
  if (typeof j.u !== "string") return { error: invalid("u", "must be the page URL (a string)") };
  let page;
  try {
    page = new URL(j.u);
  } catch {}
  if (!page || (page.protocol !== "http:" && page.protocol !== "https:"))
    return { error: invalid("u", "must be an absolute http(s) URL") };
  if (j.r != null && typeof j.r !== "string") return { error: invalid("r", "must be a string") };
  if (j.w != null && (typeof j.w !== "number" || j.w < 0 || j.w > MAX_WIDTH))
    return { error: invalid("w", "must be a number from 0 to 100000") };
  return { page, referrer: j.r ?? "", width: Math.trunc(j.w ?? 0) };
}

const noWww = (host) => (host.startsWith("www.") ? host.slice(4) : host);
function dimensions({ page, referrer }, ownHosts) {
  const dims = { path: page.pathname.slice(0, MAX_PATH), referrer: DIRECT };
  for (const key of ["utm_source", "utm_medium", "utm_campaign"]) {
    const v = page.searchParams.get(key);
    if (v) dims[key] = v.slice(0, MAX_UTM);
  }
  let ref = null;
  try {
    ref = referrer ? new URL(referrer) : null;
  } catch {}
  if (ref?.hostname) {
    const host = noWww(ref.hostname);
    const own = host === noWww(page.hostname) || ownHosts.some((h) => host === noWww(String(h).toLowerCase()));
    if (!own) dims.referrer = host.slice(0, MAX_HOST);
  }
  return dims;
}

async function dailySalt(db, day) {
  if (salt.day === day) return salt.hex;
  const row = await db.prepare("SELECT salt_hex FROM salts WHERE day = ?1").bind(day).first();
  if (!row) return null;
  salt = { day, hex: row.salt_hex };
  return salt.hex;
}

async function beacon(request, env) {
  if (Number(request.headers.get("content-length") ?? 0) > MAX_BEACON)
    return fail("payload_too_large", `a beacon is at most ${MAX_BEACON} bytes`);
  const auth = await authenticateTenant(request, env.ANALYTICS_DB);
  if (auth.error) return auth.error;
  const tenant = auth.row.tenant_id;
  const media = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (media && media !== "text/plain" && media !== "application/json")
    return fail("unsupported_media_type", "beacon: send text/plain or application/json");
  const text = await request.text();
  if (text.length > MAX_BEACON) return fail("payload_too_large", `a beacon is at most ${MAX_BEACON} bytes`);
  const parsed = parseBeacon(text);
  if (parsed.error) return parsed.error;

  const ua = request.headers.get("user-agent") ?? "";
  const lower = ua.toLowerCase();
  const bot = botReason(ua, env);
  const day = new Date().toISOString().slice(0, 10);
  const message = { t: tenant, d: day };
  let dims = {};
  if (bot) {
    message.f = true;
  } else {
    let hosts = [];
    try {
      hosts = JSON.parse(auth.row.config_json).hosts ?? [];
    } catch {}
    const cf = request.cf ?? {};
    const cfText = (v) => (typeof v === "string" && v ? v.slice(0, MAX_CF) : UNKNOWN);
    dims = {
      ...dimensions(parsed, Array.isArray(hosts) ? hosts : []),
      country: cfText(cf.country),
      colo: cfText(cf.colo),
      device: device(lower),
      browser: browser(lower),
    };
    const optedOut = request.headers.get("dnt") === "1" || request.headers.get("sec-gpc") === "1";
    if (!optedOut) {
      const dailyHex = await dailySalt(env.ANALYTICS_DB, day);
      if (dailyHex === null) return fail("service_unavailable", "no salt for today yet");
      const ip = request.headers.get("cf-connecting-ip") ?? "";
      message.v = (await sha256(`${dailyHex}\n${tenant}\n${ip}\n${ua}`)).slice(0, 16);
    }
  }
  message.m = dims;
  const d = (k) => dims[k] ?? "";
  try {
    env.PAGEVIEWS.writeDataPoint({
      indexes: [tenant],
      blobs: [
        bot ? "filtered" : "pageview",
        d("path"),
        d("referrer"),
        d("utm_source"),
        d("utm_medium"),
        d("utm_campaign"),
        d("country"),
        d("colo"),
        d("device"),
        d("browser"),
        bot,
      ],
      doubles: [1, parsed.width, message.v ? 1 : 0],
    });
  } catch (e) {
    console.log(`beacon: Analytics Engine write failed: ${e}`);
  }
  try {
    await env.PAGEVIEWS_QUEUE.send(message);
  } catch {
    return fail("dependency_unavailable", "the pageview could not be queued; retry later");
  }
  return new Response(null, { status: 202, headers: { "cache-control": "no-store" } });
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === "/health") return Response.json({ ok: true, service: "bench-analytics-js" });
    if (pathname !== "/beacon") return fail("not_found", "no such route");
    if (request.method !== "POST") return fail("method_not_allowed", "POST only");
    return beacon(request, env);
  },
  // The peer's queue is consumed here and acknowledged: the bench measures intake, not the rollup.
  async queue(batch) {
    batch.ackAll();
  },
};
