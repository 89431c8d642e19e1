#include "shared/digest.h"

#include "shared/bytes.h"

#include <doctest/doctest.h>

#include <string>

namespace {
std::string hex_of(std::string_view data) {
  ss::Sha256Digest d = ss::sha256(data);
  return ss::hex_encode(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}
}  // namespace

TEST_CASE("sha256 matches the FIPS 180-2 vectors, across block boundaries") {
  CHECK(hex_of("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex_of("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(hex_of(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // The padding edges: the length fits in the last block or needs another one.
  CHECK(hex_of(std::string(55, 'x')) ==
        "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072");
  CHECK(hex_of(std::string(56, 'x')) ==
        "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e");
  CHECK(hex_of(std::string(63, 'x')) ==
        "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2");
  CHECK(hex_of(std::string(64, 'x')) ==
        "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
  CHECK(hex_of(std::string(119, 'x')) ==
        "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c");
  CHECK(hex_of(std::string(120, 'x')) ==
        "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98");
}

TEST_CASE("digest_equal compares secrets of any length") {
  CHECK(ss::digest_equal("test-admin-token", "test-admin-token"));
  CHECK_FALSE(ss::digest_equal("test-admin-token", "test-admin-tokem"));
  CHECK_FALSE(ss::digest_equal("test-admin-token", "test-admin-token-longer"));
  CHECK_FALSE(ss::digest_equal("test-admin-token", ""));
}
