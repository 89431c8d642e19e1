// What the wasm32-wasi modules link, from the link maps scripts/build leaves in build/wasm
// (`-Wl,-Map`), and the allocator at work:
// (1) One allocator: shared/wasm_malloc.c's size classes in front of Emscripten's emmalloc, in place of
//     wasi-libc's dlmalloc (docs/toolchain.md "emmalloc", docs/performance.md "A small-block
//     allocator"): malloc, free, realloc and calloc defined by wasm_malloc.c, emmalloc's entry points by
//     the modules' own LTO object (emmalloc.c is bitcode beside the cores), nothing from libc.a's
//     dlmalloc.o or its page-only sbrk.o.
// (2) snprintf's %f formatter (shared/printf_lite.h, use_printf_fixed) only in the modules that print a
//     double (monitoring, analytics): the others link none of it.
//     And from the sources: a printf-family call with a %f/%F conversion only in the sources of a worker
//     that calls use_printf_fixed() (without it the conversion traps in wasm, while the native build's C
//     library prints it, so the native tests cannot tell).
// (3) std::string's members instantiated in the modules' own objects, not taken from libc++.a.
// (4) Through the raw ABI (ss_alloc is malloc, ss_free is free: docs/abi.md), thousands of blocks of
//     mixed sizes, some far over a 64 KiB page so memory must grow, are written, freed in random order
//     and reused, and no block overlaps another or loses its bytes.
// (4b), (5) and (6): below.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PARTS, PLATFORM_WORKERS } from "../../scripts/lib/workers.mjs";
import { rawCoreExports } from "./raw-core.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
// The parts (the ledger's runner and config) are modules of their own, built from their platform
// worker's library.
const modules = [
  ...[...Object.values(PLATFORM_WORKERS), ...Object.values(PARTS)].map((w) => ({
    name: w.key,
    map: `build/wasm/wasm/${w.wasm.replace(/\.wasm$/, ".map")}`,
    wasm: `dist/wasm/${w.wasm}`,
  })),
  { name: "floor", map: "build/wasm/wasm-bench/floor.map", wasm: "dist/bench/floor.wasm" },
];

const WASM_MALLOC = "libss_wasm_malloc.a(wasm_malloc.c.o)"; // shared/wasm_malloc.c
const WASM_MEMORY = "libss_wasm_memory.a(wasm_memory.c.o)"; // shared/wasm_memory.c

// Lines of wasm-ld's map: "Addr Off Size Out In Symbol"; a function's input reads `FILE:(symbol)`,
// followed by one line per symbol that input defines — its own name and any alias of it (an
// `__attribute__((alias))` name appears only there). The files defining `symbol`, one per input.
function definitions(mapText, symbol) {
  const files = [];
  let file = null;
  let counted = false;
  for (const line of mapText.split("\n")) {
    const m = /\s(\S+):\((\S+)\)\s*$/.exec(line);
    if (m) {
      file = m[1];
      counted = m[2] === symbol;
      if (counted) files.push(file);
    } else if (file && !counted && line.trim().split(/\s+/).at(-1) === symbol) {
      files.push(file);
      counted = true;
    }
  }
  return files;
}

// `symbol` is defined at most once, and only by `file` (none at all: nothing in the module calls it).
function assertOnlyFrom(mapText, symbol, file) {
  const from = definitions(mapText, symbol);
  assert.ok(from.length <= 1 && from.every((f) => f === file), `${symbol} comes from ${file}, not ${from}`);
  return from;
}

