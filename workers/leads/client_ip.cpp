#include "workers/leads/client_ip.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace ss::leads {

namespace {

// Strict dotted-quad: four decimal parts 0..255, no leading zeros (CF-Connecting-IP's spelling).
std::optional<std::array<std::uint8_t, 4>> parse_ipv4(std::string_view s) {
  std::array<std::uint8_t, 4> out{};
  std::size_t part = 0;
  std::size_t i = 0;
  while (part < 4) {
    std::size_t start = i;
    unsigned value = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 3) {
      value = value * 10 + static_cast<unsigned>(s[i] - '0');
      ++i;
    }
    std::size_t digits = i - start;
    if (digits == 0 || value > 255 || (digits > 1 && s[start] == '0')) return std::nullopt;
    out[part++] = static_cast<std::uint8_t>(value);
    if (part < 4) {
      if (i >= s.size() || s[i] != '.') return std::nullopt;
      ++i;
    }
  }
  if (i != s.size()) return std::nullopt;
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 4291 text forms: eight groups, one "::", an optional dotted IPv4 tail; a zone (%eth0) is
// ignored.
std::optional<std::array<std::uint8_t, 16>> parse_ipv6(std::string_view s) {
  if (auto zone = s.find('%'); zone != std::string_view::npos) s = s.substr(0, zone);
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  std::vector<std::uint16_t> head;
  std::vector<std::uint16_t> tail;
  bool compressed = false;
  std::size_t i = 0;
  if (s.substr(0, 2) == "::") {
    compressed = true;
    i = 2;
  } else if (!s.empty() && s[0] == ':') {
    return std::nullopt;
  }
  while (i < s.size()) {
    std::vector<std::uint16_t>& groups = compressed ? tail : head;
    std::size_t end = s.find(':', i);
    std::string_view group = s.substr(i, end == std::string_view::npos ? s.npos : end - i);
    if (group.find('.') != std::string_view::npos) {  // the IPv4 tail: last, two groups
      if (end != std::string_view::npos) return std::nullopt;
      auto v4 = parse_ipv4(group);
      if (!v4) return std::nullopt;
      groups.push_back(static_cast<std::uint16_t>(((*v4)[0] << 8) | (*v4)[1]));
      groups.push_back(static_cast<std::uint16_t>(((*v4)[2] << 8) | (*v4)[3]));
      i = s.size();
      break;
    }
    if (group.empty() || group.size() > 4) return std::nullopt;
    unsigned value = 0;
    for (char c : group) {
      int h = hex_value(c);
      if (h < 0) return std::nullopt;
      value = value * 16 + static_cast<unsigned>(h);
    }
    groups.push_back(static_cast<std::uint16_t>(value));
    if (end == std::string_view::npos) {
      i = s.size();
      break;
    }
    i = end + 1;
    if (i < s.size() && s[i] == ':') {  // "::"
      if (compressed) return std::nullopt;
      compressed = true;
      ++i;
    } else if (i == s.size()) {
      return std::nullopt;  // a trailing single ':'
    }
  }
  std::size_t total = head.size() + tail.size();
  if (compressed ? total > 7 : total != 8) return std::nullopt;
  std::array<std::uint16_t, 8> words{};
  for (std::size_t k = 0; k < head.size(); ++k) words[k] = head[k];
  for (std::size_t k = 0; k < tail.size(); ++k) words[8 - tail.size() + k] = tail[k];
  std::array<std::uint8_t, 16> out{};
  for (std::size_t k = 0; k < 8; ++k) {
    out[2 * k] = static_cast<std::uint8_t>(words[k] >> 8);
    out[2 * k + 1] = static_cast<std::uint8_t>(words[k] & 0xFF);
  }
  return out;
}

std::string ipv4_subject(const std::uint8_t* b) {
  return "ip4:" + std::to_string(b[0]) + "." + std::to_string(b[1]) + "." + std::to_string(b[2]) +
         "." + std::to_string(b[3]);
}

}  // namespace

std::string rate_limit_subject(std::string_view client_ip) {
  if (auto v4 = parse_ipv4(client_ip)) return ipv4_subject(v4->data());
  auto v6 = parse_ipv6(client_ip);
  if (!v6) return std::string(kNoClientIp);
  const std::array<std::uint8_t, 16>& b = *v6;
  bool mapped = true;  // ::ffff:a.b.c.d
  for (std::size_t k = 0; k < 10; ++k) mapped = mapped && b[k] == 0;
  if (mapped && b[10] == 0xFF && b[11] == 0xFF) return ipv4_subject(b.data() + 12);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "ip6:";
  for (std::size_t k = 0; k < 8; k += 2) {
    if (k > 0) out += ':';
    for (std::size_t j = k; j < k + 2; ++j) {
      out += kHex[b[j] >> 4];
      out += kHex[b[j] & 0xF];
    }
  }
  return out + "::/64";
}

}  // namespace ss::leads
