#include "workers/monitoring/probe.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/text.h"
#include "workers/monitoring/selector.h"

#include <algorithm>

namespace ss::monitoring {

std::size_t latency_bucket(std::int64_t latency_ms) {
  for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (latency_ms <= kLatencyBuckets[i]) return i;
  }
  return kLatencyBuckets.size();
}

std::optional<int> histogram_percentile(const std::vector<std::int64_t>& counts, double fraction) {
  std::int64_t total = 0;
  for (auto c : counts) total += std::max<std::int64_t>(c, 0);
  if (total == 0) return std::nullopt;
  // The smallest bucket whose cumulative count reaches ceil(fraction * total).
  auto needed = static_cast<std::int64_t>(fraction * static_cast<double>(total) + 0.999999);
  needed = std::clamp<std::int64_t>(needed, 1, total);
  std::int64_t seen = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    seen += std::max<std::int64_t>(counts[i], 0);
    if (seen >= needed) return kLatencyBuckets[std::min(i, kLatencyBuckets.size() - 1)];
  }
  return kLatencyBuckets.back();
}

json ProbeResult::to_json(std::int64_t at_ms) const {
  return json_object({{"at", format_rfc3339(at_ms)},
                      {"ok", ok},
                      {"status", status ? json(*status) : json(nullptr)},
                      {"latencyMs", latency_ms},
                      {"reason", reason.empty() ? json(nullptr) : json(reason)}});
}

ProbeResult evaluate(const MonitorSpec& spec, const ProbeObservation& seen) {
  ProbeResult r;
  r.latency_ms = seen.latency_ms;
  switch (seen.outcome) {
    case ProbeObservation::Outcome::timeout:
      r.reason = "timeout";
      return r;
    case ProbeObservation::Outcome::network_error:
      r.reason = "network_error";
      return r;
    case ProbeObservation::Outcome::ssrf_blocked:
      r.reason = "ssrf_blocked";
      return r;
    case ProbeObservation::Outcome::response:
      break;
  }
  r.status = seen.status;
  if (!spec.expects(seen.status)) {
    r.reason = "status_mismatch";
  } else if (seen.latency_ms > spec.max_latency_ms) {
    r.reason = "too_slow";
  } else {
    for (const auto& selector : spec.must_contain) {
      if (!seen.selectors_matched.count(selector)) {
        r.reason = "selector_missing:" + selector;
        break;
      }
    }
  }
  r.ok = r.reason.empty();
  return r;
}

Result<OutboundUrl> check_probe_url(std::string_view url, bool allow_local) {
  auto checked = check_outbound_url(url, allow_local);
  if (checked || refusal_reason(checked.error()) != url_refusal_name(UrlRefusal::insecure)) {
    return checked;
  }
  // The guard refuses http:// only after every host rule passed, so the host is fine here.
  auto parsed = parse_http_url(url);
  if (!parsed) return std::move(parsed).error();
  OutboundUrl ok;
  ok.scheme = parsed->scheme;
  ok.host = parsed->host;
  ok.port = parsed->port.value_or(80);
  ok.href = parsed->scheme + "://" + parsed->host +
            (parsed->port ? ":" + std::to_string(*parsed->port) : "") + parsed->rest;
  return ok;
}

bool is_redirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

