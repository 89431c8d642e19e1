#pragma once
// Typed constructors for every effect of docs/abi.md. Each returns an awaitable yielding
// Result<json>; the thin wrappers (D1, Kv, …) mirror workers-rs's idiomatic layer: name the binding
// once, then call.

#include "shared/runtime.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ss {

struct D1Statement {
  std::string sql;
  json params = json::array();
};

// A D1 database binding. SQL uses ?1-style parameters; every tenant query binds tenant_id.
class D1 {
 public:
  explicit D1(std::string binding) : binding_(std::move(binding)) {}
  Effect all(std::string sql, json params = json::array()) const;    // {"results":[…],"meta"}
  Effect first(std::string sql, json params = json::array()) const;  // {"row":{…}|null}
  Effect run(std::string sql, json params = json::array()) const;    // {"meta":{"changes",…}}
  Effect batch(const std::vector<D1Statement>& statements) const;    // one transaction
  const std::string& binding() const { return binding_; }

 private:
  std::string binding_;
};

class Kv {
 public:
  explicit Kv(std::string binding) : binding_(std::move(binding)) {}
  Effect get(std::string key) const;  // {"value":"…"|null}
  Effect put(std::string key, std::string value,
             std::optional<int> ttl_seconds = std::nullopt) const;
  Effect remove(std::string key) const;

 private:
  std::string binding_;
};

struct HttpCall {
  std::string method = "GET";
  std::string url;
  std::map<std::string, std::string> headers;
  std::string body;
  int timeout_ms = 10000;
};

// Outbound fetch(); the value carries "status", "headers", "body" and "elapsedMs" measured by the
// host.
Effect fetch(const HttpCall& call);
// A request to another worker over a Service Binding; value {"status","headers","body"}.
Effect service_call(std::string binding, const HttpCall& call);
Effect queue_send(std::string binding, json body, int delay_seconds = 0);
Effect analytics_write(std::string binding, json blobs, json doubles, json indexes);
Effect rate_limit(std::string binding, std::string key);    // {"success":bool}
Effect sha256_hex(std::string data);                        // {"hex"}
Effect hmac_sha256_hex(std::string key, std::string data);  // {"hex"}
Effect sleep_ms(int ms);

// Runs an awaitable as a Task so it can take part in when_all().
template <class Awaitable>
Task<Result<json>> as_task(Awaitable awaitable) {
  co_return co_await std::move(awaitable);
}

// Convenience for the value shapes above.
Task<Result<std::string>> sha256(std::string data);
const json& rows_of(const json& d1_all_value);   // the "results" array (or an empty one)
const json* row_of(const json& d1_first_value);  // the row, or nullptr

}  // namespace ss
