// The A/B benches' command line (health-host.mjs, health-ab.mjs): `--name value` options, and the
// builds to compare, each `--variant NAME=DIR[:WASMDIR]` (DIR's bindings/, WASMDIR or DIR/dist/wasm);
// without any, this checkout as "current".
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PLATFORM_WORKERS } from "../../scripts/lib/workers.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The text after `--name`, or `fallback`. */
export const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};

/** `--workers a,b` or every platform worker. */
export const benchWorkers = () => arg("workers", Object.keys(PLATFORM_WORKERS).join(",")).split(",");

/** [{ name, bindings, wasm }] from the `--variant` options. */
export function variantsFromArgs() {
  const variants = [];
  process.argv.forEach((a, i) => {
    if (a !== "--variant") return;
    const [name, dirs] = process.argv[i + 1].split("=");
    const [dir, wasmDir] = dirs.split(":");
    variants.push({
      name,
      bindings: path.resolve(dir, "bindings"),
      wasm: path.resolve(wasmDir ?? path.join(dir, "dist/wasm")),
    });
  });
  if (variants.length === 0)
    variants.push({ name: "current", bindings: path.join(ROOT, "bindings"), wasm: path.join(ROOT, "dist/wasm") });
  return variants;
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
