#pragma once
// The tracker script served as GET /script.js: tracker.js minified into tracker.gen.cpp by
// scripts/gen-analytics.mjs (a build step whose output is committed, so the C++ build needs no
// Node).

#include <string_view>

namespace ss::analytics {

extern const std::string_view kTrackerSource;
extern const std::string_view kTrackerVersion;       // 12 hex digits of SHA-256(kTrackerSource)
extern const std::string_view kTrackerSourceSha256;  // SHA-256 of tracker.js when generated

}  // namespace ss::analytics
