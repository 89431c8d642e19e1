#pragma once
// The outbound-URL guard (SSRF): every URL a tenant or operator hands the platform to call
// (lead webhooks, ledger workflow webhooks) goes through check_outbound_url() when it is configured
// and again right before each call, and the call is made to the normalised href it returns — never
// to the raw string — so the host that was judged is the host that is contacted.
//
// The parser follows the WHATWG URL standard (what workerd's fetch() and Node's URL use) for the
// parts that decide where a request goes: scheme, authority, userinfo, host (lower-casing,
// percent-decoding, IPv4 in decimal/octal/hex/short forms, IPv6 with embedded IPv4) and port.
// Rules and reasons: docs/security.md.

#include "shared/error.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ss {

// What the WHATWG parser makes of an http(s) URL's authority.
struct ParsedHttpUrl {
  enum class HostKind { domain, ipv4, ipv6 };
  std::string scheme;  // "http" or "https"
  bool has_userinfo = false;
  HostKind host_kind = HostKind::domain;
  std::string host;        // serialised as URL.hostname does: "a.example", "127.0.0.1", "[::1]"
  std::uint32_t ipv4 = 0;  // when host_kind == ipv4
  std::array<std::uint16_t, 8> ipv6{};  // when host_kind == ipv6
  std::optional<int> port;              // null when absent or the scheme's default (as URL.port)
  std::string rest;                     // path (at least "/"), then ?query; the fragment is dropped
};

// Parses an absolute http:// or https:// URL; invalid_request with a message otherwise. Stricter
// than WHATWG in a few places (control characters, spaces and non-ASCII hosts are refused rather
// than stripped or mapped), never looser.
Result<ParsedHttpUrl> parse_http_url(std::string_view url);

// A URL the platform may call.
struct OutboundUrl {
  std::string scheme;
  std::string host;  // as ParsedHttpUrl::host
  int port = 0;      // the effective port (443/80 when the URL names none)
  std::string href;  // scheme://host[:port]/path?query — what the call must use
};

// Why a URL is refused; also the "reason" of the Error's extra fields.
enum class UrlRefusal {
  invalid_url,      // not a parseable absolute URL
  scheme,           // not http(s)
  insecure,         // http:// outside local development
  userinfo,         // user:password@ — refused whatever follows
  non_ascii_host,   // internationalised hosts must be given in their xn-- form
  localhost,        // localhost, *.localhost
  loopback,         // 127/8, ::1
  private_network,  // RFC 1918
  shared_address,   // 100.64/10 (carrier-grade NAT)
  link_local,       // 169.254/16 (incl. 169.254.169.254, cloud metadata), fe80::/10
  unique_local,     // fc00::/7
  multicast,        // 224/4, ff00::/8
  unspecified,      // 0.0.0.0/8, ::
  broadcast,        // 255.255.255.255
  reserved,         // documentation, benchmarking, 240/4, non-global IPv6, tunnels
};
std::string_view url_refusal_name(UrlRefusal r);

inline constexpr std::size_t kMaxOutboundUrlLength = 2048;

// The guard. allow_local (local development, env ALLOW_LOCAL_OUTBOUND=1) additionally admits
// exactly the loopback hosts the local stubs use — 127.0.0.1, localhost and [::1] — over http or
// https; nothing else private ever passes. A refusal is invalid_request whose message says why
// (e.g. "the host 127.0.0.1 is a loopback address") and whose extra "reason" is the UrlRefusal.
Result<OutboundUrl> check_outbound_url(std::string_view url, bool allow_local);

// The reason of a refusal returned by check_outbound_url ("" for other errors).
std::string refusal_reason(const Error& e);

// What a refused webhook URL is told: "must be a public https:// URL", with the guard's reason unless
// the scheme was the problem (an ftp:// URL would read "…https:// URL: only http:// and https://…").
std::string webhook_url_problem(const Error& refusal);

}  // namespace ss
