#include "shared/url_guard.h"

#include "shared/json_util.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace ss {
namespace {

json load_table() {
  std::ifstream in(std::string(SS_SOURCE_DIR) + "/tests/fixtures/url-guard.json");
  std::stringstream text;
  text << in.rdbuf();
  auto doc = parse_json(text.str());
  REQUIRE(doc.ok());
  REQUIRE(find_field(*doc, "cases") != nullptr);
  return (*doc)["cases"];
}

// The table is shared with tests/integration/url-guard.test.mjs, which checks every "host" below
// against what Node's WHATWG URL parser resolves for the same string.
TEST_CASE("url guard: the table of tricky URLs") {
  json cases = load_table();
  CHECK(cases.size() > 100);
  for (const json& c : cases) {
    std::string url = string_or(c, "url", "");
    bool local = get_bool(c, "local").value_or(false);
    std::string verdict = string_or(c, "verdict", "");
    CAPTURE(url);
    CAPTURE(local);
    auto result = check_outbound_url(url, local);
    if (verdict == "ok") {
      REQUIRE_MESSAGE(result.ok(), result.error().message);
      CHECK(result->host == string_or(c, "host", ""));
      if (auto href = get_string(c, "href")) CHECK(result->href == *href);
      if (auto port = get_int(c, "port")) CHECK(result->port == *port);
      // The href is itself accepted and names the same place (what the call sends is stable).
      auto again = check_outbound_url(result->href, local);
      REQUIRE(again.ok());
      CHECK(again->href == result->href);
    } else {
      REQUIRE_FALSE(result.ok());
      CHECK(refusal_reason(result.error()) == verdict);
      CHECK(result.error().code == ErrorCode::invalid_request);
      CHECK_FALSE(result.error().message.empty());
    }
    // The host the parser judged (also for policy refusals such as userinfo and private ranges).
    auto parsed = parse_http_url(url);
    const json* host = find_field(c, "host");
    if (host != nullptr && host->is_string()) {
      REQUIRE_MESSAGE(parsed.ok(), parsed.error().message);
      CHECK(parsed->host == host->get<std::string>());
      if (auto port = get_int(c, "port")) CHECK(parsed->port == std::optional<int>(*port));
    } else {
      CHECK_FALSE(parsed.ok());
    }
  }
}

TEST_CASE("url guard: refusals say why") {
  auto r = check_outbound_url("http://169.254.169.254/latest/meta-data/", false);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "the host 169.254.169.254 is the cloud metadata address");
  r = check_outbound_url("https://[::ffff:10.0.0.1]/", false);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message ==
        "the host [::ffff:a00:1] is a private (RFC 1918) address (10.0.0.1, IPv4-mapped)");
  r = check_outbound_url("http://127.0.0.1:80@evil.example/", true);
  REQUIRE_FALSE(r.ok());
  CHECK(refusal_reason(r.error()) == "userinfo");
  r = check_outbound_url("http://example.com/", false);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message == "the URL must use https://");
}

TEST_CASE("url guard: length, ports and the path") {
  std::string long_url = "https://example.com/" + std::string(kMaxOutboundUrlLength, 'a');
  CHECK(refusal_reason(check_outbound_url(long_url, false).error()) == "invalid_url");
  auto r = check_outbound_url("https://example.com:443", false);
  REQUIRE(r.ok());
  CHECK(r->port == 443);
  CHECK(r->href == "https://example.com/");
  r = check_outbound_url("http://127.0.0.1:8790", true);
  REQUIRE(r.ok());
  CHECK(r->port == 8790);
  CHECK(r->href == "http://127.0.0.1:8790/");
  r = check_outbound_url("http://127.0.0.1", true);
  REQUIRE(r.ok());
  CHECK(r->port == 80);
  r = check_outbound_url("https://example.com/caf\xc3\xa9?q=\xc3\xa9", false);
  REQUIRE(r.ok());
  CHECK(r->href == "https://example.com/caf%C3%A9?q=%C3%A9");
  r = check_outbound_url("https://example.com\\a\\b?c\\d", false);
  REQUIRE(r.ok());
  CHECK(r->href == "https://example.com/a/b?c\\d");
  // The standard's percent-encode sets: the path's "<>`{} and the query's "<>' (what URL.href writes).
  r = check_outbound_url("https://example.com/a<b>\"c`{d}'?q=<x>&y=\"'`{}", false);
  REQUIRE(r.ok());
  CHECK(r->href == "https://example.com/a%3Cb%3E%22c%60%7Bd%7D'?q=%3Cx%3E&y=%22%27`{}");
  // The limit holds once encoded: 1,000 two-byte characters are 6,000 characters on the wire.
  std::string wide = "https://example.com/";
  for (int i = 0; i < 1000; ++i) wide += "\xc3\xa9";
  REQUIRE(wide.size() < kMaxOutboundUrlLength);
  CHECK(refusal_reason(check_outbound_url(wide, false).error()) == "invalid_url");
  std::string at_limit = "https://example.com/" + std::string(kMaxOutboundUrlLength - 20, 'a');
  REQUIRE(at_limit.size() == kMaxOutboundUrlLength);
  CHECK(check_outbound_url(at_limit, false).ok());
}

TEST_CASE("url guard: every IPv4 spelling of 127.0.0.1 is loopback") {
  for (const char* host : {"127.0.0.1", "2130706433", "0x7f000001", "0X7F000001", "017700000001",
                           "0177.0.0.1", "0x7f.0.0.1", "127.1", "127.0.1", "0x7f.1",
                           "0x7f.0x0.0.01", "127.0.0.1.", "%31%32%37%2e%30%2e%30%2e%31"}) {
    CAPTURE(host);
    auto r = check_outbound_url(std::string("https://") + host + "/", false);
    REQUIRE_FALSE(r.ok());
    CHECK(refusal_reason(r.error()) == "loopback");
    auto parsed = parse_http_url(std::string("https://") + host + "/");
    REQUIRE(parsed.ok());
    CHECK(parsed->host == "127.0.0.1");
  }
}

}  // namespace
}  // namespace ss
