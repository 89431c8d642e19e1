// scripts/provision --cms-seeds: the CMS_FALLBACK_SEEDS a deploy (and scripts/dev) gives the cms worker,
// so a fresh isolate can still answer for the tenants when D1 and KV are both down (docs/cms.md).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { loadManifest } from "../../scripts/lib/manifest.mjs";
import { ROOT, TENANT_MANIFESTS } from "../../scripts/lib/workers.mjs";

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
