// GET /v1/content and GET /v1/status: the public read path, also behind Workers RPC.
//
// Reads try, in order: KV (the document every write refreshes), D1, and the fallback replica (the
// isolate's last-known-good copy, else the snapshot bundled into the worker). The tenant's token
// is checked against D1 when D1 answers, else against the token hash stored beside whichever copy
// serves the answer; a tenant no copy can verify gets 503, never someone else's content.
#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/tenant_cache.h"
#include "shared/text.h"
#include "workers/cms/schedule.h"
#include "workers/cms/service.h"
#include "workers/cms/store.h"

#include "shared/bytes.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

namespace ss::cms {

namespace {

constexpr std::size_t kMaxRemembered = 1024;

// Every KV document expires (docs/cms.md "Storage and caching"): a write whose put and then whose delete
// of the old document both failed (KV refusing writes, its 1 write/s per key) must not leave the
// previous version served from KV forever. A read that misses refills it from D1.
constexpr int kCacheTtlSeconds = 3600;

// The isolate's last-known-good copy per tenant (the fallback replica's first choice), kept as the
// parsed Content. `kv_text` is the KV document it was last read from, when it was: the next read of
// the same bytes reuses the parsed copy instead of parsing and validating the document again.
//
// The rendered answers below belong to this copy: remember() replaces the whole entry (so they are
// dropped) whenever the content, the token hash or the KV bytes change, and they are used only when
// a request was served from KV bytes equal to `kv_text`. Each is a pure function of the copy and the
// instant, so it is kept with the instants it holds for:
// - the /v1/content body only depends on the announcements active at `now`: it holds from the last
//   announcement start/end at or before the instant it was rendered for to the next one after it;
// - the /v1/status body is kept for the second it was computed for (the answer's resolution: the
//   schedule works in whole seconds), so under load the schedule runs once a second per tenant.
struct Remembered {
  std::string token_hash;
  Content content;
  std::string kv_text;
  std::string content_body;
  std::int64_t content_from = 0;
  std::int64_t content_until = 0;  // empty window: nothing rendered yet
  json status;  // the /v1/status answer (RPC getStatus) and its body, for the second status_at
  std::string status_body;
  std::optional<std::int64_t> status_at;
};

std::map<std::string, Remembered>& remembered() {
  static std::map<std::string, Remembered> copies;
  return copies;
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

// The copy in a KV document: `kept` when the isolate's copy was read from these very bytes (that
// copy serves, without parsing the document again or copying the content; valid until the next
// co_await), else `parsed`.
struct KvCopy {
  std::string token_hash;
  std::optional<Content> parsed;
  Remembered* kept = nullptr;
};

// nullopt: not a valid document.
std::optional<KvCopy> kv_document_copy(const std::string& tenant_id, const std::string& text) {
  auto it = remembered().find(tenant_id);
  if (it != remembered().end() && !it->second.kv_text.empty() && it->second.kv_text == text) {
    return KvCopy{it->second.token_hash, std::nullopt, &it->second};
  }
  auto doc = parse_json(text);
  if (!doc) return std::nullopt;
  auto copy = read_copy(*doc);
  if (!copy) return std::nullopt;
  return KvCopy{std::move(copy->token_hash), std::move(copy->content), nullptr};
}

// The isolate's copy of tenant_id when it holds exactly these KV bytes, else nullptr. Valid until
// the next co_await.
Remembered* kept_for(const std::string& tenant_id, const std::string& kv_text) {
  auto it = remembered().find(tenant_id);
  if (it == remembered().end() || kv_text.empty() || it->second.kv_text != kv_text) return nullptr;
  return &it->second;
}

// The snapshot bundled into the worker (CMS_FALLBACK_SEEDS: every tenant's, one JSON text of about
// 500 bytes a tenant), parsed once per instance and kept with the text it came from: a read during
// an outage finds its tenant's seed without parsing every tenant's again. An env holding another
// text (a new deploy's seeds, a secret set) is parsed in its turn, once; a text that is not JSON is
// remembered as such, not parsed again per read.
struct BundledSeeds {
  std::string text;
  std::optional<json> doc;  // nullopt: `text` is not JSON
};

std::size_t seed_parses = 0;

const json* bundled_seeds(Context& ctx) {
  std::string text = ctx.env(kSeedsVar);
  if (text.empty()) return nullptr;
  BundledSeeds& seeds = ctx.instance_local<BundledSeeds>();
  if (seeds.text != text) {
    ++seed_parses;
    auto parsed = parse_json(text);
    seeds.doc.reset();
    if (parsed) seeds.doc = std::move(parsed).value();
    seeds.text = std::move(text);
  }
  return seeds.doc ? &*seeds.doc : nullptr;
}

std::optional<CachedCopy> bundled_copy(Context& ctx, const std::string& tenant_id) {
  const json* seeds = bundled_seeds(ctx);
  if (seeds == nullptr) return std::nullopt;
  const json* seed = find_field(*seeds, tenant_id);
  if (seed == nullptr) return std::nullopt;
  auto hash = get_string(*seed, "tokenHash");
  if (!hash || hash->size() != 64) return std::nullopt;
  const json* snapshot = find_field(*seed, "content");
  std::string zone = string_or(*seed, "timezone", "UTC");
  return CachedCopy{*hash, content_from_seed(tenant_id, snapshot ? *snapshot : json(), zone)};
}

// What answers a read. `kept` (source "kv"): the isolate's copy of the tenant, read from the same
// KV bytes, answers; `content` is then left empty (no copy of it is made).
struct Served {
  Content content;
  std::string source;
  Remembered* kept = nullptr;  // valid until the next co_await
  // The tenant cache's row stood for D1 (no D1 read), and stays fresh until then (ms); 0 otherwise.
  std::int64_t verified_until_ms = 0;
};

struct Lookup {
  // An error: D1 is unreachable. Left empty when `cache_verified` (no copy of the row is made).
  Result<std::optional<TenantRow>> row;
  std::string digest;  // of the presented token
  Result<std::optional<std::string>> cached;
  // The tenant cache's row for this tenant is enabled and its token hash is `digest`: it stands
  // for D1's answer (shared/tenant_cache.h).
  bool cache_verified = false;
};

// The tenant row (D1's answer, or this instance's cached copy of it when that copy matches the
// token: shared/tenant_cache.h), the token's digest and the KV document, fetched concurrently. A
// token that authenticated this tenant before in this instance has its digest already
// (TenantCache::known_digest): then a tenant row from the cache leaves the KV read as the request's
// only effect.
Task<Result<Lookup>> look_up(Context& ctx, const std::string& id, const std::string& token) {
  std::optional<std::string> known = tenant_cache(ctx).known_digest(id, token);
  Kv kv(kCacheBinding);
  const std::string key = cache_key(id);
  if (tenant_cache(ctx).fresh(id, ctx.now_ms()) != nullptr) {
    std::string digest;
    std::optional<Result<std::optional<std::string>>> cached;
    if (known) {
      digest = std::move(*known);
      auto read = co_await kv.get(key);
      cached.emplace(std::move(read));
    } else {
      auto [hashed, read] = co_await when_all(sha256_hex(token), kv.get(key));
      if (!hashed) co_return std::move(hashed).error();
      digest = std::move(*hashed);
      cached.emplace(std::move(read));
    }
    if (tenant_cache(ctx).verified(id, ctx.now_ms(), digest) != nullptr) {
      std::optional<TenantRow> none;
      co_return Lookup{std::move(none), std::move(digest), std::move(*cached), true};
    }
    auto row = co_await read_tenant(ctx, id);
    co_return Lookup{std::move(row), std::move(digest), std::move(*cached), false};
  }
  if (known) {
    auto [row, cached] = co_await when_all(read_tenant(ctx, id), kv.get(key));
    co_return Lookup{std::move(row), std::move(*known), std::move(cached), false};
  }
  auto [row, digest, cached] =
      co_await when_all(read_tenant(ctx, id), sha256_hex(token), kv.get(key));
  if (!digest) co_return std::move(digest).error();
  co_return Lookup{std::move(row), std::move(*digest), std::move(cached), false};
}

// The whole read path: authentication, then KV → D1 → fallback replica.
Task<Result<Served>> read_content(Context& ctx, const Request& req) {
  std::string id = req.header("x-siteswarm-tenant-id");
  std::string token = req.header("x-siteswarm-tenant-token");
  // One answer whatever failed (shared/tenant.h): a reason would let anyone enumerate tenant ids.
  if (id.empty() || !is_valid_tenant_id(id) || token.empty()) co_return tenant_unauthenticated();

  // This isolate forgets a tenant (tenant_cache().forget(): an operator's PUT or DELETE of it here,
  // or a refill that found it changed) after which a copy this read made must not be kept: it may
  // be of a disabled tenant, an old token or an old snapshot.
  const std::uint64_t generation = tenant_cache(ctx).generation();
  auto still_current = [&ctx, generation] { return tenant_cache(ctx).generation() == generation; };
  SS_CO_TRY(Lookup lookup, co_await look_up(ctx, id, token));
  auto& [row, digest, cached, cache_verified] = lookup;
  std::optional<KvCopy> kv_copy;
  std::string kv_text;
  if (cached && cached->has_value()) {
    kv_text = std::move(**cached);
    kv_copy = kv_document_copy(id, kv_text);
  } else if (!cached) {
    ctx.log("cms: KV read failed: " + cached.error().message);
  }
  // Served from the KV document: its parsed copy is remembered, and when the isolate's copy holds
  // these bytes (now or already) that copy answers.
  // No co_await between kv_document_copy() and this.
  auto serve_kv = [&](KvCopy copy) {
    if (copy.kept != nullptr) return Served{Content{}, "kv", copy.kept};
    if (still_current()) remember(*copy.parsed, copy.token_hash, kv_text);
    if (Remembered* kept = kept_for(id, kv_text)) return Served{Content{}, "kv", kept};
    // An isolate copy of a later version stays (a stale KV document): the document still answers.
    return Served{std::move(*copy.parsed), "kv"};
  };

  if (row) {
    // D1 answers (or the tenant cache stands for it): it alone decides who the tenant is.
    if (!cache_verified) {
      const std::optional<TenantRow>& found = *row;
      if (!found || !found->enabled) co_return tenant_unauthenticated();
      if (!constant_time_equal(found->token_hash, digest)) co_return tenant_unauthenticated();
    }
    tenant_cache(ctx).learn_token(id, token, digest);
    SS_CO_CHECK(check_capability(ctx, req, id));
    // Authenticated: the tenant's token hash is `digest`.
    if (kv_copy && kv_copy->token_hash == digest) {
      Served served = serve_kv(std::move(*kv_copy));
      if (cache_verified) {
        served.verified_until_ms = tenant_cache(ctx).fresh_until(id, ctx.now_ms());
      }
      co_return served;
    }
    std::optional<TenantRow> tenant = std::move(*row);
    if (cache_verified) {
      // No co_await since look_up() checked it: the cached row is still there.
      const TenantRow* hit = tenant_cache(ctx).verified(id, ctx.now_ms(), digest);
      if (hit == nullptr) co_return Error{ErrorCode::internal, "cms: the tenant cache changed"};
      tenant = *hit;
    }
    auto stored = co_await CmsStore(ctx.app().db_binding).load(id);
    if (stored) {
      bool refill = cached.ok();
      if (refill && !stored->has_value() && cache_verified) {
        // Version 0 is the snapshot in the tenant's config. The cached row may predate a
        // PUT /admin/tenants made through another isolate (which dropped the KV document): a KV
        // document refilled from it would outlive the cache and serve the old snapshot until the
        // next Studio write. Seed from the row D1 holds now (only for a refill: with KV down
        // nothing is stored, and the cached row answers).
        auto current = co_await read_tenant(ctx, id);
        if (!current) {
          refill = false;  // answer from the cached row, but do not store it
        } else if (!current->has_value() || !(*current)->enabled ||
                   !constant_time_equal((*current)->token_hash, digest)) {
          co_return tenant_unauthenticated();
        } else {
          tenant = std::move(**current);
        }
      }
      Content content = stored->has_value() ? std::move(**stored) : seed_content(*tenant);
      if (refill) {
        Status refreshed = co_await refresh_cache(ctx, content, tenant->token_hash);
        if (!refreshed) ctx.log("cms: KV refresh failed: " + refreshed.error().message);
      }
      if (still_current()) remember(content, tenant->token_hash);
      co_return Served{std::move(content), "d1"};
    }
    ctx.log("cms: D1 content read failed: " + stored.error().message);
    if (auto copy = remembered_copy(id)) co_return Served{std::move(copy->content), "fallback"};
    co_return Served{seed_content(*tenant), "fallback"};
  }

  // D1 is unreachable: the token is checked against the copy that answers.
  ctx.log("cms: D1 tenant read failed: " + row.error().message);
  if (kv_copy) {
    if (!constant_time_equal(kv_copy->token_hash, digest)) co_return tenant_unauthenticated();
    tenant_cache(ctx).learn_token(id, token, digest);
    SS_CO_CHECK(check_capability(ctx, req, id));
    co_return serve_kv(std::move(*kv_copy));
  }
  std::optional<CachedCopy> copy = remembered_copy(id);
  if (!copy) copy = bundled_copy(ctx, id);
  if (!copy) {
    co_return Error{ErrorCode::service_unavailable,
                    "cms storage is unreachable and no fallback copy can verify this tenant"};
  }
  if (!constant_time_equal(copy->token_hash, digest)) co_return tenant_unauthenticated();
  tenant_cache(ctx).learn_token(id, token, digest);
  SS_CO_CHECK(check_capability(ctx, req, id));
  co_return Served{std::move(copy->content), "fallback"};
}

std::int64_t now_seconds(const Context& ctx) { return ctx.now_ms() / 1000; }

const Content& content_of(const Served& served) {
  return served.kept != nullptr ? served.kept->content : served.content;
}

std::size_t status_count = 0;

json status_value(const Content& content, std::int64_t at, const std::string& source) {
  ++status_count;
  std::optional<Zone> zone = Zone::find(content.hours.timezone);
  if (!zone) zone = Zone::find("UTC");
  json out = status_json(compute_status(content, *zone, at));
  out["source"] = source;
  return out;
}

// The announcements' starts and ends around `now`: public_content_json() gives the same answer for
// every instant in [from, until) (no announcement starts or ends inside it).
std::pair<std::int64_t, std::int64_t> announcement_window(const Content& content,
                                                          std::int64_t now) {
  std::int64_t from = std::numeric_limits<std::int64_t>::min();
  std::int64_t until = std::numeric_limits<std::int64_t>::max();
  for (const Announcement& a : content.announcements) {
    for (const std::optional<std::int64_t>& edge : {a.starts_at, a.ends_at}) {
      if (!edge) continue;
      if (*edge <= now) {
        from = std::max(from, *edge);
      } else {
        until = std::min(until, *edge);
      }
    }
  }
  return {from, until};
}

// The /v1/content body: the isolate copy's rendered one while its window holds, else rendered now.
std::string content_body(const Served& served, std::int64_t now) {
  Remembered* kept = served.kept;
  if (kept == nullptr) return dump_json(public_content_json(served.content, now, served.source));
  if (kept->content_from > now || now >= kept->content_until) {
    kept->content_body = dump_json(public_content_json(kept->content, now, served.source));
    std::tie(kept->content_from, kept->content_until) = announcement_window(kept->content, now);
  }
  return kept->content_body;
}

// The status for the second `at` kept in the isolate's copy, computed when it was for another
// second: HTTP and RPC alike run the schedule at most once a second per tenant.
const Remembered& kept_status(Remembered& kept, const Served& served, std::int64_t at) {
  if (kept.status_at != at) {
    kept.status = status_value(kept.content, at, served.source);
    kept.status_body = dump_json(kept.status);
    kept.status_at = at;
  }
  return kept;
}

// The /v1/status body for the second `at`: the isolate copy's when it was computed for that second.
std::string status_body(const Served& served, std::int64_t at) {
  if (served.kept == nullptr) return dump_json(status_value(served.content, at, served.source));
  return kept_status(*served.kept, served, at).status_body;
}

Response json_answer(std::string body) {
  Response response = Response::text(200, std::move(body), "application/json; charset=utf-8");
  response.set_header("cache-control", "no-store");
  return response;
}

Task<Result<json>> content_answer(Context& ctx, const Request& req) {
  SS_CO_TRY(Served served, co_await read_content(ctx, req));
  co_return public_content_json(content_of(served), now_seconds(ctx), served.source);
}

Result<std::int64_t> at_param(const Context& ctx, const Request& req) {
  auto it = req.query.find("at");
  if (it == req.query.end() || it->second.empty()) return now_seconds(ctx);
  // An unencoded "+02:00" arrives as " 02:00" (a query string's "+" is a space): read it as meant.
  std::string at = it->second;
  if (std::size_t sp = at.find(' '); sp != std::string::npos && sp >= 19) at[sp] = '+';
  auto ms = parse_rfc3339(at);
  // Years the schedule can be computed for. The zone data starts in 2020 (before it, the offset
  // of 2020-01-01 or today's POSIX rule would be a wrong answer, e.g. New York's pre-2007 DST);
  // it holds every transition the tz database lists through 2099, then the zone's current rule.
  static constexpr std::int64_t kMinAt = days_from_civil(kFirstYear, 1, 1) * kMsPerDay;
  static constexpr std::int64_t kMaxAt = days_from_civil(kLastYear + 1, 1, 1) * kMsPerDay;
  if (!ms || *ms < kMinAt || *ms >= kMaxAt) {
    return field_error("at", "must be an RFC 3339 date-time between " + std::to_string(kFirstYear) +
                                 " and " + std::to_string(kLastYear));
  }
  return *ms / 1000;
}

Task<Result<json>> status_answer(Context& ctx, const Request& req) {
  SS_CO_TRY(Served served, co_await read_content(ctx, req));
  SS_CO_TRY(std::int64_t at, at_param(ctx, req));
  if (served.kept != nullptr) co_return kept_status(*served.kept, served, at).status;
  co_return status_value(served.content, at, served.source);
}

// An answer from the isolate's copy of the KV document, with the tenant cache standing for D1, is
// a function of the request's headers and URL, the KV bytes (the run's one effect) and the time:
// the host may replay it until `until_ms` while KV still holds those bytes (docs/cms.md "Replayed
// answers"). `until_ms` is capped by the cached tenant row's freshness, so a revocation made through
// another isolate lags no more than it does without replays.
void allow_replay(Context& ctx, const Served& served, std::int64_t until_ms) {
  if (served.kept == nullptr || served.verified_until_ms == 0) return;
  ctx.allow_replay(std::min(until_ms, served.verified_until_ms));
}

// Seconds to ms for an answer's end of validity; a window without end keeps its max.
std::int64_t end_ms(std::int64_t until_seconds) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max() / 1000;
  return until_seconds >= kMax ? std::numeric_limits<std::int64_t>::max() : until_seconds * 1000;
}

// The HTTP routes answer with text: a kept body goes out as it is, with no JSON built or dumped.
Task<Result<Response>> get_content(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Served served, co_await read_content(ctx, req));
  std::string body = content_body(served, now_seconds(ctx));
  // content_body() left the kept copy's announcement window around now.
  if (served.kept != nullptr) allow_replay(ctx, served, end_ms(served.kept->content_until));
  co_return json_answer(std::move(body));
}

Task<Result<Response>> get_status(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Served served, co_await read_content(ctx, req));
  SS_CO_TRY(std::int64_t at, at_param(ctx, req));
  // Without `at` the answer is for the current second; with it, for that instant whenever asked.
  const bool now_answer = req.query_param("at").empty();
  allow_replay(ctx, served, now_answer ? end_ms(at + 1) : std::numeric_limits<std::int64_t>::max());
  co_return json_answer(status_body(served, at));
}

