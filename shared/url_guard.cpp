#include "shared/url_guard.h"

#include "shared/text.h"

#include <cstddef>
#include <utility>
#include <vector>

namespace ss {

namespace {

Error invalid(std::string message) {
  return Error{ErrorCode::invalid_request, std::move(message)}.with(
      "reason", std::string(url_refusal_name(UrlRefusal::invalid_url)));
}

Error refuse(UrlRefusal r, std::string message) {
  return Error{ErrorCode::invalid_request, std::move(message)}.with(
      "reason", std::string(url_refusal_name(r)));
}

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// WHATWG "forbidden domain code point" (ASCII part; non-ASCII hosts are refused separately).
bool is_forbidden_domain_char(unsigned char c) {
  if (c <= 0x20 || c == 0x7f) return true;
  switch (c) {
    case '#':
    case '%':
    case '/':
    case ':':
    case '<':
    case '>':
    case '?':
    case '@':
    case '[':
    case '\\':
    case ']':
    case '^':
    case '|':
      return true;
    default:
      return false;
  }
}

std::vector<std::string_view> split_dots(std::string_view s) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = s.find('.', start);
    if (dot == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, dot - start));
    start = dot + 1;
  }
}

// WHATWG "IPv4 number parser": 0x/0X → hex, a leading 0 → octal, else decimal; an empty number
// after the prefix is 0. Values saturate above 2^32 (any such value fails the caller's range
// check, as the unbounded integer of the standard would).
std::optional<std::uint64_t> ipv4_number(std::string_view s) {
  static constexpr std::uint64_t kSaturate = std::uint64_t{1} << 40;
  if (s.empty()) return std::nullopt;
  int radix = 10;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    radix = 16;
    s.remove_prefix(2);
  } else if (s.size() >= 2 && s[0] == '0') {
    radix = 8;
    s.remove_prefix(1);
  }
  std::uint64_t value = 0;
  for (char c : s) {
    int d = hex_digit_value(c);
    if (d < 0 || d >= radix) return std::nullopt;
    value = value * static_cast<std::uint64_t>(radix) + static_cast<std::uint64_t>(d);
    if (value > kSaturate) value = kSaturate;
  }
  return value;
}

// WHATWG "ends in a number checker".
bool ends_in_a_number(std::string_view host) {
  std::vector<std::string_view> parts = split_dots(host);
  if (parts.back().empty()) {
    if (parts.size() == 1) return false;
    parts.pop_back();
  }
  std::string_view last = parts.back();
  if (!last.empty() && last.find_first_not_of("0123456789") == std::string_view::npos) return true;
  return ipv4_number(last).has_value() && last.size() >= 2 && last[0] == '0' &&
         (last[1] == 'x' || last[1] == 'X');
}

// WHATWG "IPv4 parser".
std::optional<std::uint32_t> parse_ipv4(std::string_view host) {
  std::vector<std::string_view> parts = split_dots(host);
  if (parts.back().empty() && parts.size() > 1) parts.pop_back();
  if (parts.size() > 4) return std::nullopt;
  std::vector<std::uint64_t> numbers;
  for (std::string_view part : parts) {
    auto n = ipv4_number(part);
    if (!n) return std::nullopt;
    numbers.push_back(*n);
  }
  for (std::size_t i = 0; i + 1 < numbers.size(); ++i) {
    if (numbers[i] > 255) return std::nullopt;
  }
  std::uint64_t limit = std::uint64_t{1} << (8 * (5 - numbers.size()));
  if (numbers.back() >= limit) return std::nullopt;
  std::uint64_t ipv4 = numbers.back();
  for (std::size_t i = 0; i + 1 < numbers.size(); ++i) ipv4 += numbers[i] << (8 * (3 - i));
  return static_cast<std::uint32_t>(ipv4);
}

