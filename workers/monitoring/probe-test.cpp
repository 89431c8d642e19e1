#include "workers/monitoring/probe.h"

#include <doctest/doctest.h>

using namespace ss::monitoring;
using Outcome = ProbeObservation::Outcome;

namespace {
MonitorSpec spec_with(std::vector<std::string> selectors = {}) {
  MonitorSpec s;
  s.url = "https://site.example/";
  s.must_contain = std::move(selectors);
  return s;
}
ProbeObservation seen(int status, int latency, std::set<std::string> matched = {}) {
  ProbeObservation o;
  o.status = status;
  o.latency_ms = latency;
  o.selectors_matched = std::move(matched);
  return o;
}
}  // namespace

TEST_CASE("monitoring probe: each failure reason") {
  MonitorSpec s = spec_with({"form#contact", "main"});
  CHECK(evaluate(s, seen(200, 120, {"form#contact", "main"})).ok);
  CHECK(evaluate(s, seen(200, 120, {"form#contact", "main"})).reason.empty());
  CHECK(evaluate(s, seen(503, 120, {"form#contact", "main"})).reason == "status_mismatch");
  CHECK(evaluate(s, seen(200, 501, {"form#contact", "main"})).reason == "too_slow");
  CHECK(evaluate(s, seen(200, 500, {"form#contact", "main"})).ok);  // the limit itself passes
  CHECK(evaluate(s, seen(200, 10, {"main"})).reason == "selector_missing:form#contact");
  CHECK(evaluate(s, seen(200, 10, {"form#contact"})).reason == "selector_missing:main");
  for (auto [outcome, reason] :
       {std::pair{Outcome::timeout, "timeout"}, std::pair{Outcome::network_error, "network_error"},
        std::pair{Outcome::ssrf_blocked, "ssrf_blocked"}}) {
    ProbeObservation o;
    o.outcome = outcome;
    ProbeResult r = evaluate(s, o);
    CHECK_FALSE(r.ok);
    CHECK(r.reason == reason);
    CHECK_FALSE(r.status.has_value());
  }
  // Several failures: the status wins over the latency, the latency over the selectors.
  CHECK(evaluate(s, seen(500, 900)).reason == "status_mismatch");
  CHECK(evaluate(s, seen(200, 900)).reason == "too_slow");
  s.expect_status = {200, 204};
  CHECK(evaluate(s, seen(204, 1, {"form#contact", "main"})).ok);
}

TEST_CASE("monitoring probe: the result as /v1/monitors shows it") {
  ProbeResult r = evaluate(spec_with(), seen(200, 42));
  auto j = r.to_json(1779719000000);
  CHECK(j["ok"] == true);
  CHECK(j["status"] == 200);
  CHECK(j["latencyMs"] == 42);
  CHECK(j["reason"].is_null());
  CHECK(j["at"] == "2026-05-25T14:23:20Z");
}

TEST_CASE("monitoring probe: SSRF targets are refused, public http is allowed") {
  for (const char* url :
       {"http://127.1/", "http://[::1]/", "http://169.254.169.254/", "http://0x7f000001/",
        "http://user@10.0.0.1/", "http://10.1.2.3/", "http://localhost/", "ftp://site.example/",
        "javascript:alert(1)", "not a url"}) {
    CAPTURE(url);
    CHECK_FALSE(check_probe_url(url, false).ok());
  }
  CHECK(check_probe_url("http://site.example/x", false).ok());
  CHECK(check_probe_url("https://site.example/x", false)->href == "https://site.example/x");
  CHECK_FALSE(check_probe_url("http://127.0.0.1:8080/", false).ok());
  CHECK(check_probe_url("http://127.0.0.1:8080/", true).ok());
  CHECK_FALSE(check_probe_url("http://169.254.169.254/", true).ok());
}

TEST_CASE("monitoring probe: Location headers resolve against the answering URL") {
  CHECK(resolve_location("https://a.example/x/y?q", "https://b.example/z") ==
        "https://b.example/z");
  CHECK(resolve_location("https://a.example/x/y", "//c.example/p") == "https://c.example/p");
  CHECK(resolve_location("https://a.example/x/y", "/root") == "https://a.example/root");
  CHECK(resolve_location("https://a.example/x/y?q=1", "z") == "https://a.example/x/z");
  CHECK(resolve_location("https://a.example", "z") == "https://a.example/z");
  CHECK(resolve_location("https://a.example/x", "?p=2") == "https://a.example/x?p=2");
  CHECK(resolve_location("https://a.example/x", "http://10.0.0.1/") == "http://10.0.0.1/");
  CHECK(resolve_location("https://a.example/x", "").empty());
  // A fragment alone is the same document (a fragment is never sent).
  CHECK(resolve_location("https://a.example/dir/page?q=1", "#top") ==
        "https://a.example/dir/page?q=1");
}

TEST_CASE("monitoring probe: Location headers resolve as browsers read them") {
  // A backslash is a slash in an http(s) URL: these name another host, not a path on this one.
  CHECK(resolve_location("https://a.example/x", "\\\\b.example\\p") == "https:\\\\b.example\\p");
  CHECK(resolve_location("https://a.example/x", "/\\b.example/p") == "https:/\\b.example/p");
  CHECK(resolve_location("https://a.example/x/y", "\\root") == "https://a.example\\root");
  // The page's own scheme without "//" is relative to the page; another scheme is absolute.
  CHECK(resolve_location("http://a.example/x/y", "http:z") == "http://a.example/x/z");
  CHECK(resolve_location("http://a.example/x/y", "HTTP:/root") == "http://a.example/root");
  CHECK(resolve_location("http://a.example/x/y?q", "http:") == "http://a.example/x/y?q");
  CHECK(resolve_location("http://a.example/x", "https:b.example/p") == "https:b.example/p");
  // Not a scheme: a relative path with a colon in it.
  CHECK(resolve_location("https://a.example/x/", "1a:b") == "https://a.example/x/1a:b");
  // Surrounding blanks are trimmed, tabs and line breaks dropped, inner spaces encoded.
  CHECK(resolve_location("https://a.example/x", " /a b\t/c\n ") == "https://a.example/a%20b/c");
  CHECK(resolve_location("https://a.example/x", " \t ").empty());
  // Each resolves to what the guard then judges: the other host, not a.example.
  auto judged = check_probe_url(resolve_location("https://a.example/x", "/\\10.0.0.1/p"), false);
  REQUIRE_FALSE(judged);
  CHECK(refusal_reason(judged.error()) == "private_network");
  auto other = check_probe_url(resolve_location("http://a.example/x", "\\\\b.example\\p"), false);
  REQUIRE(other);
  CHECK(other->href == "http://b.example/p");
}

TEST_CASE("monitoring probe: latency histogram percentiles") {
  std::vector<std::int64_t> h(kHistogramSize, 0);
  CHECK_FALSE(histogram_percentile(h, 0.5).has_value());
  h[latency_bucket(20)] = 50;   // ≤ 25
  h[latency_bucket(180)] = 45;  // ≤ 200
  h[latency_bucket(900)] = 5;   // ≤ 1000
  CHECK(histogram_percentile(h, 0.5) == 25);
  CHECK(histogram_percentile(h, 0.95) == 200);
  CHECK(histogram_percentile(h, 0.99) == 1000);
  CHECK(latency_bucket(999999) == kLatencyBuckets.size());
}
