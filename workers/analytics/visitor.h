#pragma once
// Unique visitors without cookies: a visitor is hash(daily salt, tenant, client IP, user agent).
//
// The salt is 32 random bytes per UTC day (from the host's entropy), drawn by the hourly cron for
// today and tomorrow so that the first beacon after 00:00 UTC already finds the new one, and
// deleted once its day is two days old — 48 hours after it came into use. Once a salt is gone,
// nobody (including us) can recompute a visitor hash from an IP and user agent, so the hashes left
// in the rollups are anonymous. The IP and user agent themselves are never stored or sent anywhere.

#include "shared/runtime.h"
#include "workers/analytics/store.h"

#include <cstdint>
#include <optional>
#include <string>

namespace ss::analytics {

inline constexpr std::size_t kSaltBytes = 32;
inline constexpr std::size_t kVisitorHashHexDigits = 16;  // 64 bits: collisions ~1 in 4e9 pairs

// "YYYY-MM-DD" of a UTC instant, and the day `offset` days later.
std::string utc_day(std::int64_t unix_ms, int offset_days = 0);

// Today's salt, cached per instance for the rest of the day (one D1 read per isolate per day). When
// the cron has not drawn it yet (a fresh deployment), it is drawn here once, first writer wins.
class SaltCache {
 public:
  Task<Result<std::string>> salt_for(Context& ctx, const AnalyticsStore& store,
                                     const std::string& day);
  // The salt of `day` if this instance already holds it (no effect), else nullopt.
  std::optional<std::string> cached(const std::string& day) const {
    if (day_ == day && !salt_hex_.empty()) return salt_hex_;
    return std::nullopt;
  }

 private:
  std::string day_;
  std::string salt_hex_;
};

// 16 hex digits of SHA-256(salt | tenant | ip | user agent), through the crypto effect.
Task<Result<std::string>> visitor_hash(const std::string& salt_hex, const std::string& tenant,
                                       const std::string& ip, const std::string& user_agent);

// The hourly cron's salt work: draw today's and tomorrow's salts if missing, delete salts of days
// before yesterday.
Task<Status> rotate_salts(Context& ctx, const AnalyticsStore& store, std::int64_t now_ms);

}  // namespace ss::analytics
