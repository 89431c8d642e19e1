#include "workers/leads/client_ip.h"

#include <doctest/doctest.h>

using ss::leads::kNoClientIp;
using ss::leads::rate_limit_subject;

TEST_CASE("rate-limit subjects: IPv4 by /32, IPv6 by /64, no IP deliberately shared") {
  CHECK(rate_limit_subject("203.0.113.7") == "ip4:203.0.113.7");
  CHECK(rate_limit_subject("203.0.113.8") == "ip4:203.0.113.8");
  // Every spelling of one /64 is one subject; the interface half does not matter.
  std::string net = "ip6:2001:0db8:0000:0001::/64";
  CHECK(rate_limit_subject("2001:db8:0:1::1") == net);
  CHECK(rate_limit_subject("2001:db8:0:1:ffff:ffff:ffff:ffff") == net);
  CHECK(rate_limit_subject("2001:DB8:0000:0001:0:0:0:9") == net);
  CHECK(rate_limit_subject("2001:db8:0:1:abcd::") == net);
  CHECK(rate_limit_subject("[2001:db8:0:1::2]") == net);
  CHECK(rate_limit_subject("2001:db8:0:1::2%eth0") == net);
  CHECK(rate_limit_subject("2001:db8:0:1::1.2.3.4") == net);
  CHECK(rate_limit_subject("2001:db8:0:2::1") == "ip6:2001:0db8:0000:0002::/64");
  CHECK(rate_limit_subject("::1") == "ip6:0000:0000:0000:0000::/64");
  CHECK(rate_limit_subject("::") == "ip6:0000:0000:0000:0000::/64");
  // An IPv4 client seen through a mapped address is the IPv4 client.
  CHECK(rate_limit_subject("::ffff:203.0.113.7") == "ip4:203.0.113.7");
  CHECK(rate_limit_subject("::ffff:cb00:7107") == "ip4:203.0.113.7");
  for (const char* bad : {"", "unknown", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.4 ",
                          "1::2::3", ":1::", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7",
                          "12345::", "g::1", "1:", "::1.2.3", "1.2.3.4::"}) {
    CAPTURE(bad);
    CHECK(rate_limit_subject(bad) == kNoClientIp);
  }
}