// WHATWG "IPv6 parser" (input without the brackets).
std::optional<std::array<std::uint16_t, 8>> parse_ipv6(std::string_view in) {
  std::array<std::uint16_t, 8> address{};
  int piece = 0;
  int compress = -1;
  std::size_t p = 0;
  auto at = [&](std::size_t i) -> int {
    return i < in.size() ? static_cast<unsigned char>(in[i]) : -1;
  };
  if (at(p) == ':') {
    if (at(p + 1) != ':') return std::nullopt;
    p += 2;
    ++piece;
    compress = piece;
  }
  while (at(p) != -1) {
    if (piece == 8) return std::nullopt;
    if (at(p) == ':') {
      if (compress != -1) return std::nullopt;
      ++p;
      ++piece;
      compress = piece;
      continue;
    }
    unsigned value = 0;
    int length = 0;
    while (length < 4 && at(p) != -1 && hex_digit_value(in[p]) >= 0) {
      value = value * 16 + static_cast<unsigned>(hex_digit_value(in[p]));
      ++p;
      ++length;
    }
    if (at(p) == '.') {
      if (length == 0) return std::nullopt;
      p -= static_cast<std::size_t>(length);
      if (piece > 6) return std::nullopt;
      int numbers_seen = 0;
      while (at(p) != -1) {
        int ipv4_piece = -1;
        if (numbers_seen > 0) {
          if (at(p) == '.' && numbers_seen < 4) {
            ++p;
          } else {
            return std::nullopt;
          }
        }
        if (at(p) == -1 || !is_ascii_digit(in[p])) return std::nullopt;
        while (at(p) != -1 && is_ascii_digit(in[p])) {
          int number = in[p] - '0';
          if (ipv4_piece == -1) {
            ipv4_piece = number;
          } else if (ipv4_piece == 0) {
            return std::nullopt;
          } else {
            ipv4_piece = ipv4_piece * 10 + number;
          }
          if (ipv4_piece > 255) return std::nullopt;
          ++p;
        }
        address[piece] = static_cast<std::uint16_t>(address[piece] * 0x100 + ipv4_piece);
        ++numbers_seen;
        if (numbers_seen == 2 || numbers_seen == 4) ++piece;
      }
      if (numbers_seen != 4) return std::nullopt;
      break;
    }
    if (at(p) == ':') {
      ++p;
      if (at(p) == -1) return std::nullopt;
    } else if (at(p) != -1) {
      return std::nullopt;
    }
    address[piece] = static_cast<std::uint16_t>(value);
    ++piece;
  }
  if (compress != -1) {
    int swaps = piece - compress;
    piece = 7;
    while (piece != 0 && swaps > 0) {
      std::swap(address[piece], address[compress + swaps - 1]);
      --piece;
      --swaps;
    }
  } else if (piece != 8) {
    return std::nullopt;
  }
  return address;
}

std::string serialize_ipv4(std::uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xff) + "." +
         std::to_string((a >> 8) & 0xff) + "." + std::to_string(a & 0xff);
}

// WHATWG "IPv6 serializer": lower-case hex, the first longest run of two or more zero pieces
// compressed; embedded IPv4 is written in hex too (as URL.hostname does).
std::string serialize_ipv6(const std::array<std::uint16_t, 8>& a) {
  int best = -1;
  int best_len = 1;
  for (int i = 0; i < 8;) {
    if (a[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && a[j] == 0) ++j;
    if (j - i > best_len) {
      best = i;
      best_len = j - i;
    }
    i = j;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "[";
  bool ignore0 = false;
  for (int i = 0; i < 8; ++i) {
    if (ignore0 && a[i] == 0) continue;
    ignore0 = false;
    if (i == best) {
      out += i == 0 ? "::" : ":";
      ignore0 = true;
      continue;
    }
    std::string piece;
    unsigned v = a[i];
    do {
      piece.insert(piece.begin(), kHex[v & 0xf]);
      v >>= 4;
    } while (v != 0);
    out += piece;
    if (i != 7) out += ':';
  }
  out += ']';
  return out;
}

// The host parser of the standard for special schemes, with UTS 46 reduced to ASCII lower-casing:
// hosts that are not ASCII after percent-decoding are refused (see UrlRefusal::non_ascii_host).
Status parse_host(std::string_view input, ParsedHttpUrl& out) {
  if (input.empty()) return invalid("the URL has no host");
  if (input.front() == '[') {
    if (input.size() < 2 || input.back() != ']') return invalid("the IPv6 host has no closing ]");
    auto v6 = parse_ipv6(input.substr(1, input.size() - 2));
    if (!v6) return invalid("the IPv6 host is not a valid address");
    out.host_kind = ParsedHttpUrl::HostKind::ipv6;
    out.ipv6 = *v6;
    out.host = serialize_ipv6(*v6);
    return Unit{};
  }
  std::string domain;
  domain.reserve(input.size());
  for (std::size_t i = 0; i < input.size(); ++i) {
    char c = input[i];
    if (c == '%' && i + 2 < input.size() && hex_digit_value(input[i + 1]) >= 0 &&
        hex_digit_value(input[i + 2]) >= 0) {
      domain.push_back(
          static_cast<char>(hex_digit_value(input[i + 1]) * 16 + hex_digit_value(input[i + 2])));
      i += 2;
    } else {
      domain.push_back(c);
    }
  }
  for (char& c : domain) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x80) {
      return refuse(UrlRefusal::non_ascii_host,
                    "the host is not ASCII (give an internationalised name in its xn-- form)");
    }
    if (is_forbidden_domain_char(u)) return invalid("the host contains a forbidden character");
    c = ascii_lower(c);
  }
  if (ends_in_a_number(domain)) {
    auto v4 = parse_ipv4(domain);
    if (!v4) return invalid("the host ends in a number but is not a valid IPv4 address");
    out.host_kind = ParsedHttpUrl::HostKind::ipv4;
    out.ipv4 = *v4;
    out.host = serialize_ipv4(*v4);
    return Unit{};
  }
  // Stricter than the standard: empty labels ("a..b", ".a", "." ) name nothing callable.
  std::string_view labels = domain;
  if (labels.size() > 1 && labels.back() == '.') labels.remove_suffix(1);
  for (std::string_view label : split_dots(labels)) {
    if (label.empty()) return invalid("the host has an empty label");
  }
  out.host_kind = ParsedHttpUrl::HostKind::domain;
  out.host = std::move(domain);
  return Unit{};
}

