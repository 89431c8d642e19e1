#pragma once
// The HTTP model the cores see: a request and response as plain values (marshalled to and from the
// host as JSON, see docs/abi.md), a small path router, and the guards every body-reading route
// applies.

#include "shared/error.h"
#include "shared/task.h"

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ss {

class Context;

struct Request {
  std::string method;
  std::string url;
  std::string path;                            // percent-encoded as received, without the query
  std::string query_string;                    // without '?'
  std::map<std::string, std::string> query;    // decoded, first value wins
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  bool body_too_large = false;  // the host stopped reading (over its hard cap)
  json cf = json::object();

  // From the host's {"method","url","headers","body","bodyTooLarge","cf"}: its strings are moved
  // out, not copied (the message is the run's own).
  static Request from_json(json&& j);
  std::string header(std::string_view lower_name) const;
  bool has_header(std::string_view lower_name) const;
  std::string query_param(std::string_view name) const;
  // An optional integer query parameter: absent → fallback; otherwise a decimal in [min, max], or
  // 400 invalid_request naming it.
  Result<std::int64_t> int_param(std::string_view name, std::int64_t fallback, std::int64_t min,
                                 std::int64_t max) const;
  std::string client_ip() const { return header("cf-connecting-ip"); }
  // The names header() and has_header() were asked for, in first-asked order: what this request's
  // answer can depend on among its headers (a replayable answer names them: docs/abi.md).
  const std::vector<std::string>& headers_read() const { return headers_read_; }

 private:
  void note_read(std::string_view lower_name) const;
  mutable std::vector<std::string> headers_read_;
};

// Where the host inserts a held column's values into a response body (docs/abi.md "Held
// columns"): before byte `at` of the body, the values of handle `held` joined by `separator`.
struct Splice {
  std::size_t at = 0;
  std::int64_t held = 0;
  std::string separator;
};

struct Response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool streamed = false;        // the body went out through response_open/write (response_stream.h)
  std::vector<Splice> splices;  // in order of `at`; the body is incomplete without them

  static Response json_body(int status, const json& body);
  static Response from_error(const Error& error);
  static Response empty(int status);
  static Response text(int status, std::string body, std::string content_type);
  static Response streamed_body();  // what a handler returns after streaming its body
  Response& set_header(std::string name, std::string value);
  json to_json() const;  // {"status","headers","body"}, or {"streamed":true}
};

// Route parameters captured from `{name}` segments, e.g. /admin/tenants/{id}.
using Params = std::map<std::string, std::string, std::less<>>;
using Handler = std::function<Task<Result<Response>>(Context&, const Request&, const Params&)>;

// Matches method + path pattern. A pattern is a list of literal segments and `{name}` captures; a
// path that matches some route but not the method gives 405 with Allow; nothing matching gives 404.
class Router {
 public:
  // Routes under /__test/ are test routes: they exist only while test hooks are on
  // (SITESWARM_TEST_HOOKS=1); otherwise such a path is unknown, 404 for every method.
  Router& add(std::string method, std::string pattern, Handler handler);
  Task<Response> dispatch(Context& ctx, const Request& req) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    Handler handler;
  };
  // The route to run for (method, path) with its parameters; null when none: then `allow` names
  // the methods the path takes (405), or is empty (404). Test routes count only with hooks on.
  const Route* select(const Context& ctx, const Request& req, Params& params,
                      std::string& allow) const;
  std::vector<Route> routes_;
};

// Guards applied before a body is parsed. require_body_within: 413 over `limit`; require_json_body:
// that, then 415 unless application/json.
Status require_body_within(const Request& req, std::size_t limit);
Status require_json_body(const Request& req, std::size_t limit);
std::string media_type_of(const Request& req);  // lower-case, without parameters
// 415 naming Content-Encoding for a compressed body: an unsupported content coding (RFC 9110
// §8.4.1), not a malformed one. Every tenant-facing route that reads a body calls it after its
// size (the operator's PUT /admin/tenants does not: its bytes count against the shared floor, and
// scripts/provision sends plain JSON). No `Content-Encoding`, or `identity`, passes.
Status require_identity_coding(const Request& req);

std::vector<std::string> split_path(std::string_view path);
std::string percent_decode(std::string_view s);

}  // namespace ss
