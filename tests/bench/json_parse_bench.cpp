// Native CPU time of the JSON reads on the runtime's hot path: nlohmann's parser alone against
// RapidJSON's reader into nlohmann's DOM (shared/json_util.h), interleaved in rounds on the same texts
// (docs/performance.md "RapidJSON in front of nlohmann"). A release build, not the sanitized one:
//
//   clang++-14 -std=c++20 -O2 -DNDEBUG -fno-exceptions -DJSON_NOEXCEPTION -I. \
//     tests/bench/json_parse_bench.cpp shared/json_util.cpp shared/json_rapid.cpp shared/error.cpp \
//     -o build/json-parse-bench && build/json-parse-bench [rounds]
//
// Texts: the resume message of a d1.all of 500 event rows in D1's compact form (docs/abi.md; the
// ledger read's GET /api/events?limit=500, ~125 KB), a fetch start message (an emit: POST
// /api/events with headers, env and a JSON body), and 500 stored payloads checked as the ledger's
// page does (json::accept against accept_json).
#include "shared/json_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

std::string two(int n) { return (n < 10 ? "0" : "") + std::to_string(n); }

std::string payload_of(int n) {
  return ss::dump_json(ss::json{{"n", n}, {"amount", n % 1000}, {"sku", "SKU-" + std::to_string(n)},
                                {"note", "bench"}});
}

std::string d1_resume_message(int rows) {
  ss::json columns = {"seq",          "event_id",  "tenant_id",       "event_type",    "entity_type",
                      "entity_id",    "payload_json", "idempotency_key", "caused_by", "workflow_run_id",
                      "source_system", "occurred_at", "recorded_at",   "sequence_no",   "redacted_at"};
  ss::json list = ss::json::array();
  for (int n = 0; n < rows; ++n) {
    const std::string at = "2026-12-01T05:" + two(n / 60 % 60) + ":" + two(n % 60) + ".123Z";
    list.push_back(ss::json::array(
        {1000 + n, "01KBC" + std::string(15, 'Q') + std::to_string(100000 + n), "bench-tenant",
         "order.created", "order", "order-" + std::to_string(n), payload_of(n),
         "idem-" + std::to_string(n), nullptr, nullptr, "bench", at, at, nullptr, nullptr}));
  }
  ss::json value = {{"columns", columns}, {"rows", list}};
  ss::json results = ss::json::array({ss::json{{"id", 3}, {"ok", true}, {"value", value}}});
  return ss::dump_json(ss::json{{"now", 1764565200000ULL}, {"results", results}});
}

std::string fetch_start_message() {
  ss::json env = {{"PLATFORM_ADMIN_TOKEN", "bench-admin-token"}, {"DRAIN_WORK_BUDGET", "5000"},
                  {"RETENTION_DAYS", "730"}, {"ENVIRONMENT", "production"}};
  ss::json headers = {{"content-type", "application/json"},
                      {"authorization", "Bearer bench-tenant-token-0123456789"},
                      {"x-tenant-id", "bench-tenant"},
                      {"user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36"},
                      {"accept", "*/*"},
                      {"cf-connecting-ip", "203.0.113.7"}};
  ss::json body = {{"event_type", "order.created"}, {"entity_type", "order"}, {"entity_id", "order-42"},
                   {"idempotency_key", "idem-42"}, {"occurred_at", "2026-12-01T05:00:00.000Z"},
                   {"payload", {{"n", 42}, {"amount", 42.5}, {"sku", "SKU-42"}, {"note", "bench é"}}}};
  ss::json request = {{"method", "POST"},
                      {"url", "https://events.internal/api/events"},
                      {"headers", headers},
                      {"body", ss::dump_json(body)},
                      {"bodyTooLarge", false},
                      {"cf", {{"country", "US"}, {"colo", "DFW"}}}};
  return ss::dump_json(ss::json{{"op", "fetch"},
                                {"now", 1764565200000ULL},
                                {"entropy", std::string(64, 'a')},
                                {"env", env},
                                {"bodyApart", true},
                                {"request", request}});
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

std::size_t g_sink = 0;  // printed at the end: the parses are not optimised away

template <typename F>
double time_ms_per(int iterations, F&& f) {
  const double start = cpu_ms();
  for (int i = 0; i < iterations; ++i) f();
  return (cpu_ms() - start) / iterations;
}

// Interleaved rounds of A and B (the order alternating); the median ms per call of each.
template <typename A, typename B>
void compare(const char* name, int iterations, int rounds, A&& a, B&& b) {
  std::vector<double> as, bs;
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      as.push_back(time_ms_per(iterations, a));
      bs.push_back(time_ms_per(iterations, b));
    } else {
      bs.push_back(time_ms_per(iterations, b));
      as.push_back(time_ms_per(iterations, a));
    }
  }
  const double ma = median(as);
  const double mb = median(bs);
  std::printf("%-44s nlohmann %8.4f ms  rapidjson %8.4f ms  (%.2fx)\n", name, ma, mb, ma / mb);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 11;
  const std::string d1 = d1_resume_message(500);
  const std::string start = fetch_start_message();
  std::vector<std::string> payloads;
  for (int n = 0; n < 500; ++n) payloads.push_back(payload_of(n));

  // Both paths give the same values (the differential test checks that on many more texts).
  ss::json fast;
  if (!ss::rapid_json_parse(d1, fast) || fast != ss::nlohmann_parse_or_discarded(d1) ||
      !ss::rapid_json_parse(start, fast) || fast != ss::nlohmann_parse_or_discarded(start)) {
    std::fprintf(stderr, "json-parse-bench: the two paths disagree\n");
    return 1;
  }
  std::printf("D1 resume message: %zu bytes; fetch start message: %zu bytes\n", d1.size(), start.size());

  compare("resume, d1.all of 500 event rows", 40, rounds,
          [&] { g_sink += ss::nlohmann_parse_or_discarded(d1).size(); },
          [&] { g_sink += ss::parse_json_or_discarded(d1).size(); });
  compare("fetch start message (emit)", 4000, rounds,
          [&] { g_sink += ss::nlohmann_parse_or_discarded(start).size(); },
          [&] { g_sink += ss::parse_json_or_discarded(start).size(); });
  compare("500 stored payloads checked (accept)", 40, rounds,
          [&] {
            for (const std::string& p : payloads) g_sink += ss::json::accept(p.begin(), p.end()) ? 1 : 0;
          },
          [&] {
            for (const std::string& p : payloads) g_sink += ss::accept_json(p) ? 1 : 0;
          });
  std::printf("(%zu)\n", g_sink);
  return 0;
}
