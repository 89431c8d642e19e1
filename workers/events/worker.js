// The siteswarm-events-service worker: its C++ core (dist/wasm/events.wasm) behind the generic host.
// The ledger's public entry; its parts (wrangler/events-runner.jsonc, wrangler/events-config.jsonc)
// are bound as EVENTS_RUNNER and EVENTS_CONFIG: the host passes its test hooks on to them.
import wasm from "../../dist/wasm/events.wasm";
import { defineWorker } from "../../bindings/host.js";

export default defineWorker(wasm, {
  service: "siteswarm-events-service",
  parts: ["EVENTS_RUNNER", "EVENTS_CONFIG"],
});
