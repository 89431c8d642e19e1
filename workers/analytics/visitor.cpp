#include "workers/analytics/visitor.h"

#include "shared/bytes.h"
#include "shared/effects.h"
#include "shared/rfc3339.h"

#include <cstdio>

namespace ss::analytics {

std::string utc_day(std::int64_t unix_ms, int offset_days) {
  std::int64_t days = unix_ms >= 0 ? unix_ms / kMsPerDay : (unix_ms - kMsPerDay + 1) / kMsPerDay;
  CivilDate d = civil_from_days(days + offset_days);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", d.year, d.month, d.day);
  return buf;
}

namespace {
Task<Result<std::string>> draw_salt(Context& ctx, const AnalyticsStore& store,
                                    const std::string& day) {
  SS_CO_TRY(std::optional<std::string> existing, co_await store.find_salt(day));
  if (existing) co_return *existing;
  SS_CO_TRY(std::string bytes, co_await ctx.random_bytes(kSaltBytes));
  SS_CO_CHECK(co_await store.create_salt(day, hex_encode(bytes), format_rfc3339(ctx.now_ms())));
  // Another isolate may have won the race: read back what is stored.
  SS_CO_TRY(std::optional<std::string> stored, co_await store.find_salt(day));
  if (!stored) co_return Error{ErrorCode::internal, "draw_salt(): the salt was not stored"};
  co_return *stored;
}
}  // namespace

Task<Result<std::string>> SaltCache::salt_for(Context& ctx, const AnalyticsStore& store,
                                              const std::string& day) {
  if (std::optional<std::string> held = cached(day)) co_return std::move(*held);
  SS_CO_TRY(std::optional<std::string> found, co_await store.find_salt(day));
  std::string salt;
  if (found) {
    salt = *found;
  } else {
    ctx.log("salt for " + day + " missing (cron not run yet): drawing it now");
    SS_CO_TRY(std::string drawn, co_await draw_salt(ctx, store, day));
    salt = std::move(drawn);
  }
  day_ = day;
  salt_hex_ = salt;
  co_return salt;
}

Task<Result<std::string>> visitor_hash(const std::string& salt_hex, const std::string& tenant,
                                       const std::string& ip, const std::string& user_agent) {
  // '\n' cannot occur in a header value, so the fields cannot run into each other.
  std::string input = salt_hex + "\n" + tenant + "\n" + ip + "\n" + user_agent;
  SS_CO_TRY(std::string hex, co_await sha256_hex(std::move(input)));
  co_return hex.substr(0, kVisitorHashHexDigits);
}

Task<Status> rotate_salts(Context& ctx, const AnalyticsStore& store, std::int64_t now) {
  // Deleting first, and whatever drawing does: a D1 that refuses writes (a full database) must
  // not keep an expired salt. Yesterday's salt stays until today ends: its day began less than 48
  // hours ago.
  Result<std::int64_t> deleted = co_await store.delete_salts_before(utc_day(now, -1));
  if (deleted && *deleted > 0) ctx.log("deleted " + std::to_string(*deleted) + " expired salt(s)");
  if (!deleted) ctx.log("analytics: deleting expired salts failed: " + deleted.error().message);
  SS_CO_TRY(std::string today, co_await draw_salt(ctx, store, utc_day(now)));
  SS_CO_TRY(std::string tomorrow, co_await draw_salt(ctx, store, utc_day(now, 1)));
  if (!deleted) co_return std::move(deleted).error();
  co_return Unit{};
}

}  // namespace ss::analytics
