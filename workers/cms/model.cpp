#include "workers/cms/model.h"

#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/text.h"

namespace ss::cms {

namespace {

std::optional<int> day_index(std::string_view key) {
  for (std::size_t i = 0; i < kDayKeys.size(); ++i) {
    if (key == kDayKeys[i]) return static_cast<int>(i);
  }
  return std::nullopt;
}

// Instants and dates must fall where the zone data is exact.
bool in_window(std::int64_t unix_ms) {
  return unix_ms >= days_from_civil(kFirstYear, 1, 1) * kMsPerDay &&
         unix_ms < days_from_civil(kLastYear + 1, 1, 1) * kMsPerDay;
}

std::string window_text() {
  return "between " + std::to_string(kFirstYear) + " and " + std::to_string(kLastYear);
}

// An optional RFC 3339 instant (absent or null → nullopt) in seconds. Any instant: an announcement
// may end "never" (2099) or have started long ago; only local dates and times (hours, date
// overrides) need the zone data's window.
Result<std::optional<std::int64_t>> optional_instant(const json& body, const char* field) {
  const json* v = find_field(body, field);
  if (v == nullptr || v->is_null()) return std::optional<std::int64_t>{};
  if (!v->is_string()) return field_error(field, "must be an RFC 3339 date-time or null");
  auto ms = parse_rfc3339(v->get<std::string>());
  if (!ms) return field_error(field, "must be an RFC 3339 date-time, e.g. 2026-05-25T14:00:00Z");
  std::int64_t seconds = *ms >= 0 ? *ms / 1000 : (*ms - 999) / 1000;
  return std::optional<std::int64_t>{seconds};
}

Result<std::string> optional_text(const json& body, const char* field, std::size_t limit) {
  const json* v = find_field(body, field);
  if (v == nullptr || v->is_null()) return std::string();
  if (!v->is_string()) return field_error(field, "must be a string");
  const std::string& s = v->get_ref<const std::string&>();
  if (code_points(s) > limit) {
    return field_error(field, "must be at most " + std::to_string(limit) + " characters");
  }
  return s;
}

Result<std::pair<std::string, std::int64_t>> date_field(const json& v, const char* field) {
  if (!v.is_string()) return field_error(field, "must be a date YYYY-MM-DD");
  const std::string& s = v.get_ref<const std::string&>();
  auto ms = parse_date(s);
  if (!ms || s.size() != 10) return field_error(field, "must be a valid date YYYY-MM-DD");
  if (!in_window(*ms)) return field_error(field, "must be " + window_text());
  return std::pair<std::string, std::int64_t>{s, *ms / kMsPerDay};
}

std::string rfc3339_seconds(std::int64_t seconds) { return format_rfc3339(seconds * 1000); }

// A creation or update time, null when there is none (an item of the manifest's bundled snapshot
// was never written through the API): never "" where the contract promises RFC 3339.
json stamp_or_null(const std::string& rfc3339) {
  return rfc3339.empty() ? json(nullptr) : json(rfc3339);
}

json instant_or_null(const std::optional<std::int64_t>& seconds) {
  return seconds ? json(rfc3339_seconds(*seconds)) : json(nullptr);
}

// Overrides and announcements as the Studio sends them (now set: "until" must be ahead of it) or as
// content_json() stored them (now unset: ids and timestamps are read back too).
Result<Override> read_override(const json& body, std::optional<std::int64_t> now) {
  if (!body.is_object()) return field_error("override", "must be an object");
  Override o;
  auto message = optional_text(body, "message", kMaxMessageLength);
  if (!message) return std::move(message).error();
  o.message = *message;
  const json* closed_now = find_field(body, "closedNow");
  if (closed_now != nullptr && !closed_now->is_null() && *closed_now != false) {
    if (*closed_now != true) {
      return field_error("closedNow", "must be true, or false or absent for a date range");
    }
    o.closed_now = true;
    auto until = optional_instant(body, "until");
    if (!until) return std::move(until).error();
    o.until = *until;
    if (now) {
      o.starts_at = *now;
      if (o.until && *o.until <= *now) return field_error("until", "must be in the future");
    } else {
      auto from = optional_instant(body, "from");
      if (!from) return std::move(from).error();
      o.starts_at = from->value_or(0);
    }
    return o;
  }
  const json* from = find_field(body, "from");
  if (from == nullptr) return field_error("from", "is required (or send closedNow: true)");
  auto from_date = date_field(*from, "from");
  if (!from_date) return std::move(from_date).error();
  std::tie(o.from, o.from_day) = *from_date;
  o.to = o.from;
  o.to_day = o.from_day;
  if (const json* to = find_field(body, "to"); to != nullptr && !to->is_null()) {
    auto to_date = date_field(*to, "to");
    if (!to_date) return std::move(to_date).error();
    std::tie(o.to, o.to_day) = *to_date;
  }
  if (o.to_day < o.from_day) return field_error("to", "must not be before from");
  if (o.to_day - o.from_day >= kMaxOverrideDays) {
    return field_error("to",
                       "a range covers at most " + std::to_string(kMaxOverrideDays) + " days");
  }
  const json* closed = find_field(body, "closed");
  if (closed != nullptr && !closed->is_null() && !closed->is_boolean()) {
    return field_error("closed", "must be true or false");
  }
  o.closed = closed != nullptr && *closed == true;
  const json* hours = find_field(body, "hours");
  if (hours != nullptr && !hours->is_null()) {
    if (o.closed) return field_error("hours", "a closed override has no hours");
    auto ranges = parse_ranges(*hours, "hours", now.has_value());  // strict in a Studio write
    if (!ranges) return std::move(ranges).error();
    o.hours = std::move(ranges).value();
  } else if (!o.closed) {
    return field_error("closed", "send closed: true or special hours for those days");
  }
  return o;
}

Result<Announcement> read_announcement(const json& body) {
  if (!body.is_object()) return field_error("announcement", "must be an object");
  Announcement a;
  const json* text = find_field(body, "text");
  if (text == nullptr || !text->is_string() || text->get_ref<const std::string&>().empty()) {
    return field_error("text", "is required: a non-empty string");
  }
  a.text = text->get<std::string>();
  if (code_points(a.text) > kMaxTextLength) {
    return field_error("text", "must be at most " + std::to_string(kMaxTextLength) + " characters");
  }
  if (const json* level = find_field(body, "level"); level != nullptr && !level->is_null()) {
    if (!level->is_string() || (*level != "info" && *level != "warning" && *level != "emergency")) {
      return field_error("level", "must be info, warning or emergency");
    }
    a.level = level->get<std::string>();
  }
  auto starts = optional_instant(body, "startsAt");
  if (!starts) return std::move(starts).error();
  auto ends = optional_instant(body, "endsAt");
  if (!ends) return std::move(ends).error();
  a.starts_at = *starts;
  a.ends_at = *ends;
  if (a.starts_at && a.ends_at && *a.ends_at <= *a.starts_at) {
    return field_error("endsAt", "must be after startsAt");
  }
  return a;
}

}  // namespace

Error field_error(const std::string& field, const std::string& problem) {
  Error e{ErrorCode::invalid_request, field + " " + problem};
  return name_field(e, field, problem);
}

std::optional<int> parse_hhmm(std::string_view s, bool allow_24) {
  if (s.size() != 5 || s[2] != ':') return std::nullopt;
  auto h = parse_decimal(s.substr(0, 2), 0, 24);
  auto m = parse_decimal(s.substr(3, 2), 0, 59);
  if (!h || !m || !kDigits.all_of(s.substr(0, 2)) || !kDigits.all_of(s.substr(3, 2))) {
    return std::nullopt;
  }
  if (*h == 24 && (!allow_24 || *m != 0)) return std::nullopt;
  return static_cast<int>(*h * 60 + *m);
}

std::string format_hhmm(int minutes) {
  char buf[6];
  buf[0] = static_cast<char>('0' + minutes / 600);
  buf[1] = static_cast<char>('0' + minutes / 60 % 10);
  buf[2] = ':';
  buf[3] = static_cast<char>('0' + minutes % 60 / 10);
  buf[4] = static_cast<char>('0' + minutes % 10);
  buf[5] = '\0';
  return buf;
}

Result<DayRanges> parse_ranges(const json& value, const std::string& field, bool strict) {
  if (!value.is_array()) return field_error(field, "must be a list of {open, close}");
  if (value.size() > kMaxRangesPerDay) {
    return field_error(field, "has more than " + std::to_string(kMaxRangesPerDay) + " ranges");
  }
  DayRanges out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    std::string at = field + "[" + std::to_string(i) + "]";
    const json& r = value[i];
    if (!r.is_object()) return field_error(at, "must be {open, close}");
    // In a Studio write, a key it does not know ("timezone" inside a range, a misspelt "opens") is
    // refused, as in the rest of the body, rather than dropped. A snapshot's ranges are read as
    // they were provisioned (extra keys left out), as the SDK reads the same manifest.
    if (strict) {
      if (Status known = check_known_keys(r, {"open", "close"}, at + "."); !known) {
        return std::move(known).error();
      }
    }
    auto open_text = get_string(r, "open");
    auto close_text = get_string(r, "close");
    std::optional<int> open = open_text ? parse_hhmm(*open_text, false) : std::nullopt;
    std::optional<int> close = close_text ? parse_hhmm(*close_text, true) : std::nullopt;
    if (!open) return field_error(at + ".open", "must be a time HH:MM from 00:00 to 23:59");
    if (!close) return field_error(at + ".close", "must be a time HH:MM from 00:00 to 24:00");
    if (*open == *close) return field_error(at + ".close", "must differ from open");
    out.push_back(TimeRange{*open, *close});
  }
  return out;
}

