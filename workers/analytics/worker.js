// The siteswarm-analytics-service worker: its C++ core (dist/wasm/analytics.wasm) behind the generic host.
import wasm from "../../dist/wasm/analytics.wasm";
import { defineWorker } from "../../bindings/host.js";

// The core reads request.cf's country and colo (the pageview's dimensions); no other worker reads cf.
export default defineWorker(wasm, { service: "siteswarm-analytics-service", cf: ["country", "colo"] });
