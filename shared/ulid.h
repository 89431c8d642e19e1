#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ss {

// ULIDs (github.com/ulid/spec): a 48-bit millisecond timestamp followed by 80 random bits, written
// as 26 Crockford base32 characters so that lexical order is time order. The clock and the random
// source stay outside: the caller passes both in, which keeps ids deterministic in tests.
inline constexpr std::size_t kUlidLength = 26;
inline constexpr std::size_t kUlidRandomBytes = 10;
inline constexpr std::int64_t kUlidMaxTimeMs = (std::int64_t{1} << 48) - 1;

using UlidRandom = std::array<std::uint8_t, kUlidRandomBytes>;

// Monotonic per instance: when now_ms is <= the last timestamp used, the last timestamp is reused
// and the previous 80-bit random part is incremented by one (the spec's monotonic mode), so a clock
// that goes backwards never produces a smaller id. Returns std::nullopt when the 80-bit part would
// overflow or now_ms is out of range [0, kUlidMaxTimeMs]; the generator's state is then unchanged.
class UlidGenerator {
 public:
  std::optional<std::string> next(std::int64_t now_ms, const UlidRandom& random);

 private:
  bool has_last_ = false;
  std::int64_t last_ms_ = 0;
  UlidRandom last_random_{};
};

// Encodes one ULID. Returns an empty string when ms is outside [0, kUlidMaxTimeMs].
std::string encode_ulid(std::int64_t ms, const UlidRandom& random);

// 26 chars of the upper-case Crockford alphabet, first char <= '7' (so the value fits 128 bits).
bool is_ulid(std::string_view s);
// A ULID as the platform stores and compares it: upper case (the ULID spec decodes either case, so
// "01hx…" names the same id as "01HX…"). Other text comes back as it is.
std::string canonical_ulid(std::string_view s);

// The timestamp of a valid ULID, std::nullopt when !is_ulid(s).
std::optional<std::int64_t> ulid_time_ms(std::string_view s);

}  // namespace ss
