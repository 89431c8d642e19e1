#include "workers/cms/store.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"

namespace ss::cms {

namespace {

constexpr std::string_view kSelectState = R"sql(
SELECT version, timezone, weekly_json, updated_at FROM cms_state WHERE tenant_id = ?1
)sql";

constexpr std::string_view kSelectOverrides = R"sql(
SELECT id, kind, from_date, to_date, closed, hours_json, starts_at, until, message, created_at
FROM cms_overrides WHERE tenant_id = ?1 ORDER BY created_at, id
)sql";

constexpr std::string_view kSelectAnnouncements = R"sql(
SELECT id, text, level, starts_at, ends_at, created_at, updated_at
FROM cms_announcements WHERE tenant_id = ?1 ORDER BY created_at, id
)sql";

constexpr std::string_view kSelectVersion = R"sql(
SELECT version FROM cms_state WHERE tenant_id = ?1
)sql";

constexpr std::string_view kSelectHistory = R"sql(
SELECT version, changed_at, actor, change, detail_json FROM cms_versions
WHERE tenant_id = ?1 ORDER BY version DESC LIMIT ?2
)sql";

// The batch's first statement, and its guard: the tenant row that authenticated the write must still
// stand when the batch runs (enabled, the same admin token hash ?7), else changed_at is NULL, which
// its NOT NULL refuses, and the whole batch fails with nothing written (a disable or an admin token
// replaced after the write authenticated: docs/cms.md "Storage and caching").
constexpr std::string_view kInsertVersion = R"sql(
INSERT INTO cms_versions (tenant_id, version, changed_at, actor, change, detail_json)
VALUES (?1, ?2,
        CASE WHEN EXISTS (SELECT 1 FROM tenants WHERE tenant_id = ?1 AND enabled = 1
                                                  AND admin_token_hash = ?7)
             THEN ?3 END,
        ?4, ?5, ?6)
)sql";

// Why a commit failed: the version now stored (NULL: never edited) and whether the tenant row that
// authenticated it still stands, in one statement.
constexpr std::string_view kSelectStanding = R"sql(
SELECT (SELECT version FROM cms_state WHERE tenant_id = ?1) AS version,
       EXISTS (SELECT 1 FROM tenants WHERE tenant_id = ?1 AND enabled = 1
                                       AND admin_token_hash = ?2) AS admitted
)sql";

constexpr std::string_view kUpsertState = R"sql(
INSERT INTO cms_state (tenant_id, version, timezone, weekly_json, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (tenant_id) DO UPDATE SET version = ?2, timezone = ?3, weekly_json = ?4,
                                      updated_at = ?5
)sql";

constexpr std::string_view kInsertOverride = R"sql(
INSERT INTO cms_overrides (tenant_id, id, kind, from_date, to_date, closed, hours_json, starts_at,
                           until, message, created_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
)sql";

constexpr std::string_view kDeleteOverride = R"sql(
DELETE FROM cms_overrides WHERE tenant_id = ?1 AND id = ?2
)sql";

constexpr std::string_view kUpsertAnnouncement = R"sql(
INSERT INTO cms_announcements (tenant_id, id, text, level, starts_at, ends_at, created_at,
                               updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (tenant_id, id) DO UPDATE SET text = ?3, level = ?4, starts_at = ?5, ends_at = ?6,
                                          updated_at = ?8
)sql";

constexpr std::string_view kDeleteAnnouncement = R"sql(
DELETE FROM cms_announcements WHERE tenant_id = ?1 AND id = ?2
)sql";

struct StateRow {
  std::int64_t version = 0;
  std::string timezone;
  json weekly;
  std::string updated_at;
  static StateRow decode(RowReader& r) {
    return StateRow{r.integer("version"), r.text("timezone"), r.json_text("weekly_json"),
                    r.text("updated_at")};
  }
};

// Rows are read back through the same validation as Studio input, so a row that would not pass
// it is reported as corrupt rather than served.
struct OverrideRow {
  json item;
  std::string id, created_at;
  static OverrideRow decode(RowReader& r) {
    OverrideRow row;
    row.id = r.text("id");
    row.created_at = r.text("created_at");
    std::string kind = r.text("kind");
    row.item = json_object({{"message", r.text("message")}});
    auto starts = r.nullable_integer("starts_at");
    auto until = r.nullable_integer("until");
    auto from = r.nullable_text("from_date");
    auto to = r.nullable_text("to_date");
    bool closed = r.flag("closed");
    auto hours = r.nullable_text("hours_json");
    if (kind == "closed_now") {
      row.item["closedNow"] = true;
      row.item["from"] = format_rfc3339(starts.value_or(0) * 1000);
      row.item["until"] = until ? json(format_rfc3339(*until * 1000)) : json();
    } else {
      row.item["from"] = from.value_or("");
      row.item["to"] = to.value_or("");
      row.item["closed"] = closed;
      if (hours) {
        auto parsed = parse_json(*hours);
        row.item["hours"] = parsed ? *parsed : json();
      }
    }
    return row;
  }
};

