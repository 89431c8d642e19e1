// Build shim, wasm32-wasi only: what Emscripten's emmalloc.c and sbrk.c (compiled unmodified from
// Debian's emscripten package, CMakeLists.txt `ss_emmalloc`) take from <emscripten.h>, and nothing else.
// docs/toolchain.md "emmalloc".
#pragma once

#include <stddef.h>

// emmalloc logs through EM_ASM (inline JavaScript) only in its debug dumps and verbose builds, which no
// module calls or enables; outside Emscripten there is no inline JavaScript, so they log nothing.
#define EM_ASM(...) ((void)0)
#define MAIN_THREAD_ASYNC_EM_ASM(...) ((void)0)

// emmalloc is written for Emscripten's wasm32 ABI, where long double, so max_align_t, is 8-aligned: it
// asserts alignof(max_align_t) == 8 and hands out 8-aligned blocks (as Emscripten's dlmalloc does, so the
// Emscripten build of the same workers already runs on 8-aligned malloc). wasm32-wasi aligns long double
// to 16. <stddef.h> is included above, before emmalloc.c reads the name, so this covers emmalloc.c alone.
// Nothing here needs 16: wasm loads and stores of any alignment are correct (only atomics trap, and the
// modules have none), clang-14 assumes no alignment of operator new's result, and aligned_alloc,
// posix_memalign and aligned operator new give any larger alignment asked for.
typedef struct {
  _Alignas(8) double ss_emscripten_max_align;
} ss_emscripten_max_align_t;
#define max_align_t ss_emscripten_max_align_t
