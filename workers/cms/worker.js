// The siteswarm-cms-service worker: its C++ core (dist/wasm/cms.wasm) behind the generic host,
// plus the CmsRpc entrypoint (Workers RPC: getContent, getStatus) on the same instance.
import wasm from "../../dist/wasm/cms.wasm";
import { defineWorker } from "../../bindings/host.js";
import { defineRpcEntrypoint } from "../../bindings/rpc.js";

const service = "siteswarm-cms-service";
const rpc = ["getContent", "getStatus"];

export default defineWorker(wasm, { service, rpc });
export const CmsRpc = defineRpcEntrypoint(wasm, rpc, { service });
