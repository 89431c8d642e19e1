// The siteswarm-cms-service worker: its C++ core (dist/wasm/cms.wasm) behind the generic host,
// plus the CmsRpc entrypoint (Workers RPC: getContent, getStatus) on the same instance.
import wasm from "../../dist/wasm/cms.wasm";
// The fallback seeds bundled at deploy time (docs/cms.md): "" unless `scripts/provision --cms-seeds
// tokens.json --module > dist/cms-seeds.js` wrote them; a CMS_FALLBACK_SEEDS variable still wins.
import seeds from "../../dist/cms-seeds.js";
import { defineWorker } from "../../bindings/host.js";
import { setEnvDefaults } from "../../bindings/messages.js";
import { defineRpcEntrypoint } from "../../bindings/rpc.js";

setEnvDefaults({ CMS_FALLBACK_SEEDS: seeds });

const service = "siteswarm-cms-service";
const rpc = ["getContent", "getStatus"];
const Worker = defineWorker(wasm, { service, rpc });

// Test-only fault injection (SITESWARM_TEST_HOOKS=1): `X-SiteSwarm-Test-Fault: d1,kv` makes this
// request's D1 and/or KV bindings fail like an outage, so the zero-lockout path is tested in workerd.
const FAULT_HEADER = "x-siteswarm-test-fault";
const outage = (what) =>
  new Proxy(
    {},
    {
      get: (_, key) =>
        key === "then"
          ? undefined
          : () => {
              throw new Error(`${what} unavailable (injected test fault)`);
            },
    },
  );

function faultyEnv(request, env) {
  if (env?.SITESWARM_TEST_HOOKS !== "1" || !request.headers.has(FAULT_HEADER)) return null;
  const faults = request.headers
    .get(FAULT_HEADER)
    .split(",")
    .map((f) => f.trim());
  return {
    ...env,
    ...(faults.includes("d1") && { CMS_DB: outage("D1") }),
    ...(faults.includes("kv") && { CMS_CACHE: outage("KV") }),
  };
}

function withFaults(Base) {
  if (typeof Base !== "function") {
    return { ...Base, fetch: (request, env, ctx) => Base.fetch(request, faultyEnv(request, env) ?? env, ctx) };
  }
  return class extends Base {
    fetch(request) {
      const env = faultyEnv(request, this.env);
      return env ? Base.prototype.fetch.call({ env, ctx: this.ctx }, request) : super.fetch(request);
    }
  };
}

export default withFaults(Worker);
export const CmsRpc = defineRpcEntrypoint(wasm, rpc, { service });
