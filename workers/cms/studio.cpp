// The Studio API (EmDash Studio, tenant admin token): everything incl. scheduled items, and the
// writes. Every write is one D1 batch that takes the next version (compare-and-set on the
// cms_versions primary key), then refreshes the KV document, the isolate copy and emits cms.*.
#include "shared/bytes.h"
#include "shared/emit.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/tenant_cache.h"
#include "shared/text.h"
#include "workers/cms/service.h"
#include "workers/cms/store.h"

#include <functional>

namespace ss::cms {

namespace {

constexpr int kMaxWriteAttempts = 3;  // without If-Match, a lost race is retried on fresh content
constexpr std::size_t kMaxActorLength = 100;
constexpr std::int64_t kDefaultHistory = 20;
constexpr std::int64_t kMaxHistory = 100;

// X-SiteSwarm-Tenant-Id + Authorization: Bearer <tenant admin token>, keeping the whole row (the
// token hash goes beside the KV document; the config holds the seed).
Task<Result<TenantRow>> authenticate_admin(Context& ctx, const Request& req) {
  std::string id = req.header("x-siteswarm-tenant-id");
  std::string token = bearer_token(req);
  if (id.empty() || !is_valid_tenant_id(id) || token.empty()) {
    co_return Error{ErrorCode::unauthenticated_tenant,
                    "send X-SiteSwarm-Tenant-Id and Authorization: Bearer <tenant admin token>"};
  }
  // Through the tenant cache's read (the row is remembered, as every tenant read does).
  auto [found, digest] = co_await when_all(read_tenant(ctx, id), sha256_hex(std::move(token)));
  if (!found) co_return std::move(found).error();
  if (!digest) co_return std::move(digest).error();
  std::optional<TenantRow>& row = *found;
  if (!row || !row->enabled || !constant_time_equal(row->admin_token_hash, *digest)) {
    co_return Error{ErrorCode::unauthenticated_tenant, "unknown tenant or bad tenant admin token"};
  }
  SS_CO_CHECK(check_capability(ctx, req, id));
  co_return std::move(*row);
}

// If-Match: 7, "7" or W/"7"; absent or "*" (RFC 9110 §13.1.1: any current version, and a tenant's
// content always has one) → nullopt.
Result<std::optional<std::int64_t>> if_match(const Request& req) {
  if (!req.has_header("if-match")) return std::optional<std::int64_t>{};
  std::string header = req.header("if-match");
  std::string_view v = header;
  if (v == "*") return std::optional<std::int64_t>{};
  if (v.substr(0, 2) == "W/") v.remove_prefix(2);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  auto n = parse_decimal(v, 0, INT64_MAX / 2);
  if (!n) return field_error("If-Match", "must be a content version, e.g. \"7\"");
  return std::optional<std::int64_t>{*n};
}

std::string etag(std::int64_t version) { return "\"" + std::to_string(version) + "\""; }

Task<Result<std::pair<Content, bool>>> load_or_seed(const TenantRow& row, const std::string& db) {
  SS_CO_TRY(std::optional<Content> stored, co_await CmsStore(db).load(row.tenant_id));
  if (stored) co_return std::pair<Content, bool>{std::move(*stored), true};
  co_return std::pair<Content, bool>{seed_content(row), false};
}

// What one write does to the content, decided on the content as loaded.
struct Change {
  std::string name;        // history + event suffix: hours_changed, override_created, …
  std::string entity_ref;  // for the event
  json detail = json::object();
  std::vector<D1Statement> statements;
  json answer = json::object();  // the response body (version added)
  int status = 200;
};
using Mutator = std::function<Task<Result<Change>>(Context&, Content&)>;

Task<Result<Response>> write(Context& ctx, const Request& req, const TenantRow& row,
                             const Mutator& mutate) {
  SS_CO_TRY(std::optional<std::int64_t> expected, if_match(req));
  std::string actor = req.header("x-siteswarm-actor");
  // A name for the history, as plain text: one that is too long, or carries control characters (a
  // header may hold ESC, and a raw byte 0x80–0x9F arrives as a C1 control), is the default.
  if (actor.empty() || actor.size() > kMaxActorLength || !is_utf8(actor) ||
      has_control_chars(actor, false)) {
    actor = "tenant-admin";
  }
  CmsStore store(ctx.app().db_binding);
  for (int attempt = 1;; ++attempt) {
    SS_CO_TRY(auto loaded, co_await load_or_seed(row, ctx.app().db_binding));
    auto& [content, materialized] = loaded;
    if (expected && *expected != content.version) {
      co_return Error{ErrorCode::conflict, "the content changed: version " +
                                               std::to_string(content.version) + ", not " +
                                               std::to_string(*expected)}
          .with("currentVersion", content.version);
    }
    std::int64_t base = content.version;
    std::vector<D1Statement> seed_rows;
    if (!materialized) {
      // First edit: the manifest snapshot becomes rows, keeping its ids.
      for (const Override& o : content.overrides) {
        seed_rows.push_back(CmsStore::insert_override_statement(row.tenant_id, o));
      }
      for (const Announcement& a : content.announcements) {
        seed_rows.push_back(CmsStore::upsert_announcement_statement(row.tenant_id, a));
      }
    }
    SS_CO_TRY(Change change, co_await mutate(ctx, content));
    Commit commit;
    commit.tenant_id = row.tenant_id;
    commit.version = base + 1;
    commit.at = format_rfc3339(ctx.now_ms());
    commit.actor = actor;
    commit.change = change.name;
    commit.detail = change.detail;
    commit.hours = &content.hours;
    commit.statements = std::move(seed_rows);
    for (D1Statement& s : change.statements) commit.statements.push_back(std::move(s));
    Status committed = co_await store.commit(commit);
    if (!committed) {
      // Lost the race for base + 1, or D1 failed: tell them apart by the version now stored.
      SS_CO_TRY(std::int64_t now_version, co_await store.version(row.tenant_id));
      if (now_version == base) co_return std::move(committed).error();
      if (expected || attempt >= kMaxWriteAttempts) {
        co_return Error{ErrorCode::conflict,
                        "the content changed while writing: version " + std::to_string(now_version)}
            .with("currentVersion", now_version);
      }
      continue;
    }
    content.version = commit.version;
    content.updated_at = commit.at;
    Status cached = co_await refresh_cache(ctx, content, row.token_hash);
    if (!cached) ctx.log("cms: KV refresh after write failed: " + cached.error().message);
    remember(content, row.token_hash);
    EventDraft draft;
    draft.event_type = "cms." + change.name;
    draft.entity_ref = change.entity_ref;
    draft.payload = change.detail;
    draft.payload["version"] = commit.version;
    draft.tenant_id = row.tenant_id;
    auto emitted = co_await emit_event(ctx, std::move(draft));
    if (!emitted) ctx.log("cms: emit cms." + change.name + " failed: " + emitted.error().message);
    change.answer["version"] = commit.version;
    co_return Response::json_body(change.status, change.answer)
        .set_header("etag", etag(commit.version));
  }
}

// Auth, then the body guards (413 before parsing, 415), then JSON.
Task<Result<std::pair<TenantRow, json>>> admin_with_body(Context& ctx, const Request& req) {
  SS_CO_TRY(TenantRow row, co_await authenticate_admin(ctx, req));
  SS_CO_CHECK(require_json_body(req, kMaxStudioBody));
  SS_CO_TRY(json body, parse_json_object(req.body));
  co_return std::pair<TenantRow, json>{std::move(row), std::move(body)};
}

Task<Result<Response>> get_admin_content(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(TenantRow row, co_await authenticate_admin(ctx, req));
  SS_CO_TRY(auto loaded, co_await load_or_seed(row, ctx.app().db_binding));
  json body = content_json(loaded.first);
  body["source"] = "d1";
  co_return Response::json_body(200, body).set_header("etag", etag(loaded.first.version));
}

Task<Result<Response>> put_hours(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(auto input, co_await admin_with_body(ctx, req));
  SS_CO_TRY(Hours hours, parse_hours(input.second));
  Mutator mutate = [hours](Context&, Content& content) -> Task<Result<Change>> {
    content.hours = hours;
    Change change;
    change.name = "hours_changed";
    change.entity_ref = "hours:" + content.tenant_id;
    change.detail = json_object({{"timezone", hours.timezone}});
    change.answer = json_object({{"hours", hours_json(hours)}});
    co_return change;
  };
  SS_CO_RETURN_AWAIT(write(ctx, req, input.first, mutate));
}

Task<Result<Response>> post_override(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(auto input, co_await admin_with_body(ctx, req));
  SS_CO_TRY(Override parsed, parse_override(input.second, ctx.now_ms() / 1000));
  Mutator mutate = [parsed](Context& ctx, Content& content) -> Task<Result<Change>> {
    if (content.overrides.size() >= kMaxOverrides) {
      co_return field_error("overrides", "a tenant has at most " + std::to_string(kMaxOverrides) +
                                             " overrides; delete some first");
    }
    Override o = parsed;
    SS_CO_TRY(o.id, co_await ctx.new_ulid());
    o.created_at = format_rfc3339(ctx.now_ms());
    Change change;
    change.name = "override_created";
    change.entity_ref = "override:" + o.id;
    change.detail = json_object({{"id", o.id}, {"closedNow", o.closed_now}});
    change.statements.push_back(CmsStore::insert_override_statement(content.tenant_id, o));
    // The new id at the top level too, as every create of the platform answers it.
    change.answer = json_object({{"id", o.id}, {"override", override_json(o)}});
    change.status = 201;
    content.overrides.push_back(std::move(o));
    co_return change;
  };
  SS_CO_RETURN_AWAIT(write(ctx, req, input.first, mutate));
}

Task<Result<Response>> delete_override(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(TenantRow row, co_await authenticate_admin(ctx, req));
  std::string id = params.at("id");
  Mutator mutate = [id](Context&, Content& content) -> Task<Result<Change>> {
    auto it = std::find_if(content.overrides.begin(), content.overrides.end(),
                           [&](const Override& o) { return o.id == id; });
    // Only this tenant's content was loaded, so another tenant's id is simply not here.
    if (it == content.overrides.end())
      co_return Error{ErrorCode::not_found, "no override " + id.substr(0, 64)};
    content.overrides.erase(it);
    Change change;
    change.name = "override_deleted";
    change.entity_ref = "override:" + id;
    change.detail = json_object({{"id", id}});
    change.statements.push_back(CmsStore::delete_override_statement(content.tenant_id, id));
    change.answer = json_object({{"deleted", id}});
    co_return change;
  };
  SS_CO_RETURN_AWAIT(write(ctx, req, row, mutate));
}

Task<Result<Response>> post_announcement(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(auto input, co_await admin_with_body(ctx, req));
  SS_CO_TRY(Announcement parsed, parse_announcement(input.second));
  Mutator mutate = [parsed](Context& ctx, Content& content) -> Task<Result<Change>> {
    if (content.announcements.size() >= kMaxAnnouncements) {
      co_return field_error("announcements", "a tenant has at most " +
                                                 std::to_string(kMaxAnnouncements) +
                                                 " announcements; delete some first");
    }
    Announcement a = parsed;
    SS_CO_TRY(a.id, co_await ctx.new_ulid());
    a.created_at = a.updated_at = format_rfc3339(ctx.now_ms());
    Change change;
    change.name = "announcement_published";
    change.entity_ref = "announcement:" + a.id;
    change.detail = json_object({{"id", a.id}, {"level", a.level}});
    change.statements.push_back(CmsStore::upsert_announcement_statement(content.tenant_id, a));
    change.answer = json_object({{"id", a.id}, {"announcement", announcement_json(a)}});
    change.status = 201;
    content.announcements.push_back(std::move(a));
    co_return change;
  };
  SS_CO_RETURN_AWAIT(write(ctx, req, input.first, mutate));
}

Task<Result<Response>> patch_announcement_route(Context& ctx, const Request& req,
                                                const Params& params) {
  SS_CO_TRY(auto input, co_await admin_with_body(ctx, req));
  std::string id = params.at("id");
  json body = std::move(input.second);
  Mutator mutate = [id, body](Context& ctx, Content& content) -> Task<Result<Change>> {
    auto it = std::find_if(content.announcements.begin(), content.announcements.end(),
                           [&](const Announcement& a) { return a.id == id; });
    if (it == content.announcements.end()) {
      co_return Error{ErrorCode::not_found, "no announcement " + id.substr(0, 64)};
    }
    SS_CO_TRY(Announcement next, patch_announcement(*it, body));
    next.updated_at = format_rfc3339(ctx.now_ms());
    *it = next;
    Change change;
    change.name = "announcement_updated";
    change.entity_ref = "announcement:" + id;
    change.detail = json_object({{"id", id}, {"level", next.level}});
    change.statements.push_back(CmsStore::upsert_announcement_statement(content.tenant_id, next));
    change.answer = json_object({{"announcement", announcement_json(next)}});
    co_return change;
  };
  SS_CO_RETURN_AWAIT(write(ctx, req, input.first, mutate));
}

Task<Result<Response>> delete_announcement(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(TenantRow row, co_await authenticate_admin(ctx, req));
  std::string id = params.at("id");
  Mutator mutate = [id](Context&, Content& content) -> Task<Result<Change>> {
    auto it = std::find_if(content.announcements.begin(), content.announcements.end(),
                           [&](const Announcement& a) { return a.id == id; });
    if (it == content.announcements.end()) {
      co_return Error{ErrorCode::not_found, "no announcement " + id.substr(0, 64)};
    }
    content.announcements.erase(it);
    Change change;
    change.name = "announcement_deleted";
    change.entity_ref = "announcement:" + id;
    change.detail = json_object({{"id", id}});
    change.statements.push_back(CmsStore::delete_announcement_statement(content.tenant_id, id));
    change.answer = json_object({{"deleted", id}});
    co_return change;
  };
  SS_CO_RETURN_AWAIT(write(ctx, req, row, mutate));
}

Task<Result<Response>> get_history(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(TenantRow row, co_await authenticate_admin(ctx, req));
  SS_CO_TRY(std::int64_t limit, req.int_param("limit", kDefaultHistory, 1, kMaxHistory));
  SS_CO_TRY(std::vector<VersionRow> rows,
            co_await CmsStore(ctx.app().db_binding).history(row.tenant_id, limit));
  json versions = json::array();
  for (const VersionRow& v : rows) {
    versions.push_back({{"version", v.version},
                        {"at", v.changed_at},
                        {"actor", v.actor},
                        {"change", v.change},
                        {"detail", v.detail}});
  }
  co_return Response::json_body(200, json_object({{"versions", versions}}));
}

}  // namespace

void add_studio_routes(App& app) {
  app.router.add("GET", "/admin/v1/content", get_admin_content)
      .add("PUT", "/admin/v1/hours", put_hours)
      .add("POST", "/admin/v1/overrides", post_override)
      .add("DELETE", "/admin/v1/overrides/{id}", delete_override)
      .add("POST", "/admin/v1/announcements", post_announcement)
      .add("PATCH", "/admin/v1/announcements/{id}", patch_announcement_route)
      .add("DELETE", "/admin/v1/announcements/{id}", delete_announcement)
      .add("GET", "/admin/v1/history", get_history);
}

}  // namespace ss::cms
