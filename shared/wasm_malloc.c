// Small blocks for the wasm32-wasi modules: size classes with free lists in front of emmalloc.
//
// A core's work is mostly small, short-lived blocks (nlohmann's DOM nodes, std::string bodies,
// coroutine frames) allocated and freed within one run. emmalloc (Emscripten's allocator, linked
// in place of wasi-libc's dlmalloc for size: CMakeLists.txt) searches its buckets on every malloc
// and coalesces neighbours on every free; its `emmalloc_memalign` and `free` are among the largest
// self-time entries in every profile of the cores inside workerd (docs/performance.md "A
// small-block allocator"). Here a block of up to SS_SMALL_MAX bytes comes from a free list of its
// size class (16-byte steps to 256, then 64-byte steps): a pop on malloc, a push on free. A class's
// blocks are carved from 64 KiB chunks that emmalloc hands out 64 KiB-aligned, and a byte per
// 64 KiB of the address space says which class a chunk serves (0: none, emmalloc's), so free()
// finds a block's class without a header. Everything larger, or aligned beyond 16, is emmalloc's
// as before.
//
// musl's internal names (`__libc_malloc`, `__libc_free`, `__libc_calloc`, `__libc_realloc`;
// wasi-libc's freelocale calls `__libc_free` on what duplocale got from `malloc`) are defined here
// too, as the public functions: emmalloc.c is compiled with its own aliases of those names
// renamed away (CMakeLists.txt), so no block of a class can reach emmalloc's free (a review found
// that path).
//
// Chunks are never given back: a class keeps the most blocks it has held at once, for the
// instance's life. The cores' peaks are bounded by a request's (the 1 MiB body, a read page of
// 500), and an instance is rebuilt after a trap (docs/abi.md). Single-threaded, as every
// wasm32-wasi module here. Linked only into the wasm modules (natively the system's malloc, and the
// sanitizers', are used).
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

void* emmalloc_malloc(size_t size);
void* emmalloc_memalign(size_t alignment, size_t size);
void* emmalloc_realloc(void* ptr, size_t size);
void emmalloc_free(void* ptr);
size_t emmalloc_usable_size(void* ptr);

enum {
  SS_CHUNK_SHIFT = 16,
  SS_CHUNK = 1 << SS_CHUNK_SHIFT,
  // What a chunk asks emmalloc for: 8 bytes under 64 KiB, so that emmalloc's 4-byte header and
  // footer around it end on the next 64 KiB boundary and chunks taken one after another sit 64 KiB
  // apart (asking for a whole 64 KiB left a 64 KiB gap after each: 128 KiB of heap per chunk).
  SS_CHUNK_PAYLOAD = SS_CHUNK - 8,
  SS_SMALL_MAX = 512,
  SS_ALIGN = 16,
  // Classes 1..16: 16, 32, …, 256 bytes; 17..20: 320, 384, 448, 512.
  SS_CLASSES = 21,
};

typedef struct FreeBlock {
  struct FreeBlock* next;
} FreeBlock;

static FreeBlock* free_list[SS_CLASSES];
static uint8_t* bump[SS_CLASSES];      // next uncarved block of the class's newest chunk
static uint8_t* bump_end[SS_CLASSES];  // end of that chunk
// The class each 64 KiB of the 4 GiB address space serves (0: not a chunk).
static uint8_t chunk_class[(size_t)1 << (32 - SS_CHUNK_SHIFT)];

static inline unsigned class_of(size_t size) {
  if (size <= 256) return size == 0 ? 1u : (unsigned)((size + 15) >> 4);
  return 16u + (unsigned)((size - 256 + 63) >> 6);
}

static inline size_t class_size(unsigned c) {
  return c <= 16 ? (size_t)c << 4 : 256 + ((size_t)(c - 16) << 6);
}

static inline unsigned class_at(const void* ptr) {
  return chunk_class[(uintptr_t)ptr >> SS_CHUNK_SHIFT];
}

static __attribute__((noinline)) void* refill(unsigned c) {
  size_t size = class_size(c);
  if (bump[c] == 0 || bump[c] + size > bump_end[c]) {
    uint8_t* chunk = emmalloc_memalign(SS_CHUNK, SS_CHUNK_PAYLOAD);
    // No chunk to be had: the block from emmalloc itself (its page is no chunk's, so free and
    // realloc hand it back to emmalloc), 16-aligned like the classes' blocks.
    if (!chunk) return emmalloc_memalign(SS_ALIGN, size);
    chunk_class[(uintptr_t)chunk >> SS_CHUNK_SHIFT] = (uint8_t)c;
    bump[c] = chunk;
    bump_end[c] = chunk + SS_CHUNK_PAYLOAD;
  }
  void* block = bump[c];
  bump[c] += size;
  return block;
}

static inline void* small_malloc(unsigned c) {
  FreeBlock* block = free_list[c];
  if (block) {
    free_list[c] = block->next;
    return block;
  }
  return refill(c);
}

// emmalloc's bounds checks add the size to a pointer, which wraps for sizes near 4 GiB (a review
// made malloc(0xFFFFFFC7) "succeed"): such a size is refused here, as glibc refuses any over
// PTRDIFF_MAX.
static inline int too_large(size_t size) { return size > (size_t)PTRDIFF_MAX; }

void* malloc(size_t size) {
  if (size <= SS_SMALL_MAX) return small_malloc(class_of(size));
  if (too_large(size)) return 0;
  return emmalloc_malloc(size);
}

void free(void* ptr) {
  if (!ptr) return;
  unsigned c = class_at(ptr);
  if (c) {
    FreeBlock* block = (FreeBlock*)ptr;
    block->next = free_list[c];
    free_list[c] = block;
    return;
  }
  emmalloc_free(ptr);
}

void* calloc(size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) return 0;
  void* ptr = malloc(bytes);
  if (ptr) memset(ptr, 0, bytes);
  return ptr;
}

size_t malloc_usable_size(void* ptr) {
  if (!ptr) return 0;
  unsigned c = class_at(ptr);
  return c ? class_size(c) : emmalloc_usable_size(ptr);
}

void* realloc(void* ptr, size_t size) {
  if (!ptr) return malloc(size);
  unsigned c = class_at(ptr);
  if (too_large(size)) return 0;
  if (!c) {
    if (size > SS_SMALL_MAX) return emmalloc_realloc(ptr, size);
    // A large block shrinking into a class: move it, so the class's blocks stay in its chunks.
  } else if (size <= class_size(c)) {
    return ptr;
  }
  void* moved = malloc(size);
  if (!moved) return 0;
  size_t old = malloc_usable_size(ptr);
  memcpy(moved, ptr, old < size ? old : size);
  free(ptr);
  return moved;
}

// Small blocks are 16-aligned; emmalloc's are 8-aligned unless asked for more (shared/emmalloc/).
void* memalign(size_t alignment, size_t size) {
  if (alignment <= 8 || (alignment <= SS_ALIGN && size <= SS_SMALL_MAX)) return malloc(size);
  if (too_large(size)) return 0;
  return emmalloc_memalign(alignment, size);
}

void* aligned_alloc(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return 0;
  return memalign(alignment, size);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* ptr = memalign(alignment, size);
  if (!ptr && size) return ENOMEM;
  *out = ptr;
  return 0;
}

// musl's internal names for the same four (see the top of this file).
void* __libc_malloc(size_t size) { return malloc(size); }
void __libc_free(void* ptr) { free(ptr); }
void* __libc_calloc(size_t count, size_t size) { return calloc(count, size); }
void* __libc_realloc(void* ptr, size_t size) { return realloc(ptr, size); }
