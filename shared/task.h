#pragma once
// Lazy coroutine tasks for request handlers.
//
// A Task<T> does nothing until it is awaited (or started by the Runtime). Awaiting a Task from
// another Task runs it inline until its first real suspension (an effect), so nested helpers cost
// one frame each and no scheduler round-trip. Frames are owned by their Task object: dropping a Run
// destroys its root Task, which destroys every nested frame still suspended inside it (RAII all the
// way down).
//
// Two resumption strategies, chosen at compile time:
//  - symmetric transfer (native builds, or wasm with -mtail-call): await_suspend returns a handle;
//  - MVP wasm (no tail calls): clang-14 lowers symmetric transfer to `musttail`, which MVP wasm
//    lacks, so we resume inline and keep the final awaiter's resume out of line (see
//    docs/toolchain.md, "Coroutines on MVP wasm").

#if __has_include(<coroutine>)
#include <coroutine>
namespace ss::co {
using std::coroutine_handle;
using std::noop_coroutine;
using std::suspend_always;
using std::suspend_never;
}  // namespace ss::co
#else
#include <experimental/coroutine>  // Emscripten 3.1.6's libc++ has only this one.
namespace ss::co {
using std::experimental::coroutine_handle;
using std::experimental::noop_coroutine;
using std::experimental::suspend_always;
using std::experimental::suspend_never;
}  // namespace ss::co
#endif

#include <cstdlib>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if !defined(__wasm__) || defined(__wasm_tail_call__)
#define SS_SYMMETRIC_TRANSFER 1
#else
#define SS_SYMMETRIC_TRANSFER 0
#endif

namespace ss {

template <class T>
class Task;

namespace detail {

struct PromiseBase {
  co::coroutine_handle<> continuation = co::noop_coroutine();
  bool inline_start = false;  // MVP mode: the parent is on the stack below us and resumes itself.

  co::suspend_always initial_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { std::abort(); }  // built with -fno-exceptions: unreachable
};

#if !SS_SYMMETRIC_TRANSFER
// Defined in task.cpp, out of clang's sight: an inlined resume() that precedes a suspend would be
// lowered to a musttail call, which MVP wasm cannot encode.
void resume_continuation(PromiseBase& promise) noexcept;
#endif

struct FinalAwaiter {
  bool await_ready() const noexcept { return false; }
#if SS_SYMMETRIC_TRANSFER
  template <class P>
  co::coroutine_handle<> await_suspend(co::coroutine_handle<P> h) noexcept {
    return h.promise().continuation;
  }
#else
  template <class P>
  [[gnu::always_inline]] void await_suspend(co::coroutine_handle<P> h) noexcept {
    resume_continuation(h.promise());  // inlined even under -fno-inline-functions (Emscripten)
  }
#endif
  void await_resume() const noexcept {}
};

}  // namespace detail

template <class T>
class [[nodiscard]] Task {
 public:
  struct promise_type : detail::PromiseBase {
    std::optional<T> value;
    Task get_return_object() noexcept {
      return Task(co::coroutine_handle<promise_type>::from_promise(*this));
    }
    detail::FinalAwaiter final_suspend() noexcept { return {}; }
    template <class U>
    void return_value(U&& v) {
      value.emplace(std::forward<U>(v));
    }
  };
  using handle_type = co::coroutine_handle<promise_type>;

  Task() = default;
  explicit Task(handle_type h) : h_(h) {}
  Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  bool valid() const { return static_cast<bool>(h_); }
  bool done() const { return h_ && h_.done(); }
  handle_type handle() const { return h_; }
  // The result of a finished task (moved out once).
  T take() { return std::move(*h_.promise().value); }

  // Awaiting from another coroutine.
  bool await_ready() const noexcept { return !h_ || h_.done(); }
#if SS_SYMMETRIC_TRANSFER
  co::coroutine_handle<> await_suspend(co::coroutine_handle<> parent) noexcept {
    h_.promise().continuation = parent;
    return h_;
  }
#else
  // Out of line: clang-14 turns an inlined resume() that precedes a suspend into a musttail call.
  [[gnu::noinline]] bool await_suspend(co::coroutine_handle<> parent) noexcept {
    auto& p = h_.promise();
    p.continuation = parent;
    p.inline_start = true;
    h_.resume();
    p.inline_start = false;
    return !h_.done();  // finished synchronously: continue the parent without suspending
  }
#endif
  T await_resume() { return take(); }

