#include "shared/ulid.h"

#include <doctest/doctest.h>

#include <string>

namespace ss {
namespace {

constexpr UlidRandom kZero{};

UlidRandom filled(std::uint8_t b) {
  UlidRandom r;
  r.fill(b);
  return r;
}

TEST_CASE("ulid: known vector from the spec's example timestamp") {
  // 1469918176385 = 0x0156_3DF3_6481; base32 of the 48-bit value is 01ARYZ6S41.
  CHECK(encode_ulid(1469918176385, kZero) == "01ARYZ6S410000000000000000");
  CHECK(encode_ulid(0, kZero) == "00000000000000000000000000");
  CHECK(encode_ulid(kUlidMaxTimeMs, filled(0xFF)) == "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
  CHECK(encode_ulid(-1, kZero).empty());
  CHECK(encode_ulid(kUlidMaxTimeMs + 1, kZero).empty());
}

TEST_CASE("ulid: format and time round trip") {
  UlidRandom r{0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0x10, 0x32};
  const std::string id = encode_ulid(1748182991096, r);
  CHECK(id.size() == kUlidLength);
  CHECK(is_ulid(id));
  CHECK(ulid_time_ms(id) == 1748182991096);
  CHECK(ulid_time_ms("01ARYZ6S410000000000000000") == 1469918176385);
  CHECK(ulid_time_ms("7ZZZZZZZZZZZZZZZZZZZZZZZZZ") == kUlidMaxTimeMs);
  CHECK_FALSE(ulid_time_ms("not a ulid").has_value());
}

TEST_CASE("ulid: lexical order is time order") {
  std::string prev = encode_ulid(0, filled(0xFF));
  const std::int64_t times[] = {1, 31, 32, 1000, 1469918176385, 1748182991096, kUlidMaxTimeMs};
  for (std::int64_t ms : times) {
    const std::string cur = encode_ulid(ms, kZero);
    CHECK(prev < cur);
    prev = encode_ulid(ms, filled(0xFF));
  }
}

TEST_CASE("ulid: monotonic within the same millisecond") {
  UlidGenerator gen;
  auto a = gen.next(1469918176385, kZero);
  auto b = gen.next(1469918176385, filled(0x77));  // random ignored: previous + 1
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK(*a == "01ARYZ6S410000000000000000");
  CHECK(*b == "01ARYZ6S410000000000000001");

  SUBCASE("carry across characters") {
    UlidGenerator g;
    UlidRandom r{};
    r[9] = 0x1F;  // last char 'Z'
    auto x = g.next(5, r);
    auto y = g.next(5, r);
    REQUIRE(x.has_value());
    REQUIRE(y.has_value());
    CHECK(x->substr(10) == "000000000000000Z");
    CHECK(y->substr(10) == "0000000000000010");
    CHECK(*x < *y);
  }
  SUBCASE("a later millisecond takes the fresh random part") {
    auto c = gen.next(1469918176386, kZero);
    REQUIRE(c.has_value());
    CHECK(*c == "01ARYZ6S420000000000000000");
  }
}

TEST_CASE("ulid: a clock going backwards never produces a smaller id") {
  UlidGenerator gen;
  auto a = gen.next(2000, filled(0x80));
  auto b = gen.next(1000, kZero);
  auto c = gen.next(1999, kZero);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  REQUIRE(c.has_value());
  CHECK(*a < *b);
  CHECK(*b < *c);
  CHECK(ulid_time_ms(*b) == 2000);
  CHECK(ulid_time_ms(*c) == 2000);
}

TEST_CASE("ulid: overflow and out-of-range time give nullopt") {
  UlidGenerator gen;
  auto a = gen.next(42, filled(0xFF));
  REQUIRE(a.has_value());
  CHECK_FALSE(gen.next(42, kZero).has_value());
  CHECK_FALSE(gen.next(41, kZero).has_value());
  // State is unchanged after the failure; a later millisecond works again.
  auto b = gen.next(43, kZero);
  REQUIRE(b.has_value());
  CHECK(*a < *b);

  UlidGenerator fresh;
  CHECK_FALSE(fresh.next(-1, kZero).has_value());
  CHECK_FALSE(fresh.next(kUlidMaxTimeMs + 1, kZero).has_value());
  CHECK(fresh.next(kUlidMaxTimeMs, kZero).has_value());
}

TEST_CASE("ulid: is_ulid rejects non-canonical strings") {
  CHECK(is_ulid("01ARYZ6S410000000000000000"));
  CHECK(is_ulid("7ZZZZZZZZZZZZZZZZZZZZZZZZZ"));
  CHECK_FALSE(is_ulid("01aryz6s410000000000000000"));  // lower case
  CHECK_FALSE(is_ulid("01ARYZ6S41000000000000000I"));
  CHECK_FALSE(is_ulid("01ARYZ6S41000000000000000L"));
  CHECK_FALSE(is_ulid("01ARYZ6S41000000000000000O"));
  CHECK_FALSE(is_ulid("01ARYZ6S41000000000000000U"));
  CHECK_FALSE(is_ulid("01ARYZ6S41000000000000000"));    // 25
  CHECK_FALSE(is_ulid("01ARYZ6S4100000000000000000"));  // 27
  CHECK_FALSE(is_ulid(""));
  CHECK_FALSE(is_ulid("80000000000000000000000000"));  // overflows 128 bits
  CHECK_FALSE(is_ulid("01ARYZ6S41000000000000000-"));
}

}  // namespace
}  // namespace ss
