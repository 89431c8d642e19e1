// GET /v1/content and GET /v1/status: the public read path, also behind Workers RPC.
//
// Reads try, in order: KV (the document every write refreshes), D1, and the fallback replica (the
// isolate's last-known-good copy, else the snapshot bundled into the worker). The tenant's token
// is checked against D1 when D1 answers, else against the token hash stored beside whichever copy
// serves the answer; a tenant no copy can verify gets 503, never someone else's content.
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/tenant_cache.h"
#include "shared/text.h"
#include "workers/cms/schedule.h"
#include "workers/cms/service.h"
#include "workers/cms/store.h"

#include "shared/bytes.h"

#include <map>

namespace ss::cms {

namespace {

constexpr std::size_t kMaxRemembered = 1024;

// The isolate's last-known-good copy per tenant (the fallback replica's first choice), kept as the
// parsed Content. `kv_text` is the KV document it was last read from, when it was: the next read of
// the same bytes reuses the parsed copy instead of parsing and validating the document again.
struct Remembered {
  std::string token_hash;
  Content content;
  std::string kv_text;
};

std::map<std::string, Remembered>& remembered() {
  static std::map<std::string, Remembered> copies;
  return copies;
}

Error unauthenticated(const std::string& why) {
  return Error{ErrorCode::unauthenticated_tenant, "tenant authentication failed: " + why};
}

struct CachedCopy {
  std::string token_hash;
  Content content;
};

std::optional<CachedCopy> read_copy(const json& doc) {
  auto hash = get_string(doc, "tokenHash");
  const json* content = find_field(doc, "content");
  if (!hash || content == nullptr) return std::nullopt;
  auto parsed = content_from_json(*content);
  if (!parsed) return std::nullopt;
  return CachedCopy{*hash, std::move(parsed).value()};
}

std::optional<CachedCopy> remembered_copy(const std::string& tenant_id) {
  auto it = remembered().find(tenant_id);
  if (it == remembered().end()) return std::nullopt;
  return CachedCopy{it->second.token_hash, it->second.content};
}

// The copy in a KV document: the remembered one when the document is byte for byte the one it was
// read from, else parsed (nullopt: not a valid document).
std::optional<CachedCopy> kv_document_copy(const std::string& tenant_id, const std::string& text) {
  auto it = remembered().find(tenant_id);
  if (it != remembered().end() && !it->second.kv_text.empty() && it->second.kv_text == text) {
    return CachedCopy{it->second.token_hash, it->second.content};
  }
  auto doc = parse_json(text);
  if (!doc) return std::nullopt;
  return read_copy(*doc);
}

std::optional<CachedCopy> bundled_copy(const Context& ctx, const std::string& tenant_id) {
  std::string text = ctx.env(kSeedsVar);
  if (text.empty()) return std::nullopt;
  auto seeds = parse_json(text);
  if (!seeds) return std::nullopt;
  const json* seed = find_field(*seeds, tenant_id);
  if (seed == nullptr) return std::nullopt;
  auto hash = get_string(*seed, "tokenHash");
  if (!hash || hash->size() != 64) return std::nullopt;
  const json* snapshot = find_field(*seed, "content");
  std::string zone = string_or(*seed, "timezone", "UTC");
  return CachedCopy{*hash, content_from_seed(tenant_id, snapshot ? *snapshot : json(), zone)};
}

Status check_capability_version(const std::string& version) {
  if (version.empty()) return Unit{};
  std::string_view major = std::string_view(version).substr(0, version.find('.'));
  if (parse_decimal(major, 0, 9999) != kSupportedCapabilityMajor) {
    return Error{ErrorCode::unsupported_capability_version,
                 "capability version " + version.substr(0, 32) +
                     " is not supported; this service " + "speaks " +
                     std::to_string(kSupportedCapabilityMajor) + ".x"};
  }
  return Unit{};
}

struct Served {
  Content content;
  std::string source;
};

struct Lookup {
  Result<std::optional<TenantRow>> row;  // an error: D1 is unreachable
  std::string digest;                    // of the presented token
  Result<std::optional<std::string>> cached;
};

// The tenant row (D1's answer, or this instance's cached copy of it when that copy matches the
// token: shared/tenant_cache.h), the token's digest and the KV document, fetched concurrently.
Task<Result<Lookup>> look_up(Context& ctx, const std::string& id, const std::string& token) {
  if (tenant_cache(ctx).fresh(id, ctx.now_ms()) != nullptr) {
    auto [digest, cached] =
        co_await when_all(sha256_hex(token), Kv(kCacheBinding).get(cache_key(id)));
    if (!digest) co_return std::move(digest).error();
    if (const TenantRow* hit = tenant_cache(ctx).verified(id, ctx.now_ms(), *digest)) {
      std::optional<TenantRow> row = *hit;
      co_return Lookup{std::move(row), std::move(*digest), std::move(cached)};
    }
    auto row = co_await read_tenant(ctx, id);
    co_return Lookup{std::move(row), std::move(*digest), std::move(cached)};
  }
  auto [row, digest, cached] = co_await when_all(read_tenant(ctx, id), sha256_hex(token),
                                                 Kv(kCacheBinding).get(cache_key(id)));
  if (!digest) co_return std::move(digest).error();
  co_return Lookup{std::move(row), std::move(*digest), std::move(cached)};
}

// The whole read path: authentication, then KV → D1 → fallback replica.
Task<Result<Served>> read_content(Context& ctx, const Request& req) {
  std::string id = req.header("x-siteswarm-tenant-id");
  std::string token = req.header("x-siteswarm-tenant-token");
  if (id.empty()) co_return unauthenticated("missing X-SiteSwarm-Tenant-Id");
  if (!is_valid_tenant_id(id)) co_return unauthenticated("malformed tenant id");
  if (token.empty()) co_return unauthenticated("missing X-SiteSwarm-Tenant-Token");
  SS_CO_CHECK(check_capability_version(req.header("x-siteswarm-capability-version")));

  SS_CO_TRY(Lookup lookup, co_await look_up(ctx, id, token));
  auto& [row, digest, cached] = lookup;
  std::optional<CachedCopy> kv_copy;
  std::string kv_text;
  if (cached && cached->has_value()) {
    kv_text = std::move(**cached);
    kv_copy = kv_document_copy(id, kv_text);
  } else if (!cached) {
    ctx.log("cms: KV read failed: " + cached.error().message);
  }

  if (row) {
    // D1 answers: it alone decides who the tenant is.
    const std::optional<TenantRow>& tenant = *row;
    if (!tenant || !tenant->enabled) co_return unauthenticated("unknown tenant");
    if (!constant_time_equal(tenant->token_hash, digest)) co_return unauthenticated("bad token");
    if (kv_copy && kv_copy->token_hash == tenant->token_hash) {
      remember(kv_copy->content, tenant->token_hash, std::move(kv_text));
      co_return Served{std::move(kv_copy->content), "kv"};
    }
    auto stored = co_await CmsStore(ctx.app().db_binding).load(id);
    if (stored) {
      Content content = stored->has_value() ? std::move(**stored) : seed_content(*tenant);
      if (cached) {
        Status refreshed = co_await refresh_cache(ctx, content, tenant->token_hash);
        if (!refreshed) ctx.log("cms: KV refresh failed: " + refreshed.error().message);
      }
      remember(content, tenant->token_hash);
      co_return Served{std::move(content), "d1"};
    }
    ctx.log("cms: D1 content read failed: " + stored.error().message);
    if (auto copy = remembered_copy(id)) co_return Served{std::move(copy->content), "fallback"};
    co_return Served{seed_content(*tenant), "fallback"};
  }

  // D1 is unreachable: the token is checked against the copy that answers.
  ctx.log("cms: D1 tenant read failed: " + row.error().message);
  std::string source = "kv";
  std::optional<CachedCopy> copy = std::move(kv_copy);
  if (!copy) {
    source = "fallback";
    copy = remembered_copy(id);
    if (!copy) copy = bundled_copy(ctx, id);
  }
  if (!copy) {
    co_return Error{ErrorCode::service_unavailable,
                    "cms storage is unreachable and no fallback copy can verify this tenant"};
  }
  if (!constant_time_equal(copy->token_hash, digest)) co_return unauthenticated("bad token");
  if (source == "kv") remember(copy->content, copy->token_hash, std::move(kv_text));
  co_return Served{std::move(copy->content), source};
}

std::int64_t now_seconds(const Context& ctx) { return ctx.now_ms() / 1000; }

Task<Result<json>> content_answer(Context& ctx, const Request& req) {
  SS_CO_TRY(Served served, co_await read_content(ctx, req));
  co_return public_content_json(served.content, now_seconds(ctx), served.source);
}

Result<std::int64_t> at_param(const Context& ctx, const Request& req) {
  auto it = req.query.find("at");
  if (it == req.query.end() || it->second.empty()) return now_seconds(ctx);
  auto ms = parse_rfc3339(it->second);
  // Years the schedule can be computed for; the zone data is exact from 2020 through 2037.
  static constexpr std::int64_t kMinAt = days_from_civil(1970, 1, 1) * kMsPerDay;
  static constexpr std::int64_t kMaxAt = days_from_civil(2100, 1, 1) * kMsPerDay;
  if (!ms || *ms < kMinAt || *ms >= kMaxAt) {
    return field_error("at", "must be an RFC 3339 date-time between 1970 and 2099");
  }
  return *ms / 1000;
}

Task<Result<json>> status_answer(Context& ctx, const Request& req) {
  SS_CO_TRY(Served served, co_await read_content(ctx, req));
  SS_CO_TRY(std::int64_t at, at_param(ctx, req));
  std::optional<Zone> zone = Zone::find(served.content.hours.timezone);
  if (!zone) zone = Zone::find("UTC");
  json out = status_json(compute_status(served.content, *zone, at));
  out["source"] = served.source;
  co_return out;
}

Task<Result<Response>> get_content(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(json body, co_await content_answer(ctx, req));
  co_return Response::json_body(200, body).set_header("cache-control", "no-store");
}

Task<Result<Response>> get_status(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(json body, co_await status_answer(ctx, req));
  co_return Response::json_body(200, body).set_header("cache-control", "no-store");
}

// Test-only (SITESWARM_TEST_HOOKS=1): the zone data and the schedule for many instants at once,
// so tests/integration/cms-tz.test.mjs can compare every zone with an independent implementation.
// POST {"zone","hours":{weekly},"instants":[unix seconds]} → {"offsets":[s],"open":[bool],
// "nextChange":[s|null]}.
Task<Result<Response>> test_zone(Context& ctx, const Request& req, const Params&) {
  if (!ctx.test_hooks_enabled()) co_return Error{ErrorCode::not_found, "no route for /__test/zone"};
  SS_CO_TRY(json body, parse_json_object(req.body));
  std::optional<Zone> zone = Zone::find(string_or(body, "zone", ""));
  if (!zone) co_return field_error("zone", "unknown");
  Content content;
  json hours{{"timezone", zone->name()}, {"weekly", json::object()}};
  if (const json* weekly = find_field(body, "weekly")) hours["weekly"] = *weekly;
  SS_CO_TRY(content.hours, parse_hours(hours));
  json offsets = json::array();
  json open = json::array();
  json next = json::array();
  if (const json* list = find_field(body, "instants"); list && list->is_array()) {
    for (const json& t : *list) {
      if (!t.is_number_integer()) continue;
      auto at = t.get<std::int64_t>();
      offsets.push_back(zone->offset_at(at));
      StatusAnswer answer = compute_status(content, *zone, at);
      open.push_back(answer.state.open);
      next.push_back(answer.next_change ? json(*answer.next_change) : json());
    }
  }
  co_return Response::json_body(200, {{"version", Zone::data_version()},
                                      {"offsets", offsets},
                                      {"open", open},
                                      {"nextChange", next}});
}

}  // namespace

std::string cache_key(const std::string& tenant_id) { return "content:v1:" + tenant_id; }

json cache_document(const Content& content, const std::string& token_hash) {
  return json{{"tokenHash", token_hash}, {"content", content_json(content)}};
}

Task<Status> refresh_cache(Context& ctx, const Content& content, const std::string& token_hash) {
  Kv kv(kCacheBinding);
  Status put =
      co_await kv.put(cache_key(content.tenant_id), dump_json(cache_document(content, token_hash)));
  if (put) co_return put;
  // A reader must not keep getting the previous version from KV: drop it (D1 then answers).
  Status removed = co_await kv.remove(cache_key(content.tenant_id));
  if (!removed) ctx.log("cms: KV remove failed too: " + removed.error().message);
  co_return put;
}

void remember(const Content& content, const std::string& token_hash, std::string kv_text) {
  auto& copies = remembered();
  auto it = copies.find(content.tenant_id);
  if (it != copies.end()) {
    Remembered& kept = it->second;
    if (kept.content.version > content.version) return;
    // The very copy already kept (served from these KV bytes): nothing to do. Anything else
    // replaces it, even at the same version: a version-0 seed changes with the tenant's config.
    if (!kv_text.empty() && kept.kv_text == kv_text && kept.token_hash == token_hash) return;
  } else if (copies.size() >= kMaxRemembered) {
    copies.erase(copies.begin());
  }
  copies[content.tenant_id] = Remembered{token_hash, content, std::move(kv_text)};
}

void forget_all_remembered() { remembered().clear(); }

Task<Status> apply_cms_config(Context& ctx, const std::string& tenant_id, const json&) {
  remembered().erase(tenant_id);
  Kv kv(kCacheBinding);
  SS_CO_RETURN_AWAIT(kv.remove(cache_key(tenant_id)));
}

Content seed_content(const TenantRow& row) {
  const json* snapshot = find_field(row.config, "fallback");
  return content_from_seed(row.tenant_id, snapshot ? *snapshot : json::object(),
                           string_or(row.config, "timezone", "UTC"));
}

Status validate_cms_config(const Context&, const json& config) {
  if (const json* tz = find_field(config, "timezone"); tz != nullptr) {
    if (!tz->is_string() || !Zone::find(tz->get_ref<const std::string&>())) {
      return field_error("config.timezone", "is not a time zone of the IANA tz database");
    }
  }
  if (const json* fallback = find_field(config, "fallback"); fallback && !fallback->is_object()) {
    return field_error("config.fallback", "must be an object");
  }
  return Unit{};
}

Task<Result<json>> cms_rpc(Context& ctx, const std::string& method, const json& args) {
  // The same handlers as over HTTP: the RPC arguments become the request's tenant headers.
  const json auth = args.is_array() && !args.empty() ? args[0] : json::object();
  Request req;
  req.method = "GET";
  req.path = method == "getStatus" ? "/v1/status" : "/v1/content";
  if (auto id = get_string(auth, "tenantId")) req.headers["x-siteswarm-tenant-id"] = *id;
  if (auto token = get_string(auth, "token")) req.headers["x-siteswarm-tenant-token"] = *token;
  if (auto version = get_string(auth, "capabilityVersion")) {
    req.headers["x-siteswarm-capability-version"] = *version;
  }
  std::optional<std::string> at = get_string(auth, "at");
  if (args.is_array() && args.size() > 1 && args[1].is_string()) at = args[1].get<std::string>();
  if (at) req.query["at"] = *at;
  if (method == "getContent") {
    SS_CO_RETURN_AWAIT(content_answer(ctx, req));
  }
  if (method == "getStatus") {
    SS_CO_RETURN_AWAIT(status_answer(ctx, req));
  }
  co_return Error{ErrorCode::not_found, "no RPC method " + method.substr(0, 64)};
}

void add_content_routes(App& app) {
  app.router.add("GET", "/v1/content", get_content)
      .add("GET", "/v1/status", get_status)
      .add("POST", "/__test/zone", test_zone);
}

}  // namespace ss::cms
