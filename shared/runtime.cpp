#include "shared/runtime.h"

#include "shared/app.h"
#include "shared/bytes.h"
#include "shared/json_util.h"
#include "shared/text.h"
#include "shared/ulid.h"

namespace ss {

struct Runtime::Run {
  Run(Runtime& rt, std::uint32_t run_id, const App& app, std::shared_ptr<const json> env,
      std::int64_t now, std::string entropy)
      : id(run_id), ctx(rt, app, std::move(env), now, std::move(entropy)) {}

  std::uint32_t id;
  Context ctx;
  Task<json> root;
  json issued = json::array();  // effects not yet handed to the host
  struct Pending {
    detail::EffectSlot slot;
    std::string kind;
  };
  std::map<std::int64_t, Pending> outstanding;  // handed to the host, result not yet back
  std::int64_t next_effect_id = 1;
  std::string data;
  bool done = false;
};

struct Runtime::UlidState {
  UlidGenerator generator;
};

namespace {
thread_local Runtime::Run* g_current_run = nullptr;

// Sets the current run for the duration of one resume and restores the previous one afterwards, so
// a host may drive another core's run from inside an effect (the native mesh does for service
// calls).
class CurrentRunScope {
 public:
  explicit CurrentRunScope(Runtime::Run* run) : previous_(g_current_run) { g_current_run = run; }
  ~CurrentRunScope() { g_current_run = previous_; }

