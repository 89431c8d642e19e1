#include "shared/effects.h"

#include "shared/json_util.h"

#include <algorithm>

namespace ss {

namespace {

Error malformed(std::string_view effect, std::string_view why) {
  return Error{ErrorCode::internal,
               std::string(effect) + "(): the host answered " + std::string(why)};
}

json d1_request(const char* kind, const std::string& binding, std::string_view sql, json params) {
  if (!params.is_array()) params = json::array();
  return json_object({{"kind", kind},
                      {"binding", binding},
                      {"sql", std::string(sql)},
                      {"params", std::move(params)}});
}

json http_request_json(const HttpCall& call) {
  json headers = json::object();
  for (const auto& [k, v] : call.headers) headers[k] = v;
  return json_object({{"method", call.method},
                      {"url", call.url},
                      {"headers", std::move(headers)},
                      {"body", call.body}});
}

D1Meta decode_meta(const json& value) {
  D1Meta meta;
  const json* m = find_field(value, "meta");
  if (m == nullptr) return meta;
  meta.changes = int_or(*m, "changes", 0);
  meta.last_row_id = int_or(*m, "last_row_id", 0);
  meta.rows_read = int_or(*m, "rows_read", 0);
  meta.rows_written = int_or(*m, "rows_written", 0);
  return meta;
}

// The rows of a d1.all / d1.first / batch entry: {"columns":[…],"rows":[[…]…]} (D1's compact form,
// what the hosts send) or {"results":[{…}…]} (rows as objects).
Status take_rows(json& value, D1Result& out, std::string_view effect) {
  if (json* rows = value.contains("rows") ? &value["rows"] : nullptr) {
    json* columns = value.contains("columns") ? &value["columns"] : nullptr;
    if (!rows->is_array() || columns == nullptr || !columns->is_array()) {
      return malformed(effect, "rows without their columns");
    }
    out.columns = std::move(*columns);
    out.rows = std::move(*rows);
    return Unit{};
  }
  if (json* rows = value.contains("results") ? &value["results"] : nullptr) {
    if (!rows->is_array()) return malformed(effect, "results that are not an array");
    out.rows = std::move(*rows);
  }
  return Unit{};
}

// {"columns","rows","meta"} or {"results","meta"} (all, run, each batch entry) → D1Result.
Result<D1Result> decode_d1_all(json&& value) {
  if (!value.is_object()) return malformed("d1", "a non-object");
  D1Result out;
  out.meta = decode_meta(value);
  if (Status taken = take_rows(value, out, "d1"); !taken.ok()) return taken.error();
  if (const json* held = find_field(value, "held"); held != nullptr) {
    if (!held->is_number_integer() || held->get<std::int64_t>() < 1) {
      return malformed("d1", "a held handle that is not a positive integer");
    }
    out.held = held->get<std::int64_t>();
  }
  out.count = out.rows.size();
  if (const json* count = find_field(value, "count"); count != nullptr) {
    if (!count->is_number_integer() || count->get<std::int64_t>() < 0 ||
        count->get<std::size_t>() < out.rows.size()) {
      return malformed("d1", "a count that is not the number of rows");
    }
    out.count = count->get<std::size_t>();
  }
  return out;
}

// {"columns","rows"} (at most one row) or {"row":{…}|null} → D1Result of zero or one row.
Result<D1Result> decode_d1_first(json&& value) {
  if (!value.is_object()) return malformed("d1.first", "a non-object");
  D1Result out;
  if (value.contains("row")) {
    if (value["row"].is_object()) out.rows.push_back(std::move(value["row"]));
    return out;
  }
  if (Status taken = take_rows(value, out, "d1.first"); !taken.ok()) return taken.error();
  if (out.rows.size() > 1) out.rows.erase(out.rows.begin() + 1, out.rows.end());
  return out;
}

Result<std::vector<D1Result>> decode_d1_batch(json&& value) {
  if (!value.is_array()) return malformed("d1.batch", "a non-array");
  std::vector<D1Result> out;
  out.reserve(value.size());
  for (json& entry : value) {
    Result<D1Result> r = decode_d1_all(std::move(entry));
    if (!r.ok()) return std::move(r).error();
    out.push_back(std::move(r).value());
  }
  return out;
}

Result<Unit> decode_unit(json&&) { return Unit{}; }

Result<std::optional<std::string>> decode_kv_value(json&& value) {
  const json* v = find_field(value, "value");
  if (v == nullptr || v->is_null()) return std::optional<std::string>{};
  if (!v->is_string()) return malformed("kv.get", "a non-string value");
  return std::optional<std::string>{v->get<std::string>()};
}

Result<FetchReply> decode_reply(json&& value) {
  auto status = get_int(value, "status");
  if (!status) return malformed("fetch", "no status");
  FetchReply reply;
  reply.status = static_cast<int>(*status);
  if (const json* h = find_field(value, "headers"); h && h->is_object()) {
    for (const auto& [k, v] : h->items()) {
      if (v.is_string()) reply.headers[k] = v.get<std::string>();
    }
  }
  if (value.contains("body") && value["body"].is_string()) {
    reply.body = std::move(value["body"].get_ref<std::string&>());
  }
  reply.elapsed_ms = int_or(value, "elapsedMs", 0);
  return reply;
}

Result<bool> decode_success(json&& value) {
  auto ok = get_bool(value, "success");
  if (!ok) return malformed("ratelimit", "no success flag");
  return *ok;
}

Result<std::string> decode_hex(json&& value) {
  auto hex = get_string(value, "hex");
  if (!hex || hex->size() != 64) return malformed("crypto", "a malformed digest");
  return *hex;
}

}  // namespace

// ---- RowReader
// -----------------------------------------------------------------------------------

void RowReader::corrupt(std::string_view column, std::string_view why) {
  if (!status_.ok()) return;  // report the first problem only
  Error e{ErrorCode::corrupt_row,
          "decode_row(): column " + std::string(column) + " " + std::string(why)};
  e.with("column", std::string(column));
  status_ = std::move(e);
}

const json& RowReader::no_columns() {
  static const json kNone = json::array();
  return kNone;
}

const json* RowReader::find(std::string_view name) const {
  if (row_.is_object()) return find_field(row_, name);
  if (!row_.is_array() || !columns_.is_array()) return nullptr;
  const std::size_t n = std::min(columns_.size(), row_.size());
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_ + k) % n;
    const json& c = columns_[i];
    if (c.is_string() && c.get_ref<const std::string&>() == name) {
      next_ = i + 1;
      return &row_[i];
    }
  }
  return nullptr;
}