// Test-only (SITESWARM_TEST_HOOKS=1): the zone data and the schedule for many instants at once,
// so tests/integration/cms-tz.test.mjs can compare every zone with an independent implementation.
// POST {"zone","weekly":{...},"overrides":[stored overrides, optional],"instants":[unix seconds]}
// → {"offsets":[s],"open":[bool],"nextChange":[s|null]} (also the worst-case bench's schedule).
Task<Result<Response>> test_zone(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(json body, parse_json_object(req.body));
  std::optional<Zone> zone = Zone::find(string_or(body, "zone", ""));
  if (!zone) co_return field_error("zone", "unknown");
  json hours = json_object({{"timezone", zone->name()}, {"weekly", json::object()}});
  if (const json* weekly = find_field(body, "weekly")) hours["weekly"] = *weekly;
  SS_CO_CHECK(parse_hours(hours));  // a bad range is 400 naming it, before the content is built
  const json* overrides = find_field(body, "overrides");
  Result<Content> built =
      content_from_json(json_object({{"tenantId", "test"},
                                     {"version", 1},
                                     {"hours", std::move(hours)},
                                     {"overrides", overrides ? *overrides : json::array()},
                                     {"announcements", json::array()}}));
  if (!built) co_return Error{ErrorCode::invalid_request, built.error().message};
  Content content = std::move(built).value();
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
  co_return Response::json_body(200, json_object({{"version", Zone::data_version()},
                                                  {"offsets", offsets},
                                                  {"open", open},
                                                  {"nextChange", next}}));
}

}  // namespace

