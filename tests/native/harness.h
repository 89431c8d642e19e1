#pragma once
// The native host: the same C++ cores the wasm builds ship, driven in-process.
//
// D1 is real SQLite built from migrations/<db>/, KV is an in-memory map with TTLs on the test
// clock, service calls run the target worker's core in the same process, outbound fetch is answered
// by a stub the test sets, queue sends and Analytics Engine writes are recorded, and SHA-256 / HMAC
// / random bytes come from OpenSSL (randomness is seeded by the test, so runs are reproducible).
// Time only moves when the test moves it — or when a `sleep` effect is due, in virtual time.

#include "shared/app.h"
#include "shared/json_util.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace ss::native {

// Performs one effect (everything but `sleep`, which the driver schedules in virtual time) and
// returns the result object {"id","ok","value"|"error"}.
using Performer = std::function<json(const json& effect)>;

// Runs one message on a Runtime to completion. Effects issued together are performed together;
// sleeps complete in wake-time order, advancing `now_ms`.
// `observe`, when set, sees each group of effects the core issued at once (before they are performed).
json drive(Runtime& runtime, json message, std::int64_t& now_ms, const Performer& perform,
           const std::function<void(const json& effects)>& observe = nullptr);

// How many answers known in advance (docs/abi.md) drive() has seen kept, in this process: a test
// tells that a handler made its promise by the count going up.
std::size_t promises_kept();

struct HttpReply {
  int status = 0;
  json headers = json::object();
  std::string body;
  // A streamed response (response.open/write): body is every chunk joined, chunks each write.
  bool streamed = false;
  bool aborted = false;  // the run failed after the stream opened: the client saw a cut body
  // Answered early (response.send): the run went on with background work after this answer; the
  // mesh ran it to the end before returning (effect_kinds shows what came after "response.send").
  bool answered_early = false;
  std::vector<std::string> chunks;
  // The output's `replay` ({until, headers}: docs/abi.md "Replayable answers"); null when absent.
  // The native host never replays: tests read what the core allowed.
  json replay;
  // The run's log lines (the output's `logs`).
  std::vector<std::string> logs;
  json body_json() const;  // discarded json when the body is not JSON
  std::string header(const std::string& name) const;
};

struct StubReply {
  int status = 200;
  std::map<std::string, std::string> headers;
  std::string body;
  bool network_error = false;
  bool timeout = false;  // fails with code timeout after the effect's timeoutMs
  int elapsed_ms = 5;
  // For a fetch with "selectors" (monitor probes): the native host does not parse HTML, so the
  // stub says which of the requested selectors matched; unset means all of them did.
  std::optional<std::vector<std::string>> selectors_matched;
};

class SqliteDb {
 public:
  explicit SqliteDb(const std::string& migrations_dir);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  // D1 semantics: {"results","meta"}; an error is returned as {"error": message}.
  json execute(const std::string& sql, const json& params);
  json batch(const json& statements);
  json rows(const std::string& sql);  // test convenience: SELECT without params -> array of rows

 private:
  sqlite3* db_ = nullptr;
};

class Mesh {
 public:
  static constexpr const char* kAdminToken = "test-admin-token";

  Mesh();
  ~Mesh();

  // Time and randomness are the test's.
  std::int64_t now_ms = 1764426000000;  // 2025-11-29T14:20:00Z
  void seed(std::uint64_t s) { rng_.seed(s); }