const json* RowReader::column(std::string_view name, bool allow_null) {
  const json* v = find(name);
  if (v == nullptr) {
    corrupt(name, "is missing");
    return nullptr;
  }
  if (v->is_null()) {
    if (!allow_null) corrupt(name, "is NULL");
    return nullptr;
  }
  return v;
}

// A movable reader was built on a row it may change (RowReader(columns, json&, TakeValues)): the
// value is moved out and the cell set to NULL, so a decoder that read the column twice would get a
// corrupt_row ("is NULL") error, never a silently empty string.
std::string RowReader::take_string(const json& v) const {
  if (!movable_) return v.get<std::string>();
  json& cell = const_cast<json&>(v);
  std::string out = std::move(cell.get_ref<std::string&>());
  cell = nullptr;
  return out;
}

std::string RowReader::text(std::string_view name) {
  const json* v = column(name, false);
  if (v == nullptr) return {};
  if (!v->is_string()) {
    corrupt(name, "is not TEXT");
    return {};
  }
  return take_string(*v);
}

std::optional<std::string> RowReader::nullable_text(std::string_view name) {
  const json* v = column(name, true);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    corrupt(name, "is not TEXT");
    return std::nullopt;
  }
  return take_string(*v);
}

std::int64_t RowReader::integer(std::string_view name) {
  const json* v = column(name, false);
  if (v == nullptr) return 0;
  if (!v->is_number_integer()) {
    // D1 hands back REAL for integers above 2^53 in some paths; accept integral reals.
    if (v->is_number_float()) {
      double d = v->get<double>();
      // In range first: a double outside int64 (or NaN) has no conversion (undefined behaviour).
      if (d >= -0x1p63 && d < 0x1p63 && d == static_cast<double>(static_cast<std::int64_t>(d)))
        return static_cast<std::int64_t>(d);
    }
    corrupt(name, "is not INTEGER");
    return 0;
  }
  return v->get<std::int64_t>();
}

