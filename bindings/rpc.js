// Workers RPC for a core: a named entrypoint whose methods run `{"op":"rpc","method","args"}`.
// Kept apart from host.js because "cloudflare:workers" exists only inside workerd.
//
//   export const CmsRpc = defineRpcEntrypoint(wasm, ["getContent", "getStatus"]);
//
// Each method resolves to the core's RPC output unchanged: `{ok:true,value}` or
// `{ok:false,status,error:{code,message}}` (errors stay values across RPC, like over HTTP).
import { WorkerEntrypoint } from "cloudflare:workers";
import { runRpc } from "./host.js";

export function defineRpcEntrypoint(source, methods, { service } = {}) {
  class CoreRpc extends WorkerEntrypoint {}
  for (const method of methods) {
    Object.defineProperty(CoreRpc.prototype, method, {
      value: function (...args) {
        return runRpc(source, service, this.env, method, args);
      },
    });
  }
  return CoreRpc;
}
