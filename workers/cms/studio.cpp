// The Studio API (EmDash Studio, tenant admin token): everything incl. scheduled items, and the
// writes. Every write is one D1 batch that takes the next version (compare-and-set on the
// cms_versions primary key), then refreshes the KV document, the isolate copy and emits cms.*.
#include "shared/bytes.h"
#include "shared/emit.h"
#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/tenant_cache.h"
#include "shared/text.h"
#include "workers/cms/service.h"
#include "workers/cms/store.h"

#include <algorithm>
#include <functional>

namespace ss::cms {

namespace {

// Without If-Match, a lost race is retried on fresh content after a random pause that doubles with
// each lost round (up to kMaxRetryPauseMs): writers that lost together do not all come back
// together, so a round can have several winners one after another, and some thirty writers at the
// same instant all get through within the attempts. Only a write that loses every round gets 409.
constexpr int kMaxWriteAttempts = 16;
constexpr int kFirstRetryPauseMs = 10;
constexpr int kMaxRetryPauseMs = 320;

// A pause in [0, min(kFirstRetryPauseMs · 2^(attempt−1), kMaxRetryPauseMs)] ms.
Task<Status> pause_before_retry(Context& ctx, int attempt) {
  SS_CO_TRY(std::string bytes, co_await ctx.random_bytes(2));
  const int cap = std::min(kFirstRetryPauseMs << std::min(attempt - 1, 10), kMaxRetryPauseMs);
  const int draw =
      (static_cast<unsigned char>(bytes[0]) << 8) | static_cast<unsigned char>(bytes[1]);
  co_return co_await sleep_ms(draw % (cap + 1));
}
constexpr std::size_t kMaxActorLength = 100;
// The cron sends outbox rows older than this (a younger one may be its write's own send in
// flight), at most kOutboxPerRun a run, one queue.send each (a failure is that row's alone).
constexpr std::int64_t kOutboxGraceMs = 60 * 1000;
constexpr std::int64_t kOutboxPerRun = 25;
constexpr std::int64_t kDefaultHistory = 20;
constexpr std::int64_t kMaxHistory = 100;

// The one answer to every refused Studio authentication, word for word what every other tenant
// admin route answers (shared/tenant.cpp authenticate_tenant_admin): a missing header, a malformed
// id, an unknown or disabled tenant and a wrong token are told apart by nothing
// (docs/architecture.md "One 401 for every tenant-auth failure").
Error admin_refused() {
  return Error{ErrorCode::unauthenticated_tenant,
               "tenant admin authentication failed: send a valid X-SiteSwarm-Tenant-Id and "
               "Authorization: Bearer <tenant admin token>"};
}

// X-SiteSwarm-Tenant-Id + Authorization: Bearer <tenant admin token>, keeping the whole row (the
// token hash goes beside the KV document; the config holds the seed).
Task<Result<TenantRow>> authenticate_admin(Context& ctx, const Request& req) {
  std::string id = req.header("x-siteswarm-tenant-id");
  std::string token = bearer_token(req);
  if (id.empty() || !is_valid_tenant_id(id) || token.empty()) co_return admin_refused();
  // Through the tenant cache's read (the row is remembered, as every tenant read does).
  auto [found, digest] = co_await when_all(read_tenant(ctx, id), sha256_hex(std::move(token)));
  if (!found) co_return std::move(found).error();
  if (!digest) co_return std::move(digest).error();
  std::optional<TenantRow>& row = *found;
  if (!row || !row->enabled || !constant_time_equal(row->admin_token_hash, *digest)) {
    co_return admin_refused();
  }
  SS_CO_CHECK(check_capability(ctx, req, id));
  co_return std::move(*row);
}

// If-Match (RFC 9110 §13.1.1): "*", or a comma-separated list of entity-tags. The content's ETag
// is the strong tag "<version>"; a listed tag matches by the weak comparison (the same opaque tag,
// weak or not: docs/cms.md "If-Match"). "*" matches any current version, and a tenant's content
// always has one (version 0 is the manifest snapshot). The contract's bare version (If-Match: 7) is
// read as the tag "7". Not a list of entity-tags → 400 naming If-Match.
struct Precondition {
  bool any = false;               // "*"
  std::vector<std::string> tags;  // the listed tags' opaque values, weak or not
  bool matches(std::int64_t version) const {
    if (any) return true;
    const std::string current = std::to_string(version);
    return std::find(tags.begin(), tags.end(), current) != tags.end();
  }
};

// nullopt: no If-Match, nothing to check.
Result<std::optional<Precondition>> if_match(const Request& req) {
  if (!req.has_header("if-match")) return std::optional<Precondition>{};
  const std::string header = req.header("if-match");
  const std::string_view v = header;
  auto malformed = [] {
    return field_error("If-Match",
                       "must be * or a list of entity-tags, e.g. \"7\" or \"7\", \"8\"");
  };
  auto ows = [](char c) { return c == ' ' || c == '\t'; };
  // etagc = %x21 / %x23-7E / obs-text: visible characters but DQUOTE, and bytes 0x80-0xFF.
  auto etagc = [](char c) {
    auto b = static_cast<unsigned char>(c);
    return b == 0x21 || (b >= 0x23 && b <= 0x7E) || b >= 0x80;
  };
  std::size_t first = 0;
  std::size_t last = v.size();
  while (first < last && ows(v[first])) ++first;
  while (last > first && ows(v[last - 1])) --last;
  if (v.substr(first, last - first) == "*") {
    Precondition any;
    any.any = true;
    return std::optional<Precondition>{std::move(any)};
  }
  Precondition condition;
  std::size_t elements = 0;
  std::size_t i = 0;
  while (true) {
    while (i < v.size() && ows(v[i])) ++i;
    if (i == v.size()) break;
    if (v[i] == ',') {  // an empty element: ignored (RFC 9110 §5.6.1)
      ++i;
      continue;
    }
    const bool weak = v.substr(i, 2) == "W/";
    if (weak) i += 2;
    std::string_view opaque;
    if (i < v.size() && v[i] == '"') {
      std::size_t end = i + 1;
      while (end < v.size() && etagc(v[end])) ++end;
      if (end == v.size() || v[end] != '"') return malformed();
      opaque = v.substr(i + 1, end - i - 1);
      i = end + 1;
    } else {
      std::size_t end = i;  // the contract's bare version
      while (end < v.size() && v[end] >= '0' && v[end] <= '9') ++end;
      if (weak || end == i) return malformed();
      opaque = v.substr(i, end - i);
      i = end;
    }
    ++elements;
    // The weak comparison (docs/cms.md "If-Match"): W/"3" names version 3 as "3" does. Our tag is
    // the version number, so the two never name different content, and Cloudflare's edge weakens
    // a strong ETag when it compresses the response, so a client echoing its ETag may send W/"3".
    condition.tags.emplace_back(opaque);
    while (i < v.size() && ows(v[i])) ++i;
    if (i < v.size() && v[i] != ',') return malformed();
  }
  if (elements == 0) return malformed();
  return std::optional<Precondition>{std::move(condition)};
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
  // The tenant cache's generation: when this isolate forgets the tenant meanwhile (an operator's
  // PUT or DELETE here, or refresh_cache() finding it changed), the written content is not kept
  // as this isolate's copy.
  const std::uint64_t generation = tenant_cache(ctx).generation();
  SS_CO_TRY(std::optional<Precondition> precondition, if_match(req));
  // A write under If-Match that loses the race for its version is a conflict, not retried: the
  // content it was checked against is gone ("*" holds for any version, so that one is retried).
  const bool conditional = precondition && !precondition->any;
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
    if (precondition && !precondition->matches(content.version)) {
      co_return Error{ErrorCode::conflict, "the content is at version " +
                                               std::to_string(content.version) +
                                               ", which If-Match does not name"}
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
    commit.admin_token_hash = row.admin_token_hash;
    // The version's cms.* event is committed with it (the outbox row): the write's answer does not
    // wait on the queue, and a queue that refuses it leaves it to the cron (run_outbox), not lost.
    // Its idempotency key names the version; its event_id, drawn here, stays with every resend.
    EventDraft draft;
    draft.event_type = "cms." + change.name;
    draft.entity_ref = change.entity_ref;
    draft.payload = change.detail;
    draft.payload["version"] = commit.version;
    draft.tenant_id = row.tenant_id;
    draft.idempotency_key = "cms-version:" + std::to_string(commit.version);
    SS_CO_TRY(json message, co_await new_event_message(ctx, std::move(draft)));
    commit.statements.push_back(
        CmsStore::outbox_statement(row.tenant_id, commit.version, message, commit.at));
    Status committed = co_await store.commit(commit);
    if (!committed) {
      // Lost the race for base + 1, the tenant row no longer stands (its guard), or D1 failed: tell
      // them apart by what D1 holds now (one read, on this path only).
      SS_CO_TRY(CmsStore::Standing now,
                co_await store.standing(row.tenant_id, row.admin_token_hash));
      if (!now.admitted) {
        // Disabled, or its admin token replaced, after this write authenticated (here or through
        // another isolate): refused as authentication refuses it, nothing written. This isolate
        // forgets the tenant (the row its authentication cached, its copy, the KV document).
        tenant_cache(ctx).forget(row.tenant_id);
        Status forgotten = co_await forget_cms_tenant(ctx, row.tenant_id);
        if (!forgotten) ctx.log("cms: forgetting a refused tenant: " + forgotten.error().message);
        co_return admin_refused();
      }
      const std::int64_t now_version = now.version;
      if (now_version == base) co_return std::move(committed).error();
      if (conditional || attempt >= kMaxWriteAttempts) {
        co_return Error{ErrorCode::conflict,
                        "the content changed while writing: version " + std::to_string(now_version)}
            .with("currentVersion", now_version);
      }
      SS_CO_CHECK(co_await pause_before_retry(ctx, attempt));
      continue;
    }
    content.version = commit.version;
    content.updated_at = commit.at;
    Status cached = co_await refresh_cache(ctx, content, row.token_hash);
    if (!cached) ctx.log("cms: KV refresh after write failed: " + cached.error().message);
    if (tenant_cache(ctx).generation() == generation) remember(content, row.token_hash);
    Status queued = co_await queue_send(kEventsQueueBinding, std::move(message));
    if (queued) {
      Status gone = co_await store.outbox_sent(row.tenant_id, commit.version);
      if (!gone) ctx.log("cms: outbox row of a sent event kept: " + gone.error().message);
    } else {
      ctx.log("cms: cms." + change.name + " left in the outbox: " + queued.error().message);
    }
    change.answer["version"] = commit.version;
    co_return Response::json_body(change.status, change.answer)
        .set_header("etag", etag(commit.version));
  }
}

// Auth, then the body guards (413 before parsing, 415), then JSON.
Task<Result<std::pair<TenantRow, json>>> admin_with_body(Context& ctx, const Request& req) {
  SS_CO_TRY(TenantRow row, co_await authenticate_admin(ctx, req));
  SS_CO_CHECK(require_json_body(req, kMaxStudioBody));
  SS_CO_CHECK(require_identity_coding(req));
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
  const json& body = input.second;
  const json* wrapped = find_field(body, "hours");
  if (wrapped != nullptr && wrapped->is_object() && !body.contains("weekly")) {
    // {"hours": …} as GET /admin/v1/content or a write's answer holds it, the rest of that view
    // let through unread.
    static constexpr std::string_view kWrapped[] = {"hours"};
    SS_CO_CHECK(check_known_keys(body, kWrapped, "", kContentViewFields));
    SS_CO_CHECK(check_known_keys(*wrapped, kHoursFields, "hours."));
  } else {
    SS_CO_CHECK(check_known_keys(body, kHoursFields, ""));
  }
  SS_CO_TRY(Hours parsed, parse_studio_hours(input.second));
  Mutator mutate = [parsed](Context&, Content& content) -> Task<Result<Change>> {
    Hours hours = parsed;
    // No zone named: the hours are in the zone the tenant's hours are in now (before any Studio
    // write, the snapshot's: its hours' own zone, else config.timezone, else UTC).
    if (hours.timezone.empty()) hours.timezone = content.hours.timezone;
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

// A list at its cap drops the items that are over (`ended`), so a tenant's history never locks
// it out of a new one; the ids dropped, for their DELETE statements. Below the cap nothing goes.
template <typename Item, typename Ended>
std::vector<std::string> prune_when_full(std::vector<Item>& items, std::size_t cap, Ended ended) {
  std::vector<std::string> pruned;
  if (items.size() < cap) return pruned;
  auto kept = std::remove_if(items.begin(), items.end(), [&](const Item& item) {
    if (!ended(item)) return false;
    pruned.push_back(item.id);
    return true;
  });
  items.erase(kept, items.end());
  return pruned;
}

Task<Result<Response>> post_override(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(auto input, co_await admin_with_body(ctx, req));
  SS_CO_CHECK(check_known_keys(input.second, kOverrideFields, "", kItemViewFields));
  SS_CO_TRY(Override parsed, parse_override(input.second, ctx.now_ms() / 1000));
  Mutator mutate = [parsed](Context& ctx, Content& content) -> Task<Result<Change>> {
    Change change;
    // At the cap, overrides that are over make room: an emergency closure is never refused for
    // the sake of last year's holidays.
    const std::int64_t now = ctx.now_ms() / 1000;
    std::vector<std::string> pruned =
        prune_when_full(content.overrides, kMaxOverrides, [now](const Override& o) {
          return o.closed_now
                     ? o.until && *o.until <= now
                     : o.to_day < now / 86400 - 1;  // its last local day is over in every zone
        });
    for (const std::string& id : pruned) {
      change.statements.push_back(CmsStore::delete_override_statement(content.tenant_id, id));
    }
    if (content.overrides.size() >= kMaxOverrides) {
      co_return field_error("overrides", "a tenant keeps at most " + std::to_string(kMaxOverrides) +
                                             " overrides (a closure whose until has passed, or a "
                                             "date range whose last day is two UTC days back, "
                                             "makes room by itself); delete some first");
    }
    Override o = parsed;
    SS_CO_TRY(o.id, co_await ctx.new_ulid());
    o.created_at = format_rfc3339(ctx.now_ms());
    change.name = "override_created";
    change.entity_ref = "override:" + o.id;
    change.detail = json_object({{"id", o.id}, {"closedNow", o.closed_now}});
    if (!pruned.empty()) change.detail["pruned"] = pruned;
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
  SS_CO_CHECK(check_known_keys(input.second, kAnnouncementFields, "", kItemViewFields));
  SS_CO_TRY(Announcement parsed, parse_announcement(input.second));
  Mutator mutate = [parsed](Context& ctx, Content& content) -> Task<Result<Change>> {
    Change change;
    const std::int64_t now = ctx.now_ms() / 1000;
    std::vector<std::string> pruned =
        prune_when_full(content.announcements, kMaxAnnouncements,
                        [now](const Announcement& a) { return a.ends_at && *a.ends_at <= now; });
    for (const std::string& id : pruned) {
      change.statements.push_back(CmsStore::delete_announcement_statement(content.tenant_id, id));
    }
    if (content.announcements.size() >= kMaxAnnouncements) {
      co_return field_error("announcements",
                            "a tenant has at most " + std::to_string(kMaxAnnouncements) +
                                " announcements live or to come; delete some first");
    }
    Announcement a = parsed;
    SS_CO_TRY(a.id, co_await ctx.new_ulid());
    a.created_at = a.updated_at = format_rfc3339(ctx.now_ms());
    change.name = "announcement_published";
    change.entity_ref = "announcement:" + a.id;
    change.detail = json_object({{"id", a.id}, {"level", a.level}});
    if (!pruned.empty()) change.detail["pruned"] = pruned;
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
  // The fields the view adds (id, createdAt, updatedAt) pass, so a read announcement can be sent
  // back; a body with nothing to change is refused rather than written as a new version.
  SS_CO_CHECK(check_known_keys(body, kAnnouncementFields, "", kItemViewFields));
  if (std::none_of(std::begin(kAnnouncementFields), std::end(kAnnouncementFields),
                   [&](std::string_view key) { return body.contains(key); })) {
    co_return Error{ErrorCode::invalid_request,
                    "nothing to change: send text, level, startsAt or endsAt"};
  }
  Mutator mutate = [id, body](Context& ctx, Content& content) -> Task<Result<Change>> {
    auto it = std::find_if(content.announcements.begin(), content.announcements.end(),
                           [&](const Announcement& a) { return a.id == id; });
    if (it == content.announcements.end()) {
      co_return Error{ErrorCode::not_found, "no announcement " + id.substr(0, 64)};
    }
    SS_CO_TRY(Announcement next, patch_announcement(*it, body));
    next.updated_at = format_rfc3339(ctx.now_ms());
    // The history says what changed: the fields whose value is not what it was.
    json changed = json::array();
    if (next.text != it->text) changed.push_back("text");
    if (next.level != it->level) changed.push_back("level");
    if (next.starts_at != it->starts_at) changed.push_back("startsAt");
    if (next.ends_at != it->ends_at) changed.push_back("endsAt");
    *it = next;
    Change change;
    change.name = "announcement_updated";
    change.entity_ref = "announcement:" + id;
    change.detail = json_object({{"id", id}, {"level", next.level}, {"changed", changed}});
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

Task<Status> run_outbox(Context& ctx, const std::string&) {
  CmsStore store(ctx.app().db_binding);
  SS_CO_TRY(
      std::vector<OutboxRow> due,
      co_await store.outbox_due(format_rfc3339(ctx.now_ms() - kOutboxGraceMs), kOutboxPerRun));
  if (due.empty()) co_return Unit{};
  json sent = json::array();
  json failed = json::array();
  std::string error;
  for (OutboxRow& row : due) {
    std::string key = row.tenant_id + ":" + std::to_string(row.version);
    // No co_await inside a conditional expression: g++-12 destroys its result twice
    // (docs/toolchain.md).
    Status queued = Error{ErrorCode::corrupt_row, "the stored message is not JSON"};
    if (row.message.is_object()) {
      Status sent_now = co_await queue_send(kEventsQueueBinding, std::move(row.message));
      queued = std::move(sent_now);
    }
    if (queued) {
      sent.push_back(std::move(key));
    } else {
      error = queued.error().message;
      failed.push_back(std::move(key));
    }
  }
  SS_CO_CHECK(co_await store.outbox_swept(sent, failed, error));
  ctx.log("cms outbox: " + std::to_string(sent.size()) + " sent, " + std::to_string(failed.size()) +
          " still refused" + (error.empty() ? "" : ": " + error));
  co_return Unit{};
}

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