std::optional<std::int64_t> RowReader::nullable_integer(std::string_view name) {
  const json* v = column(name, true);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer()) {
    corrupt(name, "is not INTEGER");
    return std::nullopt;
  }
  return v->get<std::int64_t>();
}

double RowReader::real(std::string_view name) {
  const json* v = column(name, false);
  if (v == nullptr) return 0;
  if (!v->is_number()) {
    corrupt(name, "is not a number");
    return 0;
  }
  return v->get<double>();
}

json RowReader::json_text(std::string_view name) {
  std::string text_value = text(name);
  if (!status_.ok()) return json(nullptr);
  auto parsed = parse_json(text_value);
  if (!parsed) {
    corrupt(name, "is not valid JSON");
    return json(nullptr);
  }
  return std::move(*parsed);
}

// ---- D1
// ------------------------------------------------------------------------------------------

std::optional<json> D1Result::first() const {
  if (rows.empty()) return std::nullopt;
  const json& row = rows[0];
  if (!row.is_array()) return row;
  json out = json::object();
  for (std::size_t i = 0; i < columns.size() && i < row.size(); ++i) {
    if (columns[i].is_string()) out.emplace(columns[i].get<std::string>(), row[i]);
  }
  return out;
}

json D1::request(const char* kind, std::string_view sql, json params) const {
  return d1_request(kind, binding_, sql, std::move(params));
}
Result<D1Result> D1::first_result(json&& value) { return decode_d1_first(std::move(value)); }
Result<D1Result> D1::all_result(json&& value) { return decode_d1_all(std::move(value)); }

EffectOf<D1Result> D1::all(std::string_view sql, json params) const {
  return {d1_request("d1.all", binding_, sql, std::move(params)), decode_d1_all};
}
EffectOf<D1Result> D1::all_holding(std::string_view sql, json params, std::string_view column,
                                   int tail, int hold_limit) const {
  json request = d1_request("d1.all", binding_, sql, std::move(params));
  request["hold"] = std::string(column);
  if (tail >= 0) request["tail"] = tail;
  if (hold_limit >= 0) request["holdLimit"] = hold_limit;
  return {std::move(request), decode_d1_all};
}
EffectOf<D1Result> D1::first(std::string_view sql, json params) const {
  return {d1_request("d1.first", binding_, sql, std::move(params)), decode_d1_first};
}
EffectOf<D1Result> D1::run(std::string_view sql, json params) const {
  return {d1_request("d1.run", binding_, sql, std::move(params)), decode_d1_all};
}
Status check_batch_answered(const std::vector<D1Result>& results, std::size_t sent) {
  if (results.size() != sent) {
    return Error{ErrorCode::internal, "d1.batch answered the wrong number of results"};
  }
  return Unit{};
}

EffectOf<std::vector<D1Result>> D1::batch(const std::vector<D1Statement>& statements) const {
  json list = json::array();
  for (const auto& s : statements)
    list.push_back(json_object({{"sql", s.sql}, {"params", s.params}}));
  return {
      json_object({{"kind", "d1.batch"}, {"binding", binding_}, {"statements", std::move(list)}}),
      decode_d1_batch};
}

// ---- KV
// ------------------------------------------------------------------------------------------

EffectOf<std::optional<std::string>> Kv::get(std::string key) const {
  return {json_object({{"kind", "kv.get"}, {"binding", binding_}, {"key", std::move(key)}}),
          decode_kv_value};
}
EffectOf<Unit> Kv::put(std::string key, std::string value, std::optional<int> ttl_seconds) const {
  json r = json_object({{"kind", "kv.put"},
                        {"binding", binding_},
                        {"key", std::move(key)},
                        {"value", std::move(value)}});
  if (ttl_seconds) r["ttlSeconds"] = *ttl_seconds;
  return {std::move(r), decode_unit};
}
EffectOf<Unit> Kv::remove(std::string key) const {
  return {json_object({{"kind", "kv.delete"}, {"binding", binding_}, {"key", std::move(key)}}),
          decode_unit};
}