namespace {

bool is_slash(char c) { return c == '/' || c == '\\'; }

// The scheme of an absolute reference ("https" of "HTTPS://…"), lower-cased; "" when it has none.
std::string scheme_of(std::string_view ref) {
  static constexpr CharClass kTail = CharClass(kAlnum).chars("+-.");
  std::size_t colon = ref.find(':');
  if (colon == std::string_view::npos || colon == 0 || !kAlnum.contains(ref[0]) ||
      kDigits.contains(ref[0]) || !kTail.all_of(ref.substr(0, colon))) {
    return "";
  }
  return ascii_lower(ref.substr(0, colon));
}

// A Location as the URL standard reads it: C0 controls and spaces trimmed at both ends, tabs and
// line breaks dropped, other controls and spaces percent-encoded (what a browser would request).
std::string clean_reference(std::string_view raw) {
  auto blank = [](char c) { return static_cast<unsigned char>(c) <= 0x20; };
  while (!raw.empty() && blank(raw.front())) raw.remove_prefix(1);
  while (!raw.empty() && blank(raw.back())) raw.remove_suffix(1);
  std::string out;
  for (char c : raw) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\t' || c == '\n' || c == '\r') continue;
    if (u <= 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string resolve_location(const std::string& base, const std::string& raw) {
  std::string location = clean_reference(raw);
  if (location.empty()) return "";
  auto scheme_end = base.find("://");
  if (scheme_end == std::string::npos) return "";
  std::string scheme = base.substr(0, scheme_end);
  if (std::string other = scheme_of(location); !other.empty()) {
    // Another scheme: absolute (the guard judges it). The page's own scheme without "//" after it
    // ("http:next", "http:/root") is relative to the page, as browsers read it.
    if (other != scheme) return location;
    location.erase(0, other.size() + 1);
    if (location.empty()) return base.substr(0, base.find('#'));
  }
  // http(s) URLs read a backslash as '/': two of either first name another host, as "//host/p".
  if (location.size() >= 2 && is_slash(location[0]) && is_slash(location[1])) {
    return scheme + ":" + location;
  }
  auto path_start = base.find('/', scheme_end + 3);
  std::string origin = path_start == std::string::npos ? base : base.substr(0, path_start);
  if (is_slash(location[0])) return origin + location;
  std::string path = path_start == std::string::npos ? "/" : base.substr(path_start);
  path = path.substr(0, path.find_first_of("?#"));
  if (location[0] == '?') return origin + path + location;
  // "#top": the same document (a fragment is never sent).
  if (location[0] == '#') return base.substr(0, base.find('#'));
  return origin + path.substr(0, path.rfind('/') + 1) + location;
}

namespace {

// The fetch effect in its probe form (docs/abi.md): with "selectors" the host streams the body
// through HTMLRewriter, one element handler per selector, and answers which matched instead of the
// body — nothing is buffered, whatever the page size.
struct ProbeReply {
  int status = 0;
  std::string location;
  std::int64_t elapsed_ms = 0;
  std::vector<std::string> selectors_matched;
};

Result<ProbeReply> decode_probe_reply(json&& value) {
  auto status = get_int(value, "status");
  if (!status) return Error{ErrorCode::internal, "fetch(): the host answered no status"};
  ProbeReply r;
  r.status = static_cast<int>(*status);
  if (const json* h = find_field(value, "headers")) r.location = string_or(*h, "location", "");
  r.elapsed_ms = int_or(value, "elapsedMs", 0);
  if (const json* m = find_field(value, "selectorsMatched"); m && m->is_array()) {
    for (const json& s : *m) {
      if (s.is_string()) r.selectors_matched.push_back(s.get<std::string>());
    }
  }
  return r;
}

EffectOf<ProbeReply> probe_fetch(const HttpCall& call, const std::vector<std::string>& selectors) {
  json headers = json::object();
  for (const auto& [k, v] : call.headers) headers[k] = v;
  json request = json_object({{"kind", "fetch"},
                              {"method", call.method},
                              {"url", call.url},
                              {"headers", headers},
                              {"body", ""},
                              {"timeoutMs", call.timeout_ms},
                              {"selectors", selectors}});
  return {std::move(request), decode_probe_reply};
}

// The service effect in its probe form: a request to a platform worker through the monitoring
// worker's binding, with the probe's timeout, the host measuring elapsedMs as for a fetch.
EffectOf<ProbeReply> probe_service(const std::string& binding, const HttpCall& call) {
  json headers = json::object();
  for (const auto& [k, v] : call.headers) headers[k] = v;
  json request = json_object(
      {{"kind", "service"},
       {"binding", binding},
       {"timeoutMs", call.timeout_ms},
       {"request",
        {{"method", call.method}, {"url", call.url}, {"headers", headers}, {"body", ""}}}});
  return {std::move(request), decode_probe_reply};
}

Task<ProbeObservation> observe_service(const MonitorSpec& spec) {
  ProbeObservation seen;
  HttpCall call;
  call.method = spec.method;
  // The host part is never resolved: a service binding delivers to its worker whatever the URL.
  call.url = "https://" + spec.service + ".internal" + spec.path;
  call.headers["user-agent"] = "SiteSwarm-Monitor/1.0 (+https://siteswarm.dev/monitoring)";
  call.timeout_ms = spec.timeout_ms;
  auto reply = co_await probe_service(service_binding_of(spec.service), call);
  if (!reply) {
    bool timed_out = reply.error().cause == "timeout";
    if (timed_out) seen.latency_ms = call.timeout_ms;
    seen.outcome =
        timed_out ? ProbeObservation::Outcome::timeout : ProbeObservation::Outcome::network_error;
    co_return seen;
  }
  seen.latency_ms = reply->elapsed_ms;
  seen.status = reply->status;
  co_return seen;
}

}  // namespace

Task<ProbeObservation> observe(const MonitorSpec& spec, bool allow_local) {
  if (!spec.service.empty()) {
    auto awaited = co_await observe_service(spec);
    co_return awaited;
  }
  ProbeObservation seen;
  std::string url = spec.url;
  for (int hop = 0;; ++hop) {
    auto checked = check_probe_url(url, allow_local);
    if (!checked) {
      seen.outcome = ProbeObservation::Outcome::ssrf_blocked;
      co_return seen;
    }
    HttpCall call;
    call.method = spec.method;
    call.url = checked->href;
    call.headers["user-agent"] = "SiteSwarm-Monitor/1.0 (+https://siteswarm.dev/monitoring)";
    // timeoutMs is for the whole walk: each hop gets what the hops before it left, and a walk
    // that has spent it all is a timeout (until 2026-12-06 each hop got at least 100 ms more).
    const std::int64_t left = spec.timeout_ms - seen.latency_ms;
    if (left <= 0) {
      seen.latency_ms = spec.timeout_ms;
      seen.outcome = ProbeObservation::Outcome::timeout;
      co_return seen;
    }
    call.timeout_ms = static_cast<int>(left);
    // Sent as lol-html matches them; a match counts for the selector as the tenant wrote it.
    std::vector<std::string> selectors;
    if (spec.method == "GET") {
      for (const auto& s : spec.must_contain) selectors.push_back(matchable_selector(s));
    }
    auto reply = co_await probe_fetch(call, selectors);
    if (!reply) {
      // A timeout took the whole budget; a refused connection is reported with what was spent.
      bool timed_out = reply.error().cause == "timeout";
      if (timed_out) seen.latency_ms = spec.timeout_ms;  // the whole budget, as the docs say
      seen.outcome =
          timed_out ? ProbeObservation::Outcome::timeout : ProbeObservation::Outcome::network_error;
      co_return seen;
    }
    seen.latency_ms += reply->elapsed_ms;
    seen.status = reply->status;
    if (is_redirect(reply->status) && !spec.expects(reply->status) && hop < kMaxRedirects) {
      std::string next = resolve_location(checked->href, reply->location);
      if (!next.empty()) {
        url = std::move(next);
        continue;
      }
    }
    const auto& matched = reply->selectors_matched;
    for (std::size_t i = 0; i < selectors.size(); ++i) {
      if (std::find(matched.begin(), matched.end(), selectors[i]) != matched.end()) {
        seen.selectors_matched.insert(spec.must_contain[i]);
      }
    }
    co_return seen;
  }
}

}  // namespace ss::monitoring
