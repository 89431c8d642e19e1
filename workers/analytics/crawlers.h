#pragma once
// The crawler list compiled into the core (crawlers.gen.cpp, written by scripts/gen-analytics.mjs
// from the npm package crawler-user-agents): rules of literals, matched by user_agent.cpp.

#include <string_view>
#include <vector>

namespace ss::analytics {

extern const std::string_view kCrawlerListVersion;  // "crawler-user-agents@<version>"
// Each rule: parts joined by '\x1f'; a part is an anchor ('*', '^', '$') then a lower-case literal.
const std::vector<std::string_view>& crawler_rules();

}  // namespace ss::analytics