  // Outbound fetch; unset means every fetch fails with network_error.
  std::function<StubReply(const json& request)> fetch_stub;
  int rate_limit_per_key = 1000;
  // request.cf of every following request (e.g. {"country":"DE","colo":"FRA"}); null: none.
  json request_cf = nullptr;
  // Fault injection: an effect for which this returns true fails with code injected_fault, as if
  // the dependency (or the whole isolate) had gone away at that point.
  std::function<bool(const json& effect)> fail_effect;
  // Fault injection: the instance dies (as on a wasm trap) when it issues an effect for which this
  // returns true. The effect never happens and the run is dropped; a fetch that was not answered
  // yet gets 500 internal, one answered early keeps its answer (docs/abi.md "Answering early").
  std::function<bool(const json& effect)> trap_effect;
  // Sees each group of effects a core issued at once, before they are performed (e.g. to count how
  // many starts a drain has in flight together).
  std::function<void(const json& effects)> observe_effects;
  // A client that reads this many chunks of a streamed response, then goes away (-1: reads all).
  int stream_reader_leaves_after = -1;
  // The most rows any one d1.all / d1.first / d1.batch statement handed a core.
  std::size_t max_d1_rows = 0;
  // The most SQLite VM steps any one D1 statement took: it grows with the rows a statement visits
  // (D1 bills those as rows read), so a page that scans past every earlier page shows here.
  std::int64_t max_d1_vm_steps = 0;
  // A d1.all's "hold" column is kept out of the rows and spliced into the response, as the JS host
  // does (docs/abi.md "Held columns"); false: sent along in the rows, as a host that does not hold.
  bool hold_columns = true;

  void set_env(const std::string& worker, const std::string& key, const std::string& value);
  HttpReply request(const std::string& worker, const std::string& method, const std::string& path,
                    const std::map<std::string, std::string>& headers = {},
                    const std::string& body = "");
  json message(const std::string& worker, json message);  // scheduled / queue / rpc

  // Registers a tenant on one worker (or all when worker is empty) with the given secrets.
  void provision(const std::string& tenant, const std::string& token,
                 const std::string& admin_token, const json& config = json::object(),
                 const std::string& worker = "");

  SqliteDb& db(const std::string& binding);
  std::map<std::string, std::vector<json>> queue_sent;  // binding -> bodies
  std::vector<json> analytics_points;
  std::vector<std::string> effect_kinds;  // every effect performed, in order
  // How many of effect_kinds start with `prefix` ("d1." counts D1 round trips), and clears them.
  int take_effects(std::string_view prefix) {
    int n = 0;
    for (const std::string& kind : effect_kinds) n += kind.rfind(prefix, 0) == 0;
    effect_kinds.clear();
    return n;
  }
  // KV as the cores see it (no expiry): a write made elsewhere, e.g. by another isolate.
  std::optional<std::string> kv_value(const std::string& binding, const std::string& key) const;
  void kv_set(const std::string& binding, const std::string& key, std::string value);
  void kv_delete(const std::string& binding, const std::string& key);

  static std::map<std::string, std::string> tenant_headers(const std::string& tenant,
                                                           const std::string& token);

 private:
  struct Worker;
  struct Stream {
    bool open = false;
    int status = 0;
    json headers = json::object();
    std::vector<std::string> chunks;
    std::optional<json> sent;  // response.send: {"status","headers","body"}
  };
  json perform(const json& effect);
  json perform_stream(const json& effect);
  // Runs one fetch message; a streamed answer is collected into `stream`.
  json drive_fetch(Worker& w, json message, Stream& stream);
  json drive_worker(Worker& w, json message);
  std::string entropy_hex(std::size_t bytes);

  std::map<std::string, std::unique_ptr<Worker>> workers_;      // short name -> worker
  std::map<std::string, std::string> service_bindings_;         // binding -> short name
  std::map<std::string, std::unique_ptr<SqliteDb>> databases_;  // binding -> db
  struct KvEntry {
    std::string value;
    std::int64_t expires_at_ms;
  };
  std::map<std::string, KvEntry> kv_;  // "binding/key"
  std::map<std::string, int> rate_counts_;
  std::vector<Stream*> streams_;  // the fetch runs in progress, innermost last
  std::map<std::int64_t, std::vector<std::string>> held_;  // handle -> a held column's values
  std::int64_t next_held_ = 1;
  // A fetch output's "splice" applied to its body (docs/abi.md "Held columns").
  void splice_held(json& out);
  void hold_column(const json& effect, json& value);
  std::mt19937_64 rng_{42};
};

std::string sha256_hex(const std::string& data);
std::string hmac_sha256_hex(const std::string& key, const std::string& data);

}  // namespace ss::native
