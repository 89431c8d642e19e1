#pragma once
// One closed set of error codes for the whole platform. Each code has exactly one HTTP status, so a
// handler never chooses a status by hand and the contract's JSON error body is built in one place.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ss {

using json = nlohmann::json;

#define SS_ERROR_CODES(X)                \
  X(invalid_request, 400)                \
  X(invalid_json, 400)                   \
  X(invalid_lead, 400)                   \
  X(invalid_event, 400)                  \
  X(unsupported_capability_version, 400) \
  X(unauthenticated_tenant, 401)         \
  X(unauthorized, 401)                   \
  X(forbidden, 403)                      \
  X(turnstile_failed, 403)               \
  X(not_found, 404)                      \
  X(method_not_allowed, 405)             \
  X(conflict, 409)                       \
  X(payload_too_large, 413)              \
  X(unsupported_media_type, 415)         \
  X(schema_violation, 422)               \
  X(rate_limited, 429)                   \
  X(internal, 500)                       \
  X(corrupt_row, 500)                    \
  X(dependency_unavailable, 503)         \
  X(service_unavailable, 503)

enum class ErrorCode {
#define SS_X(name, status) name,
  SS_ERROR_CODES(SS_X)
#undef SS_X
};

std::string_view error_code_name(ErrorCode code);
int error_code_status(ErrorCode code);

// A failure as a value. `extra` holds contract-specific fields (e.g. "fields" for validation
// errors); `retry_after` and `allow` become the Retry-After and Allow headers.
struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;
  json extra = json::object();
  std::optional<int> retry_after;
  std::string allow;
  // For effect failures: the host's code (network_error, timeout, …); not serialised.
  std::string cause;

  Error() = default;
  Error(ErrorCode c, std::string m) : code(c), message(std::move(m)) {}

  int status() const { return error_code_status(code); }
  // {"error":{"code":"…","message":"…", …extra}}
  json body() const;
  Error& with(const std::string& key, json value) {
    extra[key] = std::move(value);
    return *this;
  }
};

struct Unit {};

// Either a value or an Error. Converts implicitly from both so `co_return Error{…}` and
// `co_return value` read naturally in a Task<Result<T>>.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

using Status = Result<Unit>;

#define SS_CAT_(a, b) a##b
#define SS_CAT(a, b) SS_CAT_(a, b)

// Inside a coroutine returning Task<Result<…>>: evaluate `expr` (which may contain co_await),
// return its error if it failed, otherwise bind the value to `decl`.
//   SS_CO_TRY(auto rows, co_await d1.all(sql, params));
#define SS_CO_TRY(decl, expr)                                                                  \
  auto SS_CAT(ss_try_, __LINE__) = (expr);                                                     \
  if (!SS_CAT(ss_try_, __LINE__).ok()) co_return std::move(SS_CAT(ss_try_, __LINE__)).error(); \
  decl = std::move(SS_CAT(ss_try_, __LINE__)).value()

// The same for a Status (no value to bind).
#define SS_CO_CHECK(expr)                                        \
  do {                                                           \
    auto ss_check_ = (expr);                                     \
    if (!ss_check_.ok()) co_return std::move(ss_check_).error(); \
  } while (0)

// `co_return co_await expr;` as g++-12 needs it written: the awaited value in a named local first
// (g++-12 destroys the temporary of `co_return co_await …` twice; docs/toolchain.md).
#define SS_CO_RETURN_AWAIT(expr)        \
  do {                                  \
    auto ss_awaited_ = co_await (expr); \
    co_return std::move(ss_awaited_);   \
  } while (0)

}  // namespace ss
