// The wasm32-wasi allocator's own checks (shared/wasm_malloc.c in front of emmalloc), run inside
// wasm by tests/integration/wasm-link.test.mjs: `ss_alloc_check()` answers 0, or the number of the
// first check that failed. What the cores' runs cannot show on their own: every realloc direction,
// calloc on a recycled block, the aligned forms, sizes near 4 GiB, and libc freeing through its
// internal names (freelocale's __libc_free) what it allocated through malloc (duplocale).
#include <errno.h>
#include <locale.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Not declared by wasi-libc's headers; every allocator here defines it (shared/wasm_malloc.c).
void* memalign(size_t alignment, size_t size);

static int filled(const unsigned char* p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

static int disjoint(const void* a, size_t an, const void* b, size_t bn) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x + an <= y || y + bn <= x;
}

static const size_t kSizes[] = {0, 1, 15, 16, 17, 255, 256, 257, 511, 512, 513, 4000, 70000};
static const size_t kCount = sizeof kSizes / sizeof kSizes[0];
static const size_t kHuge = 0xFFFFFFC7u;  // wrapped emmalloc's bounds arithmetic once

__attribute__((export_name("ss_alloc_check"))) int ss_alloc_check(void) {
  // 1: every size: aligned (16 for a class's block, 8 for emmalloc's), usable, its own.
  void* blocks[sizeof kSizes / sizeof kSizes[0]];
  for (size_t i = 0; i < kCount; i++) {
    size_t n = kSizes[i];
    unsigned char* p = malloc(n);
    if (!p) return 1;
    if ((uintptr_t)p % (n <= 512 ? 16 : 8) != 0) return 2;
    if (malloc_usable_size(p) < n) return 3;
    memset(p, (int)(i + 1), n);
    blocks[i] = p;
  }
  for (size_t i = 0; i < kCount; i++) {
    if (!filled(blocks[i], kSizes[i], (unsigned char)(i + 1))) return 4;
    for (size_t j = i + 1; j < kCount; j++)
      if (!disjoint(blocks[i], kSizes[i] ? kSizes[i] : 1, blocks[j], kSizes[j] ? kSizes[j] : 1))
        return 5;
  }
  for (size_t i = 0; i < kCount; i++) free(blocks[i]);

  // 2: realloc in every direction keeps the bytes both sizes share.
  for (size_t i = 1; i < kCount; i++) {
    for (size_t j = 1; j < kCount; j++) {
      size_t a = kSizes[i], b = kSizes[j];
      unsigned char* p = malloc(a);
      if (!p) return 6;
      memset(p, 0x5a, a);
      unsigned char* q = realloc(p, b);
      if (!q) return 7;
      if (!filled(q, a < b ? a : b, 0x5a)) return 8;
      if (malloc_usable_size(q) < b) return 9;
      free(q);
    }
  }
  unsigned char* fresh = realloc(NULL, 40);
  if (!fresh) return 10;
  free(fresh);

  // 3: calloc zeroes a block the free list hands back dirty, and refuses an overflowing product.
  unsigned char* dirty = malloc(64);
  if (!dirty) return 11;
  memset(dirty, 0xaa, 64);
  free(dirty);
  unsigned char* zeroed = calloc(4, 16);
  if (!zeroed || !filled(zeroed, 64, 0)) return 12;
  free(zeroed);
  if (calloc(SIZE_MAX / 2, 4) != NULL) return 13;

  // 4: sizes near 4 GiB are refused, and a refused realloc leaves its block as it was.
  if (malloc(kHuge) != NULL) return 14;
  if (memalign(16, kHuge) != NULL) return 15;
  unsigned char* kept = malloc(100);
  if (!kept) return 16;
  memset(kept, 0x33, 100);
  if (realloc(kept, kHuge) != NULL) return 17;
  if (!filled(kept, 100, 0x33)) return 18;
  free(kept);

  // 5: the aligned forms give the alignment asked for, small and large.
  static const size_t kAlignments[] = {8, 16, 32, 64, 4096, 65536};
  static const size_t kAlignedSizes[] = {1, 100, 512, 513, 5000};
  for (size_t a = 0; a < sizeof kAlignments / sizeof kAlignments[0]; a++) {
    for (size_t s = 0; s < sizeof kAlignedSizes / sizeof kAlignedSizes[0]; s++) {
      size_t align = kAlignments[a], size = kAlignedSizes[s];
      void* p = memalign(align, size);
      void* q = NULL;
      if (!p || (uintptr_t)p % align != 0) return 19;
      if (posix_memalign(&q, align, size) != 0 || (uintptr_t)q % align != 0) return 20;
      memset(p, 1, size);
      memset(q, 2, size);
      if (!filled(p, size, 1)) return 21;
      free(p);
      free(q);
    }
  }
  void* unused = NULL;
  if (posix_memalign(&unused, 12, 8) != EINVAL) return 22;
  if (aligned_alloc(0, 8) != NULL) return 23;

  // 6: duplocale allocates through malloc (a class's block), freelocale frees through musl's
  // __libc_free: the block must come back to the class, not to emmalloc, or emmalloc hands its
  // chunk out again over live blocks.
  locale_t loc = duplocale(LC_GLOBAL_LOCALE);
  if (!loc) return 24;
  freelocale(loc);
  unsigned char* large = malloc(2000);
  if (!large) return 25;
  memset(large, 0x77, 2000);
  unsigned char* smalls[64];
  for (int i = 0; i < 64; i++) {
    smalls[i] = malloc(24);
    if (!smalls[i]) return 26;
    memset(smalls[i], 0x11, 24);
    if (!disjoint(large, 2000, smalls[i], 24)) return 27;
  }
  if (!filled(large, 2000, 0x77)) return 28;
  for (int i = 0; i < 64; i++) free(smalls[i]);
  free(large);
  return 0;
}
