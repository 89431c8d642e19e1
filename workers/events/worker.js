// The siteswarm-events-service worker: its C++ core (dist/wasm/events.wasm) behind the generic host.
import wasm from "../../dist/wasm/events.wasm";
import { defineWorker } from "../../bindings/host.js";

export default defineWorker(wasm, { service: "siteswarm-events-service" });