 private:
  Runtime::Run* previous_;
};

json stalled_output() {
  Response r = Response::from_error(Error{ErrorCode::internal, "internal error"});
  return r.to_json();
}
}  // namespace

Runtime::Run* current_run() { return g_current_run; }

void Effect::await_suspend(co::coroutine_handle<> h) {
  Runtime::Run* run = current_run();
  if (run == nullptr) std::abort();  // an effect awaited outside the runtime is a programming error
  std::int64_t id = run->next_effect_id++;
  std::string kind = string_or(request_, "kind", "effect");
  request_["id"] = id;
  run->issued.push_back(std::move(request_));
  run->outstanding.emplace(id, Runtime::Run::Pending{{&result_, h}, std::move(kind)});
}

Context::Context(Runtime& runtime, const App& app, std::shared_ptr<const json> env,
                 std::int64_t now_ms, std::string entropy_hex)
    : runtime_(runtime), app_(app), env_(std::move(env)), now_ms_(now_ms) {
  allow_local_outbound_ = this->env("ALLOW_LOCAL_OUTBOUND") == "1";
  if (auto bytes = hex_decode(entropy_hex)) entropy_ = std::move(*bytes);
}

std::string Context::env(std::string_view name) const { return string_or(*env_, name, ""); }

std::int64_t Context::env_int(std::string_view name, std::int64_t fallback, std::int64_t min,
                              std::int64_t max) const {
  return parse_decimal(env(name), min, max).value_or(fallback);
}

Task<Result<std::string>> Context::random_bytes(std::size_t n) {
  static constexpr std::size_t kRefillBytes = 64;
  if (entropy_.size() < n) {
    json request = {{"kind", "crypto.random"}, {"bytes", std::max(n, kRefillBytes)}};
    SS_CO_TRY(json value, co_await Effect(std::move(request)));
    auto bytes = hex_decode(string_or(value, "hex", ""));
    if (!bytes || bytes->size() < n) {
      co_return Error{ErrorCode::internal, "random_bytes(): the host returned too few bytes"};
    }
    entropy_ += *bytes;
  }
  std::string out = entropy_.substr(0, n);
  entropy_.erase(0, n);
  co_return out;
}

Task<Result<std::string>> Context::new_ulid() {
  SS_CO_TRY(std::string bytes, co_await random_bytes(10));
  std::array<std::uint8_t, 10> random{};
  for (std::size_t i = 0; i < random.size(); ++i) random[i] = static_cast<std::uint8_t>(bytes[i]);
  auto id = runtime_.next_ulid(now_ms_, random);
  if (!id)
    co_return Error{ErrorCode::internal,
                    "new_ulid(): the id space of this millisecond is exhausted"};
  co_return *id;
}

Task<Result<std::vector<std::string>>> Context::new_ulids(std::size_t n) {
  static constexpr std::size_t kUlidRandomBytes = 10;
  // 1,000 bytes per draw: within what every host hands out per crypto.random (the native test
  // host's cap is 1,024 bytes, WebCrypto's 65,536).
  static constexpr std::size_t kUlidsPerDraw = 100;
  std::vector<std::string> ids;
  ids.reserve(n);
  while (ids.size() < n) {
    std::size_t count = std::min(kUlidsPerDraw, n - ids.size());
    SS_CO_TRY(std::string bytes, co_await random_bytes(count * kUlidRandomBytes));
    for (std::size_t k = 0; k < count; ++k) {
      std::array<std::uint8_t, kUlidRandomBytes> random{};
      for (std::size_t i = 0; i < random.size(); ++i) {
        random[i] = static_cast<std::uint8_t>(bytes[k * kUlidRandomBytes + i]);
      }
      auto id = runtime_.next_ulid(now_ms_, random);
      if (!id) {
        co_return Error{ErrorCode::internal,
                        "new_ulids(): the id space of this millisecond is exhausted"};
      }
      ids.push_back(std::move(*id));
    }
  }
  co_return ids;
}

Runtime::Runtime(const App& app) : app_(app), ulid_(std::make_unique<UlidState>()) {}
Runtime::~Runtime() = default;

std::optional<std::string> Runtime::next_ulid(std::int64_t now_ms,
                                              const std::array<std::uint8_t, 10>& random) {
  return ulid_->generator.next(now_ms, random);
}

std::uint32_t Runtime::start(std::string_view message) {
  json msg = parse_json_or_discarded(message);
  if (msg.is_discarded() || !msg.is_object()) return 0;
  std::uint32_t id = next_id_++;
  if (next_id_ == 0) next_id_ = 1;
  std::shared_ptr<const json> env;
  if (auto it = msg.find("env"); it != msg.end() && it->is_object()) {
    env = std::make_shared<const json>(std::move(*it));
    last_env_ = env;
  } else if (get_bool(msg, "envSame").value_or(false) && last_env_) {
    env = last_env_;
  } else {
    env = std::make_shared<const json>(json::object());
  }
  auto run = std::make_unique<Run>(*this, id, app_, std::move(env), int_or(msg, "now", 0),
                                   string_or(msg, "entropy", ""));
  Run& r = *run;
  runs_.emplace(id, std::move(run));
  r.root = handle_message(r.ctx, std::move(msg));
  step(r, r.root.handle());
  publish(r);
  return id;
}

void Runtime::step(Run& run, co::coroutine_handle<> h) {
  {
    CurrentRunScope scope(&run);
    h.resume();
  }
  finish_if_done(run);
}

void Runtime::finish_if_done(Run& run) {
  if (run.done || !run.root.done()) return;
  json out = run.root.take();
  if (out.is_object() && !run.ctx.logs().empty()) out["logs"] = run.ctx.logs();
  run.data = dump_json(out);
  run.done = true;
}

Runtime::State Runtime::state(std::uint32_t id) const {
  auto it = runs_.find(id);
  if (it == runs_.end()) return State::unknown;
  return it->second->done ? State::done : State::waiting;
}

const std::string& Runtime::data(std::uint32_t id) const {
  static const std::string kNone;
  auto it = runs_.find(id);
  return it == runs_.end() ? kNone : it->second->data;
}

void Runtime::publish(Run& run) {
  if (run.done) return;
  if (run.issued.empty() && run.outstanding.empty()) {
    // Suspended with nothing to wait for: a bug in a core. Fail the run loudly instead of hanging.
    run.data = dump_json(stalled_output());
    run.done = true;
    return;
  }
  run.data = dump_json(run.issued);
  run.issued = json::array();
}

void Runtime::resume(std::uint32_t id, std::string_view results) {
  auto it = runs_.find(id);
  if (it == runs_.end() || it->second->done) return;
  Run& run = *it->second;
  json msg = parse_json_or_discarded(results);
  if (auto now = get_int(msg, "now")) run.ctx.set_now_ms(*now);
  const json* list = find_field(msg, "results");
  static const json kNoResults = json::array();
  for (const json& r : (list && list->is_array()) ? *list : kNoResults) {
    auto effect_id = get_int(r, "id");
    if (!effect_id) continue;
    auto pending = run.outstanding.find(*effect_id);
    if (pending == run.outstanding.end()) continue;
    Run::Pending p = std::move(pending->second);
    run.outstanding.erase(pending);
    if (get_bool(r, "ok").value_or(false)) {
      const json* value = find_field(r, "value");
      *p.slot.result = value ? *value : json(nullptr);
    } else {
      const json* err = find_field(r, "error");
      std::string code = err ? string_or(*err, "code", "error") : "error";
      std::string detail = err ? string_or(*err, "message", "") : "";
      run.ctx.log(p.kind + " failed: " + code + (detail.empty() ? "" : ": " + detail));
      Error e{ErrorCode::dependency_unavailable, p.kind + "(): " + code};
      e.cause = code;
      *p.slot.result = std::move(e);
    }
    step(run, p.slot.handle);
    if (run.done) break;
  }
  publish(run);
}

void Runtime::drop(std::uint32_t id) { runs_.erase(id); }

}  // namespace ss