namespace {
// The hours object itself. `default_zone` (a snapshot's hours): the zone when none is named (the key
// left out or null); without it (Studio, stored content) the zone is required.
Result<Hours> hours_from_object(const json& body, const std::string* default_zone,
                                bool strict = false) {
  if (!body.is_object()) return field_error("hours", "must be an object");
  Hours hours;
  const json* tz = find_field(body, "timezone");
  if (default_zone != nullptr && (tz == nullptr || tz->is_null())) {
    hours.timezone = *default_zone;
  } else if (tz == nullptr || !tz->is_string()) {
    return field_error("timezone", default_zone != nullptr
                                       ? "must be an IANA time zone such as America/New_York, or "
                                         "left out for the tenant's zone"
                                       : "is required: an IANA time zone such as America/New_York");
  } else if (!Zone::find(tz->get_ref<const std::string&>())) {
    return field_error("timezone", "is not a time zone of the IANA tz database");
  } else {
    hours.timezone = tz->get<std::string>();
  }
  const json* weekly = find_field(body, "weekly");
  if (weekly == nullptr || !weekly->is_object()) {
    return field_error("weekly", "is required: an object with mon..sun lists");
  }
  for (auto it = weekly->begin(); it != weekly->end(); ++it) {
    auto day = day_index(it.key());
    if (!day) return field_error("weekly." + it.key(), "is not a day (mon, tue, …, sun)");
    auto ranges = parse_ranges(it.value(), "weekly." + it.key(), strict);
    if (!ranges) return std::move(ranges).error();
    hours.weekly[static_cast<std::size_t>(*day)] = std::move(ranges).value();
  }
  return hours;
}

// The hours of a Studio body (PUT /admin/v1/hours): the object itself, or the one it wraps as
// {"hours": …}. A snapshot's hours are never unwrapped (parse_seed_hours): the contract's hours are
// {timezone, weekly}, and the SDK reads a manifest's snapshot so (docs/cms.md).
const json& unwrapped_hours(const json& input) {
  const json* wrapped = find_field(input, "hours");
  return wrapped != nullptr && wrapped->is_object() && !input.contains("weekly") ? *wrapped : input;
}
}  // namespace

