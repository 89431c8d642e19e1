// The siteswarm-events-runner worker, a part of the ledger (wrangler/events-runner.jsonc): the
// workflow runner's core (dist/wasm/events-runner.wasm) behind the generic host.
import wasm from "../../dist/wasm/events-runner.wasm";
import { defineWorker } from "../../bindings/host.js";

export default defineWorker(wasm, { service: "siteswarm-events-runner" });