std::string cache_key(const std::string& tenant_id) { return "content:v1:" + tenant_id; }

json cache_document(const Content& content, const std::string& token_hash) {
  return json_object({{"tokenHash", token_hash}, {"content", content_json(content)}});
}

Task<Status> refresh_cache(Context& ctx, const Content& content, const std::string& token_hash) {
  Kv kv(kCacheBinding);
  const std::string& id = content.tenant_id;
  Status put = co_await kv.put(cache_key(id), dump_json(cache_document(content, token_hash)),
                               kCacheTtlSeconds);
  if (!put) {
    // A reader must not keep getting the previous version from KV: drop it (D1 then answers).
    Status removed = co_await kv.remove(cache_key(id));
    if (!removed) ctx.log("cms: KV remove failed too: " + removed.error().message);
    co_return put;
  }
  // KV has no compare-and-set: a read's refill (or an earlier writer's put) may land after D1
  // moved on — a newer version committed, or the operator disabled the tenant, gave it a new
  // token or (version 0) a new snapshot, and dropped the KV document (DELETE / PUT
  // /admin/tenants/{id}). So after every put D1 is read again, the version and the tenant row
  // together, and a document that no longer stands for them is deleted: of a put and such a
  // change, whichever lands last sees the other (the operator's routes write D1 before they drop
  // the KV document), so the document never outlives the next read — and, with the tenant's token
  // hash in it, never lets a disabled tenant or an old token read during a D1 outage.
  auto [stored, tenant] =
      co_await when_all(CmsStore(ctx.app().db_binding).version(id), read_tenant(ctx, id));
  std::string why;
  bool tenant_changed = false;
  if (!stored) {
    ctx.log("cms: version check after the KV put failed: " + stored.error().message);
  } else if (*stored != content.version) {
    why = "superseded by version " + std::to_string(*stored);
  }
  if (!tenant) {
    ctx.log("cms: tenant check after the KV put failed: " + tenant.error().message);
  } else {
    const std::optional<TenantRow>& now = *tenant;
    tenant_changed = true;
    if (!now || !now->enabled) {
      why = "the tenant is disabled";
    } else if (!constant_time_equal(now->token_hash, token_hash)) {
      why = "the tenant's token changed";
    } else if (content.version == 0 &&
               dump_json(content_json(seed_content(*now))) != dump_json(content_json(content))) {
      why = "the tenant's snapshot changed";
    } else {
      tenant_changed = false;
    }
  }
  if (why.empty()) co_return put;
  if (tenant_changed) {
    // This isolate's copy goes too, and the caller does not keep the one it read (the generation).
    remembered().erase(id);
    tenant_cache(ctx).forget(id);
  }
  Status removed = co_await kv.remove(cache_key(id));
  if (!removed) {
    ctx.log("cms: KV remove of a document that is no longer current (" + why +
            ") failed: " + removed.error().message);
  }
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
  Remembered fresh;  // no rendered answers yet
  fresh.token_hash = token_hash;
  fresh.content = content;
  fresh.kv_text = std::move(kv_text);
  copies[content.tenant_id] = std::move(fresh);
}

