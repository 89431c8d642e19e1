// The C ABI of one worker's wasm module (docs/abi.md). Compiled once per worker with
// SS_WORKER_FACTORY naming that worker's make_<name>_app(); everything else is shared.

#include "shared/app.h"

#include <cstdlib>
#include <cstring>

namespace ss {
App SS_WORKER_FACTORY();
}

namespace {
ss::Runtime& runtime() {
  static ss::App app = ss::SS_WORKER_FACTORY();
  static ss::Runtime rt(app);
  return rt;
}
}  // namespace

#define SS_EXPORT(name) extern "C" __attribute__((export_name(#name), used))

SS_EXPORT(ss_alloc) void* ss_alloc(std::size_t len) { return std::malloc(len == 0 ? 1 : len); }
SS_EXPORT(ss_free) void ss_free(void* ptr) { std::free(ptr); }

SS_EXPORT(ss_start) std::uint32_t ss_start(const char* ptr, std::size_t len) {
  return runtime().start(std::string_view(ptr, len));
}

SS_EXPORT(ss_state) std::int32_t ss_state(std::uint32_t id) {
  return static_cast<std::int32_t>(runtime().state(id));
}

SS_EXPORT(ss_data_ptr) const char* ss_data_ptr(std::uint32_t id) {
  return runtime().data(id).data();
}

SS_EXPORT(ss_data_len) std::size_t ss_data_len(std::uint32_t id) {
  return runtime().data(id).size();
}

SS_EXPORT(ss_resume) void ss_resume(std::uint32_t id, const char* ptr, std::size_t len) {
  runtime().resume(id, std::string_view(ptr, len));
}

SS_EXPORT(ss_drop) void ss_drop(std::uint32_t id) { runtime().drop(id); }
