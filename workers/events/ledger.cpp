#include "workers/events/ledger.h"

#include "shared/field_error.h"

#include "shared/glob.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/runtime.h"
#include "shared/text.h"
#include "shared/ulid.h"
#include "workers/events/json_schema.h"

namespace ss::events {

namespace {

Error invalid(const std::string& field, const std::string& message) {
  return invalid_field(field, message, ErrorCode::invalid_event);
}

bool is_event_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

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

std::optional<std::string> optional_of(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

template <std::size_t N>
bool starts_with_any(std::string_view s, const std::string_view (&prefixes)[N]) {
  for (std::string_view prefix : prefixes) {
    if (s.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

}  // namespace

bool is_reserved_idempotency_key(std::string_view key) {
  return starts_with_any(key, kReservedKeyPrefixes);
}

bool is_ledger_event_type(std::string_view type) {
  return starts_with_any(type, kLedgerTypePrefixes);
}

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
    } else if (!is_event_name_char(c)) {
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
  if (ref->size() > kMaxRefLength) {
    return invalid("entity_ref", "must be at most " + std::to_string(kMaxRefLength) + " bytes");
  }
  auto colon = ref->find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == ref->size()) {
    return invalid("entity_ref", "must look like type:id");
  }
  e.entity_type = ref->substr(0, colon);
  e.entity_id = ref->substr(colon + 1);
  for (char c : e.entity_type) {
    if (!is_event_name_char(c))
      return invalid("entity_ref", "the type must be lower case [a-z0-9_]");
  }
  for (char c : e.entity_id) {
    if (static_cast<unsigned char>(c) < 0x20)
      return invalid("entity_ref", "the id has control characters");
  }

  // Required, as event_type and entity_ref are: an event without data is `"payload": {}`.
  const json* payload = find_field(body, "payload");
  if (payload == nullptr || !payload->is_object()) {
    return invalid("payload", "is required, a JSON object ({} for none)");
  }
  if (dump_json(*payload).size() > kMaxPayloadBytes) {
    return invalid_field("payload", "larger than 64 KiB", ErrorCode::payload_too_large);
  }
  e.payload = *payload;

  auto text = [&](const char* field, std::size_t max, std::string& out) -> Status {
    auto v = optional_text(body, field, max);
    if (!v) return std::move(v).error();
    out = std::move(v).value();
    return Unit{};
  };
  if (auto s = text("event_id", 64, e.event_id); !s) return s.error();
  e.event_id = canonical_ulid(e.event_id);  // either case, stored upper case
  if (!e.event_id.empty() && !is_ulid(e.event_id)) {
    return invalid("event_id", "must be a ULID (26 characters, Crockford base32)");
  }
  if (auto s = text("idempotency_key", kMaxRefLength, e.idempotency_key); !s) return s.error();
  if (is_reserved_idempotency_key(e.idempotency_key)) {
    return invalid("idempotency_key",
                   "the ledger reserves keys starting with workflow.run_started:, "
                   "workflow.run_failed:, workflow.run_completed:, tenant.health_changed:, "
                   "anomaly:, fanout_capped:, retention: and ledger: for its own records");
  }
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
    // At most 2^53 - 1: the value crosses JavaScript (D1's bindings, every reader's JSON.parse) as
    // a double, which would keep a larger one inexactly (9007199254740993 read back as ...992).
    static constexpr std::int64_t kMaxSafeInteger = 9007199254740991;
    auto n = get_int(body, "sequence_no");
    if (!n || *n < 0 || *n > kMaxSafeInteger)
      return invalid("sequence_no", "must be an integer from 0 to 9007199254740991");
    e.sequence_no = *n;
  }
  return e;
}

Task<Result<Appended>> append_event(Context& ctx, NewEvent event) {
  std::string tenant_key = event.tenant_id.value_or("");
  const bool own_id = !event.event_id.empty();  // the producer sent its own ULID

  std::string now = format_rfc3339_stamp(ctx.now_ms());
  EventInsert row;
  if (own_id) {
    row.event_id = event.event_id;
  } else {
    SS_CO_TRY(std::string id, co_await ctx.new_ulid());
    row.event_id = std::move(id);
  }
  row.tenant_id = event.tenant_id;
  row.event_type = event.event_type;
  row.entity_type = event.entity_type;
  row.entity_id = event.entity_id;
  row.payload_json = dump_json(event.payload);
  row.idempotency_key = optional_of(event.idempotency_key);
  row.caused_by = optional_of(event.caused_by);
  row.workflow_run_id = optional_of(event.workflow_run_id);
  row.source_system = optional_of(event.source_system);
  row.occurred_at = event.occurred_at.empty() ? now : event.occurred_at;
  row.recorded_at = now;
  row.sequence_no = event.sequence_no;

  // One D1 round trip for an event whose type has no schema: written at once (a repeated key or
  // event_id is ignored by the ledger's unique indexes), and the schema and the key's event read
  // after the attempt. With a schema, nothing is written yet: validated first, then inserted.
  SS_CO_TRY(EmitAttempt first, co_await EventStore::insert_unless_schema(row, tenant_key));
  if (first.inserted) co_return Appended{row.event_id, false};
  const EmitLookup& found = first.lookup;
  if (found.existing_event_id) co_return Appended{*found.existing_event_id, true};
  if (found.schema_json) {
    auto doc = parse_json(*found.schema_json);
    auto schema = doc ? JsonSchema::parse(*doc) : Result<JsonSchema>(doc.error());
    if (schema) {
      std::vector<json> violations = schema->validate(event.payload);
      if (!violations.empty()) {
        // A redelivery of an event already stored under its producer's own id is that event,
        // whatever schema was registered since: the retry hears "duplicate" (as a repeated
        // idempotency_key does), not that the event it already wrote was refused.
        if (own_id) {
          SS_CO_TRY(std::optional<std::string> stored,
                    co_await EventStore::find_existing(event.event_id, tenant_key, std::nullopt));
          if (stored) co_return Appended{*stored, true};
        }
        Error e{ErrorCode::schema_violation,
                "payload does not match the schema registered for " + event.event_type};
        // The one input at fault is named as every such error names it (docs/contract.md): the
        // payload, with its first violation as the problem; all of them in `violations`.
        std::string where = string_or(violations.front(), "path", "");
        name_field(
            e, "payload",
            (where.empty() ? where : where + ": ") + string_or(violations.front(), "message", ""));
        e.with("violations", violations);
        co_return e;
      }
    } else {
      ctx.log("schema for " + event.event_type + " is unreadable: " + schema.error().message);
    }
    SS_CO_TRY(bool inserted, co_await EventStore::insert(row));
    if (inserted) co_return Appended{row.event_id, false};
  }

  // Lost a race, or a redelivery: find the event that is already there.
  // Only this tenant's events are looked at: event_id is unique per tenant, so another tenant's
  // event with the same id is a different event (and its existence is not revealed).
  SS_CO_TRY(std::optional<std::string> existing,
            co_await EventStore::find_existing(row.event_id, tenant_key, row.idempotency_key));
  if (!existing) co_return Error{ErrorCode::internal, "append_event(): insert ignored, no row"};
  co_return Appended{*existing, true};
}

Status check_producer_event_id(const std::string& event_id, std::int64_t now_ms) {
  auto minted = ulid_time_ms(event_id);
  if (!minted) {
    return invalid("event_id", "must be a ULID (26 characters, Crockford base32, upper case)");
  }
  if (*minted > now_ms + kMaxEventIdSkewMs) {
    return invalid("event_id", "its timestamp is more than " +
                                   std::to_string(kMaxEventIdSkewMs / 60000) +
                                   " minutes in the future");
  }
  return Unit{};
}

bool parse_after(std::string after, std::string& id, std::optional<std::int64_t>& seq) {
  bool well_formed = true;
  if (auto dot = after.find('.'); dot != std::string::npos) {
    seq = parse_decimal(std::string_view(after).substr(dot + 1), 0, INT64_MAX);
    well_formed = seq.has_value();
    after.resize(dot);
  }
  id = canonical_ulid(after);
  return well_formed && ((id.empty() && !seq) || is_ulid(id));
}

Result<ReadQuery> parse_read_query(const Request& req) {
  ReadQuery q;
  q.type_glob = req.query_param("type");
  if (!q.type_glob.empty()) {
    // A subscription glob may hold '-', which no event type does: such a filter could never
    // match, so it is refused rather than answered with an empty page. Checked before the glob's
    // own rules, so that any character out of place is answered with what a type holds.
    if (q.type_glob.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._*?") !=
        std::string::npos) {
      return invalid_field("type",
                           "an event type holds only a-z, 0-9, '_' and '.' (glob: '*', '?')");
    }
    std::string why;
    if (!is_valid_glob(q.type_glob, &why)) {
      return invalid_field("type", why);
    }
    // D1 matches a GLOB pattern of at most 50 bytes; an exact type (no wildcard) may have 128.
    // Refused, not answered 503 by D1.
    if (q.type_glob.size() > kMaxTypeGlobPattern &&
        q.type_glob.find_first_of("*?") != std::string::npos) {
      return invalid_field("type", "a type filter with '*' or '?' is at most " +
                                       std::to_string(kMaxTypeGlobPattern) +
                                       " characters (an exact event type may have 128)");
    }
  }
  // An entity_ref, type:id as on POST (docs/contract.md "events-service"), or a bare type for every
  // entity of that type: the type [a-z0-9_]+, the id (which may hold colons) non-empty and without
  // control characters. Anything else could never match and is refused.
  std::string entity = req.query_param("entity");
  if (!entity.empty()) {
    if (entity.size() > kMaxRefLength) {
      return invalid_field("entity", "must be at most " + std::to_string(kMaxRefLength) +
                                         " bytes, as an entity_ref");
    }
    auto colon = entity.find(':');
    q.entity_type = entity.substr(0, colon);
    if (colon != std::string::npos) q.entity_id = entity.substr(colon + 1);
    bool ok = !q.entity_type.empty() && (colon == std::string::npos || !q.entity_id.empty());
    for (char c : q.entity_type) ok = ok && is_event_name_char(c);
    for (char c : q.entity_id) ok = ok && static_cast<unsigned char>(c) >= 0x20;
    if (!ok) {
      return invalid_field("entity",
                           "use type:id or a bare type (lower case [a-z0-9_], as in entity_ref)");
    }
  }
  if (!parse_after(req.query_param("after"), q.after, q.after_seq)) {
    return invalid_field("after", "must be an event_id (ULID) or a page's next");
  }
  std::string order = req.query_param("order");
  if (!order.empty() && order != "asc" && order != "desc") {
    return invalid_field("order", "use asc or desc");
  }
  q.newest_first = order == "desc";
  auto limit = req.int_param("limit", q.limit, 1, kMaxReadLimit);
  if (!limit) return std::move(limit).error();
  q.limit = static_cast<int>(*limit);
  return q;
}

namespace {
EventFilter filter_of(const ReadQuery& q) {
  EventFilter filter;
  filter.tenant_id = q.tenant_id;
  if (!q.type_glob.empty() && q.type_glob != "*") filter.type_glob = q.type_glob;
  filter.entity_type = q.entity_type;
  filter.entity_id = q.entity_id;
  filter.after = q.after;
  filter.after_seq = q.after_seq;
  filter.newest_first = q.newest_first;
  filter.limit = q.limit;
  return filter;
}
}  // namespace

Task<Result<Response>> read_events_response(const ReadQuery& q) {
  SS_CO_TRY(EventPage page, co_await EventStore::read_page(filter_of(q)));
  const auto limit = static_cast<std::size_t>(q.limit);
  // The read goes one row past the page: that row says another page follows, and is not shown.
  const bool more = page.count > limit;
  const std::size_t shown = more ? limit : page.count;
  Response res = Response::text(200, "{\"events\":[", "application/json; charset=utf-8");
  res.set_header("cache-control", "no-store");  // tenant data, as every JSON answer (json_body)
  if (page.held != 0) {
    res.splices.push_back(Splice{res.body.size(), page.held, ","});  // the page's views alone
  } else {
    // The host sent the views along (every row, each with its view): joined here.
    if (page.rows.size() != page.count) {
      co_return Error{ErrorCode::internal, "a read page without its views"};
    }
    for (std::size_t i = 0; i < shown; ++i) {
      if (!page.rows[i].view) co_return Error{ErrorCode::internal, "a read page without its views"};
      if (i > 0) res.body += ',';
      res.body += *page.rows[i].view;
    }
  }
  res.body += "],\"next\":";
  if (more && page.rows.size() < 2)
    co_return Error{ErrorCode::internal, "a read page without its tail"};
  if (more) {
    // The page's last row, the one before the extra row (rows are the last ones read).
    // A tenant's event_ids are unique; across tenants (an operator without tenant=) the cursor
    // carries the position too, so that a page never ends on an id another tenant also holds.
    const EventPageRow& last = page.rows[page.rows.size() - 2];
    append_json_string(
        res.body, q.tenant_id ? last.event_id : last.event_id + "." + std::to_string(last.seq));
  } else {
    res.body += "null";
  }
  res.body += '}';
  co_return res;
}

}  // namespace ss::events
