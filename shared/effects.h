#pragma once
// Typed effects: the idiomatic layer over the effect vocabulary of docs/abi.md.
//
// Every constructor here returns an awaitable that yields a typed Result — D1Result, FetchReply,
// an optional KV value, a bool, a Unit — decoded from the host's JSON once, in this module, so
// handlers never dig fields out of raw JSON by name (workers-rs's D1Result / results::<T>() is the
// model). The wire format between host and core is unchanged.

#include "shared/runtime.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

// An effect whose JSON value is decoded into T when it completes. A value the host sends in the
// wrong shape is an internal error naming the effect, never a silently defaulted field.
template <class T>
class [[nodiscard]] EffectOf {
 public:
  using Decode = Result<T> (*)(json&& value);
  EffectOf(json request, Decode decode) : effect_(std::move(request)), decode_(decode) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(co::coroutine_handle<> h) { effect_.await_suspend(h); }
  Result<T> await_resume() {
    Result<json> r = effect_.await_resume();
    if (!r.ok()) return std::move(r).error();
    return decode_(std::move(r).value());
  }

 private:
  Effect effect_;
  Decode decode_;
};

// ---- D1
// ------------------------------------------------------------------------------------------

struct D1Meta {
  std::int64_t changes = 0;
  std::int64_t last_row_id = 0;
  std::int64_t rows_read = 0;
  std::int64_t rows_written = 0;
};

// Reads the columns of one row with their types checked. The first column that is missing or of
// the wrong type makes the whole row corrupt: status() then carries a corrupt_row error naming it.
// A row comes in D1's compact form (an array of values, the names once in `columns`: what the hosts
// send, docs/abi.md) or as an object (column name → value: accepted from hand-written hosts).
class RowReader {
 public:
  RowReader(const json& columns, const json& row) : columns_(columns), row_(row) {}
  // A row the caller gives up: its TEXT values are moved out, not copied (D1Result::as() &&).
  struct TakeValues {};
  RowReader(const json& columns, json& row, TakeValues)
      : columns_(columns), row_(row), movable_(true) {}
  explicit RowReader(const json& row) : RowReader(no_columns(), row) {}
  std::string text(std::string_view column);
  std::optional<std::string> nullable_text(std::string_view column);
  std::int64_t integer(std::string_view column);
  std::optional<std::int64_t> nullable_integer(std::string_view column);
  double real(std::string_view column);
  bool flag(std::string_view column) { return integer(column) != 0; }  // SQLite has no bool
  // A TEXT column holding JSON (e.g. payload, config_json); malformed → corrupt.
  json json_text(std::string_view column);
  bool has(std::string_view column) const { return find(column) != nullptr; }
  const Status& status() const { return status_; }

 private:
  static const json& no_columns();
  const json* find(std::string_view name) const;
  const json* column(std::string_view name, bool allow_null);
  void corrupt(std::string_view column, std::string_view why);
  std::string take_string(const json& v) const;
  const json& columns_;
  const json& row_;
  bool movable_ = false;
  // Decoders read the columns mostly in SELECT order: the search for the next one starts here.
  mutable std::size_t next_ = 0;
  Status status_ = Unit{};
};

// Decodes one row into Row through `static Row Row::decode(RowReader&)`.
template <class Row>
Result<Row> decode_row(RowReader& reader) {
  Row out = Row::decode(reader);
  if (!reader.status().ok()) return reader.status().error();
  return out;
}
template <class Row>
Result<Row> decode_row(const json& columns, const json& row) {
  RowReader reader(columns, row);
  return decode_row<Row>(reader);
}

struct D1Result {
  json columns = json::array();  // the column names, once; empty when the rows are objects
  json rows = json::array();     // each row an array of values in column order (or an object)
  D1Meta meta;                   // from d1.run and d1.batch (d1.all / d1.first carry none)
  // From D1::all_holding: the host's handle of the column it kept back (docs/abi.md "Held
  // columns"), 0 when it sent the column along in the rows instead.
  std::int64_t held = 0;
  // How many rows the statement answered: rows.size(), unless a `tail` left only the last ones.
  std::size_t count = 0;

  bool empty() const { return rows.empty(); }
  std::size_t size() const { return rows.size(); }
  // The first row as an object (column name → value), or nullopt when there is none.
  std::optional<json> first() const;
  // Every row decoded into Row; the first corrupt row fails the whole result.
  template <class Row>
  Result<std::vector<Row>> as() const& {
    std::vector<Row> out;
    out.reserve(rows.size());
    for (const json& r : rows) {
      Result<Row> decoded = decode_row<Row>(columns, r);
      if (!decoded.ok()) return std::move(decoded).error();
      out.push_back(std::move(decoded).value());
    }
    return out;
  }
  // The same from a result the caller is done with: TEXT values are moved out of the rows, not
  // copied (a ledger page of 500 rows is thousands of string copies fewer). Only for Row types
  // whose decode reads each column once.
  template <class Row>
  Result<std::vector<Row>> as() && {
    std::vector<Row> out;
    out.reserve(rows.size());
    for (json& r : rows) {
      RowReader reader(columns, r, RowReader::TakeValues{});
      Result<Row> decoded = decode_row<Row>(reader);
      if (!decoded.ok()) return std::move(decoded).error();
      out.push_back(std::move(decoded).value());
    }
    return out;
  }
  // The first row decoded, or nullopt when there is none.
  template <class Row>
  Result<std::optional<Row>> first_as() const {
    if (rows.empty()) return std::optional<Row>{};
    Result<Row> decoded = decode_row<Row>(columns, rows[0]);
    if (!decoded.ok()) return std::move(decoded).error();
    return std::optional<Row>{std::move(decoded).value()};
  }
};

