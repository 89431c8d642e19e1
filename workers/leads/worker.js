// The siteswarm-leads-service worker: its C++ core (dist/wasm/leads.wasm) behind the generic host.
import wasm from "../../dist/wasm/leads.wasm";
import { defineWorker } from "../../bindings/host.js";

export default defineWorker(wasm, { service: "siteswarm-leads-service" });
