// The browser harness every page test shares: Debian's chromium, driven by playwright-core, headless
// and offline. Screenshots land in build/screenshots/ (listed at the end of scripts/test).
//
//   const browser = await launchBrowser();
//   const page = await browser.newPage();
//   await page.goto(url);
//   await screenshot(page, "status-page");
//   await browser.close();
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const SCREENSHOT_DIR = path.join(ROOT, "build/screenshots");

// Debian's package; CHROMIUM_PATH overrides it (e.g. another distribution's binary).
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export function chromiumAvailable() {
  return existsSync(CHROMIUM);
}

// The flags keep Chromium off the network entirely: no component updates, no sync, no QUIC probes
// (on a closed network they fail by the dozen and slow every start).
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-default-apps",
  "--disable-extensions",
];

export async function launchBrowser() {
  if (!chromiumAvailable()) {
    throw new Error(`no Chromium at ${CHROMIUM}: run scripts/bootstrap (installs Debian's chromium)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}

/** Saves a full-page PNG as build/screenshots/<name>.png and returns its path. */
export async function screenshot(page, name) {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** What the page shows, for failure messages: its URL, title and visible text (trimmed). */
export async function describePage(page) {
  // biome-ignore lint/performance/useDomNodeTextContent: what is rendered visible is the point here
  const text = await page.evaluate(() => document.body?.innerText ?? "");
  return `${page.url()} "${await page.title()}"\n${text.slice(0, 2000)}`;
}
