#pragma once
// What several core test files share: the example tenants' credentials (as the tests provision them),
// the contract's JSON error, an RFC 3339 instant as a test writes it, and the smallest fetch message.
// One definition each: the test executable is compiled as a unity build (docs/testing.md).

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "tests/native/harness.h"

namespace ss::test {

inline constexpr const char* kBakeryToken = "bakery-token-0123456789";
inline constexpr const char* kBakeryAdmin = "bakery-admin-0123456789";
inline constexpr const char* kAutoToken = "auto-repair-token-012345";
inline constexpr const char* kAutoAdmin = "auto-repair-admin-012345";

// The contract's error: that status, a JSON body {"error": {"code", "message"}}.
inline void check_error(const native::HttpReply& r, int status, const std::string& code) {
  CHECK(r.status == status);
  CHECK(r.header("content-type").rfind("application/json", 0) == 0);
  json body = r.body_json();
  REQUIRE(body.is_object());
  CHECK(body["error"]["code"] == code);
  CHECK(body["error"]["message"].is_string());
}

// Seconds since the epoch of an instant the test writes in RFC 3339 (it must parse).
inline std::int64_t at_seconds(const char* rfc3339) {
  auto ms = parse_rfc3339(rfc3339);
  REQUIRE(ms.has_value());
  return *ms / 1000;
}

// The host's message for a GET of `path` (the smallest request a core answers).
inline json fetch_message(const std::string& path) {
  return json{{"op", "fetch"},
              {"entropy", std::string(64, 'a')},
              {"request", {{"method", "GET"}, {"url", "https://t" + path}}}};
}

}  // namespace ss::test