std::string_view strip_one_trailing_dot(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  return host;
}

bool in_v4(std::uint32_t a, std::uint32_t net, int bits) {
  std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  return (a & mask) == (net & mask);
}

constexpr std::uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (a << 24) | (b << 16) | (c << 8) | d;
}

// The special-use IPv4 ranges that are not the public Internet (RFC 6890 and friends).
std::optional<std::pair<UrlRefusal, std::string_view>> judge_ipv4(std::uint32_t a) {
  struct Range {
    std::uint32_t net;
    int bits;
    UrlRefusal why;
    std::string_view what;
  };
  static const Range kRanges[] = {
      {v4(0, 0, 0, 0), 8, UrlRefusal::unspecified, "an unspecified (this-network) address"},
      {v4(10, 0, 0, 0), 8, UrlRefusal::private_network, "a private (RFC 1918) address"},
      {v4(100, 64, 0, 0), 10, UrlRefusal::shared_address,
       "a carrier-grade NAT (100.64/10) address"},
      {v4(127, 0, 0, 0), 8, UrlRefusal::loopback, "a loopback address"},
      {v4(169, 254, 169, 254), 32, UrlRefusal::link_local, "the cloud metadata address"},
      {v4(169, 254, 0, 0), 16, UrlRefusal::link_local, "a link-local address"},
      {v4(172, 16, 0, 0), 12, UrlRefusal::private_network, "a private (RFC 1918) address"},
      {v4(192, 0, 0, 0), 24, UrlRefusal::reserved, "a reserved (IETF protocol) address"},
      {v4(192, 0, 2, 0), 24, UrlRefusal::reserved, "a documentation address"},
      {v4(192, 88, 99, 0), 24, UrlRefusal::reserved, "a reserved (6to4 relay) address"},
      {v4(192, 168, 0, 0), 16, UrlRefusal::private_network, "a private (RFC 1918) address"},
      {v4(198, 18, 0, 0), 15, UrlRefusal::reserved, "a reserved (benchmarking) address"},
      {v4(198, 51, 100, 0), 24, UrlRefusal::reserved, "a documentation address"},
      {v4(203, 0, 113, 0), 24, UrlRefusal::reserved, "a documentation address"},
      {v4(224, 0, 0, 0), 4, UrlRefusal::multicast, "a multicast address"},
      {v4(255, 255, 255, 255), 32, UrlRefusal::broadcast, "the broadcast address"},
      {v4(240, 0, 0, 0), 4, UrlRefusal::reserved, "a reserved (240/4) address"},
  };
  for (const Range& r : kRanges) {
    if (in_v4(a, r.net, r.bits)) return std::make_pair(r.why, r.what);
  }
  return std::nullopt;
}

