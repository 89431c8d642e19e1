#include "workers/analytics/intake.h"

#include "shared/app.h"
#include "shared/effects.h"
#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/text.h"
#include "workers/analytics/beacon.h"
#include "workers/analytics/rollup.h"
#include "workers/analytics/tracker.h"
#include "workers/analytics/user_agent.h"

namespace ss::analytics {

namespace {

constexpr std::string_view kImmutableCache = "public, max-age=31536000, immutable";
constexpr std::string_view kShortCache = "public, max-age=3600";  // the unversioned URL
constexpr std::size_t kMaxCfValue = 16;

// If-None-Match names the tracker's ETag (RFC 9110 §13.1.2: `*` or a list of entity-tags, compared
// weakly): a browser echoes W/"<version>" when Cloudflare's edge weakened the ETag as it compressed
// the script, and that must still be a 304.
bool none_match(std::string_view header, std::string_view version) {
  while (!header.empty()) {
    std::size_t comma = header.find(',');
    std::string_view tag = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag == "*") return true;
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag.size() == version.size() + 2 && tag.front() == '"' && tag.back() == '"' &&
        tag.substr(1, version.size()) == version) {
      return true;
    }
  }
  return false;
}

Task<Result<Response>> get_script(Context& ctx, const Request& req, const Params&) {
  Response r = Response::text(200, std::string(kTrackerSource), "text/javascript; charset=utf-8");
  // ?v=<version> is the long-cacheable URL: its content never changes. The bare URL (what a page
  // that does not pin a version loads) is cached for an hour so a new tracker spreads quickly.
  bool pinned = req.query_param("v") == kTrackerVersion;
  r.set_header("cache-control", std::string(pinned ? kImmutableCache : kShortCache));
  r.set_header("etag", "\"" + std::string(kTrackerVersion) + "\"");
  r.set_header("x-tracker-version", std::string(kTrackerVersion));
  r.set_header("x-content-type-options", "nosniff");
  if (none_match(req.header("if-none-match"), kTrackerVersion)) {
    Response not_modified = Response::empty(304);
    for (auto& h : r.headers) {
      if (h.first != "content-type") not_modified.set_header(h.first, h.second);
    }
    co_return not_modified;
  }
  co_return r;
}

std::string cf_text(const json& cf, std::string_view key) {
  std::optional<std::string> v = get_string(cf, key);
  if (!v || v->empty()) return std::string(kUnknown);
  if (v->size() > kMaxCfValue) v->resize(kMaxCfValue);
  return *v;
}

std::vector<std::string> site_hosts(const json& config) {
  std::vector<std::string> hosts;
  const json* list = find_field(config, "hosts");
  if (!list) list = find_field(config, "siteHosts");  // the same list by its other name (app.cpp)
  if (list && list->is_array()) {
    for (const json& h : *list) {
      if (h.is_string()) hosts.push_back(site_host(h.get_ref<const std::string&>()));
    }
  }
  return hosts;
}

bool opted_out(const Request& req) {
  return req.header("dnt") == "1" || req.header("sec-gpc") == "1";
}

// The Analytics Engine point of one hit (schema in docs/analytics.md):
//   indexes [tenant]
//   blobs   [kind, path, referrer, utm_source, utm_medium, utm_campaign, country, colo, device,
//            browser, bot_reason]
//   doubles [1 (sample count), viewport width (0 unknown), 1 if a visitor hash was made else 0]
EffectOf<Unit> write_point(const Hit& hit, std::string_view bot_reason, std::int64_t width) {
  auto dim = [&](const char* name) {
    auto it = hit.dims.find(name);
    return it == hit.dims.end() ? std::string() : it->second;
  };
  json blobs =
      json::array({hit.filtered ? "filtered" : "pageview", dim("path"), dim("referrer"),
                   dim("utm_source"), dim("utm_medium"), dim("utm_campaign"), dim("country"),
                   dim("colo"), dim("device"), dim("browser"), std::string(bot_reason)});
  json doubles = json::array({1, width, hit.visitor.empty() ? 0 : 1});
  json indexes = json::array({hit.tenant});
  return analytics_write(std::string(kPageviewsDataset), std::move(blobs), std::move(doubles),
                         std::move(indexes));
}

