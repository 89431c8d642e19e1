#include "workers/events/ledger.h"

#include "shared/glob.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/runtime.h"
#include "shared/ulid.h"
#include "workers/events/json_schema.h"

namespace ss::events {

namespace {

Error invalid(const std::string& field, const std::string& message) {
  Error e{ErrorCode::invalid_event, field + ": " + message};
  e.with("field", field);
  return e;
}

bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

// Optional string field of bounded length; absent or null is "".
Result<std::string> optional_text(const json& body, const char* field, std::size_t max) {
  const json* v = find_field(body, field);
  if (v == nullptr || v->is_null()) return std::string();
  if (!v->is_string()) return invalid(field, "must be a string");
  std::string s = v->get<std::string>();
  if (s.size() > max)
    return invalid(field, "is longer than " + std::to_string(max) + " characters");
  return s;
}

json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

bool is_event_type(std::string_view s) {
  // segment(.segment)+ where a segment is [a-z][a-z0-9_]*
  if (s.empty() || s.size() > kMaxEventTypeLength) return false;
  bool segment_start = true;
  int dots = 0;
  for (char c : s) {
    if (c == '.') {
      if (segment_start) return false;
      segment_start = true;
      ++dots;
    } else if (segment_start) {
      if (c < 'a' || c > 'z') return false;
      segment_start = false;
    } else if (!is_name_char(c)) {
      return false;
    }
  }
  return !segment_start && dots >= 1;
}

Result<NewEvent> parse_new_event(const json& body) {
  NewEvent e;
  auto type = get_string(body, "event_type");
  if (!type) return invalid("event_type", "is required");
  if (!is_event_type(*type)) {
    return invalid("event_type", "must be a dotted lower-case name such as price.changed");
  }
  e.event_type = *type;

  auto ref = get_string(body, "entity_ref");
  if (!ref) return invalid("entity_ref", "is required, as type:id");
  auto colon = ref->find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == ref->size() ||
      ref->size() > kMaxRefLength) {
    return invalid("entity_ref", "must look like type:id");
  }
  e.entity_type = ref->substr(0, colon);
  e.entity_id = ref->substr(colon + 1);
  for (char c : e.entity_type) {
    if (!is_name_char(c)) return invalid("entity_ref", "the type must be lower case [a-z0-9_]");
  }
  for (char c : e.entity_id) {
    if (static_cast<unsigned char>(c) < 0x20)
      return invalid("entity_ref", "the id has control characters");
  }

  if (const json* payload = find_field(body, "payload"); payload && !payload->is_null()) {
    if (!payload->is_object()) return invalid("payload", "must be a JSON object");
    if (dump_json(*payload).size() > kMaxPayloadBytes) {
      Error err{ErrorCode::payload_too_large, "payload: larger than 64 KiB"};
      err.with("field", "payload");
      return err;
    }
    e.payload = *payload;
  }