std::uint32_t low_v4(const std::array<std::uint16_t, 8>& a) {
  return (std::uint32_t{a[6]} << 16) | a[7];
}

// IPv6: refuses everything outside global unicast 2000::/3 and, inside it, the documentation,
// Teredo and ORCHID blocks; forms that carry an IPv4 address (mapped, compatible, SIIT, NAT64,
// 6to4) are judged by that address.
std::optional<std::pair<UrlRefusal, std::string>> judge_ipv6(
    const std::array<std::uint16_t, 8>& a) {
  auto zero_until = [&](int n) {
    for (int i = 0; i < n; ++i)
      if (a[i] != 0) return false;
    return true;
  };
  auto embedded = [&](std::uint32_t ip,
                      std::string_view form) -> std::optional<std::pair<UrlRefusal, std::string>> {
    if (auto bad = judge_ipv4(ip)) {
      return std::make_pair(bad->first, std::string(bad->second) + " (" + serialize_ipv4(ip) +
                                            ", " + std::string(form) + ")");
    }
    return std::nullopt;
  };
  if (zero_until(8)) return std::make_pair(UrlRefusal::unspecified, "the unspecified address");
  if (zero_until(7) && a[7] == 1) return std::make_pair(UrlRefusal::loopback, "a loopback address");
  if (zero_until(5) && a[5] == 0xffff) return embedded(low_v4(a), "IPv4-mapped");
  if (zero_until(4) && a[4] == 0xffff && a[5] == 0) return embedded(low_v4(a), "IPv4-translated");
  if (zero_until(6)) return embedded(low_v4(a), "IPv4-compatible");
  if (a[0] == 0x64 && a[1] == 0xff9b && a[2] == 0 && a[3] == 0 && a[4] == 0 && a[5] == 0) {
    return embedded(low_v4(a), "NAT64");
  }
  if (a[0] == 0x2002) {
    return embedded((std::uint32_t{a[1]} << 16) | a[2], "6to4");
  }
  if ((a[0] & 0xfe00) == 0xfc00)
    return std::make_pair(UrlRefusal::unique_local, "a unique local address");
  if ((a[0] & 0xffc0) == 0xfe80)
    return std::make_pair(UrlRefusal::link_local, "a link-local address");
  if ((a[0] & 0xff00) == 0xff00)
    return std::make_pair(UrlRefusal::multicast, "a multicast address");
  if ((a[0] & 0xe000) != 0x2000) {
    return std::make_pair(UrlRefusal::reserved, "not a global unicast address");
  }
  if (a[0] == 0x2001 && a[1] == 0x0db8) {
    return std::make_pair(UrlRefusal::reserved, "a documentation address");
  }
  if (a[0] == 0x2001 && a[1] == 0) {
    return std::make_pair(UrlRefusal::reserved, "a Teredo tunnel address");
  }
  if (a[0] == 0x2001 && (a[1] & 0xfff0) == 0x0010) {
    return std::make_pair(UrlRefusal::reserved, "a reserved (ORCHID) address");
  }
  if (a[0] == 0x2001 && (a[1] & 0xfff0) == 0x0020) {
    return std::make_pair(UrlRefusal::reserved, "a reserved (ORCHIDv2) address");
  }
  return std::nullopt;
}

bool is_local_dev_host(std::string_view host) {
  return host == "127.0.0.1" || host == "localhost" || host == "[::1]";
}

}  // namespace

std::string_view url_refusal_name(UrlRefusal r) {
  switch (r) {
    case UrlRefusal::invalid_url:
      return "invalid_url";
    case UrlRefusal::scheme:
      return "scheme";
    case UrlRefusal::insecure:
      return "insecure";
    case UrlRefusal::userinfo:
      return "userinfo";
    case UrlRefusal::non_ascii_host:
      return "non_ascii_host";
    case UrlRefusal::localhost:
      return "localhost";
    case UrlRefusal::loopback:
      return "loopback";
    case UrlRefusal::private_network:
      return "private_network";
    case UrlRefusal::shared_address:
      return "shared_address";
    case UrlRefusal::link_local:
      return "link_local";
    case UrlRefusal::unique_local:
      return "unique_local";
    case UrlRefusal::multicast:
      return "multicast";
    case UrlRefusal::unspecified:
      return "unspecified";
    case UrlRefusal::broadcast:
      return "broadcast";
    case UrlRefusal::reserved:
      return "reserved";
  }
  return "invalid_url";
}