Result<Hours> parse_hours(const json& input) {
  return hours_from_object(unwrapped_hours(input), nullptr);
}

Result<Hours> parse_studio_hours(const json& input) {
  static const std::string kTenantZone;  // left out: "", the tenant's current zone (put_hours)
  return hours_from_object(unwrapped_hours(input), &kTenantZone, true);
}

Result<Hours> parse_seed_hours(const json& hours, const std::string& default_zone) {
  return hours_from_object(hours, &default_zone);
}

namespace {
// What a write may bring in (Studio, a tenant config's seed): text without control characters but
// newlines and tabs, as the leads service asks of a message. Not applied to what is already stored,
// so content written before the rule still reads.
Status plain_text(const std::string& value, const char* field) {
  if (!has_control_chars(value, true)) return Unit{};
  return field_error(field, "must not contain control characters (newlines and tabs are fine)");
}

// An announcement's text as written (a POST, a PATCH, a snapshot): plain, and something to read —
// "   " would show visitors an empty banner. Stored text is read as it is.
Status announcement_text(const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return field_error("text", "is required: a non-empty string (not only spaces)");
  }
  return plain_text(text, "text");
}

// A Studio override is one kind or the other (docs/cms.md "Model"): a key of the other kind is
// refused, never read past. {"closedNow":true,"from":"2026-12-24","to":"2026-12-25"} was an
// emergency closure from now with no end, and a date range's "until" was dropped. An emergency
// closure's "from" passes only as its view writes it (an instant: it starts when created).
Status one_kind(const json& body) {
  auto sent = [&body](const char* key) {
    const json* v = find_field(body, key);
    return v != nullptr && !v->is_null();
  };
  const json* closed_now = find_field(body, "closedNow");
  if (closed_now == nullptr || *closed_now != true) {
    if (!sent("until")) return Unit{};
    return field_error("until",
                       "belongs to an emergency closure (closedNow: true); a date range "
                       "ends on its to date");
  }
  static constexpr const char* kDateRangeOnly[] = {"to", "hours", "closed"};
  for (const char* key : kDateRangeOnly) {
    if (sent(key) && !(std::string_view(key) == "closed" && *find_field(body, key) == true)) {
      return field_error(key,
                         "is not a field of an emergency closure (closedNow: true), which "
                         "closes from now until its until; send a date range without closedNow");
    }
  }
  if (sent("from") && !optional_instant(body, "from")) {
    return field_error("from",
                       "an emergency closure (closedNow: true) starts when it is created; "
                       "send a date range without closedNow");
  }
  return Unit{};
}
}  // namespace

