#pragma once
// The effect runtime: runs handler coroutines and hands every I/O step to a host as data.
//
// The core never performs I/O, never reads a clock and never invents randomness. A Run starts from
// an input message (docs/abi.md); whenever its coroutines suspend on effects, the Runtime publishes
// those effects as JSON and waits; the host performs them (concurrently), feeds the results back
// through resume(), and the Run continues until it produces its output message. Both hosts — the JS
// host in workerd and the native test host — drive this same class through the same messages.

#include "shared/error.h"
#include "shared/task.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ss {

class Context;
class Runtime;
struct App;

namespace detail {
struct EffectSlot {
  Result<json>* result;
  co::coroutine_handle<> handle;
};
}  // namespace detail

// Awaitable that publishes one effect request and yields its result (the host's error as an Error
// with code dependency_unavailable, and the message prefixed with the effect kind).
class [[nodiscard]] Effect {
 public:
  explicit Effect(json request) : request_(std::move(request)) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(co::coroutine_handle<> h);
  Result<json> await_resume() { return std::move(result_); }

 private:
  json request_;
  Result<json> result_{Error{ErrorCode::internal, "effect was never completed"}};
};

// Per-run state visible to handlers: time, configuration, ids, logs.
class Context {
 public:
  Context(Runtime& runtime, const App& app, std::shared_ptr<const json> env, std::int64_t now_ms,
          std::string entropy_hex);

  const App& app() const { return app_; }
  // Wall-clock time as given by the host (updated every time effects complete).
  std::int64_t now_ms() const { return now_ms_; }
  void set_now_ms(std::int64_t now) { now_ms_ = now; }
  // A scheduled run's input message (its "cron", and the firing's "scheduledTime" when the host
  // sends one); null in other runs. Valid for the run.
  const json* scheduled_input() const { return scheduled_input_; }
  void set_scheduled_input(const json* message) { scheduled_input_ = message; }
  // A string var or secret of the worker's env ("" when absent).
  std::string env(std::string_view name) const;
  // An integer var: fallback when absent, not a decimal, or outside [min, max].
  std::int64_t env_int(std::string_view name, std::int64_t fallback, std::int64_t min,
                       std::int64_t max) const;
  bool test_hooks_enabled() const { return env("SITESWARM_TEST_HOOKS") == "1"; }
  // Local development (env ALLOW_LOCAL_OUTBOUND=1): the outbound-URL guard also admits the loopback
  // hosts of the local stubs (shared/url_guard.h). Read once, when the run starts.
  bool allow_local_outbound() const { return allow_local_outbound_; }

  // A fresh, monotonic ULID (randomness from the host's entropy; more is fetched when it runs out).
  Task<Result<std::string>> new_ulid();
  // n of them from one draw of randomness (one crypto.random effect at most, not one per 6 ids).
  Task<Result<std::vector<std::string>>> new_ulids(std::size_t n);
  // n random bytes from the host entropy pool (or a crypto.random effect when the pool is dry).
  Task<Result<std::string>> random_bytes(std::size_t n);
  // How many of the pool's bytes are left: random_bytes(n) up to that needs no effect.
  std::size_t entropy_left() const { return entropy_.size(); }

  // Work that outlives the response (Workers' ctx.waitUntil; docs/abi.md "Answering early"). In a
  // fetch run the client is answered as soon as the handler returns, and the run goes on with these
  // tasks; in scheduled, queue and rpc runs they are awaited before the output. A failure is logged.
  // The task must own what it reads (take parameters by value, Context& aside): the handler's
  // locals are gone by the time it runs.
  void wait_until(Task<Status> work) {
    background_.push_back(std::move(work));
    background_quiet_ = false;
  }
  // wait_until for work that keeps the promise of expect_output(): it issues all its effects at
  // once and, when every one succeeds, ends with no log, no further effect and no more background
  // work. Only through wait_until_sent() (shared/effects.h), which builds such work from one effect.
  void wait_until_quiet(Task<Status> work) { background_.push_back(std::move(work)); }
  // No work handed over, or only through wait_until_quiet().
  bool background_quiet() const { return background_quiet_; }
  bool has_background() const { return !background_.empty(); }
  std::vector<Task<Status>> take_background() { return std::exchange(background_, {}); }

  void log(std::string line) { logs_.push_back(std::move(line)); }
  std::vector<std::string>& logs() { return logs_; }

  // A GET's answer may be replayed by the host, without a run, until `until_ms` (ms since the
  // epoch): to a request with the same URL and the same values of every header this run's Request
  // read, while each effect of this run would give the same result again (docs/abi.md "Replayable
  // answers"). Only for an answer that is a function of exactly those: no other state, no clock
  // before `until_ms`, no entropy, no body, and no header read other than through
  // Request::header()/has_header() (a direct look at `req.headers` is not recorded). The host
  // keeps it only when every effect of the run was a read it can repeat (kv.get); a run that logs
  // or hands work to wait_until is never replayed.
  void allow_replay(std::int64_t until_ms) { replay_until_ms_ = until_ms; }
  std::optional<std::int64_t> replay_until() const { return replay_until_ms_; }

