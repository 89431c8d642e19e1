// Dev-only: how well the analytics core's user-agent classifier agrees with an independent parser,
// ua-parser-js (MIT, 1.x; a devDependency, never shipped), on the committed corpus of real browser
// user agents (workers/analytics/testdata/browsers.tsv). The native suite proves that the C++
// classifier gives exactly the labels of that corpus; this test measures those labels against
// ua-parser-js and prints the agreement per field (and every disagreement).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { UAParser } from "ua-parser-js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const corpus = readFileSync(path.join(ROOT, "workers/analytics/testdata/browsers.tsv"), "utf8")
  .split("\n")
  .filter((line) => line && !line.startsWith("#"))
  .map((line) => {
    const [device, browser, ua] = line.split("\t");
    return { device, browser, ua };
  });

// ua-parser-js names → the classifier's families (docs/analytics.md).
const FAMILY = {
  Chrome: "Chrome",
  "Chrome Mobile": "Chrome",
  "Chrome WebView": "Chrome",
  "Mobile Chrome": "Chrome",
  Safari: "Safari",
  "Mobile Safari": "Safari",
  Firefox: "Firefox",
  "Mobile Firefox": "Firefox",
  Edge: "Edge",
  Opera: "Opera",
  "Opera Mobi": "Opera",
  "Samsung Browser": "Samsung Internet",
  "Samsung Internet": "Samsung Internet",
  Yandex: "Yandex",
  Vivaldi: "Vivaldi",
  Silk: "Silk",
  IE: "Internet Explorer",
  IEMobile: "Internet Explorer",
};
const MIN_AGREEMENT = 0.9;

describe("analytics: user-agent classifier vs ua-parser-js", () => {
  it(`agrees on device class and browser family for at least ${MIN_AGREEMENT * 100}% of the corpus`, () => {
    let device = 0;
    let browser = 0;
    const misses = [];
    for (const row of corpus) {
      const r = new UAParser(row.ua).getResult();
      const theirDevice = r.device.type === "mobile" || r.device.type === "tablet" ? r.device.type : "desktop";
      const theirBrowser = FAMILY[r.browser.name] ?? "Other";
      if (theirDevice === row.device) device++;
      else misses.push(`device ${row.device} vs ${theirDevice}: ${row.ua}`);
      if (theirBrowser === row.browser) browser++;
      else misses.push(`browser ${row.browser} vs ${theirBrowser} (${r.browser.name}): ${row.ua}`);
    }
    const n = corpus.length;
    console.log(`ua-parser-js agreement on ${n} user agents: device ${device}/${n}, browser ${browser}/${n}`);
    for (const m of misses) console.log(`  differs: ${m}`);
    assert.ok(n >= 40);
    assert.ok(device / n >= MIN_AGREEMENT, `device agreement ${device}/${n}`);
    assert.ok(browser / n >= MIN_AGREEMENT, `browser agreement ${browser}/${n}`);
  });
});
