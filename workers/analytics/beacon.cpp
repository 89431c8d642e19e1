#include "workers/analytics/beacon.h"

#include "shared/field_error.h"
#include "shared/http.h"
#include "shared/json_util.h"
#include "shared/text.h"
#include "shared/url_guard.h"

namespace ss::analytics {

namespace {

// The host as compared with the site's own: without "www." and without a trailing dot
// (shop.example. names the same host as shop.example).
std::string without_www(std::string host) {
  if (!host.empty() && host.back() == '.') host.pop_back();
  if (host.rfind("www.", 0) == 0) host.erase(0, 4);
  return host;
}

Error beacon_field_error(const std::string& field, const std::string& why) {
  Error e{ErrorCode::invalid_request, "beacon: \"" + field + "\" " + why};
  return std::move(name_field(e, field, why));
}

// A control character or a space in a path posted by hand (or in a utm value that does not decode
// to text), percent-encoded as a browser's URL parser writes it (`/nul%00x`): no key of the stats
// or the dashboard holds a raw control.
std::string controls_encoded(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7F) {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}

// A decoded query value, '+' as space, cut to kMaxUtmLength bytes.
std::string query_value(std::string_view raw) {
  std::string spaced(raw);
  for (char& c : spaced) {
    if (c == '+') c = ' ';
  }
  std::string value = percent_decode(spaced);
  // A value that does not decode to text (`%FF`, not UTF-8; `%00` or `%0A`, a control character) is
  // kept as it was sent, its controls percent-encoded: no key of the stats holds a raw control or a
  // byte that would read back as U+FFFD.
  if (!is_utf8(value) || has_control_chars(value, false)) {
    value = controls_encoded(raw);
    if (value.size() > kMaxUtmLength) {
      value = utf8_prefix(value, kMaxUtmLength);
      // Cut before an escape, never through it.
      std::size_t percent = value.rfind('%');
      if (percent != std::string::npos && percent + 3 > value.size()) value.resize(percent);
    }
    return value;
  }
  // Cut before a character, never through it (a decoded campaign name is UTF-8).
  if (value.size() > kMaxUtmLength) value = utf8_prefix(value, kMaxUtmLength);
  return value;
}

}  // namespace

// A referrer's host as a browser sends it: ASCII DNS labels (an internationalised name in its xn--
// form), an IPv4 address, or a bracketed IPv6 literal. Anything else (a space, '<', a percent
// escape, raw UTF-8) is no host a visitor came from, and counts as direct. `host` is lower-case.
bool plausible_host(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    std::string_view inside = host.substr(1, host.size() - 2);
    return inside.find(':') != std::string_view::npos &&
           inside.find_first_not_of("0123456789abcdef:.") == std::string_view::npos;
  }
  return !host.empty() && host.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-_") ==
                              std::string_view::npos;
}

std::optional<UrlParts> split_url(std::string_view url) {
  std::size_t colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  UrlParts parts;
  parts.scheme = ascii_lower(url.substr(0, colon));
  std::string_view rest = url.substr(colon + 3);
  std::size_t authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  rest = authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  if (std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority = authority.substr(at + 1);
  }
  if (!authority.empty() && authority[0] == '[') {  // IPv6 literal
    std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    authority = authority.substr(0, close + 1);
  } else if (std::size_t port = authority.find(':'); port != std::string_view::npos) {
    authority = authority.substr(0, port);
  }
  if (authority.empty()) return std::nullopt;
  parts.host = ascii_lower(authority);
  std::size_t fragment = rest.find('#');
  if (fragment != std::string_view::npos) rest = rest.substr(0, fragment);
  std::size_t question = rest.find('?');
  parts.path = std::string(rest.substr(0, question));
  if (question != std::string_view::npos) parts.query = std::string(rest.substr(question + 1));
  if (parts.path.empty()) parts.path = "/";
  return parts;
}

