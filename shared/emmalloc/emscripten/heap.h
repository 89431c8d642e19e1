// Build shim, wasm32-wasi only: the part of Emscripten's <emscripten/heap.h> that emmalloc.c and sbrk.c
// use, with the standalone-wasm definitions of Emscripten's own runtime (its standalone.c and
// emscripten_get_heap_size.c) as plain memory.size / memory.grow, no import. See ../emscripten.h.
#pragma once

#include <stddef.h>
#include <stdint.h>

#define WASM_PAGE_SIZE 65536
#define EMSCRIPTEN_PAGE_SIZE WASM_PAGE_SIZE

// Defined by sbrk.c: the address of the current program break (starts at the linker's __heap_base).
uintptr_t* emscripten_get_sbrk_ptr(void);

static inline size_t emscripten_get_heap_size(void) {
  return __builtin_wasm_memory_size(0) * WASM_PAGE_SIZE;
}

// Standalone wasm has no instruction for the maximum, so, as Emscripten's standalone.c, the current size.
static inline size_t emscripten_get_heap_max(void) { return emscripten_get_heap_size(); }

// Grows memory to at least `size` bytes (sbrk.c calls it only when size is above the current size).
static inline int emscripten_resize_heap(size_t size) {
  size_t pages = (size - emscripten_get_heap_size() + WASM_PAGE_SIZE - 1) / WASM_PAGE_SIZE;
  return __builtin_wasm_memory_grow(0, pages) != (size_t)-1;
}
