#include "shared/http.h"

#include "shared/bytes.h"
#include "shared/text.h"

#include "shared/field_error.h"
#include "shared/form.h"
#include "shared/json_util.h"
#include "shared/runtime.h"

#include <algorithm>
#include <cctype>

namespace ss {

namespace {

// "https://host:1/a/b?x=1#f" -> path "/a/b", query "x=1". A bare path is accepted too.
void split_url(std::string_view url, std::string& path, std::string& query) {
  std::size_t start = 0;
  std::size_t scheme = url.find("://");
  if (scheme != std::string_view::npos) {
    start = url.find('/', scheme + 3);
    if (start == std::string_view::npos) start = url.size();
  }
  std::string_view rest = url.substr(start);
  if (auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  auto q = rest.find('?');
  path = std::string(rest.substr(0, q));
  query = q == std::string_view::npos ? "" : std::string(rest.substr(q + 1));
  if (path.empty()) path = "/";
}
}  // namespace

namespace {
// The string at `key` moved out of the message (it is the run's own and read once), else `fallback`.
std::string take_string(json& object, const char* key, const char* fallback) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return std::move(it->get_ref<std::string&>());
}
}  // namespace

Request Request::from_json(json&& j) {
  Request r;
  if (!j.is_object()) j = json::object();
  r.method = take_string(j, "method", "GET");
  r.url = take_string(j, "url", "/");
  split_url(r.url, r.path, r.query_string);
  r.query = parse_query(r.query_string);
  if (auto headers = j.find("headers"); headers != j.end() && headers->is_object()) {
    for (auto it = headers->begin(); it != headers->end(); ++it) {
      if (it.value().is_string()) {
        r.headers[ascii_lower(it.key())] = std::move(it.value().get_ref<std::string&>());
      }
    }
  }
  r.body = take_string(j, "body", "");
  // A body that is not UTF-8 comes as its bytes in hex (a JSON string cannot carry them): the
  // handlers see what the client sent and refuse it as malformed, naming the field where they can.
  if (auto hex = j.find("bodyHex"); hex != j.end() && hex->is_string()) {
    r.body = hex_decode(hex->get_ref<const std::string&>()).value_or(std::string());
  }
  r.body_too_large = get_bool(j, "bodyTooLarge").value_or(false);
  if (auto cf = j.find("cf"); cf != j.end() && cf->is_object()) r.cf = std::move(*cf);
  return r;
}

void Request::note_read(std::string_view lower_name) const {
  for (const std::string& name : headers_read_) {
    if (name == lower_name) return;
  }
  headers_read_.emplace_back(lower_name);
}

std::string Request::header(std::string_view lower_name) const {
  note_read(lower_name);
  auto it = headers.find(std::string(lower_name));
  return it == headers.end() ? std::string() : it->second;
}

bool Request::has_header(std::string_view lower_name) const {
  note_read(lower_name);
  return headers.count(std::string(lower_name)) != 0;
}

std::string Request::query_param(std::string_view name) const {
  auto it = query.find(std::string(name));
  return it == query.end() ? std::string() : it->second;
}

Result<std::int64_t> Request::int_param(std::string_view name, std::int64_t fallback,
                                        std::int64_t min, std::int64_t max) const {
  std::string text = query_param(name);
  if (text.empty()) return fallback;
  if (auto n = parse_decimal(text, min, max)) return *n;
  return invalid_field(std::string(name),
                       "must be " + std::to_string(min) + "–" + std::to_string(max));
}

Response Response::json_body(int status, const json& body) {
  Response r;
  r.status = status;
  r.headers.emplace_back("content-type", "application/json; charset=utf-8");
  // API answers (tenant data, admin views, errors) are not for shared caches; a route that may be
  // cached says so with set_header (monitoring's public status JSON).
  r.set_header("cache-control", "no-store");
  r.body = dump_json(body);
  return r;
}

Response Response::from_error(const Error& error) {
  Response r = json_body(error.status(), error.body());
  if (error.retry_after) r.set_header("retry-after", std::to_string(*error.retry_after));
  // RFC 9110 §11.6.1: a 401 names its scheme (the tenant token headers, or an operator bearer).
  if (r.status == 401) r.set_header("www-authenticate", "Bearer");
  if (!error.allow.empty()) r.set_header("allow", error.allow);
  return r;
}

Response Response::empty(int status) {
  Response r;
  r.status = status;
  return r;
}

Response Response::text(int status, std::string body, std::string content_type) {
  Response r;
  r.status = status;
  r.headers.emplace_back("content-type", std::move(content_type));
  r.body = std::move(body);
  return r;
}

Response Response::streamed_body() {
  Response r;
  r.streamed = true;
  return r;
}

Response& Response::set_header(std::string name, std::string value) {
  for (auto& [k, v] : headers) {
    if (k == name) {
      v = std::move(value);
      return *this;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
  return *this;
}

json Response::to_json() const {
  if (streamed) return json_object({{"streamed", true}});
  json h = json::object();
  for (const auto& [k, v] : headers) h[k] = v;
  json out = json_object({{"status", status}, {"headers", std::move(h)}, {"body", body}});
  if (!splices.empty()) {
    json list = json::array();
    for (const Splice& s : splices) {
      list.push_back(json_object(
          {{"at", static_cast<std::int64_t>(s.at)}, {"held", s.held}, {"sep", s.separator}}));
    }
    out["splice"] = std::move(list);
  }
  return out;
}

std::string percent_decode(std::string_view s) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = hex(s[i + 1]);
      int lo = hex(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>((hi << 4) | lo));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

Router& Router::add(std::string method, std::string pattern, Handler handler) {
  routes_.push_back(Route{std::move(method), split_path(pattern), std::move(handler)});
  return *this;
}

const Router::Route* Router::select(const Context& ctx, const Request& req, Params& chosen_params,
                                    std::string& allow) const {
  std::vector<std::string> segments = split_path(req.path);
  for (auto& s : segments) s = percent_decode(s);
  // A test route's path is unknown without test hooks (its handler never runs, nor is it an Allow).
  if (!segments.empty() && segments[0] == "__test" && !ctx.test_hooks_enabled()) return nullptr;
  // The path's most specific patterns (the most literal segments) decide alone: GET on
  // /api/leads/submit is a 405 naming POST, not a GET /api/leads/{id}. Among them, the first route
  // registered for the method runs.
  const Route* chosen = nullptr;
  std::size_t best = 0;
  bool any = false;  // a route matched the path
  for (const Route& route : routes_) {
    if (route.segments.size() != segments.size()) continue;
    Params params;
    bool match = true;
    std::size_t literals = 0;
    for (std::size_t i = 0; i < segments.size() && match; ++i) {
      const std::string& pat = route.segments[i];
      if (pat.size() > 2 && pat.front() == '{' && pat.back() == '}') {
        params[pat.substr(1, pat.size() - 2)] = segments[i];
      } else if (pat != segments[i]) {
        match = false;
      } else {
        ++literals;
      }
    }
    if (!match || (any && literals < best)) continue;
    if (!any || literals > best) {
      any = true;
      best = literals;
      chosen = nullptr;
      allow.clear();
    }
    bool method_ok = route.method == req.method || (route.method == "GET" && req.method == "HEAD");
    if (method_ok) {
      if (!chosen) {
        chosen = &route;
        chosen_params = std::move(params);
      }
      continue;
    }
    if (allow.find(route.method) == std::string::npos) {
      allow += allow.empty() ? route.method : ", " + route.method;
      if (route.method == "GET") allow += ", HEAD";
    }
  }
  return chosen;
}

namespace {
// 405 with Allow when the path takes other methods, else 404.
Response no_route(const Request& req, const std::string& allow) {
  if (allow.empty())
    return Response::from_error(Error{ErrorCode::not_found, "no route for " + req.path});
  Error e{ErrorCode::method_not_allowed, req.method + " is not allowed on " + req.path};
  e.allow = allow;
  return Response::from_error(e);
}
}  // namespace

Task<Response> Router::dispatch(Context& ctx, const Request& req) const {
  Params params;
  std::string allow;
  const Route* route = select(ctx, req, params, allow);
  if (!route) co_return no_route(req, allow);
  Result<Response> result = co_await route->handler(ctx, req, params);
  if (!result) co_return Response::from_error(result.error());
  co_return std::move(result).value();
}

std::string media_type_of(const Request& req) {
  std::string ct = req.header("content-type");
  auto parsed = parse_content_type(ct);
  return parsed ? parsed->media_type : std::string();
}

Status require_body_within(const Request& req, std::size_t limit) {
  std::string declared = req.header("content-length");
  bool declared_too_large = false;
  if (!declared.empty()) {
    if (declared.size() > 15) {
      declared_too_large = true;
    } else {
      std::size_t n = 0;
      for (char c : declared) {
        if (c < '0' || c > '9') return invalid_field("Content-Length", "must be a number of bytes");
        n = n * 10 + static_cast<std::size_t>(c - '0');
      }
      declared_too_large = n > limit;
    }
  }
  if (req.body_too_large || declared_too_large || req.body.size() > limit) {
    return Error{ErrorCode::payload_too_large,
                 "the body is larger than " + std::to_string(limit) + " bytes"};
  }
  return Unit{};
}

Status require_json_body(const Request& req, std::size_t limit) {
  auto size = require_body_within(req, limit);
  if (!size) return size;
  if (media_type_of(req) != "application/json") {
    return invalid_field("Content-Type", "must be application/json",
                         ErrorCode::unsupported_media_type);
  }
  return Unit{};
}

Status require_identity_coding(const Request& req) {
  std::string coding = ascii_lower(req.header("content-encoding"));
  if (!coding.empty() && coding != "identity") {
    return invalid_field("Content-Encoding", "must be identity: send the body uncompressed",
                         ErrorCode::unsupported_media_type);
  }
  return Unit{};
}

}  // namespace ss