for (const mod of modules) {
  test(`${mod.name}: one allocator, size classes in front of emmalloc, in the link map`, () => {
    const path = `${root}/${mod.map}`;
    assert.ok(existsSync(path), `${mod.map} is written by scripts/build (wasm32-wasi)`);
    const text = readFileSync(path, "utf8");
    assert.ok(!text.includes("libc.a(dlmalloc.o)"), "wasi-libc's dlmalloc is not linked");
    assert.ok(!text.includes("libc.a(sbrk.o)"), "wasi-libc's sbrk (whole pages only) is not linked");
    for (const symbol of ["malloc", "free", "realloc", "calloc"]) {
      const from = assertOnlyFrom(text, symbol, WASM_MALLOC);
      // calloc and realloc only where something calls them; malloc and free everywhere.
      if (symbol === "malloc" || symbol === "free") assert.equal(from.length, 1, `${symbol} is linked`);
    }
    for (const symbol of ["emmalloc_malloc", "emmalloc_free"]) {
      assert.deepEqual(definitions(text, symbol), ["lto.tmp"], `${symbol} is defined once, by the LTO object`);
    }
    // musl's internal names (libc calls them: atexit __libc_calloc, freelocale __libc_free) are
    // wasm_malloc.c's too, never emmalloc's aliases: a block of a class freed by emmalloc would corrupt
    // its heap (CMakeLists.txt renames emmalloc.c's aliases away).
    for (const symbol of ["__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc"]) {
      assertOnlyFrom(text, symbol, WASM_MALLOC);
    }
    // operator new and delete are libc++'s, calling malloc and free above.
    assert.ok(definitions(text, "_Znwm").every((file) => file.endsWith("libc++.a(stdlib_new_delete.cpp.o)")));
  });
}

// (6) memcpy, memmove and memset are shared/wasm_memory.c's (the bulk-memory instructions), not
// wasi-libc's loops: every caller in the module resolves to them. (What they do is every other test's
// business: each of the cores copies through them on every call.)
for (const mod of modules) {
  test(`${mod.name}: memcpy, memmove and memset are memory.copy and memory.fill`, () => {
    const path = `${root}/${mod.map}`;
    assert.ok(existsSync(path), `${mod.map} is written by scripts/build (wasm32-wasi)`);
    const text = readFileSync(path, "utf8");
    // None at all is fine (a module that never calls it); one from anywhere else is not.
    for (const symbol of ["memcpy", "memmove", "memset"]) assertOnlyFrom(text, symbol, WASM_MEMORY);
    assert.ok(definitions(text, "memcpy").length === 1, "memcpy is linked (every core copies)");
  });
}

