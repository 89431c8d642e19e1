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
  // Effects not yet handed to the host, each written as JSON text when it is issued, comma-separated.
  std::string issued;
  struct Pending {
    detail::EffectSlot slot;
    std::string kind;
  };
  std::map<std::int64_t, Pending> outstanding;  // handed to the host, result not yet back
  std::size_t issued_count = 0;                 // effects in `issued`
  std::int64_t next_effect_id = 1;
  std::string data;
  bool done = false;
  // The host asked for a fetch output's body after the JSON instead of inside it (docs/abi.md
  // "Output messages"): the body is then neither escaped here nor unescaped by the host.
  bool body_apart = false;
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

// An output message as the host reads it (docs/abi.md "Output messages"): the JSON with the run's
// logs, and with "bodyApart" the body after a line feed instead of inside it.
std::string encode_output(json out, const std::vector<std::string>& logs, bool body_apart) {
  if (out.is_object() && !logs.empty()) out["logs"] = logs;
  std::string body;
  bool apart = false;
  if (body_apart && out.is_object()) {
    if (auto b = out.find("body"); b != out.end() && b->is_string()) {
      body = std::move(b->get_ref<std::string&>());
      out.erase(b);
      apart = true;
    }
  }
  std::string data = dump_json(out);
  if (apart) {
    // A compact dump holds no raw line feed, so the first one ends the JSON.
    data.reserve(data.size() + 1 + body.size());
    data += '\n';
    data += body;
  }
  return data;
}

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
  // Written once, with the id in front: no id member added to the tree, no array of trees dumped.
  std::string text = request_.is_object() ? dump_json(request_) : std::string("{}");
  if (!run->issued.empty()) run->issued += ',';
  run->issued += "{\"id\":";
  run->issued += std::to_string(id);
  if (text.size() > 2) run->issued += ',';  // a request of no members is "{}"
  run->issued.append(text, 1, std::string::npos);
  run->outstanding.emplace(id, Runtime::Run::Pending{{&result_, h}, std::move(kind)});
  ++run->issued_count;
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
    json request = json_object({{"kind", "crypto.random"}, {"bytes", std::max(n, kRefillBytes)}});
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
  r.body_apart = get_bool(msg, "bodyApart").value_or(false) && string_or(msg, "op", "") == "fetch";
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
  run.data = encode_output(run.root.take(), run.ctx.logs(), run.body_apart);
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
  run.data.clear();
  run.data.reserve(run.issued.size() + 2);
  run.data += '[';
  run.data += run.issued;
  run.data += ']';
  // An answer known in advance rides after the effects, one line feed apart (docs/abi.md), when
  // these effects are all the run waits for and it has nothing left to do once they succeed.
  json expected = run.ctx.take_expected_output();
  if (expected.is_object() && !expected.contains("streamed") && run.ctx.expected_output_allowed() &&
      run.issued_count > 0 && run.outstanding.size() == run.issued_count &&
      !run.ctx.has_background() && !run.ctx.replay_until()) {
    run.data += '\n';
    run.data += encode_output(std::move(expected), run.ctx.logs(), run.body_apart);
  }
  run.issued.clear();
  run.issued_count = 0;
}

void Runtime::resume(std::uint32_t id, std::string_view results) {
  auto it = runs_.find(id);
  if (it == runs_.end() || it->second->done) return;
  Run& run = *it->second;
  json msg = parse_json_or_discarded(results);
  if (auto now = get_int(msg, "now")) run.ctx.set_now_ms(*now);
  auto list = msg.is_object() ? msg.find("results") : msg.end();
  if (list == msg.end() || !list->is_array()) {
    publish(run);
    return;
  }
  for (json& r : *list) {
    auto effect_id = get_int(r, "id");
    if (!effect_id) continue;
    auto pending = run.outstanding.find(*effect_id);
    if (pending == run.outstanding.end()) continue;
    Run::Pending p = std::move(pending->second);
    run.outstanding.erase(pending);
    if (get_bool(r, "ok").value_or(false)) {
      // Moved, not copied: a D1 result of 500 rows is a large tree (docs/performance.md).
      auto value = r.is_object() ? r.find("value") : r.end();
      *p.slot.result = value != r.end() ? std::move(*value) : json(nullptr);
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