// ---- HTTP
// ----------------------------------------------------------------------------------------

std::string FetchReply::header(std::string_view name) const {
  std::string lower(name);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  auto it = headers.find(lower);
  return it == headers.end() ? std::string() : it->second;
}

EffectOf<FetchReply> fetch(const HttpCall& call) {
  json r = http_request_json(call);
  r["kind"] = "fetch";
  r["timeoutMs"] = call.timeout_ms;
  return {std::move(r), decode_reply};
}

EffectOf<FetchReply> fetch_head_answers(const HttpCall& call) {
  json r = http_request_json(call);
  r["kind"] = "fetch";
  r["timeoutMs"] = call.timeout_ms;
  r["bodyOptional"] = true;
  return {std::move(r), decode_reply};
}

EffectOf<FetchReply> service_call_head_answers(std::string binding, const HttpCall& call) {
  json request = http_request_json(call);
  request["bodyOptional"] = true;
  return {json_object({{"kind", "service"},
                       {"binding", std::move(binding)},
                       {"request", std::move(request)},
                       {"timeoutMs", call.timeout_ms}}),
          decode_reply};
}

EffectOf<FetchReply> service_call(std::string binding, const HttpCall& call) {
  return {json_object({{"kind", "service"},
                       {"binding", std::move(binding)},
                       {"request", http_request_json(call)},
                       {"timeoutMs", call.timeout_ms}}),
          decode_reply};
}

// ---- the rest
// ------------------------------------------------------------------------------------

EffectOf<Unit> queue_send(std::string binding, json body, int delay_seconds) {
  json r = json_object(
      {{"kind", "queue.send"}, {"binding", std::move(binding)}, {"body", std::move(body)}});
  if (delay_seconds > 0) r["delaySeconds"] = delay_seconds;
  return {std::move(r), decode_unit};
}

namespace {
// Issues its effect at once and, when it succeeds, ends with nothing else: wait_until_quiet's promise.
Task<Status> sent_or_logged(Context& ctx, EffectOf<Unit> effect, std::string what) {
  Status sent = co_await std::move(effect);
  if (!sent) ctx.log(what + ": " + sent.error().message);
  co_return Unit{};
}
}  // namespace

void wait_until_sent(Context& ctx, EffectOf<Unit> effect, std::string what) {
  ctx.wait_until_quiet(sent_or_logged(ctx, std::move(effect), std::move(what)));
}

EffectOf<Unit> queue_send_batch(std::string binding, std::vector<json> bodies) {
  json messages = json::array();
  for (json& body : bodies) messages.push_back(json_object({{"body", std::move(body)}}));
  json r = json_object(
      {{"kind", "queue.sendBatch"}, {"binding", std::move(binding)}, {"messages", messages}});
  return {std::move(r), decode_unit};
}

EffectOf<Unit> analytics_write(std::string binding, json blobs, json doubles, json indexes) {
  return {json_object({{"kind", "ae.write"},
                       {"binding", std::move(binding)},
                       {"blobs", std::move(blobs)},
                       {"doubles", std::move(doubles)},
                       {"indexes", std::move(indexes)}}),
          decode_unit};
}

EffectOf<bool> rate_limit(std::string binding, std::string key) {
  return {json_object(
              {{"kind", "ratelimit"}, {"binding", std::move(binding)}, {"key", std::move(key)}}),
          decode_success};
}

EffectOf<std::string> sha256_hex(std::string data) {
  return {json_object({{"kind", "crypto.sha256"}, {"data", std::move(data)}}), decode_hex};
}

EffectOf<std::string> hmac_sha256_hex(std::string key, std::string data) {
  return {json_object(
              {{"kind", "crypto.hmac_sha256"}, {"key", std::move(key)}, {"data", std::move(data)}}),
          decode_hex};
}

EffectOf<Unit> sleep_ms(int ms) {
  return {json_object({{"kind", "sleep"}, {"ms", ms}}), decode_unit};
}

}  // namespace ss
