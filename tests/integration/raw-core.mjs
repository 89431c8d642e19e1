// A core's wasm module instantiated alone, for the tests and benches that drive the ABI of docs/abi.md
// directly (no host): every import answered by a stub returning 0 (a core reaching one in these runs is
// a bug the caller's checks catch), `_initialize` run. Returns the instance's exports.
import { readFileSync } from "node:fs";

export function rawCoreExports(file) {
  const mod = new WebAssembly.Module(readFileSync(file));
  const imports = {};
  for (const imp of WebAssembly.Module.imports(mod)) {
    imports[imp.module] ??= {};
    imports[imp.module][imp.name] = () => 0;
  }
  const ex = new WebAssembly.Instance(mod, imports).exports;
  ex._initialize?.();
  return ex;
}
