#pragma once
// The beacon body {"u": page URL, "r": referrer, "w": viewport width} and the dimensions a pageview
// is counted under. Pure functions: no I/O, no clock.

#include "shared/error.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss::analytics {

inline constexpr std::size_t kMaxBeaconBytes = 4096;
inline constexpr std::size_t kMaxPathLength = 512;  // longer paths are cut (counted, not lost)
inline constexpr std::size_t kMaxUtmLength = 100;
inline constexpr std::size_t kMaxHostLength = 253;  // DNS's limit
inline constexpr std::int64_t kMaxViewportWidth = 100000;
inline constexpr std::string_view kDirect = "(direct)";  // no referrer, or the site's own host
inline constexpr std::string_view kUnknown = "(unknown)";

struct UrlParts {
  std::string scheme;  // lower-case
  std::string host;    // lower-case, without userinfo and port
  std::string path;    // "/" when empty
  std::string query;   // without '?'
};

struct Beacon {
  std::string url;
  std::string referrer;
  std::optional<std::int64_t> width;
  std::optional<UrlParts> page = {};  // `url` split, as parse_beacon checked it (not twice)
};

// JSON object with "u" (an absolute http(s) URL), optional "r" (string) and "w" (number); other
// fields (a "tenant", say) are ignored. Malformed → 400 (invalid_json / invalid_request naming the
// field).
Result<Beacon> parse_beacon(std::string_view body);

struct PageDimensions {
  std::string host;                                  // the page's host, lower-case
  std::string path;                                  // no query, no fragment
  std::string referrer;                              // referrer host without "www.", or kDirect
  std::string utm_source, utm_medium, utm_campaign;  // "" when absent
};

// own_hosts: the tenant's site hosts (config "hosts"); a referrer from one of them, or from the
// page's own host, is direct.
PageDimensions page_dimensions(const Beacon& beacon, const std::vector<std::string>& own_hosts);

// A config.hosts entry as a URL to parse: itself when it has a scheme, else "http://" before it.
std::string host_as_url(std::string_view entry);
// The host a config.hosts entry names: a bare host as it is (compared in lower case), the host of
// a URL or host:port ("https://shop.example/", "localhost:8787") otherwise.
std::string site_host(const std::string& entry);
// A host a referrer can be counted under (lower-case ASCII labels, IPv4, or a bracketed IPv6).
bool plausible_host(std::string_view host);

// scheme://[userinfo@]host[:port][/path][?query][#fragment]; nullopt when there is no host.
std::optional<UrlParts> split_url(std::string_view url);

}  // namespace ss::analytics
