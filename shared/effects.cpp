#include "shared/effects.h"

#include "shared/json_util.h"

namespace ss {

namespace {
json d1_request(const char* kind, const std::string& binding, std::string sql, json params) {
  if (!params.is_array()) params = json::array();
  return json{
      {"kind", kind}, {"binding", binding}, {"sql", std::move(sql)}, {"params", std::move(params)}};
}

json http_request_json(const HttpCall& call) {
  json headers = json::object();
  for (const auto& [k, v] : call.headers) headers[k] = v;
  return json{{"method", call.method},
              {"url", call.url},
              {"headers", std::move(headers)},
              {"body", call.body}};
}
}  // namespace

Effect D1::all(std::string sql, json params) const {
  return Effect(d1_request("d1.all", binding_, std::move(sql), std::move(params)));
}
Effect D1::first(std::string sql, json params) const {
  return Effect(d1_request("d1.first", binding_, std::move(sql), std::move(params)));
}
Effect D1::run(std::string sql, json params) const {
  return Effect(d1_request("d1.run", binding_, std::move(sql), std::move(params)));
}
Effect D1::batch(const std::vector<D1Statement>& statements) const {
  json list = json::array();
  for (const auto& s : statements) list.push_back({{"sql", s.sql}, {"params", s.params}});
  return Effect(json{{"kind", "d1.batch"}, {"binding", binding_}, {"statements", std::move(list)}});
}

Effect Kv::get(std::string key) const {
  return Effect(json{{"kind", "kv.get"}, {"binding", binding_}, {"key", std::move(key)}});
}
Effect Kv::put(std::string key, std::string value, std::optional<int> ttl_seconds) const {
  json r{{"kind", "kv.put"},
         {"binding", binding_},
         {"key", std::move(key)},
         {"value", std::move(value)}};
  if (ttl_seconds) r["ttlSeconds"] = *ttl_seconds;
  return Effect(std::move(r));
}
Effect Kv::remove(std::string key) const {
  return Effect(json{{"kind", "kv.delete"}, {"binding", binding_}, {"key", std::move(key)}});
}

Effect fetch(const HttpCall& call) {
  json r = http_request_json(call);
  r["kind"] = "fetch";
  r["timeoutMs"] = call.timeout_ms;
  return Effect(std::move(r));
}

Effect service_call(std::string binding, const HttpCall& call) {
  return Effect(json{
      {"kind", "service"}, {"binding", std::move(binding)}, {"request", http_request_json(call)}});
}

Effect queue_send(std::string binding, json body, int delay_seconds) {
  json r{{"kind", "queue.send"}, {"binding", std::move(binding)}, {"body", std::move(body)}};
  if (delay_seconds > 0) r["delaySeconds"] = delay_seconds;
  return Effect(std::move(r));
}

Effect analytics_write(std::string binding, json blobs, json doubles, json indexes) {
  return Effect(json{{"kind", "ae.write"},
                     {"binding", std::move(binding)},
                     {"blobs", std::move(blobs)},
                     {"doubles", std::move(doubles)},
                     {"indexes", std::move(indexes)}});
}

Effect rate_limit(std::string binding, std::string key) {
  return Effect(
      json{{"kind", "ratelimit"}, {"binding", std::move(binding)}, {"key", std::move(key)}});
}

Effect sha256_hex(std::string data) {
  return Effect(json{{"kind", "crypto.sha256"}, {"data", std::move(data)}});
}

Effect hmac_sha256_hex(std::string key, std::string data) {
  return Effect(
      json{{"kind", "crypto.hmac_sha256"}, {"key", std::move(key)}, {"data", std::move(data)}});
}

Effect sleep_ms(int ms) { return Effect(json{{"kind", "sleep"}, {"ms", ms}}); }

Task<Result<std::string>> sha256(std::string data) {
  SS_CO_TRY(json value, co_await sha256_hex(std::move(data)));
  auto hex = get_string(value, "hex");
  if (!hex || hex->size() != 64) co_return Error{ErrorCode::internal, "sha256(): malformed digest"};
  co_return *hex;
}

const json& rows_of(const json& value) {
  static const json kEmpty = json::array();
  const json* rows = find_field(value, "results");
  return rows && rows->is_array() ? *rows : kEmpty;
}

const json* row_of(const json& value) {
  const json* row = find_field(value, "row");
  return row && row->is_object() ? row : nullptr;
}

}  // namespace ss
