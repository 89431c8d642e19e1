// A person's path through each example client app, in Debian's Chromium against the real platform
// workers in workerd: open the page, read the open-now line and the announcements, fill in the form
// (the local Turnstile widget solves itself with Cloudflare's test sitekey), land on the thank-you
// page. Then, as the tenant admin: the lead in the admin API and the CSV export, the notification at
// the stub (once), the pageview in analytics, and (auto-repair) the monitor on the status page. Each
// home page also passes axe-core (no serious or critical violation) and stays within its byte budget
// (workers/workers.json apps[].byteBudget, docs/clients.md). Screenshots: build/screenshots/apps-*.png.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { after, before, describe, it } from "node:test";
import { APPS } from "../../scripts/lib/workers.mjs";
import { jsonOf, startMesh } from "../integration/mesh.mjs";
import { describePage, launchBrowser, screenshot } from "./browser.mjs";

// Chromium headless announces itself as HeadlessChrome, which analytics filters as a bot: the visitor
// presents an ordinary desktop Chrome user agent.
const DESKTOP_CHROME =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// axe-core from node_modules (a pinned devDependency in package.json); AXE_CORE_PATH points at another
// copy of axe.min.js. Not loadable: the accessibility check fails, it is never skipped.
function axeSource() {
  try {
    const file = process.env.AXE_CORE_PATH ?? createRequire(import.meta.url).resolve("axe-core/axe.min.js");
    return { source: readFileSync(file, "utf8") };
  } catch (err) {
    return { error: `axe-core could not be loaded (npm ci installs it): ${err?.message ?? err}` };
  }
}
const AXE = axeSource();