namespace {
// A path's "." and ".." segments resolved as the URL standard's path parser resolves them (a ".."
// takes the segment before it away; "%2e" is a dot, in either case): the path judged, stored and
// fetched is the one any client would fetch — `/services/../../x` is `/x`, so a base it is put
// under (SLACK_API_URL) cannot be left by it.
bool is_dot_segment(std::string_view seg, int dots) {
  int seen = 0;
  for (std::size_t i = 0; i < seg.size(); ++seen) {
    if (seg[i] == '.') {
      ++i;
    } else if (seg.size() - i >= 3 && seg[i] == '%' && seg[i + 1] == '2' &&
               (seg[i + 2] == 'e' || seg[i + 2] == 'E')) {
      i += 3;
    } else {
      return false;
    }
  }
  return seen == dots;
}

std::string without_dot_segments(std::string_view path) {
  std::vector<std::string_view> kept;
  std::string_view rest = path.substr(1);  // after the leading '/'
  for (;;) {
    const std::size_t slash = rest.find('/');
    const std::string_view seg = rest.substr(0, slash);
    const bool last = slash == std::string_view::npos;
    if (is_dot_segment(seg, 2)) {
      if (!kept.empty()) kept.pop_back();
      if (last) kept.emplace_back();
    } else if (is_dot_segment(seg, 1)) {
      if (last) kept.emplace_back();
    } else {
      kept.push_back(seg);
    }
    if (last) break;
    rest = rest.substr(slash + 1);
  }
  std::string out;
  for (std::string_view seg : kept) out.append("/").append(seg);
  return out.empty() ? "/" : out;
}
}  // namespace

Result<ParsedHttpUrl> parse_http_url(std::string_view url) {
  if (url.size() > kMaxOutboundUrlLength) {
    return invalid("the URL is longer than " + std::to_string(kMaxOutboundUrlLength) +
                   " characters");
  }
  // The standard strips leading/trailing C0 controls and spaces and removes tabs and newlines
  // anywhere; such a URL is refused here instead, so what is stored is what is judged.
  for (char c : url) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return invalid("the URL contains a space or a control character");
  }
  // Scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":".
  std::size_t colon = url.find(':');
  if (url.empty() || !is_alpha(url[0]) || colon == std::string_view::npos) {
    return invalid("not an absolute URL");
  }
  std::string scheme;
  for (std::size_t i = 0; i < colon; ++i) {
    char c = url[i];
    if (!is_alpha(c) && !is_ascii_digit(c) && c != '+' && c != '-' && c != '.') {
      return invalid("not an absolute URL");
    }
    scheme.push_back(ascii_lower(c));
  }
  if (scheme != "http" && scheme != "https") {
    return refuse(UrlRefusal::scheme, "only http:// and https:// URLs are allowed");
  }
  ParsedHttpUrl out;
  out.scheme = scheme;
  // Special schemes: any run of '/' and '\' before the authority is ignored ("http:\\x" is x).
  std::size_t p = colon + 1;
  while (p < url.size() && (url[p] == '/' || url[p] == '\\')) ++p;
  std::size_t end = url.find_first_of("/\\?#", p);
  if (end == std::string_view::npos) end = url.size();
  std::string_view authority = url.substr(p, end - p);
  // The last '@' ends the userinfo (earlier ones belong to it).
  if (std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    out.has_userinfo = true;
    authority.remove_prefix(at + 1);
  }
  // Host, then an optional port: the first ':' outside brackets.
  std::size_t port_colon = std::string_view::npos;
  bool in_brackets = false;
  for (std::size_t i = 0; i < authority.size(); ++i) {
    if (authority[i] == '[') in_brackets = true;
    if (authority[i] == ']') in_brackets = false;
    if (authority[i] == ':' && !in_brackets) {
      port_colon = i;
      break;
    }
  }
  std::string_view host = authority.substr(0, port_colon);
  if (Status h = parse_host(host, out); !h) return std::move(h).error();
  if (port_colon != std::string_view::npos) {
    std::string_view port = authority.substr(port_colon + 1);
    static constexpr long kMaxPort = 65535;
    long value = 0;
    for (char c : port) {
      if (!is_ascii_digit(c)) return invalid("the port is not a number");
      value = value * 10 + (c - '0');
      if (value > kMaxPort) return invalid("the port is larger than 65535");
    }
    int default_port = scheme == "https" ? 443 : 80;
    if (!port.empty() && value != default_port) out.port = static_cast<int>(value);
  }
  // Path and query: '\' is '/' in a special URL's path; the fragment never goes on the wire.
  std::string_view tail = url.substr(end);
  if (std::size_t hash = tail.find('#'); hash != std::string_view::npos)
    tail = tail.substr(0, hash);
  std::size_t query = tail.find('?');
  std::string path(tail.substr(0, query));
  for (char& c : path) {
    if (c == '\\') c = '/';
  }
  if (path.empty()) path = "/";
  out.rest = without_dot_segments(path);
  if (query != std::string_view::npos) out.rest += tail.substr(query);
  // Non-ASCII in the path or query is sent percent-encoded (UTF-8), as the standard does, and so are
  // the standard's path (`"<>` plus `` ` ``, `{`, `}`) and special-query (`"<>'`) percent-encode sets.
  std::string encoded;
  bool in_query = false;
  for (char c : out.rest) {
    auto u = static_cast<unsigned char>(c);
    in_query = in_query || c == '?';
    const bool both = c == '"' || c == '<' || c == '>';
    const bool set = both || (in_query ? c == '\'' : (c == '`' || c == '{' || c == '}'));
    if (u >= 0x80 || set) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      encoded += '%';
      encoded += kHex[u >> 4];
      encoded += kHex[u & 0xf];
    } else {
      encoded += c;
    }
  }
  out.rest = std::move(encoded);
  // The limit holds for what is stored and sent, not only for what was written.
  const std::size_t port_length = out.port ? 1 + std::to_string(*out.port).size() : 0;
  if (out.scheme.size() + 3 + out.host.size() + port_length + out.rest.size() >
      kMaxOutboundUrlLength) {
    return invalid("the URL is longer than " + std::to_string(kMaxOutboundUrlLength) +
                   " characters once percent-encoded");
  }
  return out;
}