Task<Result<Response>> post_beacon(Context& ctx, const Request& req, const Params&,
                                   std::shared_ptr<InstanceState> state) {
  apply_test_clock(ctx, req);
  // The day is fixed when the beacon arrives (the host moves ctx's clock after every effect).
  const std::int64_t now = ctx.now_ms();
  // 413 before anything is parsed or read.
  SS_CO_CHECK(require_body_within(req, kMaxBeaconBytes));
  const std::string user_agent = req.header("user-agent");
  const UserAgentClass ua = classify_user_agent(user_agent);
  const std::string day = utc_day(now);
  const bool hashed = !ua.bot() && !opted_out(req);

  // The visitor hash needs the tenant's id, not its row: when this instance holds today's salt
  // (every beacon but its first of the day), the hash is made while the tenant is authenticated —
  // both effects in one round trip through the host instead of two after each other. The claimed
  // id is the one authentication confirms (or the beacon ends with 401 and the hash is dropped).
  // Without a cached salt the hash waits for authentication as before, so an unauthenticated
  // request never makes the instance read (or draw) a salt.
  std::optional<std::string> early_salt = hashed ? state->salts.cached(day) : std::nullopt;
  Tenant tenant;
  std::string visitor;
  if (early_salt) {
    const std::string claimed_id = req.header("x-siteswarm-tenant-id");
    const std::string ip = req.client_ip();
    auto [authed, hash] = co_await when_all(authenticate_tenant(ctx, req),
                                            visitor_hash(*early_salt, claimed_id, ip, user_agent));
    if (!authed) co_return std::move(authed).error();
    if (!hash) co_return std::move(hash).error();
    tenant = std::move(*authed);
    visitor = std::move(*hash);
  } else {
    SS_CO_TRY(Tenant authed, co_await authenticate_tenant(ctx, req));
    tenant = std::move(authed);
  }
  // No Content-Type at all is accepted; one that is present must parse as one of the two (a
  // malformed header is not "none": media_type_of() gives "" for both).
  std::string media = media_type_of(req);
  const bool typed = !req.header("content-type").empty();
  if (typed && media != "text/plain" && media != "application/json") {
    co_return invalid_field("Content-Type", "must be text/plain or application/json",
                            ErrorCode::unsupported_media_type);
  }
  SS_CO_CHECK(require_identity_coding(req));  // 415 too: a compressed body, as every write's
  SS_CO_TRY(Beacon beacon, parse_beacon(req.body));

  Hit hit;
  hit.tenant = tenant.id;
  hit.day = day;
  if (ua.bot()) {
    hit.filtered = true;
  } else {
    PageDimensions page = page_dimensions(beacon, site_hosts(tenant.config));
    hit.dims = {{"path", page.path},
                {"referrer", page.referrer},
                {"country", cf_text(req.cf, "country")},
                {"colo", cf_text(req.cf, "colo")},
                {"device", std::string(ua.device)},
                {"browser", std::string(ua.browser)}};
    if (!page.utm_source.empty()) hit.dims["utm_source"] = page.utm_source;
    if (!page.utm_medium.empty()) hit.dims["utm_medium"] = page.utm_medium;
    if (!page.utm_campaign.empty()) hit.dims["utm_campaign"] = page.utm_campaign;
    if (hashed && !early_salt) {
      AnalyticsStore store{std::string(kAnalyticsDb)};
      SS_CO_TRY(std::string salt, co_await state->salts.salt_for(ctx, store, hit.day));
      const std::string ip = req.client_ip();
      SS_CO_TRY(visitor, co_await visitor_hash(salt, tenant.id, ip, user_agent));
    }
    hit.visitor = std::move(visitor);
  }
  Response accepted = Response::empty(202);
  accepted.set_header("cache-control", "no-store");
  // When both succeed the answer is `accepted` and nothing else happens: the host may answer with
  // it as they come back, without a crossing back into the core (docs/abi.md "Answers known in
  // advance").
  expect_answer(ctx, accepted);
  auto [written, queued] =
      co_await when_all(write_point(hit, ua.bot_reason, beacon.width.value_or(0)),
                        queue_send(std::string(kPageviewsQueue), hit.to_message()));
  // Analytics Engine is best effort (like the binding itself); the queue feeds the D1 rollups
  // that /v1/stats reads, so losing it is an error the caller sees.
  if (!written) ctx.log("beacon: Analytics Engine write failed: " + written.error().message);
  if (!queued) co_return std::move(queued).error();
  co_return accepted;
}

}  // namespace

void apply_test_clock(Context& ctx, const Request& req) {
  if (!ctx.test_hooks_enabled()) return;
  std::string at = req.header("x-siteswarm-test-now");
  if (auto ms = parse_decimal(at, 0, kMaxRfc3339Ms)) ctx.set_now_ms(*ms);
}

void add_intake_routes(App& app, std::shared_ptr<InstanceState> state) {
  app.router.add("GET", "/script.js", get_script)
      .add("POST", "/beacon", [state](Context& ctx, const Request& req, const Params& p) {
        return post_beacon(ctx, req, p, state);
      });
}

}  // namespace ss::analytics
