#pragma once
// SHA-256 computed in the core, for the few checks that must stay synchronous (comparing the
// operator token by fixed-length digest). Everything else hashes through the crypto.sha256 effect.

#include <array>
#include <cstdint>
#include <string_view>

namespace ss {

using Sha256Digest = std::array<std::uint8_t, 32>;
Sha256Digest sha256(std::string_view data);

// Hashes both sides and compares the digests without an early exit, so the time taken says
// nothing about how much of a secret matched or how long it is.
bool digest_equal(std::string_view a, std::string_view b);

}  // namespace ss