let mesh;
let browser;
before(async () => {
  mesh = await startMesh({ localSites: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await mesh?.dispose();
});

async function waitFor(what, probe, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(150);
  }
}

const adminHeaders = (tenant) => ({
  "X-SiteSwarm-Tenant-Id": tenant,
  authorization: `Bearer ${mesh.tokens[tenant].adminToken}`,
});

// What each app's visitor does, and where its lead must arrive.
const PATHS = {
  bakery: {
    form: "form#contact",
    banner: /^(Open now|Closed)/,
    fill: { name: "Fiona Baker", email: "fiona.browser@example.com", message: "Two sourdough loaves for Saturday" },
    unique: "fiona.browser@example.com",
    mark: "fiona.browser",
    notification: { path: "/emails", count: 1 },
  },
  "software-agency": {
    form: "form#inquiry",
    banner: null,
    fill: { name: "Gus Grant", email: "gus.browser@example.com", company: "Granite Labs", message: "A booking API" },
    select: { project_type: "api", budget: "50k-plus", timeline: "asap" },
    unique: "Granite Labs",
    mark: "Granite",
    notification: { path: "/crm/", count: 1 },
  },
  "auto-repair": {
    form: "form#booking",
    banner: /^(Open now|Closed)/,
    fill: { name: "Hana Ito", phone: "+1 555 010 7788", vehicle: "2019 Subaru Outback", message: "Squeaky brakes" },
    select: { service: "brakes" },
    unique: "Subaru Outback",
    mark: "Outback",
    notification: { path: "/2010-04-01/", count: 1, also: "/v3/mail/send" },
  },
};

async function visit(key, run) {
  const context = await browser.newContext({ userAgent: DESKTOP_CHROME, viewport: { width: 1024, height: 900 } });
  const page = await context.newPage();
  try {
    await run(page);
  } catch (err) {
    err.message += `\npage showed: ${await describePage(page)}`;
    await screenshot(page, `apps-${key}-failed`).catch(() => {});
    throw err;
  } finally {
    await context.close();
  }
}

describe("a visitor's path through each app, then the tenant admin's view", () => {
  for (const [key, path] of Object.entries(PATHS)) {
    const appId = key;
    it(`${key}: open, read the banner, submit the form, thank-you page; lead, notification and pageview arrive`, async () => {
      const site = await mesh.url(key);
      await visit(key, async (page) => {
        const beacon = page.waitForRequest((r) => r.url().endsWith("/_sa/beacon") && r.method() === "POST");
        const response = await page.goto(site);
        assert.equal(response.status(), 200);
        await beacon;
        if (path.banner) assert.match((await page.locator("#status").textContent()).trim(), path.banner);
        assert.ok((await page.locator(".announcement").count()) >= 1, "an announcement from cms");
        // The local widget solved itself and put the dummy token into the form.
        await page.locator(`${path.form} [role=status]`).getByText("Verified").waitFor();
        await screenshot(page, `apps-${key}-home`);

        for (const [name, value] of Object.entries(path.fill)) await page.fill(`${path.form} [name="${name}"]`, value);
        for (const [name, value] of Object.entries(path.select ?? {})) {
          await page.selectOption(`${path.form} [name="${name}"]`, value);
        }
        await Promise.all([page.waitForURL(/\/thanks\.html$/), page.click(`${path.form} button[type=submit]`)]);
        assert.match(await page.locator("h1").textContent(), /Thank you|sent|received/i);
        await screenshot(page, `apps-${key}-thanks`);
      });

      // The tenant admin's view: the lead in the admin API and in the CSV export.
      const list = await jsonOf(
        await mesh.fetch("leads", "/api/leads?limit=50", { headers: adminHeaders(appId) }),
        200,
      );
      const lead = list.leads.find((l) => JSON.stringify(l).includes(path.unique));
      assert.ok(lead, `the lead in GET /api/leads: ${JSON.stringify(list).slice(0, 500)}`);
      const csv = await (await mesh.fetch("leads", "/api/leads/export.csv", { headers: adminHeaders(appId) })).text();
      assert.ok(csv.includes(path.unique), "the lead in the CSV export");

      // The notification at the stub, once per channel.
      const { path: channel, count, also } = path.notification;
      for (const prefix of [channel, also].filter(Boolean)) {
        const sent = await waitFor(`${prefix} notification`, () => {
          const found = mesh.stubs.find(prefix, "POST").filter((r) => r.body.includes(path.mark));
          return found.length ? found : null;
        });
        assert.equal(sent.length, count, `${prefix}: delivered once`);
      }
      if (key === "software-agency") {
        assert.equal(mesh.stubs.find("/crm/", "POST").at(-1).signatureValid, true, "the CRM verified the signature");
      }

      // The pageview in analytics.
      const today = new Date().toISOString().slice(0, 10);
      await waitFor("the pageview in /v1/stats", async () => {
        const res = await mesh.fetch("analytics", `/v1/stats?from=${today}&to=${today}&by=path`, {
          headers: mesh.tenantHeaders(appId),
        });
        const stats = await jsonOf(res, 200);
        return stats.rows.some((r) => r.key === "/" && r.pageviews >= 1);
      });
    });
  }

  it("a refused form shows the person the problem beside the field, with what they typed kept", async () => {
    await visit("auto-repair-refused", async (page) => {
      await page.goto(await mesh.url("auto-repair"));
      await page.fill('form#booking [name="name"]', "Ivo");
      await page.fill('form#booking [name="phone"]', "12"); // passes the browser's checks, not the service's
      await page.fill('form#booking [name="vehicle"]', "1999 Volvo V70");
      await page.locator("form#booking [role=status]").getByText("Verified").waitFor();
      const [response] = await Promise.all([page.waitForNavigation(), page.click("form#booking button[type=submit]")]);
      assert.equal(response.status(), 400);
      assert.match(await page.locator("#form-errors").textContent(), /check the fields/);
      assert.match(await page.locator("#phone-error").textContent(), /not a phone number/);
      assert.equal(await page.locator('[name="phone"]').getAttribute("aria-invalid"), "true");
      assert.equal(await page.inputValue('[name="vehicle"]'), "1999 Volvo V70");
      // The summary's link puts the cursor in the field to fix (not on the text after it).
      await page.click('#form-errors a:has-text("Mobile phone")');
      assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("name")), "phone");
      await screenshot(page, "apps-auto-repair-refused");
    });
  });

  it("honeypot: a bot filling the hidden field sees the same thank-you page, and nothing is stored", async () => {
    const db = await mesh.d1("leads", "LEADS_DB");
    const count = async () =>
      (await db.prepare("SELECT COUNT(*) AS n FROM leads WHERE tenant_id = 'bakery'").first()).n;
    const before = await count();
    await visit("bakery-bot", async (page) => {
      await page.goto(await mesh.url("bakery"));
      await page.fill('form#contact [name="name"]', "Bot");
      await page.fill('form#contact [name="email"]', "bot.browser@example.com");
      await page.evaluate(() => {
        document.querySelector('[name="company_website"]').value = "https://spam.example";
      });
      await page.locator("form#contact [role=status]").getByText("Verified").waitFor();
      await Promise.all([page.waitForURL(/\/thanks\.html$/), page.click("form#contact button[type=submit]")]);
    });
    assert.equal(await count(), before);
    assert.equal(mesh.stubs.find("/emails", "POST").filter((r) => r.body.includes("bot.browser")).length, 0);
  });

  it("auto-repair: the monitor its manifest declares probes the real page and shows on its status page", async () => {
    const db = await mesh.d1("monitoring", "MONITORING_DB");
    const probes = async () =>
      (await db.prepare("SELECT COUNT(*) AS n FROM probes WHERE tenant_id = 'auto-repair' AND ok = 1").first()).n;
    const before = await probes();
    const res = await mesh.fetch("monitoring", "/__test/tick", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tick: Math.floor(Date.now() / 300_000) + 1 }),
    });
    assert.equal(res.status, 200, await res.text());
    await waitFor("a successful probe of the auto-repair page", async () => (await probes()) > before);
    await visit("auto-repair-status", async (page) => {
      await page.goto(await mesh.url("auto-repair"));
      await Promise.all([page.waitForURL(/\/status$/), page.click('a[href="/status"]')]);
      assert.equal(await page.locator("section.monitor").count(), 1);
      assert.match(await page.locator("section.monitor").first().textContent(), /home/);
      assert.match(await page.locator(".banner").textContent(), /operational|up/i);
      await screenshot(page, "apps-auto-repair-status");
    });
  });
});

