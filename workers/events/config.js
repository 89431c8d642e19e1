// The siteswarm-events-config worker, a part of the ledger (wrangler/events-config.jsonc): the
// operator config routes' core (dist/wasm/events-config.wasm) behind the generic host.
import wasm from "../../dist/wasm/events-config.wasm";
import { defineWorker } from "../../bindings/host.js";

export default defineWorker(wasm, { service: "siteswarm-events-config" });
