#pragma once
// The network a submission's rate-limit window is keyed by. One IPv6 subscriber usually gets a
// whole /64 (and can pick any address in it), so keying full IPv6 addresses would give one client
// unlimited windows; IPv4 addresses are scarce enough to key one by one.

#include <string>
#include <string_view>

namespace ss::leads {

// The window subject for a client IP (the CF-Connecting-IP header):
//   IPv4 a.b.c.d                    → "ip4:a.b.c.d"            (the /32)
//   IPv6 (any spelling)             → "ip6:xxxx:xxxx:xxxx:xxxx::/64" (its /64, lower-case hex)
//   IPv4-mapped IPv6 ::ffff:a.b.c.d → "ip4:a.b.c.d"            (it is an IPv4 client)
//   empty or not an IP address      → kNoClientIp
// Requests without a usable IP share one window per tenant: a caller that strips or garbles the
// header must not get a fresh window per request.
inline constexpr std::string_view kNoClientIp = "no-client-ip";
std::string rate_limit_subject(std::string_view client_ip);

}  // namespace ss::leads
