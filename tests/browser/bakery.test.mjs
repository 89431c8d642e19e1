// The bakery's home page as a visitor sees it, in Debian's Chromium: the page renders, the contact
// form is there with its fields, and the honeypot field is out of people's sight.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startMesh } from "../integration/mesh.mjs";
import { describePage, launchBrowser, screenshot } from "./browser.mjs";

let mesh;
let browser;
before(async () => {
  mesh = await startMesh();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await mesh?.dispose();
});

describe("bakery home page in Chromium", () => {
  it("shows the contact form a visitor can fill, with the honeypot out of sight", async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    const response = await page.goto(await mesh.url("bakery"));
    assert.equal(response.status(), 200);
    try {
      const form = page.locator("form#contact");
      assert.equal(await form.count(), 1, "the contact form");
      for (const field of ["name", "email", "message"]) {
        assert.equal(await form.locator(`[name="${field}"]`).isVisible(), true, `${field} is visible`);
      }
      const honeypot = form.locator('[name="company_website"]');
      assert.equal(await honeypot.count(), 1, "the honeypot field exists");
      // Off-screen rather than display:none (some bots skip hidden inputs): nothing of it is on the page.
      const box = await honeypot.boundingBox();
      assert.ok(box === null || box.x + box.width <= 0, `the honeypot is out of sight: ${JSON.stringify(box)}`);
    } catch (err) {
      err.message += `\npage showed: ${await describePage(page)}`;
      throw err;
    } finally {
      await screenshot(page, "bakery-home");
    }
  });
});
