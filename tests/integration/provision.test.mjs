// scripts/provision --cms-seeds: the CMS_FALLBACK_SEEDS a deploy (and scripts/dev) gives the cms worker,
// so a fresh isolate can still answer for the tenants when D1 and KV are both down (docs/cms.md).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

import { cleanSnapshot } from "../../bindings/sdk/src/hours.js";
import { loadManifest, resolveManifest } from "../../scripts/lib/manifest.mjs";
import { ROOT, TENANT_MANIFESTS } from "../../scripts/lib/workers.mjs";
import {
  cmsFallbackSeeds,
  cmsFallbackSeedsFor,
  PLATFORM_WORKERS,
  provisionKeepingSecrets,
  provisionManifest,
  tenantConfigFor,
} from "../../scripts/provision.mjs";

const run = promisify(execFile);

test("--cms-seeds prints each tenant's token hash and fallback snapshot, never the token", async () => {
  const manifests = await Promise.all(TENANT_MANIFESTS.map(loadManifest));
  assert.ok(manifests.length >= 2, "workers.json lists the demo tenants");
  const [first, second] = manifests;
  const dir = await mkdtemp(path.join(tmpdir(), "ss-seeds-"));
  try {
    // Only the first tenant has a token: the second gets no seed (nothing to verify it against).
    const tokens = { [first.appId]: { token: "tenant-token-of-the-first-app" } };
    const file = path.join(dir, "tokens.json");
    await writeFile(file, JSON.stringify(tokens));
    const { stdout } = await run("node", ["scripts/provision.mjs", "--cms-seeds", file], { cwd: ROOT });
    assert.ok(!stdout.includes("tenant-token-of-the-first-app"), "the token itself never leaves");
    const seeds = JSON.parse(stdout);
    assert.deepEqual(Object.keys(seeds), [first.appId]);
    assert.equal(
      seeds[first.appId].tokenHash,
      createHash("sha256").update("tenant-token-of-the-first-app").digest("hex"),
    );
    assert.deepEqual(seeds[first.appId].content, first.fallback ?? {});
    assert.ok(!(second.appId in seeds));
    // --module: the same seeds as the module the cms worker bundles (dist/cms-seeds.js).
    const module = (await run("node", ["scripts/provision.mjs", "--cms-seeds", file, "--module"], { cwd: ROOT }))
      .stdout;
    const imported = await import(`data:text/javascript,${encodeURIComponent(module)}`);
    assert.deepEqual(JSON.parse(imported.default), seeds);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// A seed's `timezone` is the zone of its hours when they name none (docs/cms.md): the manifest's
// config.cms.timezone, else UTC — the default the service applies at provisioning and the SDK's
// fallback applies to the same snapshot, so hours left out as a whole read the same everywhere too.
test("a cms seed's zone is config.cms.timezone, else UTC, as the service and the SDK read the snapshot", () => {
  const weekly = { mon: [{ open: "08:00", close: "17:00" }] };
  const bad = { mon: [{ open: "08:00", close: "24:01" }] };
  const cases = [
    [{ cms: { timezone: "Europe/Paris" } }, { hours: { weekly } }, "Europe/Paris"],
    [{ cms: { timezone: "Europe/Paris" } }, { hours: { timezone: null, weekly } }, "Europe/Paris"],
    [undefined, { hours: { weekly } }, "UTC"],
    [{}, {}, "UTC"],
    // Hours naming their own zone keep it; the seed's default is still the tenant's.
    [undefined, { hours: { timezone: "Asia/Tokyo", weekly } }, "UTC"],
    [{ cms: { timezone: "Europe/Paris" } }, { hours: { timezone: "Asia/Tokyo", weekly: bad } }, "Europe/Paris"],
    [undefined, { hours: { timezone: "Asia/Tokyo", weekly: bad } }, "UTC"],
  ];
  for (const [config, fallback, zone] of cases) {
    const manifest = { appId: "shop", config, fallback };
    const seed = JSON.parse(cmsFallbackSeeds([{ manifest, token: "a-token" }])).shop;
    assert.equal(seed.timezone, zone, JSON.stringify({ config, fallback }));
    assert.deepEqual(seed.content, fallback);
    // What the SDK's fallback answers for the same snapshot is in the same zone whenever the hours
    // name none or are left out (a closed week).
    const sdk = cleanSnapshot(fallback, config?.cms?.timezone).hours.timezone;
    const own = fallback.hours?.timezone != null && fallback.hours.weekly !== bad ? fallback.hours.timezone : zone;
    assert.equal(sdk, own, JSON.stringify({ config, fallback }));
  }
});

// The bundled seed is the snapshot the service was provisioned with: scripts/provision fills a
// manifest's `${NAME}` / `${NAME:-default}` from --var, then the environment, before it sends cms its
// part (tenantConfigFor), so the seeds fill the same part with the same variables.
test("cms seeds fill the manifest's placeholders as provisioning fills the snapshot cms gets", async () => {
  const manifest = {
    appId: "shop",
    config: {
      cms: { timezone: `\${SHOP_ZONE:-Europe/Paris}` },
      // Not cms's part: a required variable here does not stop the seeds (cms never sees it).
      leads: { notify: { webhook: { url: "https://crm.example/hook", secret: `\${CRM_WEBHOOK_SECRET}` } } },
    },
    fallback: {
      hours: {
        timezone: `\${SHOP_ZONE:-Europe/Paris}`,
        weekly: { mon: [{ open: `\${OPENS:-08:00}`, close: "17:00" }] },
      },
      announcements: [{ text: `Order at \${SITE_URL}/order`, level: "info" }],
    },
  };
  const dir = await mkdtemp(path.join(tmpdir(), "ss-seeds-"));
  try {
    const file = path.join(dir, "swarm.config.json");
    await writeFile(file, JSON.stringify(manifest));
    const tokens = { shop: { token: "a-token" } };
    const vars = { SITE_URL: "https://shop.example", SHOP_ZONE: "Asia/Tokyo" };
    const seed = JSON.parse(await cmsFallbackSeedsFor(tokens, [file], vars)).shop;
    const provisioned = tenantConfigFor(resolveManifest(manifest, { ...vars, CRM_WEBHOOK_SECRET: "s" }), "cms");
    assert.deepEqual(seed.content, provisioned.fallback);
    assert.equal(seed.timezone, provisioned.timezone);
    assert.equal(seed.content.announcements[0].text, "Order at https://shop.example/order");
    assert.deepEqual([seed.timezone, seed.content.hours.timezone], ["Asia/Tokyo", "Asia/Tokyo"]);
    assert.equal(seed.content.hours.weekly.mon[0].open, "08:00"); // the default
    // A variable the cms part needs and nobody gives stops the seeds, as it stops provisioning.
    await assert.rejects(cmsFallbackSeedsFor(tokens, [file], {}), /shop: the manifest needs SITE_URL/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("--cms-seeds with a missing file fails with a message, not a stack", async () => {
  await assert.rejects(
    run("node", ["scripts/provision.mjs", "--cms-seeds", "/nonexistent/tokens.json"], { cwd: ROOT }),
    (err) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /^provision: /);
      return true;
    },
  );
});

// One stand-in per platform worker for PUT /admin/tenants/{id} as shared/app.cpp answers it: a new
// tenant needs both secrets (400, field token/adminToken); a secret left out keeps the stored one.
// `refuse(key, body)` stands for a worker's own check of its config part (before the secrets, as
// shared/app.cpp): `[status, body]` is answered, "drop" closes the connection unanswered.
async function fakePlatform(known = {}, { down = [], refuse = () => undefined } = {}) {
  const { createServer } = await import("node:http");
  const { PLATFORM_WORKERS } = await import("../../scripts/lib/workers.mjs");
  const workers = {};
  for (const key of Object.keys(PLATFORM_WORKERS)) {
    const tenants = new Map(Object.entries(known[key] ?? {}));
    const server = createServer((req, res) => {
      let text = "";
      req.on("data", (c) => {
        text += c;
      });
      req.on("end", () => {
        const id = decodeURIComponent(req.url.replace("/admin/tenants/", ""));
        const body = JSON.parse(text);
        const answer = (status, value) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify(value));
        };
        const before = tenants.get(id);
        if (down.includes(key)) {
          return answer(503, { error: { code: "service_unavailable", message: "D1 is unreachable" } });
        }
        // As every worker: a key outside these three is a 400 naming it (shared/app.cpp put_tenant).
        const unknown = Object.keys(body).find((k) => !["token", "adminToken", "config"].includes(k));
        if (unknown) {
          return answer(400, {
            error: { code: "invalid_request", message: `${unknown}: is not a known field`, field: unknown },
          });
        }
        const refused = refuse(key, body);
        if (refused === "drop") return req.socket.destroy();
        if (refused) return answer(...refused);
        if (!before && (!body.token || !body.adminToken)) {
          const field = !body.token ? "token" : "adminToken";
          return answer(400, {
            error: { code: "invalid_request", message: "a new tenant needs token and adminToken", field },
          });
        }
        tenants.set(id, { token: body.token ?? before.token, adminToken: body.adminToken ?? before.adminToken });
        answer(before ? 200 : 201, { id });
      });
    });
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    workers[key] = { server, tenants, url: `http://127.0.0.1:${server.address().port}` };
  }
  const env = Object.fromEntries(Object.entries(workers).map(([k, w]) => [`SITESWARM_${k.toUpperCase()}_URL`, w.url]));
  return {
    workers,
    env,
    close: () => {
      for (const w of Object.values(workers)) w.server.close();
    },
  };
}

test("provisioning again without secrets keeps them: a changed manifest does not lock the live site out", async () => {
  const platform = await fakePlatform();
  const manifest = TENANT_MANIFESTS[0];
  const appId = (await loadManifest(manifest)).appId;
  const provision = (...extra) =>
    run("node", ["scripts/provision.mjs", manifest, "--json", ...extra], {
      cwd: ROOT,
      env: { ...process.env, ...platform.env },
    });
  try {
    // New everywhere: both secrets made once, the same on every worker.
    const first = JSON.parse((await provision()).stdout);
    assert.match(first.token, /^[0-9a-f]{64}$/);
    for (const w of Object.values(platform.workers)) {
      assert.deepEqual(w.tenants.get(appId), { token: first.token, adminToken: first.adminToken });
    }
    // Again, no secrets given: every worker updated, the stored secrets untouched.
    const second = JSON.parse((await provision()).stdout);
    assert.equal(second.token, null);
    assert.ok(Object.values(second.results).every((r) => r.status === 200));
    for (const w of Object.values(platform.workers)) assert.equal(w.tenants.get(appId).token, first.token);
    // Only the admin token given: it changes, the tenant token stays.
    await provision("--admin-token-tenant", "a-new-admin-secret-0123456789");
    for (const w of Object.values(platform.workers)) {
      assert.deepEqual(w.tenants.get(appId), { token: first.token, adminToken: "a-new-admin-secret-0123456789" });
    }
    // --rotate makes new ones everywhere.
    const rotated = JSON.parse((await provision("--rotate")).stdout);
    assert.notEqual(rotated.token, first.token);
    for (const w of Object.values(platform.workers)) assert.equal(w.tenants.get(appId).token, rotated.token);
  } finally {
    platform.close();
  }
});

test("a tenant new on some workers only is refused with a way out, and nothing is overwritten", async () => {
  const manifest = TENANT_MANIFESTS[0];
  const appId = (await loadManifest(manifest)).appId;
  const stored = { token: "the-live-sites-token-0123456789", adminToken: "the-live-admin-token-0123456789" };
  const platform = await fakePlatform({ leads: { [appId]: stored } });
  try {
    await assert.rejects(
      run("node", ["scripts/provision.mjs", manifest], { cwd: ROOT, env: { ...process.env, ...platform.env } }),
      (err) => {
        assert.equal(err.code, 1);
        assert.match(err.stderr, /--token and --admin-token-tenant .*or with --rotate/s);
        return true;
      },
    );
    assert.deepEqual(platform.workers.leads.tenants.get(appId), stored);
    for (const [key, w] of Object.entries(platform.workers)) if (key !== "leads") assert.ok(!w.tenants.has(appId));
  } finally {
    platform.close();
  }
});

test("a worker failing for another reason is reported as itself, not as a secrets problem", async () => {
  const manifest = TENANT_MANIFESTS[0];
  const platform = await fakePlatform({}, { down: ["cms"] });
  try {
    await assert.rejects(
      run("node", ["scripts/provision.mjs", manifest], { cwd: ROOT, env: { ...process.env, ...platform.env } }),
      (err) => {
        assert.match(err.stderr, /cms: 503 .*D1 is unreachable/);
        assert.doesNotMatch(err.stderr, /--rotate/);
        return true;
      },
    );
  } finally {
    platform.close();
  }
});

test("a manifest unfit to provision is refused before anything is sent, naming what is wrong", async () => {
  const good = await loadManifest(TENANT_MANIFESTS[0]);
  const dir = await mkdtemp(path.join(tmpdir(), "ss-unfit-"));
  const platform = await fakePlatform();
  const { appId: _, ...withoutAppId } = good;
  const unfit = [
    // Without an appId the path was /admin/tenants/undefined: a live tenant named "undefined".
    [withoutAppId, /appId must be a string matching/],
    [{ ...good, appId: "Bakery_1" }, /appId must be/],
    // Every call of the app would be 400 unsupported_capability_version.
    [
      { ...good, capabilities: { ...good.capabilities, "lead-capture": { version: "2.0.0" } } },
      /lead-capture: .*speaks 1\.x/,
    ],
    [{ ...good, capabilities: { cms: { version: "1.0" } } }, /capabilities\.cms: .*not a semantic version/],
    [{ ...good, capabilities: { leads: { version: "1.0.0" } } }, /capabilities\.leads: not a capability/],
    // A misspelt part would have left leads with an empty config.
    [{ ...good, config: { ...good.config, lead: good.config.leads } }, /config\.lead: not a platform worker/],
    [{ ...good, config: { ...good.config, cms: "UTC" } }, /config\.cms must be an object/],
  ];
  try {
    for (const [i, [manifest, problem]] of unfit.entries()) {
      const file = path.join(dir, `m${i}.json`);
      await writeFile(file, JSON.stringify(manifest));
      await assert.rejects(
        run("node", ["scripts/provision.mjs", file], { cwd: ROOT, env: { ...process.env, ...platform.env } }),
        (err) => {
          assert.equal(err.code, 1);
          assert.match(err.stderr, /the manifest cannot be provisioned/);
          assert.match(err.stderr, problem);
          return true;
        },
      );
    }
    for (const w of Object.values(platform.workers)) assert.equal(w.tenants.size, 0, "nothing was sent");
    // A capability without a version is the SDK's default (1.0.0): fit.
    const defaulted = path.join(dir, "defaulted.json");
    await writeFile(defaulted, JSON.stringify({ ...good, capabilities: { cms: {}, analytics: { version: "" } } }));
    await run("node", ["scripts/provision.mjs", defaulted], { cwd: ROOT, env: { ...process.env, ...platform.env } });
    for (const w of Object.values(platform.workers)) assert.ok(w.tenants.has(good.appId));
  } finally {
    platform.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test("a refusal by one worker says which workers took their part", async () => {
  const manifest = TENANT_MANIFESTS[0];
  const appId = (await loadManifest(manifest)).appId;
  const stored = { token: "the-live-sites-token-0123456789", adminToken: "the-live-admin-token-0123456789" };
  const { PLATFORM_WORKERS } = await import("../../scripts/lib/workers.mjs");
  const everywhere = Object.fromEntries(Object.keys(PLATFORM_WORKERS).map((k) => [k, { [appId]: stored }]));
  const platform = await fakePlatform(everywhere, { down: ["cms"] });
  try {
    await assert.rejects(
      run("node", ["scripts/provision.mjs", manifest], { cwd: ROOT, env: { ...process.env, ...platform.env } }),
      (err) => {
        assert.match(err.stderr, /cms: 503/);
        const taken = /taken by ([a-z, ]+):/.exec(err.stderr);
        assert.ok(taken, err.stderr);
        const others = Object.keys(PLATFORM_WORKERS).filter((k) => k !== "cms");
        assert.deepEqual(taken[1].split(", ").sort(), others.sort());
        return true;
      },
    );
  } finally {
    platform.close();
  }
});

test("--cms-seeds --out writes the module whole, and only once it is complete", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "ss-seeds-out-"));
  try {
    const manifests = await Promise.all(TENANT_MANIFESTS.map(loadManifest));
    const tokens = path.join(dir, "tokens.json");
    await writeFile(tokens, JSON.stringify({ [manifests[0].appId]: { token: "a-token-0123456789" } }));
    const out = path.join(dir, "cms-seeds.js");
    await writeFile(out, 'export default "kept";\n');
    // A tokens file that is not JSON: the old module stays as it was.
    await writeFile(path.join(dir, "bad.json"), "{not json");
    await assert.rejects(
      run("node", ["scripts/provision.mjs", "--cms-seeds", path.join(dir, "bad.json"), "--out", out], { cwd: ROOT }),
    );
    assert.equal(await readFile(out, "utf8"), 'export default "kept";\n');
    await run("node", ["scripts/provision.mjs", "--cms-seeds", tokens, "--out", out], { cwd: ROOT });
    const { default: seeds } = await import(`${pathToFileURL(out).href}?v=2`);
    assert.deepEqual(Object.keys(JSON.parse(seeds)), [manifests[0].appId]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("the build keeps a real seeds module and replaces an empty or broken one with the empty module", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "ss-seeds-ensure-"));
  const ensure = (file) =>
    run("bash", ["-c", `source scripts/lib/ensure-cms-seeds.sh && ensure_cms_seeds "$1"`, "ensure", file], {
      cwd: ROOT,
    });
  try {
    const cases = {
      missing: [null, 'export default "";\n'],
      empty: ["", 'export default "";\n'],
      broken: ['{"bakery":', 'export default "";\n'],
      real: ['export default "{\\"bakery\\":{}}";\n', 'export default "{\\"bakery\\":{}}";\n'],
    };
    for (const [name, [before, after]] of Object.entries(cases)) {
      const file = path.join(dir, `${name}.js`);
      if (before !== null) await writeFile(file, before);
      await ensure(file);
      assert.equal(await readFile(file, "utf8"), after, name);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a worker that does not answer is named with the address provisioning looked for it at", async () => {
  // A port nothing listens on: taken from a server that is closed again.
  const { createServer } = await import("node:net");
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  const env = { ...process.env, PLATFORM_ADMIN_TOKEN: "x" };
  for (const key of ["LEADS", "CMS", "MONITORING", "ANALYTICS", "EVENTS"]) {
    env[`SITESWARM_${key}_URL`] = `http://127.0.0.1:${port}`;
  }
  const failed = await run("node", ["scripts/provision.mjs", "examples/bakery/swarm.config.json"], {
    cwd: ROOT,
    env,
  }).then(
    () => assert.fail("provisioning against a closed port succeeded"),
    (err) => err,
  );
  assert.notEqual(failed.code, 0);
  assert.match(
    failed.stderr,
    new RegExp(`(leads|cms|monitoring|analytics|events) at http://127\\.0\\.0\\.1:${port} did not answer`),
  );
  assert.match(failed.stderr, /SITESWARM_[A-Z]+_URL/);
});

// A partial failure: every PUT runs to its end (one worker's refusal or silence never cuts the others
// short), and secrets the operator does not have yet, which some workers took, are never lost.
const badZone = [400, { error: { code: "invalid_request", message: "timezone: unknown zone", field: "timezone" } }];

test("every PUT runs to its end: a refusal or a send that throws is that worker's result", async () => {
  const manifest = await loadManifest(TENANT_MANIFESTS[0]);
  const ended = new Set();
  const send = async (worker) => {
    if (worker === "events") throw new Error("events at http://127.0.0.1:1 did not answer (ECONNREFUSED)");
    await new Promise((resolve) => setTimeout(resolve, 50)); // the others still on their way
    ended.add(worker);
    return worker === "cms" ? Response.json(badZone[1], { status: 400 }) : Response.json({ id: "x" }, { status: 200 });
  };
  const err = await provisionManifest(manifest, { operatorToken: "op", send }).then(
    () => assert.fail("provisioning succeeded"),
    (e) => e,
  );
  const others = Object.keys(PLATFORM_WORKERS).filter((w) => w !== "events");
  assert.deepEqual([...ended].sort(), others.sort(), "every other PUT ended before the error");
  assert.deepEqual(err.results.events, {
    status: 0,
    body: "events at http://127.0.0.1:1 did not answer (ECONNREFUSED)",
  });
  assert.equal(err.results.cms.status, 400);
  assert.match(err.message, /events: events at http:\/\/127\.0\.0\.1:1 did not answer/);
  assert.match(err.message, /cms: 400 .*unknown zone/);
  assert.match(err.message, /taken by [a-z, ]+: mend the manifest .*and run it again/);
  assert.equal(err.secrets, undefined, "no secrets were sent");
});

test("secrets made for a new tenant that some workers took come with the error", async () => {
  const manifest = await loadManifest(TENANT_MANIFESTS[0]);
  const stored = {};
  let round = 0;
  const send = async (worker, _path, init) => {
    const body = JSON.parse(init.body);
    if (!body.token) {
      round = 1;
      const error = { code: "invalid_request", message: "a new tenant needs token and adminToken", field: "token" };
      return Response.json({ error }, { status: 400 });
    }
    round = 2;
    if (worker === "analytics") throw new Error("analytics at http://127.0.0.1:1 did not answer (ECONNRESET)");
    stored[worker] = { token: body.token, adminToken: body.adminToken };
    return Response.json({ id: manifest.appId }, { status: 201 });
  };
  const err = await provisionKeepingSecrets(manifest, { operatorToken: "op", send }).then(
    () => assert.fail("provisioning succeeded"),
    (e) => e,
  );
  assert.equal(round, 2, "the made secrets were sent");
  assert.match(err.secrets.token, /^[0-9a-f]{64}$/);
  assert.deepEqual(
    Object.keys(stored).sort(),
    Object.keys(PLATFORM_WORKERS)
      .filter((w) => w !== "analytics")
      .sort(),
  );
  for (const secrets of Object.values(stored)) assert.deepEqual(secrets, err.secrets);
  assert.equal(err.results.analytics.status, 0);
  assert.match(err.message, /--token <token> --admin-token-tenant <admin token>/);
});

// scripts/provision.mjs run against `platform` (a fakePlatform), expected to fail: its error (code,
// stdout, stderr).
const provisionFailing = (platform, ...args) =>
  run("node", ["scripts/provision.mjs", ...args], { cwd: ROOT, env: { ...process.env, ...platform.env } }).then(
    () => assert.fail("provisioning succeeded"),
    (e) => e,
  );

test("--rotate refused by one worker prints the new secrets and how to set them everywhere", async () => {
  const manifest = TENANT_MANIFESTS[0];
  const appId = (await loadManifest(manifest)).appId;
  const stored = { token: "the-live-sites-token-0123456789", adminToken: "the-live-admin-token-0123456789" };
  const everywhere = Object.fromEntries(Object.keys(PLATFORM_WORKERS).map((k) => [k, { [appId]: stored }]));
  let mended = false;
  const platform = await fakePlatform(everywhere, {
    refuse: (key) => (key === "cms" && !mended ? badZone : undefined),
  });
  const provision = (...extra) =>
    run("node", ["scripts/provision.mjs", manifest, ...extra], { cwd: ROOT, env: { ...process.env, ...platform.env } });
  try {
    const failed = await provisionFailing(platform, manifest, "--rotate");
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /cms: 400 .*unknown zone/);
    const token = /token: {7}([0-9a-f]{64})/.exec(failed.stdout)?.[1];
    const adminToken = /admin token: ([0-9a-f]{64})/.exec(failed.stdout)?.[1];
    assert.ok(token && adminToken, failed.stdout);
    assert.match(failed.stdout, /→ siteswarm-cms-service: failed \(400\)/);
    assert.ok(failed.stdout.includes(`run again with --token ${token} --admin-token-tenant ${adminToken}`));
    for (const [key, w] of Object.entries(platform.workers)) {
      assert.deepEqual(w.tenants.get(appId), key === "cms" ? stored : { token, adminToken }, key);
    }
    // Run again as told once mended: every worker ends with the same secrets.
    mended = true;
    await provision("--token", token, "--admin-token-tenant", adminToken);
    for (const w of Object.values(platform.workers)) assert.deepEqual(w.tenants.get(appId), { token, adminToken });
  } finally {
    platform.close();
  }
});

test("a worker that drops the PUT of a new tenant's made secrets: --json still has them", async () => {
  const manifest = TENANT_MANIFESTS[0];
  const appId = (await loadManifest(manifest)).appId;
  // Answers the first round (no secrets: a new tenant needs them), drops the second one.
  const platform = await fakePlatform(
    {},
    { refuse: (key, body) => (key === "leads" && body.token ? "drop" : undefined) },
  );
  try {
    const failed = await provisionFailing(platform, manifest, "--json");
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /leads: leads at http:\/\/127\.0\.0\.1:\d+ did not answer/);
    const shown = JSON.parse(failed.stdout);
    assert.match(shown.token, /^[0-9a-f]{64}$/);
    assert.equal(shown.failed, true);
    assert.equal(shown.again, `--token ${shown.token} --admin-token-tenant ${shown.adminToken}`);
    assert.equal(shown.results.leads.status, 0);
    for (const [key, w] of Object.entries(platform.workers)) {
      if (key === "leads") assert.ok(!w.tenants.has(appId));
      else assert.deepEqual(w.tenants.get(appId), { token: shown.token, adminToken: shown.adminToken }, key);
    }
  } finally {
    platform.close();
  }
});

test("secrets the operator gave are not printed when a worker refuses: run again with the same flags", async () => {
  const manifest = TENANT_MANIFESTS[0];
  const platform = await fakePlatform({}, { refuse: (key) => (key === "cms" ? badZone : undefined) });
  try {
    const secrets = ["--token", "given-token-0123456789abcdef", "--admin-token-tenant", "given-admin-0123456789abcdef"];
    const failed = await provisionFailing(platform, manifest, ...secrets);
    assert.equal(failed.code, 1);
    assert.equal(failed.stdout, "");
    assert.doesNotMatch(failed.stderr, /given-token/);
    assert.match(failed.stderr, /run it again with the same --token \/ --admin-token-tenant/);
  } finally {
    platform.close();
  }
});

test("--rotate with a token the operator gave prints only the admin token it made", async () => {
  const manifest = TENANT_MANIFESTS[0];
  const platform = await fakePlatform({}, { refuse: (key) => (key === "cms" ? badZone : undefined) });
  try {
    const given = "given-token-0123456789abcdef";
    const failed = await provisionFailing(platform, manifest, "--rotate", "--token", given);
    assert.equal(failed.code, 1);
    assert.doesNotMatch(failed.stdout + failed.stderr, /given-token/);
    const made = /admin token: ([0-9a-f]{64})/.exec(failed.stdout);
    assert.ok(made, failed.stdout);
    assert.match(failed.stdout, /token: {7}\(as you gave it\)/);
    assert.ok(failed.stdout.includes(`--token <as you gave it> --admin-token-tenant ${made[1]}`), failed.stdout);
  } finally {
    platform.close();
  }
});

test("scripts/provision writes --out relative to the caller's directory, whether or not the file exists", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "ss-out-cwd-"));
  try {
    const manifests = await Promise.all(TENANT_MANIFESTS.map(loadManifest));
    await writeFile(path.join(dir, "tokens.json"), JSON.stringify({ [manifests[0].appId]: { token: "t-0123456789" } }));
    const wrapper = path.join(ROOT, "scripts/provision");
    await run(wrapper, ["--cms-seeds", "tokens.json", "--out", "fallback.js"], { cwd: dir });
    const { default: module } = await import(pathToFileURL(path.join(dir, "fallback.js")).href);
    assert.deepEqual(Object.keys(JSON.parse(module)), [manifests[0].appId]);
    assert.ok(!(await readFile(path.join(ROOT, "fallback.js")).catch(() => null)), "nothing at the repository's root");
    // A directory that does not exist is named, and nothing is written.
    await assert.rejects(
      run(wrapper, ["--cms-seeds", "tokens.json", "--out", "no-such-dir/fallback.js"], { cwd: dir }),
      (err) => {
        assert.equal(err.code, 2);
        assert.match(err.stderr, /--out no-such-dir\/fallback\.js: its directory no-such-dir does not exist/);
        return true;
      },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
