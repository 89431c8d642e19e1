#pragma once
// Hex encoding for bytes that cross the host boundary (entropy, digests). No cryptography here:
// digests and HMACs are computed by the host (WebCrypto / OpenSSL).

#include <optional>
#include <string>
#include <string_view>

namespace ss {

std::string hex_encode(std::string_view bytes);
std::optional<std::string> hex_decode(std::string_view hex);
// RFC 4648 base64 (for HTTP Basic credentials; an encoding, not cryptography).
std::string base64_encode(std::string_view bytes);
// Compares a presented secret (or digest) with the expected one in time that depends only on the
// presented length: no early exit on a length mismatch or on the first differing byte.
bool constant_time_equal(std::string_view secret, std::string_view presented);

}  // namespace ss