Result<Override> parse_override(const json& body, std::int64_t now) {
  if (body.is_object()) {
    if (Status kind = one_kind(body); !kind) return std::move(kind).error();
  }
  Result<Override> o = read_override(body, now);
  if (o) {
    if (Status text = plain_text(o->message, "message"); !text) return std::move(text).error();
  }
  return o;
}

Result<Announcement> parse_announcement(const json& body) {
  // level left out reads as info (docs/cms.md): lenient, as a client that sends only the text means
  // an ordinary announcement.
  Result<Announcement> a = read_announcement(body);
  if (a) {
    if (Status text = announcement_text(a->text); !text) return std::move(text).error();
  }
  return a;
}

namespace {
// `e` (a field_error) with its field named from the tenant config's root.
Error in_config(Error e, const std::string& prefix) {
  std::string field = string_or(e.extra, "field", "");
  std::string named = prefix + field;
  std::string problem = e.message;
  if (const json* fields = find_field(e.extra, "fields"); fields && fields->is_object()) {
    problem = string_or(*fields, field, problem);
  }
  return field_error(named, problem);
}
}  // namespace

Status validate_seed(const json& snapshot) {
  const std::string root = "config.fallback.";
  if (!snapshot.is_object()) return field_error("config.fallback", "must be an object");
  if (const json* hours = find_field(snapshot, "hours")) {
    if (!hours->is_object()) return field_error(root + "hours", "must be an object");
    // Hours that name no zone are valid in any: the tenant's (config.timezone, else UTC) applies
    // when they are read (content_from_seed), so any valid zone checks them here.
    auto parsed = parse_seed_hours(*hours, "UTC");
    if (!parsed) return in_config(std::move(parsed).error(), root + "hours.");
  }
  struct List {
    const char* key;
    std::size_t max;
  };
  for (List list : {List{"overrides", kMaxOverrides}, List{"announcements", kMaxAnnouncements}}) {
    const json* items = find_field(snapshot, list.key);
    if (items == nullptr) continue;
    const std::string name = root + list.key;
    if (!items->is_array()) return field_error(name, "must be a list");
    if (items->size() > list.max) {
      return field_error(name, "must have at most " + std::to_string(list.max) + " items");
    }
    for (std::size_t i = 0; i < items->size(); ++i) {
      const json& item = (*items)[i];
      std::optional<Error> problem;
      if (std::string_view(list.key) == "overrides") {
        if (auto o = read_override(item, std::nullopt); !o) {
          problem = std::move(o).error();
        } else if (Status text = plain_text(o->message, "message"); !text) {
          problem = std::move(text).error();
        }
      } else if (auto a = read_announcement(item); !a) {
        problem = std::move(a).error();
      } else if (Status text = announcement_text(a->text); !text) {
        problem = std::move(text).error();
      }
      if (problem) return in_config(std::move(*problem), name + "[" + std::to_string(i) + "].");
    }
  }
  return Unit{};
}