struct D1Statement {
  std::string sql;
  json params = json::array();
};

// A D1 database binding. SQL uses ?1-style parameters; every tenant query binds tenant_id.
class D1 {
 public:
  explicit D1(std::string binding) : binding_(std::move(binding)) {}
  EffectOf<D1Result> all(std::string_view sql, json params = json::array()) const;
  // d1.all asking the host to keep `column` (JSON text the core only passes on, e.g. a row's view
  // written by SQLite) out of the rows and answer a handle a response's splice names instead, and
  // with `tail` >= 0 to answer only the last `tail` rows and the `count` of all (docs/abi.md "Held
  // columns"), and with `hold_limit` >= 0 to keep only the first `hold_limit` of the column's
  // values (a page read one row past its size, to know whether another follows). A host may send
  // every row and column anyway: then `held` is 0.
  EffectOf<D1Result> all_holding(std::string_view sql, json params, std::string_view column,
                                 int tail = -1, int hold_limit = -1) const;
  EffectOf<D1Result> first(std::string_view sql, json params = json::array()) const;  // ≤ 1 row
  EffectOf<D1Result> run(std::string_view sql, json params = json::array()) const;    // meta only
  EffectOf<std::vector<D1Result>> batch(const std::vector<D1Statement>& statements) const;
  const std::string& binding() const { return binding_; }

  // The same statements with the D1Result decoded further in the effect's own decode step, by a
  // plain `Result<T> (json&&)` function that starts from first_result / all_result: a store's typed
  // read or write as a plain function returning the effect, with no coroutine frame of its own.
  template <class T>
  EffectOf<T> first_decoded(std::string_view sql, json params,
                            typename EffectOf<T>::Decode decode) const {
    return {request("d1.first", sql, std::move(params)), decode};
  }
  template <class T>
  EffectOf<T> run_decoded(std::string_view sql, json params,
                          typename EffectOf<T>::Decode decode) const {
    return {request("d1.run", sql, std::move(params)), decode};
  }
  static Result<D1Result> first_result(json&& value);  // what first() yields
  static Result<D1Result> all_result(json&& value);    // what all() and run() yield

 private:
  json request(const char* kind, std::string_view sql, json params) const;
  std::string binding_;
};

// A d1.batch's results held against the statements sent: one result each, else an internal error.
Status check_batch_answered(const std::vector<D1Result>& results, std::size_t sent);

// ---- KV
// ------------------------------------------------------------------------------------------

class Kv {
 public:
  explicit Kv(std::string binding) : binding_(std::move(binding)) {}
  EffectOf<std::optional<std::string>> get(std::string key) const;  // nullopt: no such key
  EffectOf<Unit> put(std::string key, std::string value,
                     std::optional<int> ttl_seconds = std::nullopt) const;
  EffectOf<Unit> remove(std::string key) const;

 private:
  std::string binding_;
};

// ---- HTTP
// ----------------------------------------------------------------------------------------

struct HttpCall {
  std::string method = "GET";
  std::string url;
  std::map<std::string, std::string> headers;
  std::string body;
  // Both fetch() and service_call() give up after this long (a `timeout` error): a hung peer never
  // holds a run, and its drain lock, until the platform kills the invocation.
  int timeout_ms = 10000;
};

// What an outbound fetch() or a service call answered. Header names are lower-case.
struct FetchReply {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  std::int64_t elapsed_ms = 0;  // measured by the host (fetch only)

  bool ok() const { return status >= 200 && status < 300; }
  std::string header(std::string_view name) const;  // "" when absent
};

// Outbound fetch(); a network error or timeout is an Error whose cause is network_error / timeout.
EffectOf<FetchReply> fetch(const HttpCall& call);
// A request to another worker over a Service Binding.
EffectOf<FetchReply> service_call(std::string binding, const HttpCall& call);
// The same two where the answer's head is the answer (a workflow start, which a 2xx has accepted):
// a body that breaks off or does not arrive in time reads as empty, not as an error
// (`bodyOptional`, docs/abi.md). Apart from the workers that use them, they cost no module a byte.
EffectOf<FetchReply> fetch_head_answers(const HttpCall& call);
EffectOf<FetchReply> service_call_head_answers(std::string binding, const HttpCall& call);

// ---- Queues, Analytics Engine, rate limiter, crypto, time
// ----------------------------------------

EffectOf<Unit> queue_send(std::string binding, json body, int delay_seconds = 0);
// One sendBatch() call (at most kMaxQueueBatch messages): one subrequest, not one per message.
inline constexpr std::size_t kMaxQueueBatch = 100;
EffectOf<Unit> queue_send_batch(std::string binding, std::vector<json> bodies);
EffectOf<Unit> analytics_write(std::string binding, json blobs, json doubles, json indexes);
EffectOf<bool> rate_limit(std::string binding, std::string key);  // true: allowed
EffectOf<std::string> sha256_hex(std::string data);               // 64 lower-case hex chars
EffectOf<std::string> hmac_sha256_hex(std::string key, std::string data);
EffectOf<Unit> sleep_ms(int ms);

// Sends `effect` (a queue send, an AE point: an effect whose Unit cannot fail to decode) after the
// answer, as background work (Context::wait_until) whose only other act is the log line
// `<what>: <error>` when it fails. A fetch run whose background is all such work ends without a
// resume of the core once its answer and these effects have all succeeded (Context::
// wait_until_quiet; docs/abi.md "Answering early").
void wait_until_sent(Context& ctx, EffectOf<Unit> effect, std::string what);

// Runs any awaitable as a Task so it can take part in when_all().
template <class Awaitable>
auto as_task(Awaitable awaitable) -> Task<decltype(awaitable.await_resume())> {
  co_return co_await std::move(awaitable);
}

}  // namespace ss