Result<Beacon> parse_beacon(std::string_view body) {
  Result<json> parsed = parse_json_object(body);
  if (!parsed) return std::move(parsed).error();
  const json& j = *parsed;
  Beacon beacon;
  std::optional<std::string> url = get_string(j, "u");
  if (!url) return beacon_field_error("u", "must be the page URL (a string)");
  auto parts = split_url(*url);
  if (!parts || (parts->scheme != "http" && parts->scheme != "https")) {
    return beacon_field_error("u", "must be an absolute http(s) URL");
  }
  beacon.url = std::move(*url);
  beacon.page = std::move(parts);
  if (const json* r = find_field(j, "r"); r && !r->is_null()) {
    if (!r->is_string()) return beacon_field_error("r", "must be a string");
    beacon.referrer = r->get<std::string>();
  }
  if (const json* w = find_field(j, "w"); w && !w->is_null()) {
    std::optional<double> width = get_number(j, "w");
    if (!width || *width < 0 || *width > static_cast<double>(kMaxViewportWidth)) {
      return beacon_field_error("w", "must be a number from 0 to 100000");
    }
    beacon.width = static_cast<std::int64_t>(*width);
  }
  return beacon;
}

std::string host_as_url(std::string_view entry) {
  if (entry.find("://") != std::string_view::npos) return std::string(entry);
  return "http://" + std::string(entry);
}

std::string site_host(const std::string& entry) {
  if (entry.find_first_of(":/") == std::string::npos) return entry;  // a bare name or IPv4
  auto parsed = parse_http_url(host_as_url(entry));
  return parsed ? parsed->host : entry;
}

// A path cut to `max` bytes where a browser's spelling of it allows: the path is percent-encoded
// (`/caf%C3%A9`), so the cut never splits a `%XX` escape nor the escapes of one UTF-8 character
// (`%E3%81` alone decodes to U+FFFD), as utf8_prefix never splits raw UTF-8.
static std::string cut_path(const std::string& path, std::size_t max) {
  std::string out = utf8_prefix(path, max);
  // An escape cut short.
  for (std::size_t back = 1; back <= 2 && back <= out.size(); ++back) {
    if (out[out.size() - back] == '%' && out.size() - back + 3 > out.size()) {
      out.resize(out.size() - back);
      break;
    }
  }
  // The escapes of a character cut short: continuation bytes (0x80–0xBF) back to their lead byte,
  // and fewer of them than the lead announces.
  std::size_t end = out.size();
  std::size_t continuations = 0;
  while (end >= 3 && out[end - 3] == '%' && hex_digit_value(out[end - 2]) >= 0 &&
         hex_digit_value(out[end - 1]) >= 0) {
    int byte = hex_digit_value(out[end - 2]) * 16 + hex_digit_value(out[end - 1]);
    if (byte >= 0x80 && byte <= 0xBF) {
      ++continuations;
      end -= 3;
      continue;
    }
    std::size_t needs = byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : byte >= 0xC0 ? 1 : 0;
    if (needs > continuations) out.resize(end - 3);
    break;
  }
  return out;
}

PageDimensions page_dimensions(const Beacon& beacon, const std::vector<std::string>& own_hosts) {
  PageDimensions d;
  // parse_beacon's split, or (a Beacon made by hand) the URL split here.
  std::optional<UrlParts> split_here;
  if (!beacon.page) split_here = split_url(beacon.url);
  const UrlParts* page = beacon.page ? &*beacon.page : split_here ? &*split_here : nullptr;
  if (page) {
    d.host = page->host;
    d.path = controls_encoded(page->path);
    if (d.path.size() > kMaxPathLength) d.path = cut_path(d.path, kMaxPathLength);
    // Only utm_source/medium/campaign are read from the query; every other parameter (ids, emails,
    // tokens that sites put in URLs) is dropped, and the path is kept without any query.
    std::string_view query = page->query;
    while (!query.empty()) {
      std::size_t amp = query.find('&');
      std::string_view pair = query.substr(0, amp);
      query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
      std::size_t eq = pair.find('=');
      std::string_view name = pair.substr(0, eq);
      std::string_view value =
          eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
      std::string* slot = name == "utm_source"     ? &d.utm_source
                          : name == "utm_medium"   ? &d.utm_medium
                          : name == "utm_campaign" ? &d.utm_campaign
                                                   : nullptr;
      if (slot && slot->empty()) *slot = query_value(value);
    }
  }
  d.referrer = std::string(kDirect);
  if (auto ref = split_url(beacon.referrer);
      ref && !ref->host.empty() && plausible_host(ref->host)) {
    std::string host = without_www(ref->host);
    bool own = host == without_www(d.host);
    for (const std::string& h : own_hosts) own = own || host == without_www(ascii_lower(h));
    if (host.size() > kMaxHostLength) host = utf8_prefix(host, kMaxHostLength);
    if (!own) d.referrer = host;
  }
  return d;
}

}  // namespace ss::analytics