  auto text = [&](const char* field, std::size_t max, std::string& out) -> Status {
    auto v = optional_text(body, field, max);
    if (!v) return std::move(v).error();
    out = std::move(v).value();
    return Unit{};
  };
  if (auto s = text("event_id", 64, e.event_id); !s) return s.error();
  if (!e.event_id.empty() && !is_ulid(e.event_id)) {
    return invalid("event_id", "must be a ULID (26 characters, Crockford base32, upper case)");
  }
  if (auto s = text("idempotency_key", kMaxRefLength, e.idempotency_key); !s) return s.error();
  if (auto s = text("caused_by", kMaxRefLength, e.caused_by); !s) return s.error();
  if (auto s = text("workflow_run_id", kMaxRefLength, e.workflow_run_id); !s) return s.error();
  if (auto s = text("source_system", 64, e.source_system); !s) return s.error();
  if (auto s = text("occurred_at", 64, e.occurred_at); !s) return s.error();
  if (!e.occurred_at.empty()) {
    auto ms = parse_rfc3339(e.occurred_at);
    if (!ms) return invalid("occurred_at", "must be an RFC 3339 time such as 2026-05-25T14:23:11Z");
    e.occurred_at = format_rfc3339_ms(*ms);
  }
  if (const json* seq = find_field(body, "sequence_no"); seq && !seq->is_null()) {
    auto n = get_int(body, "sequence_no");
    if (!n || *n < 0) return invalid("sequence_no", "must be a non-negative integer");
    e.sequence_no = *n;
  }
  return e;
}

json event_view(const json& row) {
  auto payload = parse_json(string_or(row, "payload_json", "{}"));
  const json* seq = find_field(row, "sequence_no");
  const json* tenant = find_field(row, "tenant_id");
  auto nullable = [&](const char* key) {
    const json* v = find_field(row, key);
    return v && v->is_string() ? *v : json(nullptr);
  };
  std::string type = string_or(row, "entity_type", "");
  std::string id = string_or(row, "entity_id", "");
  return json{{"event_id", string_or(row, "event_id", "")},
              {"tenant_id", tenant && tenant->is_string() ? *tenant : json(nullptr)},
              {"event_type", string_or(row, "event_type", "")},
              {"entity_type", type},
              {"entity_id", id},
              {"entity_ref", type + ":" + id},
              {"payload", payload ? *payload : json::object()},
              {"idempotency_key", nullable("idempotency_key")},
              {"caused_by", nullable("caused_by")},
              {"workflow_run_id", nullable("workflow_run_id")},
              {"source_system", nullable("source_system")},
              {"occurred_at", string_or(row, "occurred_at", "")},
              {"recorded_at", string_or(row, "recorded_at", "")},
              {"sequence_no", seq && seq->is_number_integer() ? *seq : json(nullptr)}};
}

Task<Result<Appended>> append_event(Context& ctx, NewEvent event) {
  D1 db(kDb);
  json tenant = event.tenant_id ? json(*event.tenant_id) : json(nullptr);
  std::string tenant_key = event.tenant_id.value_or("");

  // The schema lookup and the idempotency lookup go out together.
  std::vector<Task<Result<json>>> lookups;
  json schema_params = json::array({event.event_type});
  lookups.push_back(as_task(
      db.first_json("SELECT schema_json FROM events_schema WHERE event_type = ?1", schema_params)));
  if (!event.idempotency_key.empty()) {
    json params = json::array({tenant_key, event.idempotency_key});
    lookups.push_back(
        as_task(db.first_json("SELECT event_id FROM events WHERE COALESCE(tenant_id, '') "
                              "= ?1 AND idempotency_key = ?2",
                              params)));
  }
  std::vector<Result<json>> found = co_await when_all(std::move(lookups));
  for (auto& f : found) {
    if (!f) co_return std::move(f).error();
  }
  if (found.size() > 1) {
    if (const json* row = row_of(*found[1]))
      co_return Appended{string_or(*row, "event_id", ""), true};
  }
  if (const json* row = row_of(*found[0])) {
    auto doc = parse_json(string_or(*row, "schema_json", "{}"));
    auto schema = doc ? JsonSchema::parse(*doc) : Result<JsonSchema>(doc.error());
    if (schema) {
      std::vector<json> violations = schema->validate(event.payload);
      if (!violations.empty()) {
        Error e{ErrorCode::schema_violation,
                "payload does not match the schema registered for " + event.event_type};
        e.with("violations", violations);
        co_return e;
      }
    } else {
      ctx.log("schema for " + event.event_type + " is unreadable: " + schema.error().message);
    }
  }
  if (event.event_id.empty()) {
    SS_CO_TRY(std::string id, co_await ctx.new_ulid());
    event.event_id = std::move(id);
  }
  std::string now = format_rfc3339_ms(ctx.now_ms());
  json params = json::array({event.event_id, tenant, event.event_type, event.entity_type,
                             event.entity_id, dump_json(event.payload),
                             text_or_null(event.idempotency_key), text_or_null(event.caused_by),
                             text_or_null(event.workflow_run_id), text_or_null(event.source_system),
                             event.occurred_at.empty() ? now : event.occurred_at, now,
                             event.sequence_no ? json(*event.sequence_no) : json(nullptr)});
  SS_CO_TRY(
      json inserted,
      co_await db.run_json("INSERT OR IGNORE INTO events (event_id, tenant_id, event_type, "
                           "entity_type, entity_id, payload_json, idempotency_key, caused_by, "
                           "workflow_run_id, source_system, occurred_at, recorded_at, sequence_no) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                           params));
  const json* meta = find_field(inserted, "meta");
  if (meta != nullptr && int_or(*meta, "changes", 0) == 1)
    co_return Appended{event.event_id, false};

  // Lost a race, or a redelivery: find the event that is already there.
  json lookup = json::array({event.event_id, tenant_key, text_or_null(event.idempotency_key)});
  SS_CO_TRY(json existing, co_await db.first_json(
                               "SELECT event_id, COALESCE(tenant_id, '') AS tenant_key FROM events "
                               "WHERE event_id = ?1 OR (COALESCE(tenant_id, '') = ?2 AND "
                               "idempotency_key = ?3) ORDER BY event_id = ?1 LIMIT 1",
                               lookup));
  const json* row = row_of(existing);
  if (row == nullptr)
    co_return Error{ErrorCode::internal, "append_event(): insert ignored, no row"};
  if (string_or(*row, "tenant_key", "") != tenant_key) {
    co_return Error{ErrorCode::conflict, "event_id is already used"}.with("field", "event_id");
  }
  co_return Appended{string_or(*row, "event_id", ""), true};
}

std::string glob_to_like(std::string_view glob) {
  std::string out;
  for (char c : glob) {
    if (c == '*') {
      out += '%';
    } else if (c == '?') {
      out += '_';
    } else if (c == '_' || c == '%' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

Result<ReadQuery> parse_read_query(const Request& req) {
  ReadQuery q;
  q.type_glob = req.query_param("type");
  if (!q.type_glob.empty()) {
    std::string why;
    if (!is_valid_glob(q.type_glob, &why)) {
      return Error{ErrorCode::invalid_request, "type: " + why}.with("field", "type");
    }
  }
  std::string entity = req.query_param("entity");
  if (!entity.empty()) {
    auto colon = entity.find(':');
    q.entity_type = entity.substr(0, colon);
    if (colon != std::string::npos) q.entity_id = entity.substr(colon + 1);
    if (q.entity_type.empty() || entity.size() > kMaxRefLength) {
      return Error{ErrorCode::invalid_request, "entity: use type or type:id"}.with("field",
                                                                                   "entity");
    }
  }
  q.after = req.query_param("after");
  if (!q.after.empty() && !is_ulid(q.after)) {
    return Error{ErrorCode::invalid_request, "after: must be an event_id (ULID)"}.with("field",
                                                                                       "after");
  }
  auto limit = req.int_param("limit", q.limit, 1, kMaxReadLimit);
  if (!limit) return std::move(limit).error();
  q.limit = static_cast<int>(*limit);
  return q;
}

Task<Result<json>> read_events(const ReadQuery& q) {
  std::string sql = "SELECT * FROM events WHERE event_id > ?1";
  json params = json::array({q.after});
  auto bind = [&](json value) {
    params.push_back(std::move(value));
    return "?" + std::to_string(params.size());
  };
  if (q.tenant_id) sql += " AND tenant_id = " + bind(*q.tenant_id);
  if (!q.type_glob.empty() && q.type_glob != "*") {
    sql += " AND event_type LIKE " + bind(glob_to_like(q.type_glob)) + " ESCAPE '\\'";
  }
  if (!q.entity_type.empty()) sql += " AND entity_type = " + bind(q.entity_type);
  if (!q.entity_id.empty()) sql += " AND entity_id = " + bind(q.entity_id);
  sql += " ORDER BY event_id LIMIT " + bind(q.limit);
  SS_CO_TRY(json result, co_await D1(kDb).all_json(sql, params));
  json events = json::array();
  for (const json& row : rows_of(result)) events.push_back(event_view(row));
  json next = nullptr;
  if (static_cast<int>(events.size()) == q.limit) next = events.back()["event_id"];
  co_return json{{"events", std::move(events)}, {"next", std::move(next)}};
}

}  // namespace ss::events
