#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ss {

// Event-type globs used by subscriptions (`price.*`, `*`, `lead.?eceived`, `*.failed`). '*' matches
// any run of characters, dots included; '?' matches exactly one character. No classes, no escapes.
inline constexpr std::size_t kMaxGlobLength = 128;

// Non-empty, at most kMaxGlobLength chars, only [a-z0-9._*?-]. On failure, *why says what is wrong.
bool is_valid_glob(std::string_view pattern, std::string* why = nullptr);

// Iterative match with a single backtrack point: O(pattern * text) worst case, never exponential.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace ss