struct AnnouncementRow {
  Announcement a;
  static AnnouncementRow decode(RowReader& r) {
    AnnouncementRow row;
    row.a.id = r.text("id");
    row.a.text = r.text("text");
    row.a.level = r.text("level");
    row.a.starts_at = r.nullable_integer("starts_at");
    row.a.ends_at = r.nullable_integer("ends_at");
    row.a.created_at = r.text("created_at");
    row.a.updated_at = r.text("updated_at");
    return row;
  }
};

Error corrupt(const std::string& what, const Error& why) {
  Error e{ErrorCode::corrupt_row, "CmsStore::load(): " + what + ": " + why.message};
  return e;
}

json optional_int(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(); }

constexpr std::string_view kInsertOutbox = R"sql(
INSERT INTO cms_event_outbox (tenant_id, version, message_json, created_at) VALUES (?1, ?2, ?3, ?4)
)sql";

constexpr std::string_view kDeleteOutbox = R"sql(
DELETE FROM cms_event_outbox WHERE tenant_id = ?1 AND version = ?2
)sql";

// A row whose message is not JSON (edited by hand) is read as null: the sweep counts it as failed
// rather than failing every other row with corrupt_row.
constexpr std::string_view kOutboxDue = R"sql(
SELECT CAST(tenant_id AS TEXT) AS tenant_id, CAST(version AS INTEGER) AS version,
       CASE WHEN json_valid(message_json) THEN message_json ELSE 'null' END AS message_json,
       CAST(attempts AS INTEGER) AS attempts
FROM cms_event_outbox WHERE created_at < ?1 ORDER BY attempts, created_at LIMIT ?2
)sql";

// ?1: the rows sent, ?2: the rows whose send failed, each a JSON array of "tenant_id:version".
constexpr std::string_view kOutboxSent = R"sql(
DELETE FROM cms_event_outbox
WHERE tenant_id || ':' || version IN (SELECT value FROM json_each(?1))
)sql";

constexpr std::string_view kOutboxFailed = R"sql(
UPDATE cms_event_outbox SET attempts = attempts + 1, last_error = ?2
WHERE tenant_id || ':' || version IN (SELECT value FROM json_each(?1))
)sql";

}  // namespace

OutboxRow OutboxRow::decode(RowReader& r) {
  OutboxRow row;
  row.tenant_id = r.text("tenant_id");
  row.version = r.integer("version");
  row.message = r.json_text("message_json");
  row.attempts = r.integer("attempts");
  return row;
}

D1Statement CmsStore::outbox_statement(const std::string& tenant_id, std::int64_t version,
                                       const json& message, const std::string& at) {
  return D1Statement{std::string(kInsertOutbox),
                     json::array({tenant_id, version, dump_json(message), at})};
}

Task<Status> CmsStore::outbox_sent(const std::string& tenant_id, std::int64_t version) const {
  json params = json::array({tenant_id, version});  // not inside co_await: the g++-12 bug
  SS_CO_TRY(D1Result ignored, co_await db_.run(kDeleteOutbox, std::move(params)));
  co_return Unit{};
}

Task<Result<std::vector<OutboxRow>>> CmsStore::outbox_due(const std::string& before,
                                                          std::int64_t limit) const {
  json params = json::array({before, limit});  // not inside co_await: the g++-12 bug
  SS_CO_TRY(D1Result r, co_await db_.all(kOutboxDue, std::move(params)));
  co_return r.as<OutboxRow>();
}

Task<Status> CmsStore::outbox_swept(const json& sent, const json& failed,
                                    const std::string& error) const {
  std::vector<D1Statement> batch{
      D1Statement{std::string(kOutboxSent), json::array({dump_json(sent)})},
      D1Statement{std::string(kOutboxFailed), json::array({dump_json(failed), error})}};
  SS_CO_TRY(std::vector<D1Result> ignored, co_await db_.batch(batch));
  co_return Unit{};
}

VersionRow VersionRow::decode(RowReader& r) {
  VersionRow row;
  row.version = r.integer("version");
  row.changed_at = r.text("changed_at");
  row.actor = r.text("actor");
  row.change = r.text("change");
  row.detail = r.json_text("detail_json");
  return row;
}

