// The siteswarm-analytics-service worker: its C++ core (dist/wasm/analytics.wasm) behind the generic host.
import wasm from "../../dist/wasm/analytics.wasm";
import { defineWorker } from "../../bindings/host.js";

export default defineWorker(wasm, { service: "siteswarm-analytics-service" });