  // An answer known in advance (docs/abi.md "Answers known in advance", fetch runs only): the
  // fetch output this run ends with if every effect it awaits next succeeds. The runtime hands it to
  // the host beside those effects, and the host may end the run with it as soon as they all come
  // back ok, without resuming the core: one boundary crossing fewer (the analytics beacon's last
  // one). Set just before the co_await of those effects (use expect_answer() in shared/app.h); it
  // applies to the next effects the run publishes (every effect issued in that step, a sibling
  // when_all branch's included) and is then forgotten; one the handler does not await effects after
  // is dropped when it returns. Whoever sets it promises that when all those effects come back ok —
  // as the host sees it: `ok:true`, so only for effects whose result cannot fail to decode, such as
  // the Unit of a queue send or an AE point — the handler returns exactly that answer: no other log,
  // no further effect, no wait_until work; the native test host checks every such promise. The
  // runtime does not pass it on when it could not hold: effects of earlier steps still in flight,
  // work handed to wait_until, a replayable answer, a HEAD request or another op than fetch.
  void expect_output(json output) { expected_output_ = std::move(output); }
  // The answer expected, or null: none.
  json take_expected_output() { return std::exchange(expected_output_, json()); }
  // Set by handle_message for a fetch run that is not a HEAD: expect_output() is honoured only then.
  void allow_expected_output(bool allowed) { expected_output_allowed_ = allowed; }
  bool expected_output_allowed() const { return expected_output_allowed_; }

  // The workflow run this request belongs to, when the ledger's workflow_runner started it
  // (headers X-SiteSwarm-Workflow-Run-Id / -Workflow-Type / -Caused-By, set in handle_message):
  // emit_event() stamps it on events whose producer does not say otherwise.
  struct Provenance {
    std::string workflow_run_id;
    std::string caused_by;  // "workflow:<workflow_type>"
  };
  const Provenance& provenance() const { return provenance_; }
  void set_provenance(Provenance p) { provenance_ = std::move(p); }

  // State a worker keeps across the runs of one instance (one per isolate in workerd, one per
  // worker in the native mesh), e.g. a short-lived cache: one default-constructed T per instance,
  // gone with it (a trap drops the instance). Never for anything a run must not miss: another
  // isolate, or the next instance, starts empty.
  template <class T>
  T& instance_local();

 private:
  Runtime& runtime_;
  const App& app_;
  std::shared_ptr<const json> env_;  // shared with the runtime while the host's env is unchanged
  bool allow_local_outbound_ = false;
  std::int64_t now_ms_;
  const json* scheduled_input_ = nullptr;
  std::string entropy_;  // raw bytes not yet used
  std::vector<std::string> logs_;
  std::optional<std::int64_t> replay_until_ms_;
  Provenance provenance_;
  std::vector<Task<Status>> background_;  // wait_until(), not started yet
  bool background_quiet_ = true;
  json expected_output_;  // expect_output(), not published yet (null: none)
  bool expected_output_allowed_ = false;
};

class Runtime {
 public:
  explicit Runtime(const App& app);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  enum class State { unknown = -1, waiting = 0, done = 1 };

  // Starts a run from an input message; 0 when the message is not valid JSON.
  std::uint32_t start(std::string_view message);
  State state(std::uint32_t id) const;
  // Waiting: a JSON array of the effects issued by the last start()/resume() (possibly empty while
  // earlier ones are still in flight). Done: the output message. Stable until the next resume().
  const std::string& data(std::uint32_t id) const;
  // Delivers {"now":…,"results":[{"id","ok","value"|"error"}…]}.
  void resume(std::uint32_t id, std::string_view results);
  void drop(std::uint32_t id);
  std::size_t live_runs() const { return runs_.size(); }

  // Monotonic ULIDs are per instance, shared by every run on it.
  std::optional<std::string> next_ulid(std::int64_t now_ms,
                                       const std::array<std::uint8_t, 10>& random);

  // The slot of Context::instance_local<T>() (tag: one address per T).
  std::shared_ptr<void>& instance_slot(const void* tag) { return instance_locals_[tag]; }

  struct Run;

 private:
  void step(Run& run, co::coroutine_handle<> h);
  void publish(Run& run);
  void finish_if_done(Run& run);

  const App& app_;
  std::map<std::uint32_t, std::unique_ptr<Run>> runs_;
  // The env of the last message that carried one: a message with "envSame":true runs with it
  // (docs/abi.md), so an unchanged env is neither sent, parsed nor copied again per run.
  std::shared_ptr<const json> last_env_;
  std::uint32_t next_id_ = 1;
  struct UlidState;
  std::unique_ptr<UlidState> ulid_;
  std::map<const void*, std::shared_ptr<void>> instance_locals_;
};

template <class T>
T& Context::instance_local() {
  static const char tag = 0;  // one per T: its address names the slot
  std::shared_ptr<void>& slot = runtime_.instance_slot(&tag);
  if (!slot) slot = std::make_shared<T>();
  return *static_cast<T*>(slot.get());
}

// The run whose coroutine is executing right now (set around every resume; nests for in-process
// calls).
Runtime::Run* current_run();

}  // namespace ss