// C++ sources of a folder (not its tests), as [relative path, text].
function cppSources(dir) {
  return readdirSync(`${root}/${dir}`)
    .filter((f) => /\.(cpp|h)$/.test(f) && !f.endsWith("-test.cpp"))
    .map((f) => [`${dir}/${f}`, readFileSync(`${root}/${dir}/${f}`, "utf8")]);
}
// A printf-family call whose format literal has a %f or %F conversion (flags, width, precision and a
// length modifier allowed; "%%" is a literal percent sign). A format held in a variable is not seen:
// the modules' formats are literals at the call.
const FIXED_CONVERSION =
  /printf\w*\s*\([^;]*"(?:[^"\n%]|%%|%[-+ #0-9.*hlLjzt]*[diouxXcs])*%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*)?)?(?:hh|h|ll|l|j|z|t|L)?[fF][^"\n]*"/;
// A call on a line of code, not in a comment.
const callsUseFixed = (sources) => sources.some(([, text]) => /^[^/\n]*\buse_printf_fixed\(\)\s*;/m.test(text));
const PRINTS_DOUBLES = new Set(
  Object.values(PLATFORM_WORKERS)
    .filter((w) => callsUseFixed(cppSources(`workers/${w.key}`)))
    .map((w) => w.key),
);

test("%f is printed only by workers that call use_printf_fixed()", () => {
  const offenders = [];
  for (const [file, text] of [
    ...cppSources("shared"),
    ...cppSources("tests/bench").filter(([f]) => f === "tests/bench/floor.cpp"),
  ]) {
    if (file !== "shared/printf_lite.cpp" && FIXED_CONVERSION.test(text)) offenders.push(file);
  }
  for (const w of Object.values(PLATFORM_WORKERS)) {
    const sources = cppSources(`workers/${w.key}`);
    if (callsUseFixed(sources)) continue;
    for (const [file, text] of sources) if (FIXED_CONVERSION.test(text)) offenders.push(file);
  }
  assert.deepEqual(offenders, [], "these print %f without use_printf_fixed() in their worker (a trap in wasm)");
  // The scan finds what it looks for: the two workers that print a double are seen doing so.
  assert.deepEqual([...PRINTS_DOUBLES].sort(), ["analytics", "monitoring"]);
  for (const key of PRINTS_DOUBLES) {
    assert.ok(
      cppSources(`workers/${key}`).some(([, text]) => FIXED_CONVERSION.test(text)),
      `${key} calls use_printf_fixed() and prints %f`,
    );
  }
  assert.ok(FIXED_CONVERSION.test('std::snprintf(buf, sizeof buf, "%.2f%%", v);'));
  assert.ok(FIXED_CONVERSION.test('snprintf(b, n, "x=%08.3F", d)'));
  assert.ok(FIXED_CONVERSION.test('snprintf(b, n, "%lf", d)'));
  assert.ok(FIXED_CONVERSION.test('snprintf(b, n, "%d of %s: %08.3f", i, s, d)'));
  assert.ok(FIXED_CONVERSION.test('snprintf(b, n, "%% of %.1lf", d)'));
  assert.ok(!FIXED_CONVERSION.test('std::snprintf(buf, sizeof buf, "%04x", c);'));
  assert.ok(!FIXED_CONVERSION.test('snprintf(b, n, "100%%full")'));
});
for (const mod of modules.filter((m) => !PRINTS_DOUBLES.has(m.name))) {
  test(`${mod.name}: no %f formatter linked`, () => {
    const path = `${root}/${mod.map}`;
    assert.ok(existsSync(path), `${mod.map} is written by scripts/build (wasm32-wasi)`);
    const text = readFileSync(path, "utf8");
    // Its parts, by their mangled names: format_fixed and the big-integer helper Big.
    for (const part of ["printf_lite_impl12format_fixed", "printf_lite_impl3Big"]) {
      assert.ok(!text.includes(part), `${part} is linked into ${mod.name}`);
    }
  });
}

// std::string's members come from the modules' own objects (CMakeLists.txt: _LIBCPP_DISABLE_EXTERN_TEMPLATE,
// through LTO with the rest), not compiled from libc++.a; its string.cpp.o gives at most std::to_string.
for (const mod of modules) {
  test(`${mod.name}: std::string's members are not libc++.a's`, () => {
    const path = `${root}/${mod.map}`;
    assert.ok(existsSync(path), `${mod.map} is written by scripts/build (wasm32-wasi)`);
    const fromArchive = [];
    for (const line of readFileSync(path, "utf8").split("\n")) {
      const m = /libc\+\+\.a\(string\.cpp\.o\):\((\S+)\)\s*$/.exec(line);
      if (m?.[1].includes("basic_string")) fromArchive.push(m[1]);
    }
    assert.deepEqual(fromArchive, [], "basic_string members linked from libc++.a");
  });
}

// A deterministic generator, so a failure repeats.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

for (const mod of modules.filter((m) => m.name === "floor" || m.name === "events")) {
  test(`${mod.name}: malloc/free through ss_alloc/ss_free keep every block intact`, () => {
    const path = `${root}/${mod.wasm}`;
    assert.ok(existsSync(path), `${mod.wasm} is built`);
    const ex = rawCoreExports(path);
    const random = rng(12);
    const live = new Map(); // ptr -> [len, fill byte]
    const pagesBefore = ex.memory.buffer.byteLength / 65536;
    const check = (ptr, len, fill) => {
      const view = new Uint8Array(ex.memory.buffer, ptr, len);
      for (let i = 0; i < len; i += Math.max(1, len >> 6)) assert.equal(view[i], fill, `block ${ptr}+${i}`);
      assert.equal(view[len - 1], fill, `block ${ptr} end`);
    };
    for (let step = 0; step < 6000; step++) {
      if (live.size > 0 && random() < 0.45) {
        const keys = [...live.keys()];
        const ptr = keys[Math.floor(random() * keys.length)];
        const [len, fill] = live.get(ptr);
        check(ptr, len, fill);
        ex.ss_free(ptr);
        live.delete(ptr);
        continue;
      }
      const r = random();
      const len =
        r < 0.7
          ? 1 + Math.floor(random() * 64)
          : r < 0.97
            ? 65 + Math.floor(random() * 4000)
            : 70000 + Math.floor(random() * 200000);
      const ptr = ex.ss_alloc(len);
      assert.notEqual(ptr, 0, `malloc(${len})`);
      assert.equal(ptr % 8, 0, `malloc(${len}) is 8-aligned`);
      assert.ok(ptr + len <= ex.memory.buffer.byteLength);
      const fill = 1 + (step % 255);
      new Uint8Array(ex.memory.buffer, ptr, len).fill(fill);
      live.set(ptr, [len, fill]);
    }
    // No two live blocks overlap, and each still holds what was written to it.
    const sorted = [...live.entries()].sort((a, b) => a[0] - b[0]);
    for (let i = 0; i < sorted.length; i++) {
      const [ptr, [len, fill]] = sorted[i];
      check(ptr, len, fill);
      if (i + 1 < sorted.length)
        assert.ok(ptr + len <= sorted[i + 1][0], `blocks at ${ptr} and ${sorted[i + 1][0]} overlap`);
    }
    assert.ok(ex.memory.buffer.byteLength / 65536 > pagesBefore, "memory grew for the large blocks");
    for (const ptr of live.keys()) ex.ss_free(ptr);
    // Freed memory is reused: a second round of the same sizes does not grow memory much further.
    const pagesAfterFirst = ex.memory.buffer.byteLength / 65536;
    for (const [, [len]] of sorted) ex.ss_free(ex.ss_alloc(len));
    assert.ok(ex.memory.buffer.byteLength / 65536 <= pagesAfterFirst + 8, "freed blocks are reused");
  });
}

// (4b) The allocator's own checks inside wasm (tests/wasm/alloc_check.c, built by scripts/build beside
// the modules with the same allocator libraries): every realloc direction, calloc on a recycled block,
// the aligned forms and their errno values, sizes near 4 GiB, and libc freeing through __libc_free what
// it allocated through malloc. 0 is every check passed; another number names the check that failed.
test("the wasm allocator passes its own checks (tests/wasm/alloc_check.c)", () => {
  const path = `${root}/build/wasm/wasm-test/alloc_check.wasm`;
  assert.ok(existsSync(path), "build/wasm/wasm-test/alloc_check.wasm is built by scripts/build");
  const ex = rawCoreExports(path);
  assert.equal(ex.ss_alloc_check(), 0, "the number of the first failing check in tests/wasm/alloc_check.c");
  const map = readFileSync(`${root}/build/wasm/wasm-test/alloc_check.map`, "utf8");
  // The checks ran on the allocator every module links, and reached libc's internal free.
  assert.deepEqual(definitions(map, "malloc"), [WASM_MALLOC]);
  assert.deepEqual(definitions(map, "__libc_free"), [WASM_MALLOC]);
  assert.equal(definitions(map, "freelocale").length, 1, "freelocale is linked (check 6)");
});

// (5) What each module imports, in both builds: WASI functions (bindings/instance.js answers the ones a
// core calls and stubs the rest) and the two Emscripten functions it answers — nothing else, so no
// import can reach the host's "not provided" stub at run time.
const EMSCRIPTEN_IMPORTS = new Set(["env.emscripten_notify_memory_growth", "env.emscripten_memcpy_big"]);
for (const dir of ["dist/wasm", "dist/wasm-emscripten"]) {
  const files = existsSync(`${root}/${dir}`) ? readdirSync(`${root}/${dir}`).filter((f) => f.endsWith(".wasm")) : [];
  test(`${dir}: every module imports only WASI and what the host answers`, {
    skip: files.length === 0 && `${dir} not built`,
  }, () => {
    for (const file of files) {
      const imports = WebAssembly.Module.imports(new WebAssembly.Module(readFileSync(`${root}/${dir}/${file}`)));
      const foreign = imports
        .map((i) => `${i.module}.${i.name}`)
        .filter((n) => !n.startsWith("wasi_snapshot_preview1.") && !EMSCRIPTEN_IMPORTS.has(n));
      assert.deepEqual(foreign, [], `${file} imports only what the host provides`);
    }
  });
}
