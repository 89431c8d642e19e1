// The siteswarm-synthetic-monitoring worker: its C++ core (dist/wasm/monitoring.wasm) behind the generic host.
import wasm from "../../dist/wasm/monitoring.wasm";
import { defineWorker } from "../../bindings/host.js";

export default defineWorker(wasm, { service: "siteswarm-synthetic-monitoring" });
