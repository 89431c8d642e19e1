// Workers RPC for a core on a named entrypoint, beside the default one:
//
//   export const CmsRpc = defineRpcEntrypoint(wasm, ["getContent", "getStatus"]);
//
// Each method runs `{"op":"rpc","method","args"}` on the isolate's instance of the core and resolves
// to its RPC output unchanged: `{ok:true,value}` or `{ok:false,status,error:{code,message}}` (errors
// stay values across RPC, as they are over HTTP). Kept apart from host.js because
// "cloudflare:workers" exists only inside workerd.
import { WorkerEntrypoint } from "cloudflare:workers";
import { addRpcMethods } from "./host.js";

export function defineRpcEntrypoint(source, methods, { service } = {}) {
  class CoreRpc extends WorkerEntrypoint {}
  addRpcMethods(CoreRpc, source, service, methods);
  return CoreRpc;
}
