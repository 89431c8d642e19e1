// libFuzzer target for the outbound-URL guard (shared/url_guard.h). Beyond "no crash, no sanitizer
// report", it checks the properties the callers rely on:
//   - an accepted URL's href is accepted again and is a fixed point (what is stored, re-checked
//     before each call and sent is one and the same URL);
//   - the href's host is the judged host (no userinfo, nothing that re-parses elsewhere);
//   - outside local development an accepted URL is https;
//   - a parsed host re-parses to itself when written back into a URL.
// Build: cmake --preset fuzz && cmake --build --preset fuzz; run: build/fuzz/url_guard_fuzz
// tests/fuzz/corpus/url_guard (see docs/security.md).
#include "shared/url_guard.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

void check_accepted(std::string_view input, bool allow_local) {
  auto r = ss::check_outbound_url(input, allow_local);
  if (!r.ok()) {
    require(!ss::refusal_reason(r.error()).empty());
    return;
  }
  require(r->scheme == "https" || (allow_local && r->scheme == "http"));
  auto again = ss::check_outbound_url(r->href, allow_local);
  require(again.ok());
  require(again->href == r->href);
  require(again->host == r->host);
  require(again->port == r->port);
  auto parsed = ss::parse_http_url(r->href);
  require(parsed.ok() && !parsed->has_userinfo && parsed->host == r->host);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  check_accepted(input, false);
  check_accepted(input, true);
  auto parsed = ss::parse_http_url(input);
  if (parsed.ok()) {
    auto host_again = ss::parse_http_url(parsed->scheme + "://" + parsed->host + "/");
    require(host_again.ok() && host_again->host == parsed->host);
  }
  return 0;
}
