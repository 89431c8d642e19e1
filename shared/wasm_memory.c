// memcpy, memmove and memset for the wasm32-wasi modules as the bulk-memory instructions
// (`memory.copy`, `memory.fill`): one instruction each, run by the engine at native speed, where
// Debian's wasi-libc (built without bulk memory) links ~3 KB of byte and word loops. Linked ahead of
// libc.a (CMakeLists.txt), so every caller — ours, libc++'s, libc's — resolves here and libc.a's
// copies are never pulled in (tests/integration/wasm-link.test.mjs reads the link maps). Only these
// functions use the feature (the target attribute): the rest of the module is built as before.
// workerd's V8 has run bulk memory since 2019. Built without LTO: LLVM emits calls to these
// functions during code generation, after LTO would have dropped a definition it saw no caller for.
#include <stddef.h>

#define SS_BULK_MEMORY __attribute__((target("bulk-memory")))

SS_BULK_MEMORY void* memcpy(void* restrict dst, const void* restrict src, size_t n) {
  __builtin_memcpy(dst, src, n);
  return dst;
}

SS_BULK_MEMORY void* memmove(void* dst, const void* src, size_t n) {
  __builtin_memmove(dst, src, n);
  return dst;
}

SS_BULK_MEMORY void* memset(void* dst, int c, size_t n) {
  __builtin_memset(dst, c, n);
  return dst;
}
