#pragma once
// Shared by the libFuzzer targets: a property that does not hold is a crash (abort), so libFuzzer
// reports it with the input that broke it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace ss::fuzz {

inline void require(bool condition) {
  if (!condition) std::abort();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits the input at the first NUL into two parts (e.g. a pattern and a subject).
inline std::pair<std::string_view, std::string_view> split2(std::string_view in) {
  auto nul = in.find('\0');
  if (nul == std::string_view::npos) return {in, {}};
  return {in.substr(0, nul), in.substr(nul + 1)};
}

}  // namespace ss::fuzz