 private:
  void reset() {
    if (h_) h_.destroy();
    h_ = {};
  }
  handle_type h_;
};

namespace detail {

struct WhenAllCounter {
  std::size_t remaining = 0;
  co::coroutine_handle<> parent;
};

#if !SS_SYMMETRIC_TRANSFER
void resume_parent_if_last(WhenAllCounter& counter) noexcept;  // task.cpp, like resume_continuation
#endif

// One driver coroutine per child of when_all: awaits the child and stores its result. The last
// driver to finish resumes the parent from its final suspension point — never from its body,
// because the parent destroys the drivers as soon as it continues.
struct DriverTask {
  struct promise_type;
  struct Final {
    bool await_ready() const noexcept { return false; }
#if SS_SYMMETRIC_TRANSFER
    co::coroutine_handle<> await_suspend(co::coroutine_handle<promise_type> h) noexcept {
      WhenAllCounter* c = h.promise().counter;
      if (--c->remaining == 0) return c->parent;
      return co::noop_coroutine();
    }
#else
    [[gnu::always_inline]] void await_suspend(co::coroutine_handle<promise_type> h) noexcept {
      resume_parent_if_last(*h.promise().counter);
    }
#endif
    void await_resume() const noexcept {}
  };
  struct promise_type {
    WhenAllCounter* counter = nullptr;
    DriverTask get_return_object() noexcept {
      return DriverTask{co::coroutine_handle<promise_type>::from_promise(*this)};
    }
    co::suspend_always initial_suspend() noexcept { return {}; }
    Final final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::abort(); }
  };
  co::coroutine_handle<promise_type> h;
};

// What both when_all awaiters share, typed by nothing (task.cpp): the driver frames, started
// together and destroyed with the state. One copy per module instead of one per when_all signature.
struct WhenAllDrivers : WhenAllCounter {
  std::vector<co::coroutine_handle<DriverTask::promise_type>> drivers;
  WhenAllDrivers() = default;
  WhenAllDrivers(const WhenAllDrivers&) = delete;
  WhenAllDrivers& operator=(const WhenAllDrivers&) = delete;
  ~WhenAllDrivers();  // destroys every driver frame (a child still suspended inside goes with it)
  void add(DriverTask driver);
  // Resumes every driver; false when all finished synchronously (the parent must not suspend).
  bool start(co::coroutine_handle<> parent);
};

template <class T>
struct WhenAllState : WhenAllDrivers {
  std::vector<Task<T>> children;
  std::vector<std::optional<T>> results;
};

template <class T>
DriverTask drive_child(WhenAllState<T>* state, std::size_t index) {
  state->results[index].emplace(co_await std::move(state->children[index]));
}

template <class T>
class WhenAllAwaiter {
 public:
  explicit WhenAllAwaiter(std::vector<Task<T>> children)
      : state_(std::make_unique<WhenAllState<T>>()) {
    state_->children = std::move(children);
    state_->results.resize(state_->children.size());
  }
  bool await_ready() const noexcept { return state_->children.empty(); }
#if !SS_SYMMETRIC_TRANSFER
  [[gnu::noinline]]
#endif
  bool
  await_suspend(co::coroutine_handle<> parent) {
    auto* s = state_.get();
    for (std::size_t i = 0; i < s->children.size(); ++i) s->add(drive_child(s, i));
    return s->start(parent);
  }
  std::vector<T> await_resume() {
    std::vector<T> out;
    out.reserve(state_->results.size());
    for (auto& r : state_->results) out.push_back(std::move(*r));
    return out;
  }

 private:
  std::unique_ptr<WhenAllState<T>> state_;  // stable address for the drivers
};

// when_all(a, b, …): one driver per awaitable, each storing its result in its own slot of a tuple.
template <class Awaitable>
using awaited_t = decltype(std::declval<Awaitable&>().await_resume());

// The awaitable stays in the awaiter and is reached through a pointer: a by-value coroutine
// parameter of a Task type is destroyed twice by g++-12 (use-after-free under ASan).
template <class Awaitable, class T>
DriverTask drive_into(Awaitable* awaitable, std::optional<T>* slot) {
  slot->emplace(co_await std::move(*awaitable));
}

template <class... As>
class WhenAllTupleAwaiter {
  struct State : WhenAllDrivers {
    std::tuple<std::optional<awaited_t<As>>...> results;
  };

 public:
  explicit WhenAllTupleAwaiter(As... children)
      : children_(std::move(children)...), state_(std::make_unique<State>()) {}
  bool await_ready() const noexcept { return false; }
#if !SS_SYMMETRIC_TRANSFER
  [[gnu::noinline]]
#endif
  bool
  await_suspend(co::coroutine_handle<> parent) {
    start(std::index_sequence_for<As...>{});
    return state_->start(parent);
  }
  std::tuple<awaited_t<As>...> await_resume() { return take(std::index_sequence_for<As...>{}); }

 private:
  template <std::size_t... I>
  void start(std::index_sequence<I...>) {
    State* s = state_.get();
    (s->add(drive_into(&std::get<I>(children_), &std::get<I>(s->results))), ...);
  }
  template <std::size_t... I>
  std::tuple<awaited_t<As>...> take(std::index_sequence<I...>) {
    return std::tuple<awaited_t<As>...>(std::move(*std::get<I>(state_->results))...);
  }

  std::tuple<As...> children_;
  std::unique_ptr<State> state_;  // stable address for the drivers
};

}  // namespace detail

// Runs two or more awaitables (Tasks, effects) of any types concurrently and yields a tuple of
// their results, in argument order: `auto [row, digest] = co_await when_all(d1.first(…),
// sha256_hex(…));`
template <class... As>
requires(sizeof...(As) >=
         2) detail::WhenAllTupleAwaiter<std::decay_t<As>...> when_all(As&&... awaitables) {
  return detail::WhenAllTupleAwaiter<std::decay_t<As>...>(std::forward<As>(awaitables)...);
}

// Runs every task concurrently: their effects are handed to the host together, and the awaiting
// coroutine resumes once all have finished. Results come back in the order of the input.
template <class T>
detail::WhenAllAwaiter<T> when_all(std::vector<Task<T>> tasks) {
  return detail::WhenAllAwaiter<T>(std::move(tasks));
}

}  // namespace ss
