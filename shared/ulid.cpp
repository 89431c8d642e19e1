#include "shared/ulid.h"

namespace ss {

namespace {

constexpr std::string_view kCrockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
constexpr std::size_t kUlidTimeChars = 10;
constexpr std::size_t kUlidBytes = 16;

// Index of c in the upper-case Crockford alphabet, -1 when absent (lower case is not canonical).
int crockford_value(char c) {
  const auto pos = kCrockford.find(c);
  return pos == std::string_view::npos ? -1 : static_cast<int>(pos);
}

bool time_in_range(std::int64_t ms) { return ms >= 0 && ms <= kUlidMaxTimeMs; }

// Adds one to a big-endian 80-bit number in place; false (and unchanged) on overflow.
bool increment(UlidRandom& value) {
  for (std::size_t i = value.size(); i-- > 0;) {
    if (value[i] != 0xFF) {
      ++value[i];
      for (std::size_t j = i + 1; j < value.size(); ++j) value[j] = 0;
      return true;
    }
  }
  return false;
}

}  // namespace

// 128 bits are written as 130 bits (26 x 5) with two leading zero bits, most significant first.
std::string encode_ulid(std::int64_t ms, const UlidRandom& random) {
  if (!time_in_range(ms)) return {};
  std::array<std::uint8_t, kUlidBytes> bytes{};
  for (std::size_t i = 0; i < 6; ++i) {
    bytes[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(ms) >> (8 * (5 - i)));
  }
  for (std::size_t i = 0; i < kUlidRandomBytes; ++i) bytes[6 + i] = random[i];

  std::string out(kUlidLength, '0');
  for (std::size_t c = 0; c < kUlidLength; ++c) {
    unsigned digit = 0;
    for (int b = 0; b < 5; ++b) {
      const int bit_pos = static_cast<int>(5 * c) + b - 2;
      unsigned bit = 0;
      if (bit_pos >= 0)
        bit = (bytes[static_cast<std::size_t>(bit_pos / 8)] >> (7 - bit_pos % 8)) & 1u;
      digit = (digit << 1) | bit;
    }
    out[c] = kCrockford[digit];
  }
  return out;
}

bool is_ulid(std::string_view s) {
  if (s.size() != kUlidLength || s[0] > '7') return false;
  for (char c : s) {
    if (crockford_value(c) < 0) return false;
  }
  return true;
}

std::string canonical_ulid(std::string_view s) {
  std::string out(s);
  if (out.size() != kUlidLength) return out;
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return is_ulid(out) ? out : std::string(s);
}

std::optional<std::int64_t> ulid_time_ms(std::string_view s) {
  if (!is_ulid(s)) return std::nullopt;
  std::int64_t ms = 0;
  for (std::size_t i = 0; i < kUlidTimeChars; ++i) ms = ms * 32 + crockford_value(s[i]);
  return ms;
}

std::optional<std::string> UlidGenerator::next(std::int64_t now_ms, const UlidRandom& random) {
  if (!time_in_range(now_ms)) return std::nullopt;
  if (has_last_ && now_ms <= last_ms_) {
    UlidRandom bumped = last_random_;
    if (!increment(bumped)) return std::nullopt;
    last_random_ = bumped;
    return encode_ulid(last_ms_, last_random_);
  }
  has_last_ = true;
  last_ms_ = now_ms;
  last_random_ = random;
  return encode_ulid(last_ms_, last_random_);
}

}  // namespace ss