Task<Result<std::optional<Content>>> CmsStore::load(const std::string& tenant_id) const {
  json params = json::array({tenant_id});
  std::vector<D1Statement> reads{D1Statement{std::string(kSelectState), params},
                                 D1Statement{std::string(kSelectOverrides), params},
                                 D1Statement{std::string(kSelectAnnouncements), params}};
  SS_CO_TRY(std::vector<D1Result> results, co_await db_.batch(reads));
  if (results.size() != 3) co_return Error{ErrorCode::internal, "CmsStore::load(): short batch"};
  SS_CO_TRY(std::optional<StateRow> state, results[0].first_as<StateRow>());
  if (!state) co_return std::optional<Content>{};
  Content c;
  c.tenant_id = tenant_id;
  c.version = state->version;
  c.updated_at = state->updated_at;
  json hours = json_object({{"timezone", state->timezone}, {"weekly", state->weekly}});
  auto parsed_hours = parse_hours(hours);
  if (!parsed_hours) co_return corrupt("cms_state", parsed_hours.error());
  c.hours = std::move(parsed_hours).value();
  SS_CO_TRY(std::vector<OverrideRow> overrides, results[1].as<OverrideRow>());
  for (OverrideRow& row : overrides) {
    row.item["id"] = row.id;
    row.item["createdAt"] = row.created_at;
    auto o = stored_override(row.item);
    if (!o) co_return corrupt("cms_overrides " + row.id, o.error());
    c.overrides.push_back(std::move(o).value());
  }
  SS_CO_TRY(std::vector<AnnouncementRow> announcements, results[2].as<AnnouncementRow>());
  for (AnnouncementRow& row : announcements) c.announcements.push_back(std::move(row.a));
  co_return std::optional<Content>{std::move(c)};
}

Task<Result<std::int64_t>> CmsStore::version(const std::string& tenant_id) const {
  json params = json::array({tenant_id});
  SS_CO_TRY(D1Result r, co_await db_.first(kSelectVersion, params));
  std::optional<json> row = r.first();
  co_return row ? int_or(*row, "version", 0) : 0;
}

Task<Result<std::vector<VersionRow>>> CmsStore::history(const std::string& tenant_id,
                                                        std::int64_t limit) const {
  json params = json::array({tenant_id, limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kSelectHistory, params));
  co_return r.as<VersionRow>();
}

Task<Result<CmsStore::Standing>> CmsStore::standing(const std::string& tenant_id,
                                                    const std::string& admin_token_hash) const {
  json params = json::array({tenant_id, admin_token_hash});
  SS_CO_TRY(D1Result r, co_await db_.first(kSelectStanding, params));
  std::optional<json> row = r.first();
  Standing out;
  if (row) {
    out.version = int_or(*row, "version", 0);
    out.admitted = int_or(*row, "admitted", 0) == 1;
  }
  co_return out;
}

Task<Status> CmsStore::commit(const Commit& commit) const {
  std::vector<D1Statement> batch;
  batch.push_back(
      D1Statement{std::string(kInsertVersion),
                  json::array({commit.tenant_id, commit.version, commit.at, commit.actor,
                               commit.change, dump_json(commit.detail), commit.admin_token_hash})});
  json hours = hours_json(*commit.hours);
  batch.push_back(D1Statement{std::string(kUpsertState),
                              json::array({commit.tenant_id, commit.version, hours["timezone"],
                                           dump_json(hours["weekly"]), commit.at})});
  for (const D1Statement& s : commit.statements) batch.push_back(s);
  SS_CO_TRY(std::vector<D1Result> ignored, co_await db_.batch(batch));
  co_return Unit{};
}

D1Statement CmsStore::insert_override_statement(const std::string& tenant_id, const Override& o) {
  json hours = o.hours ? json(dump_json(ranges_json(*o.hours))) : json();
  json params = json::array(
      {tenant_id, o.id, o.closed_now ? "closed_now" : "dates", o.closed_now ? json() : json(o.from),
       o.closed_now ? json() : json(o.to), o.closed ? 1 : 0, hours,
       o.closed_now ? json(o.starts_at) : json(), optional_int(o.until), o.message, o.created_at});
  return D1Statement{std::string(kInsertOverride), std::move(params)};
}

D1Statement CmsStore::delete_override_statement(const std::string& tenant_id,
                                                const std::string& id) {
  return D1Statement{std::string(kDeleteOverride), json::array({tenant_id, id})};
}

D1Statement CmsStore::upsert_announcement_statement(const std::string& tenant_id,
                                                    const Announcement& a) {
  json params = json::array({tenant_id, a.id, a.text, a.level, optional_int(a.starts_at),
                             optional_int(a.ends_at), a.created_at, a.updated_at});
  return D1Statement{std::string(kUpsertAnnouncement), std::move(params)};
}

D1Statement CmsStore::delete_announcement_statement(const std::string& tenant_id,
                                                    const std::string& id) {
  return D1Statement{std::string(kDeleteAnnouncement), json::array({tenant_id, id})};
}

}  // namespace ss::cms