Result<Announcement> patch_announcement(Announcement current, const json& body) {
  if (!body.is_object()) return field_error("announcement", "must be an object");
  json merged = announcement_json(current);
  for (std::string_view key : kAnnouncementFields) {
    if (const json* v = find_field(body, key)) merged[std::string(key)] = *v;
  }
  auto next = read_announcement(merged);
  if (!next) return next;
  // The text a PATCH sends is held to the write's rule; one stored before it reads as it is, so an
  // `endsAt` alone still changes an old announcement.
  Status text = find_field(body, "text") != nullptr ? announcement_text(next->text)
                                                    : plain_text(next->text, "text");
  if (!text) return std::move(text).error();
  next->id = current.id;
  next->created_at = current.created_at;
  next->updated_at = current.updated_at;
  return next;
}

json ranges_json(const DayRanges& ranges) {
  json out = json::array();
  for (const TimeRange& r : ranges) {
    out.push_back({{"open", format_hhmm(r.open)}, {"close", format_hhmm(r.close)}});
  }
  return out;
}

json hours_json(const Hours& hours) {
  json weekly = json::object();
  // Monday first, as people read a week.
  for (std::size_t i : {1, 2, 3, 4, 5, 6, 0}) weekly[kDayKeys[i]] = ranges_json(hours.weekly[i]);
  return json_object({{"timezone", hours.timezone}, {"weekly", weekly}});
}

json override_json(const Override& o) {
  json out = json_object({{"id", o.id}});
  if (o.closed_now) {
    out["closedNow"] = true;
    out["from"] = rfc3339_seconds(o.starts_at);
    out["until"] = instant_or_null(o.until);
  } else {
    out["from"] = o.from;
    out["to"] = o.to;
    out["closed"] = o.closed;
    if (o.hours) out["hours"] = ranges_json(*o.hours);
  }
  out["message"] = o.message;
  out["createdAt"] = stamp_or_null(o.created_at);
  return out;
}

json announcement_json(const Announcement& a) {
  return json_object({{"id", a.id},
                      {"text", a.text},
                      {"level", a.level},
                      {"startsAt", instant_or_null(a.starts_at)},
                      {"endsAt", instant_or_null(a.ends_at)},
                      {"createdAt", stamp_or_null(a.created_at)},
                      {"updatedAt", stamp_or_null(a.updated_at)}});
}

json content_json(const Content& c) {
  json overrides = json::array();
  for (const Override& o : c.overrides) overrides.push_back(override_json(o));
  json announcements = json::array();
  for (const Announcement& a : c.announcements) announcements.push_back(announcement_json(a));
  return json_object({{"tenantId", c.tenant_id},
                      {"version", c.version},
                      {"hours", hours_json(c.hours)},
                      {"overrides", overrides},
                      {"announcements", announcements},
                      {"updatedAt", stamp_or_null(c.updated_at)}});
}