describe("the local Turnstile widget", () => {
  // Cloudflare's test sitekeys, rendered by the stubs' widget into a bare form.
  const form = (sitekey) =>
    `<!doctype html><html lang="en"><title>w</title><form><div class="cf-turnstile" data-sitekey="${sitekey}"></div></form>` +
    `<script src="${mesh.stubs.url}/turnstile/v0/api.js"></script>`;
  const token = (page) => page.evaluate(() => document.querySelector('[name="cf-turnstile-response"]')?.value ?? null);

  it("passes, blocks or asks for a click as Cloudflare's test sitekeys do", async () => {
    await visit("turnstile-widget", async (page) => {
      await page.setContent(form("1x00000000000000000000AA"));
      await page.getByText("Verified").waitFor();
      assert.equal(await token(page), "XXXX.DUMMY.TOKEN.XXXX");

      await page.setContent(form("2x00000000000000000000AB"));
      await page.getByText("Verification failed").waitFor();
      assert.equal(await token(page), "");

      await page.setContent(form("3x00000000000000000000FF"));
      await page.getByText("Verify you are human").waitFor();
      assert.equal(await token(page), "");
      await page.getByLabel("Verify you are human").click(); // the box is replaced by "Verified" once solved
      assert.equal(await token(page), "XXXX.DUMMY.TOKEN.XXXX");
      assert.equal(await page.evaluate(() => window.turnstile.getResponse()), "XXXX.DUMMY.TOKEN.XXXX");
    });
  });
});

describe("accessibility and weight of each home page", () => {
  for (const key of Object.keys(PATHS)) {
    describe(key, () => {
      // One visit per app serves both checks: what the page loaded, then axe-core on it.
      let context;
      let page;
      const sizes = {};
      let site;
      before(async () => {
        site = new URL(await mesh.url(key));
        context = await browser.newContext({ userAgent: DESKTOP_CHROME, viewport: { width: 1024, height: 900 } });
        page = await context.newPage();
        page.on("response", async (response) => {
          const url = new URL(response.url());
          const type = response.request().resourceType();
          // The app's own bytes; the Turnstile widget is Cloudflare's (here: the local stub's).
          if (url.host !== site.host || !["document", "script", "stylesheet"].includes(type)) return;
          sizes[url.pathname] = (await response.body()).length;
        });
        await page.goto(site.href);
        await page.waitForLoadState("networkidle");
      });
      after(() => context?.close());

      it("HTML + JS + CSS of the home page within its byte budget", async (t) => {
        const budget = APPS[key].byteBudget;
        assert.ok(Number.isInteger(budget), `workers.json apps.${key}.byteBudget`);
        const total = Object.values(sizes).reduce((a, b) => a + b, 0);
        t.diagnostic(`${key}: ${total} of ${budget} bytes ${JSON.stringify(sizes)}`);
        assert.ok(sizes["/"] > 0 && sizes["/_sa/script.js"] > 0, JSON.stringify(sizes));
        assert.ok(total <= budget, `${key}: ${total} bytes > budget ${budget}: ${JSON.stringify(sizes)}`);
      });

      if (key === "software-agency") {
        it("two columns: a problem shown under one field leaves its row neighbour's input its own height", async () => {
          const heights = await page.evaluate(() => {
            const height = (name) => document.querySelector(`[name="${name}"]`).getBoundingClientRect().height;
            const before = height("name");
            const mark = document.createElement("span");
            mark.className = "field-error";
            mark.textContent = "is not an email address";
            document.querySelector('[name="email"]').after(mark); // as a refused post shows it
            const after = height("name");
            mark.remove();
            return { before, after };
          });
          assert.equal(heights.after, heights.before, JSON.stringify(heights));
        });
      }

      it("no serious or critical axe-core violation", async () => {
        assert.ok(AXE.source, AXE.error);
        try {
          await page.locator("[role=status]").getByText("Verified").first().waitFor();
          await page.addScriptTag({ content: AXE.source });
          const violations = await page.evaluate(async () => {
            const result = await window.axe.run(document, { resultTypes: ["violations"] }); // injected above
            return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target) }));
          });
          const serious = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
          assert.deepEqual(serious, [], JSON.stringify(serious, null, 2));
        } catch (err) {
          err.message += `\npage showed: ${await describePage(page)}`;
          await screenshot(page, `apps-${key}-axe-failed`).catch(() => {});
          throw err;
        }
      });
    });
  }
});