void forget_all_remembered() { remembered().clear(); }

std::size_t bundled_seed_parses() { return seed_parses; }

std::size_t status_computations() { return status_count; }

Task<Status> forget_cms_tenant(Context& ctx, const std::string& tenant_id) {
  remembered().erase(tenant_id);
  Kv kv(kCacheBinding);
  SS_CO_RETURN_AWAIT(kv.remove(cache_key(tenant_id)));
}

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
  if (Status known = check_known_keys(config, {"timezone", "fallback"}, "config."); !known) {
    return known;
  }
  if (const json* tz = find_field(config, "timezone"); tz != nullptr) {
    if (!tz->is_string() || !Zone::find(tz->get_ref<const std::string&>())) {
      return field_error("config.timezone", "is not a time zone of the IANA tz database");
    }
  }
  if (const json* fallback = find_field(config, "fallback")) return validate_seed(*fallback);
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
  // A version that is no string (a number, 2) is judged as its text, as a header would be: never
  // dropped as if it had not been sent.
  if (const json* version = find_field(auth, "capabilityVersion"); version && !version->is_null()) {
    req.headers["x-siteswarm-capability-version"] =
        version->is_string() ? version->get<std::string>() : dump_json(*version);
  }
  // `at`: an RFC 3339 string, or left out (null) for now. Anything else (epoch milliseconds) goes
  // in as its text, so it is refused naming `at` after the tenant's authentication, as `?at=12345`
  // is — never answered for now.
  // (`auth.at`, read before the second argument existed, still counts when that is left out.)
  const json* at =
      args.is_array() && args.size() > 1 && !args[1].is_null() ? &args[1] : find_field(auth, "at");
  if (at != nullptr && !at->is_null()) {
    req.query["at"] = at->is_string() ? at->get<std::string>() : dump_json(*at);
  }
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