json public_content_json(const Content& c, std::int64_t now, const std::string& source) {
  json overrides = json::array();
  for (const Override& o : c.overrides) overrides.push_back(override_json(o));
  json announcements = json::array();
  for (const Announcement& a : c.announcements) {
    if (a.active_at(now)) announcements.push_back(announcement_json(a));
  }
  return json_object({{"tenantId", c.tenant_id},
                      {"version", c.version},
                      {"hours", hours_json(c.hours)},
                      {"overrides", overrides},
                      {"announcements", announcements},
                      {"source", source}});
}

Result<Override> stored_override(const json& item) {
  auto o = read_override(item, std::nullopt);
  if (!o) return o;
  o->id = string_or(item, "id", "");
  o->created_at = string_or(item, "createdAt", "");
  return o;
}

Result<Content> content_from_json(const json& doc) {
  if (!doc.is_object()) return Error{ErrorCode::internal, "content_from_json(): not an object"};
  Content c;
  c.tenant_id = string_or(doc, "tenantId", "");
  c.version = int_or(doc, "version", -1);
  c.updated_at = string_or(doc, "updatedAt", "");
  if (c.version < 0) return Error{ErrorCode::internal, "content_from_json(): no version"};
  const json* hours = find_field(doc, "hours");
  auto parsed = parse_hours(hours ? *hours : json());
  if (!parsed) return Error{ErrorCode::internal, "content_from_json(): " + parsed.error().message};
  c.hours = std::move(parsed).value();
  if (const json* list = find_field(doc, "overrides"); list && list->is_array()) {
    for (const json& item : *list) {
      auto o = stored_override(item);
      if (!o) return Error{ErrorCode::internal, "content_from_json(): " + o.error().message};
      c.overrides.push_back(std::move(o).value());
    }
  }
  if (const json* list = find_field(doc, "announcements"); list && list->is_array()) {
    for (const json& item : *list) {
      auto a = read_announcement(item);
      if (!a) return Error{ErrorCode::internal, "content_from_json(): " + a.error().message};
      a->id = string_or(item, "id", "");
      a->created_at = string_or(item, "createdAt", "");
      a->updated_at = string_or(item, "updatedAt", "");
      c.announcements.push_back(std::move(a).value());
    }
  }
  return c;
}

std::string seed_id(std::size_t index) {
  // A fixed ULID per seed item (time 0, the index as its random part): stable across reads and
  // kept when the seed is first written to D1, so Studio can address seed items by id.
  static constexpr char kCrockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  std::string id(26, '0');
  for (std::size_t i = 25; index > 0; --i, index /= 32) id[i] = kCrockford[index % 32];
  return id;
}

Content content_from_seed(const std::string& tenant_id, const json& snapshot,
                          const std::string& default_timezone) {
  Content c;
  c.tenant_id = tenant_id;
  c.hours.timezone = Zone::find(default_timezone) ? default_timezone : "UTC";
  if (const json* hours = find_field(snapshot, "hours")) {
    // Hours that name no zone are in the default one, as provisioning checked them (validate_seed)
    // and as the SDK reads a manifest's snapshot; hours that do not validate are left out.
    if (auto parsed = parse_seed_hours(*hours, c.hours.timezone))
      c.hours = std::move(parsed).value();
  }
  std::size_t n = 0;
  if (const json* list = find_field(snapshot, "overrides"); list && list->is_array()) {
    for (const json& item : *list) {
      auto o = read_override(item, std::nullopt);
      ++n;
      if (!o || c.overrides.size() >= kMaxOverrides) continue;
      o->id = seed_id(n);
      c.overrides.push_back(std::move(o).value());
    }
  }
  if (const json* list = find_field(snapshot, "announcements"); list && list->is_array()) {
    for (const json& item : *list) {
      auto a = read_announcement(item);
      ++n;
      if (!a || c.announcements.size() >= kMaxAnnouncements) continue;
      a->id = seed_id(n);
      c.announcements.push_back(std::move(a).value());
    }
  }
  return c;
}

}  // namespace ss::cms