Result<OutboundUrl> check_outbound_url(std::string_view url, bool allow_local) {
  auto parsed = parse_http_url(url);
  if (!parsed) return std::move(parsed).error();
  const ParsedHttpUrl& u = *parsed;
  // Refused whatever the host: a userinfo is how "http://127.0.0.1:80@evil.example/" fools a
  // prefix check, and no platform call needs credentials in the URL.
  if (u.has_userinfo) {
    return refuse(UrlRefusal::userinfo, "the URL must not contain a user name or password (@)");
  }
  OutboundUrl ok;
  ok.scheme = u.scheme;
  ok.host = u.host;
  ok.port = u.port.value_or(u.scheme == "https" ? 443 : 80);
  ok.href = u.scheme + "://" + u.host + (u.port ? ":" + std::to_string(*u.port) : "") + u.rest;
  if (allow_local && is_local_dev_host(u.host)) return ok;
  const std::string which = "the host " + u.host + " is ";
  switch (u.host_kind) {
    case ParsedHttpUrl::HostKind::domain: {
      std::string_view name = strip_one_trailing_dot(u.host);
      static constexpr std::string_view kLocalhost = "localhost";
      static constexpr std::string_view kDotLocalhost = ".localhost";
      if (name == kLocalhost ||
          (name.size() > kDotLocalhost.size() &&
           name.substr(name.size() - kDotLocalhost.size()) == kDotLocalhost)) {
        return refuse(UrlRefusal::localhost, which + "a localhost name");
      }
      break;
    }
    case ParsedHttpUrl::HostKind::ipv4:
      if (auto bad = judge_ipv4(u.ipv4))
        return refuse(bad->first, which + std::string(bad->second));
      break;
    case ParsedHttpUrl::HostKind::ipv6:
      if (auto bad = judge_ipv6(u.ipv6)) return refuse(bad->first, which + bad->second);
      break;
  }
  if (u.scheme != "https") {
    return refuse(UrlRefusal::insecure, "the URL must use https://");
  }
  return ok;
}

std::string refusal_reason(const Error& e) {
  if (!e.extra.is_object()) return "";
  auto it = e.extra.find("reason");
  return it != e.extra.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string webhook_url_problem(const Error& refusal) {
  std::string why = "must be a public https:// URL";
  if (refusal_reason(refusal) != "scheme") why += ": " + refusal.message;
  return why;
}

}  // namespace ss
