#!/usr/bin/env bash
# A worker's wasm with its function names kept, for profiles that name wasm frames
# (docs/performance.md "Profiles inside workerd"): the module's link from build/wasm run again by hand
# with the name section kept, then the build's two wasm-opt passes with -g. The shipped module has no
# names: clang's driver runs its own wasm-opt after wasm-ld, which drops them (and scripts/build's
# wasm-opt after it), so the link is redone here without it.
#   tests/bench/named-wasm.sh <module> [OUT]     e.g. leads, events-runner, floor; OUT defaults to build/named/<module>.wasm
# Put OUT in dist/wasm/ for a profiling run only (keep the shipped file aside and put it back).
set -euo pipefail
cd "$(dirname "$0")/../.."
module=${1:?usage: tests/bench/named-wasm.sh <module> [OUT]}
out=${2:-build/named/$module.wasm}
mkdir -p "$(dirname "$out")"
out=$(realpath "$out")
cd build/wasm
target=wasm/$module.wasm
[ "$module" = floor ] && target=wasm-bench/floor.wasm  # tests/bench/floor.cpp, the shared floor
# The module's clang++ link line, as the build ran it.
link=$(ninja -t commands "$target" | tail -1 | sed -e 's/^: && //' -e 's/ && :$//')
[ -n "$link" ] || { echo "named-wasm: no link command for $target (run scripts/build first)" >&2; exit 1; }
# The wasm-ld line clang++ would run for it (-### prints it without running anything).
ld=$(eval "${link/ -o ${target//\//\\/}/ -o $out.linked} -###" 2>&1 | grep -m1 '"/usr/bin/wasm-ld' || true)
[ -n "$ld" ] || { echo "named-wasm: clang++ -### printed no wasm-ld line" >&2; exit 1; }
eval "$ld --no-demangle"  # the link strips debug sections only (--strip-debug): the names stay
features=(--enable-mutable-globals --enable-sign-ext --enable-bulk-memory)
wasm-opt "$out.linked" -Os -g "${features[@]}" -o "$out.linked"
wasm-opt "$out.linked" -Oz -g --strip-dwarf "${features[@]}" -o "$out"
rm -f "$out.linked"
echo "$out"
