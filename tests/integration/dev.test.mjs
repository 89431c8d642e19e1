// scripts/dev as a new developer runs it, from a fresh `git clone` (no node_modules): it must install
// what is missing (scripts/bootstrap) before it starts anything; then every worker on its contract
// port on 127.0.0.1, the bakery crossing Service Bindings, a lead flowing through the leads queue and
// the ledger's queue, and Ctrl-C stopping all of it. It uses the wasm that scripts/test built just
// before (--skip-build; the clone gets a copy of dist/wasm).
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { cpSync, existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { APPS, PARTS, PLATFORM_WORKERS, STUB_PORT, WORKERS } from "../../scripts/lib/workers.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const HOST = "http://127.0.0.1";
const PORTS = Object.fromEntries(Object.values(WORKERS).map((w) => [w.key, w.port]));
const ADMIN = "dev-test-operator-token";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function poll(probe, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

const portsOpen = async () => {
  const open = [];
  for (const [name, port] of Object.entries(PORTS)) {
    try {
      await fetch(`${HOST}:${port}/health`, { signal: AbortSignal.timeout(1000) });
      open.push(name);
    } catch {
      // closed
    }
  }
  return open;
};

const busy = await portsOpen();
const skip = !existsSync(`${ROOT}dist/wasm/leads.wasm`)
  ? "run scripts/build first"
  : busy.length > 0 && `the contract ports are in use (${busy.join(", ")}): is scripts/dev already running?`;

/** Every platform worker answers its /health on its contract port. */
async function expectPlatformHealthy() {
  for (const { key: worker, name: service } of Object.values(PLATFORM_WORKERS)) {
    const res = await fetch(`${HOST}:${PORTS[worker]}/health`);
    assert.equal(res.status, 200, worker);
    const body = await res.json();
    assert.equal(body.ok, true);
    assert.equal(body.service, service);
  }
}

/**
 * Every part (the ledger's runner and config) answers /health on its own port, and the banner lists it.
 * A part's core names itself.
 */
async function expectPartsHealthy(run) {
  for (const { key, name, partOf, port } of Object.values(PARTS)) {
    const res = await fetch(`${HOST}:${port}/health`);
    assert.equal(res.status, 200, key);
    const body = await res.json();
    assert.equal(body.ok, true, key);
    assert.equal(body.service, name, key);
    assert.match(run.output, new RegExp(`${key} +${HOST}:${port} +\\(part of ${partOf}`), `the banner lists ${key}`);
  }
}

/** Each client app's page and form, posted as a browser posts it; its notification lands at the stubs once. */
async function expectAppFormsDelivered() {
  const mark = `dev${Date.now()}`;
  // The form each app's page posts, as a browser posts it, and where its notification lands.
  const forms = {
    bakery: [{ name: "Dev", email: "dev@example.com", message: mark }, ["/emails"]],
    "software-agency": [{ name: "Dev", email: "dev@example.com", company: mark }, ["/crm/"]],
    "auto-repair": [{ name: "Dev", phone: "+15550104444", vehicle: mark }, ["/2010-04-01/", "/v3/mail/send"]],
  };
  for (const { key, name, port } of Object.values(APPS)) {
    assert.equal((await (await fetch(`${HOST}:${port}/health`)).json()).service, name);
    const page = await (await fetch(`${HOST}:${port}/`)).text();
    assert.ok(page.includes(`${HOST}:${STUB_PORT}/turnstile/v0/api.js`), `${key}: the local Turnstile widget`);
    const [fields, channels] = forms[key];
    const res = await fetch(`${HOST}:${port}/api/leads/submit`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html" },
      body: new URLSearchParams({ ...fields, "cf-turnstile-response": "XXXX.DUMMY.TOKEN.XXXX" }),
      redirect: "manual",
    });
    assert.equal(res.status, 303, `${key}: ${await res.text()}`);
    assert.equal(res.headers.get("location"), "/thanks.html");
    for (const channel of channels) {
      const sent = await poll(
        async () => {
          const r = await fetch(`${HOST}:${STUB_PORT}/__stub/requests?path=${encodeURIComponent(channel)}`);
          const found = (await r.json()).requests.filter((q) => q.body.includes(mark));
          return found.length ? found : null;
        },
        30_000,
        `${key}: the notification at ${channel}`,
      );
      assert.equal(sent.length, 1, `${key}: ${channel} once`);
      if (channel === "/crm/") assert.equal(sent[0].signatureValid, true, "the CRM stub verified the signature");
    }
  }
}

/**
 * scripts/dev with `args` in `cwd`, in its own process group (like a terminal's foreground job):
 * `started` resolves once it prints its banner (or exits), `output` is everything it printed.
 */
function startDev(args, { cwd = ROOT, env = {}, timeoutMs = 180_000 } = {}) {
  const run = { output: "" };
  run.proc = spawn("bash", ["scripts/dev", ...args], {
    cwd,
    detached: true,
    env: { ...process.env, PLATFORM_ADMIN_TOKEN: ADMIN, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  run.proc.stdout.on("data", (d) => (run.output += d));
  run.proc.stderr.on("data", (d) => (run.output += d));
  run.started = poll(
    () => run.output.includes("Press Ctrl-C to stop") || run.proc.exitCode !== null,
    timeoutMs,
    `scripts/dev ${args.join(" ")} to start`,
  ).catch((e) => {
    throw new Error(`${e.message}:\n${run.output}`);
  });
  /**
   * What a test left running dies with the suite: Ctrl-C first (scripts/dev stops what it started,
   * some of it in other process groups), SIGKILL to the group if it is still there after 30 s.
   */
  run.kill = async () => {
    if (run.proc.exitCode !== null || run.proc.signalCode !== null) return;
    const signal = (name) => {
      try {
        process.kill(-run.proc.pid, name);
      } catch {
        // already gone
      }
    };
    signal("SIGINT");
    try {
      await poll(() => run.proc.exitCode !== null || run.proc.signalCode !== null, 30_000, "scripts/dev to exit");
    } catch {
      signal("SIGKILL");
    }
  };
  return run;
}

/** Ctrl-C stops scripts/dev and every process it started: every contract port closes. */
async function expectCtrlCStopsAll(run) {
  process.kill(-run.proc.pid, "SIGINT");
  await poll(() => run.proc.exitCode !== null || run.proc.signalCode !== null, 30_000, "scripts/dev to exit");
  await poll(async () => (await portsOpen()).length === 0, 30_000, "every port to close");
}

// One run, as a new developer starts it: a clone of the committed HEAD (uncommitted edits are not in
// it) without node_modules, so scripts/dev must install what is missing (scripts/bootstrap) before
// it starts anything; then everything a developer relies on, on that same run (one start of the
// whole mesh, not two: CI's time).
describe("scripts/dev on a fresh clone", { skip }, () => {
  let clone;
  let dev;
  before(async () => {
    clone = await mkdtemp(path.join(tmpdir(), "siteswarm-clone-"));
    await promisify(execFile)("git", ["clone", "--quiet", ROOT, clone]);
    assert.ok(!existsSync(path.join(clone, "node_modules")), "a fresh clone has no node_modules");
    cpSync(path.join(ROOT, "dist/wasm"), path.join(clone, "dist/wasm"), { recursive: true });
    // npm ci may take the packages from npm's cache; it still reaches the registry for what is not there.
    dev = startDev(["--skip-build"], { cwd: clone, env: { npm_config_prefer_offline: "true" }, timeoutMs: 300_000 });
    await dev.started;
    assert.equal(dev.proc.exitCode, null, `scripts/dev exited:\n${dev.output}`);
  });
  after(async () => {
    await dev?.kill();
    if (clone) await rm(clone, { recursive: true, force: true });
  });

  it("installs the npm packages first", () => {
    assert.match(dev.output, /bootstrap: npm ci/);
    assert.ok(existsSync(path.join(clone, "node_modules/wrangler/package.json")), "wrangler installed in the clone");
  });
  it("serves /health of every platform worker on its contract port", expectPlatformHealthy);
  it("serves /health of the ledger's parts on their ports", () => expectPartsHealthy(dev));

  it("schedules every worker's Cron Triggers (UTC), as deployed", () => {
    const line = dev.output.split("\n").find((l) => l.includes("crons: "));
    assert.ok(line, `no crons line in:\n${dev.output}`);
    for (const { name } of Object.values(PLATFORM_WORKERS)) {
      assert.ok(line.includes(`${name} "`), `${name} has no cron scheduled: ${line}`);
    }
    assert.ok(line.includes('"*/30 * * * *"'), "the ledger's reflexion_analyzer");
    for (const { name } of Object.values(PARTS)) assert.ok(!line.includes(`${name} "`), `${name} has no crons`);
  });

  it("the bakery crosses a Service Binding to every platform worker and back", async () => {
    const body = await (await fetch(`${HOST}:${PORTS.bakery}/api/platform/health`)).json();
    assert.equal(body.ok, true);
    for (const { serviceBinding: binding } of Object.values(PLATFORM_WORKERS)) {
      assert.equal(body.services[binding].status, 200, binding);
    }
  });

  it(
    "serves the three client apps, each form delivered through its channel to the stubs once",
    expectAppFormsDelivered,
  );

  it("a lead posted to the bakery is stored and reaches the ledger through the queue", async () => {
    const res = await fetch(`${HOST}:${PORTS.bakery}/api/leads/submit`, {
      method: "POST",
      headers: { "content-type": "application/json", "cf-connecting-ip": "192.0.2.44" },
      body: JSON.stringify({ email: "dev-test@example.com", turnstileToken: "XXXX.DUMMY.TOKEN.XXXX" }),
    });
    assert.equal(res.status, 202, await res.clone().text());
    const { leadId } = await res.json();
    const events = await poll(
      async () => {
        const r = await fetch(`${HOST}:${PORTS.events}/api/events?type=lead.received&limit=500&tenant=bakery`, {
          headers: { authorization: `Bearer ${ADMIN}` },
        });
        const list = (await r.json()).events ?? [];
        return list.find((e) => e.payload.leadId === leadId);
      },
      30_000,
      "lead.received in the ledger",
    );
    assert.equal(events.tenant_id, "bakery");
  });

  it("fires a cron on each platform worker's own port (wrangler's /__scheduled, Miniflare's route)", async () => {
    for (const [key, path] of [
      ["monitoring", "/__scheduled?cron=*/5+*+*+*+*"],
      ["events", `/cdn-cgi/handler/scheduled?cron=${encodeURIComponent("*/2 * * * *")}`],
    ]) {
      const res = await fetch(`${HOST}:${PORTS[key]}${path}`);
      assert.equal(res.status, 200, `${key}: ${await res.clone().text()}`);
      const body = await res.json();
      assert.equal(body.ok, true, key);
      assert.match(body.cron, /^\*\/[25] \* \* \* \*$/, key);
    }
  });

  it("Ctrl-C stops every process it started", () => expectCtrlCStopsAll(dev));
});

// The other way to run it: one `wrangler dev` per worker, finding each other through wrangler's dev
// registry (README, "Run it"; docs/toolchain.md). Opt-in, because ten wrangler processes take minutes to start on a
// 2-core box and CI's budget is spent elsewhere: SS_DEV_WRANGLER=1 node --test tests/integration/dev.test.mjs
const wranglerSkip =
  skip || (process.env.SS_DEV_WRANGLER !== "1" && "opt-in: SS_DEV_WRANGLER=1 (ten wrangler dev processes)");
describe("scripts/dev --wrangler", { skip: wranglerSkip }, () => {
  let dev;
  before(async () => {
    dev = startDev(["--wrangler", "--skip-build", "--skip-bootstrap"], { timeoutMs: 300_000 });
    await dev.started;
    assert.equal(dev.proc.exitCode, null, `scripts/dev --wrangler exited:\n${dev.output}`);
  });
  after(async () => await dev?.kill());

  it("serves /health of every platform worker on its contract port", expectPlatformHealthy);
  it("serves /health of the ledger's parts on their ports", () => expectPartsHealthy(dev));
  it("the bakery crosses a Service Binding to every platform worker and back", async () => {
    const body = await (await fetch(`${HOST}:${PORTS.bakery}/api/platform/health`)).json();
    assert.equal(body.ok, true);
    for (const { serviceBinding: binding } of Object.values(PLATFORM_WORKERS)) {
      assert.equal(body.services[binding].status, 200, binding);
    }
  });

  it(
    "serves the three client apps, each form delivered through its channel to the stubs once",
    expectAppFormsDelivered,
  );

  it("fires a ledger cron over wrangler's scheduled-handler route: workflow_runner reads what was emitted", async () => {
    const operator = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
    const emitted = await fetch(`${HOST}:${PORTS.events}/api/events`, {
      method: "POST",
      headers: operator,
      body: JSON.stringify({ event_type: "dev.cron_check", entity_ref: "dev:1", payload: {} }),
    });
    assert.equal(emitted.status, 201, await emitted.clone().text());
    const { event_id: eventId } = await emitted.json();
    const res = await fetch(
      `${HOST}:${PORTS.events}/cdn-cgi/handler/scheduled?cron=${encodeURIComponent("*/2 * * * *")}`,
    );
    assert.equal(res.status, 200, await res.text());
    // The */2 cron is workflow_runner's: its cursor reaches the event (read through the operator's /health).
    await poll(
      async () => {
        const health = await (await fetch(`${HOST}:${PORTS.events}/health`, { headers: operator })).json();
        return health.consumers?.workflow_runner?.cursor === eventId;
      },
      30_000,
      "workflow_runner's cursor to reach the emitted event",
    );
  });

  it("Ctrl-C stops every process it started", () => expectCtrlCStopsAll(dev));
});
