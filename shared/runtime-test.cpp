// The effect runtime on its own: a tiny test App, driven by the native driver with a fake
// performer.
#include "shared/runtime.h"

#include "shared/app.h"
#include "shared/effects.h"
#include "shared/json_util.h"
#include "tests/native/harness.h"
#include "tests/native/test_support.h"

#include <doctest/doctest.h>

namespace ss {
namespace {

using test::fetch_message;

int g_live_guards = 0;
struct FrameGuard {
  FrameGuard() { ++g_live_guards; }
  ~FrameGuard() { --g_live_guards; }
};

Task<Result<int>> leaf(int x) {
  FrameGuard guard;
  json params = json::array({x});
  SS_CO_TRY(D1Result v, co_await D1("DB").first("SELECT ?1 AS x", params));
  co_return static_cast<int>(int_or(*v.first(), "x", -1)) * 2;
}

Task<Result<int>> middle(int x) {
  FrameGuard guard;
  SS_CO_TRY(int a, co_await leaf(x));
  SS_CO_TRY(int b, co_await leaf(x + 1));
  co_return a + b;
}

Task<Result<json>> sleeper(int ms, std::vector<int>* order) {
  FrameGuard guard;
  SS_CO_CHECK(co_await sleep_ms(ms));
  order->push_back(ms);
  co_return json(ms);
}

std::vector<int> g_order;

App make_test_app() {
  App app;
  app.service = "test";
  app.db_binding = "DB";
  app.router.add("GET", "/text",
                 [](Context&, const Request&, const Params&) -> Task<Result<Response>> {
                   co_return Response::text(200, "line one\n\"two\" \\ é\n", "text/plain");
                 });
  app.router.add("GET", "/nested",
                 [](Context&, const Request&, const Params&) -> Task<Result<Response>> {
                   SS_CO_TRY(int v, co_await middle(5));
                   co_return Response::json_body(200, {{"value", v}});
                 });
  app.router.add("GET", "/concurrent",
                 [](Context&, const Request&, const Params&) -> Task<Result<Response>> {
                   g_order.clear();
                   std::vector<Task<Result<json>>> tasks;
                   tasks.push_back(sleeper(30, &g_order));
                   tasks.push_back(sleeper(5, &g_order));
                   tasks.push_back(sleeper(15, &g_order));
                   auto results = co_await when_all(std::move(tasks));
                   json values = json::array();
                   for (auto& r : results) values.push_back(r ? *r : json("error"));
                   co_return Response::json_body(200, {{"values", values}});
                 });
  app.router.add("GET", "/fails",
                 [](Context&, const Request&, const Params&) -> Task<Result<Response>> {
                   SS_CO_TRY(int v, co_await middle(1));
                   co_return Response::json_body(200, {{"value", v}});
                 });
  app.router.add("GET", "/env",
                 [](Context& ctx, const Request&, const Params&) -> Task<Result<Response>> {
                   co_return Response::json_body(200, {{"mode", ctx.env("MODE")}});
                 });
  app.router.add("GET", "/ulids",
                 [](Context& ctx, const Request&, const Params&) -> Task<Result<Response>> {
                   json ids = json::array();
                   for (int i = 0; i < 20; ++i) {
                     SS_CO_TRY(std::string id, co_await ctx.new_ulid());
                     ids.push_back(id);
                   }
                   co_return Response::json_body(200, {{"ids", ids}});
                 });
  // Answers known in advance (docs/abi.md): `accepted` if both statements succeed. ?log logs a line
  // first (it belongs in the answer), ?background hands work to wait_until first (no promise then).
  app.router.add("GET", "/promise",
                 [](Context& ctx, const Request& req, const Params&) -> Task<Result<Response>> {
                   Response accepted = Response::text(202, "line one\nline two", "text/plain");
                   accepted.set_header("cache-control", "no-store");
                   if (req.query_param("log") == "1") ctx.log("before the promise");
                   if (req.query_param("background") == "1") {
                     ctx.wait_until([]() -> Task<Status> { co_return Unit{}; }());
                   }
                   expect_answer(ctx, accepted);
                   auto [a, b] = co_await when_all(D1("DB").run("UPDATE a", json::array()),
                                                   D1("DB").run("UPDATE b", json::array()));
                   if (!a || !b)
                     co_return Error{ErrorCode::dependency_unavailable, "a write failed"};
                   co_return accepted;
                 });
  // Answering early with background work: wait_until_sent alone lets the runtime promise the run's
  // end ({"sent":true}) beside the answer and the sends; ?loud=1 adds a wait_until (no promise).
  app.router.add("GET", "/sent",
                 [](Context& ctx, const Request& req, const Params&) -> Task<Result<Response>> {
                   wait_until_sent(ctx, queue_send("Q", json_object({{"n", 1}})), "one not sent");
                   wait_until_sent(ctx, queue_send("Q", json_object({{"n", 2}})), "two not sent");
                   if (req.query_param("loud") == "1") {
                     ctx.wait_until([]() -> Task<Status> { co_return Unit{}; }());
                   }
                   co_return Response::empty(202);
                 });
  // A promise made while an effect of an earlier step is still in flight (SELECT 0): not passed on.
  app.router.add("GET", "/promise-stale",
                 [](Context& ctx, const Request&, const Params&) -> Task<Result<Response>> {
                   auto late = [](Context& c) -> Task<Status> {
                     SS_CO_CHECK(co_await D1("DB").first("SELECT 1", json::array()));
                     expect_answer(c, Response::empty(202));
                     SS_CO_CHECK(co_await D1("DB").run("UPDATE a", json::array()));
                     co_return Unit{};
                   };
                   auto [slow, fast] =
                       co_await when_all(D1("DB").first("SELECT 0", json::array()), late(ctx));
                   co_return Response::empty(202);
                 });
  return app;
}

json echo_row(const json& effect) {
  json x = effect["params"][0];
  return json{{"id", effect["id"]}, {"ok", true}, {"value", {{"row", {{"x", x}}}}}};
}

}  // namespace

TEST_CASE("nested tasks resume through every level and free their frames") {
  App app = make_test_app();
  Runtime rt(app);
  std::int64_t now = 1000;
  int effects = 0;
  json out = native::drive(rt, fetch_message("/nested"), now, [&](const json& e) {
    ++effects;
    return echo_row(e);
  });
  CHECK(out["status"] == 200);
  CHECK(parse_json(out["body"].get<std::string>())->at("value") == 22);  // 5*2 + 6*2
  CHECK(effects == 2);
  CHECK(g_live_guards == 0);
  CHECK(rt.live_runs() == 0);
}

TEST_CASE("effects awaited together are issued together and complete in wake order") {
  App app = make_test_app();
  Runtime rt(app);
  std::int64_t now = 1000;
  json out = native::drive(rt, fetch_message("/concurrent"), now, [](const json& e) { return e; });
  CHECK(out["status"] == 200);
  auto body = *parse_json(out["body"].get<std::string>());
  CHECK(body["values"] == json::array({30, 5, 15}));  // results in input order
  CHECK(g_order == std::vector<int>{5, 15, 30});      // completion in time order
  CHECK(now == 1030);                                 // concurrent: 30 ms in all, not 50
}

TEST_CASE("the first batch of a when_all holds every child's effect") {
  App app = make_test_app();
  Runtime rt(app);
  auto id = rt.start(dump_json(fetch_message("/concurrent")));
  REQUIRE(rt.state(id) == Runtime::State::waiting);
  json effects = json::parse(rt.data(id));
  CHECK(effects.size() == 3);
  rt.drop(id);
  CHECK(g_live_guards == 0);
}

TEST_CASE("an effect error propagates as a value to a 503 JSON error") {
  App app = make_test_app();
  Runtime rt(app);
  std::int64_t now = 0;
  json out = native::drive(rt, fetch_message("/fails"), now, [](const json& e) {
    return json{{"id", e["id"]},
                {"ok", false},
                {"error", {{"code", "d1_error"}, {"message", "no such table"}}}};
  });
  CHECK(out["status"] == 503);
  auto body = *parse_json(out["body"].get<std::string>());
  CHECK(body["error"]["code"] == "dependency_unavailable");
  CHECK(body["error"]["message"].get<std::string>().find("no such table") == std::string::npos);
  CHECK(out["logs"][0].get<std::string>().find("no such table") != std::string::npos);
  CHECK(g_live_guards == 0);
}

TEST_CASE("dropping a suspended run frees every nested frame") {
  App app = make_test_app();
  Runtime rt(app);
  auto id = rt.start(dump_json(fetch_message("/nested")));
  REQUIRE(rt.state(id) == Runtime::State::waiting);
  CHECK(g_live_guards == 2);  // middle + leaf are suspended
  rt.drop(id);
  CHECK(g_live_guards == 0);  // and ASan/LSan sees no leak
  CHECK(rt.state(id) == Runtime::State::unknown);
}

TEST_CASE("many runs interleave on one runtime") {
  App app = make_test_app();
  Runtime rt(app);
  auto a = rt.start(dump_json(fetch_message("/nested")));
  auto b = rt.start(dump_json(fetch_message("/nested")));
  CHECK(a != b);
  json ea = json::parse(rt.data(a));
  json eb = json::parse(rt.data(b));
  rt.resume(b, dump_json(json{{"now", 1}, {"results", {echo_row(eb[0])}}}));
  rt.resume(a, dump_json(json{{"now", 1}, {"results", {echo_row(ea[0])}}}));
  CHECK(rt.state(a) == Runtime::State::waiting);
  CHECK(rt.state(b) == Runtime::State::waiting);
  rt.drop(a);
  rt.drop(b);
  CHECK(g_live_guards == 0);
}

TEST_CASE("bad messages and results never crash the runtime") {
  App app = make_test_app();
  Runtime rt(app);
  CHECK(rt.start("not json") == 0);
  CHECK(rt.start("[1,2]") == 0);
  auto id = rt.start(dump_json(fetch_message("/nested")));
  rt.resume(id, "garbage");  // no results: still waiting on the same effect
  rt.resume(id, R"({"results":[{"id":999,"ok":true}]})");
  CHECK(rt.state(id) == Runtime::State::waiting);
  rt.drop(id);
  CHECK(rt.state(12345) == Runtime::State::unknown);
  CHECK(rt.data(12345).empty());
}

TEST_CASE("unknown routes are 404 and wrong methods 405 with Allow, as JSON") {
  App app = make_test_app();
  Runtime rt(app);
  std::int64_t now = 0;
  json out = native::drive(rt, fetch_message("/nope"), now, [](const json& e) { return e; });
  CHECK(out["status"] == 404);
  CHECK(parse_json(out["body"].get<std::string>())->at("error").at("code") == "not_found");
  json post = fetch_message("/nested");
  post["request"]["method"] = "POST";
  out = native::drive(rt, post, now, [](const json& e) { return e; });
  CHECK(out["status"] == 405);
  CHECK(out["headers"]["allow"] == "GET, HEAD");  // HEAD is served wherever GET is
  CHECK(parse_json(out["body"].get<std::string>())->at("error").at("code") == "method_not_allowed");
}

TEST_CASE(
    "the most specific pattern decides: a literal route's wrong method is 405, not a {param} "
    "route") {
  App app = make_test_app();
  std::vector<std::string> ran;
  auto handler = [&ran](std::string name) {
    return [&ran, name](Context&, const Request&, const Params& p) -> Task<Result<Response>> {
      ran.push_back(name + (p.count("id") ? ":" + p.at("id") : ""));
      co_return Response::json_body(200, json::object());
    };
  };
  app.router.add("POST", "/items/submit", handler("submit"))
      .add("GET", "/items/{id}", handler("get"))
      .add("DELETE", "/items/{id}", handler("delete"));
  Runtime rt(app);
  std::int64_t now = 0;
  auto call = [&](const std::string& method, const std::string& path) {
    json m = fetch_message(path);
    m["request"]["method"] = method;
    return native::drive(rt, m, now, [](const json& e) { return e; });
  };
  json out = call("GET", "/items/submit");
  CHECK(out["status"] == 405);
  CHECK(out["headers"]["allow"] == "POST");
  CHECK(call("DELETE", "/items/submit")["status"] == 405);
  CHECK(ran.empty());
  CHECK(call("POST", "/items/submit")["status"] == 200);
  CHECK(call("GET", "/items/42")["status"] == 200);
  out = call("PUT", "/items/42");
  CHECK(out["status"] == 405);
  CHECK(out["headers"]["allow"] == "GET, HEAD, DELETE");
  CHECK(ran == std::vector<std::string>{"submit", "get:42"});
}

TEST_CASE("ULIDs from a run are unique, sorted and refill entropy through crypto.random") {
  App app = make_test_app();
  Runtime rt(app);
  std::int64_t now = 1764426000000;
  int random_calls = 0;
  json out = native::drive(rt, fetch_message("/ulids"), now, [&](const json& e) {
    ++random_calls;
    CHECK(e["kind"] == "crypto.random");
    return json{{"id", e["id"]}, {"ok", true}, {"value", {{"hex", std::string(128, '7')}}}};
  });
  auto ids = parse_json(out["body"].get<std::string>())->at("ids");
  REQUIRE(ids.size() == 20);
  for (std::size_t i = 1; i < ids.size(); ++i) CHECK(ids[i - 1] < ids[i]);
  CHECK(random_calls >= 2);  // 32 bytes of message entropy cover 3 ids; the rest are fetched
}

}  // namespace ss

namespace ss {
TEST_CASE("deeply nested JSON is refused before it can exhaust the stack") {
  std::string deep(100000, '[');
  auto r = parse_json(deep);
  REQUIRE(!r.ok());
  CHECK(r.error().code == ErrorCode::invalid_json);
  CHECK(parse_json(std::string(64, '[') + std::string(64, ']')).ok());
  CHECK(!parse_json(std::string(65, '[') + std::string(65, ']')).ok());
  CHECK(
      parse_json(
          R"({"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"["})")
          .ok());
}
TEST_CASE("a message with envSame runs with the env of the last message that carried one") {
  App app = make_test_app();
  Runtime rt(app);
  auto mode_of = [&](json message) {
    auto id = rt.start(dump_json(message));
    REQUIRE(rt.state(id) == Runtime::State::done);
    json out = json::parse(rt.data(id));
    rt.drop(id);
    return json::parse(out["body"].get<std::string>())["mode"].get<std::string>();
  };
  json same = fetch_message("/env");
  same["envSame"] = true;
  CHECK(mode_of(same) == "");  // nothing carried yet: an empty env
  json first = fetch_message("/env");
  first["env"] = {{"MODE", "one"}};
  CHECK(mode_of(first) == "one");
  CHECK(mode_of(same) == "one");
  CHECK(mode_of(fetch_message("/env")) == "");  // neither env nor envSame: an empty env, as before
  json second = fetch_message("/env");
  second["env"] = {{"MODE", "two"}};
  CHECK(mode_of(second) == "two");
  CHECK(mode_of(same) == "two");
}

TEST_CASE("a fetch message with bodyApart gets its body after the output's JSON, unescaped") {
  App app = make_test_app();
  Runtime rt(app);
  auto data_of = [&](json message) {
    auto id = rt.start(dump_json(message));
    REQUIRE(rt.state(id) == Runtime::State::done);
    std::string data = rt.data(id);
    rt.drop(id);
    return data;
  };
  const std::string body = "line one\n\"two\" \\ é\n";
  json inline_out = json::parse(data_of(fetch_message("/text")));
  CHECK(inline_out["body"] == body);  // without the flag: as before
  json apart = fetch_message("/text");
  apart["bodyApart"] = true;
  std::string data = data_of(apart);
  auto split = data.find('\n');
  REQUIRE(split != std::string::npos);
  json head = json::parse(data.substr(0, split));
  CHECK(head["status"] == 200);
  CHECK(head["headers"]["content-type"] == "text/plain");
  CHECK(!head.contains("body"));
  CHECK(data.substr(split + 1) == body);
  // An error answer comes the same way.
  json missing = fetch_message("/nowhere");
  missing["bodyApart"] = true;
  std::string not_found = data_of(missing);
  split = not_found.find('\n');
  REQUIRE(split != std::string::npos);
  CHECK(json::parse(not_found.substr(0, split))["status"] == 404);
  CHECK(json::parse(not_found.substr(split + 1))["error"]["code"] == "not_found");
}

}  // namespace ss

namespace ss {
namespace {
// The run's data split at its first line feed: the effects, and the answer known in advance ("" when
// none came).
std::pair<json, std::string> effects_and_promise(const Runtime& rt, std::uint32_t id) {
  const std::string& data = rt.data(id);
  const std::size_t split = data.find('\n');
  if (split == std::string::npos) return {json::parse(data), ""};
  return {json::parse(data.substr(0, split)), data.substr(split + 1)};
}

std::string results_of(const json& effects, bool first_ok) {
  json results = json::array();
  bool ok = first_ok;
  for (const json& e : effects) {
    results.push_back(
        ok ? json{{"id", e["id"]}, {"ok", true}, {"value", {{"meta", {{"changes", 1}}}}}}
           : json{{"id", e["id"]}, {"ok", false}, {"error", {{"code", "d1_error"}}}});
    ok = true;
  }
  return dump_json(json{{"now", 1}, {"results", results}});
}
}  // namespace

TEST_CASE("an answer known in advance rides after its effects and is the answer they give") {
  App app = make_test_app();
  Runtime rt(app);
  json message = fetch_message("/promise?log=1");
  message["bodyApart"] = true;
  auto id = rt.start(dump_json(message));
  REQUIRE(rt.state(id) == Runtime::State::waiting);
  auto [effects, promised] = effects_and_promise(rt, id);
  CHECK(effects.size() == 2);
  // The answer as a done run's data: JSON with the logs so far, then the body apart.
  auto split = promised.find('\n');
  REQUIRE(split != std::string::npos);
  json head = json::parse(promised.substr(0, split));
  CHECK(head["status"] == 202);
  CHECK(head["headers"]["cache-control"] == "no-store");
  CHECK(head["logs"] == json::array({"before the promise"}));
  CHECK(promised.substr(split + 1) == "line one\nline two");
  // Resumed with every effect ok, the core ends with exactly that answer.
  rt.resume(id, results_of(effects, true));
  REQUIRE(rt.state(id) == Runtime::State::done);
  CHECK(rt.data(id) == promised);
  rt.drop(id);

  // With one failure the core decides again: the promise does not hold.
  id = rt.start(dump_json(message));
  auto [effects2, promised2] = effects_and_promise(rt, id);
  CHECK(promised2 == promised);
  rt.resume(id, results_of(effects2, false));
  REQUIRE(rt.state(id) == Runtime::State::done);
  std::string failed = rt.data(id);
  CHECK(json::parse(failed.substr(0, failed.find('\n')))["status"] == 503);
  rt.drop(id);
}

TEST_CASE("no answer is promised for a HEAD, background work or effects of an earlier step") {
  App app = make_test_app();
  Runtime rt(app);
  auto promise_of = [&](json message) {
    auto id = rt.start(dump_json(message));
    REQUIRE(rt.state(id) == Runtime::State::waiting);
    auto [effects, promised] = effects_and_promise(rt, id);
    rt.drop(id);
    return promised;
  };
  CHECK(!promise_of(fetch_message("/promise")).empty());  // the control: GET, nothing else
  json head = fetch_message("/promise");
  head["request"]["method"] = "HEAD";
  CHECK(promise_of(head).empty());  // its body would be cleared after the handler
  CHECK(promise_of(fetch_message("/promise?background=1")).empty());  // answered by response.send
  // SELECT 1 answered alone: UPDATE a goes out while SELECT 0 is still in flight.
  auto id = rt.start(dump_json(fetch_message("/promise-stale")));
  auto [first, none] = effects_and_promise(rt, id);
  REQUIRE(first.size() == 2);
  CHECK(none.empty());
  json value = {{"columns", json::array({"x"})}, {"rows", json::array({json::array({1})})}};
  json one = json::array({json{{"id", first[1]["id"]}, {"ok", true}, {"value", value}}});
  rt.resume(id, dump_json(json{{"now", 1}, {"results", one}}));
  REQUIRE(rt.state(id) == Runtime::State::waiting);
  auto [second, stale] = effects_and_promise(rt, id);
  REQUIRE(second.size() == 1);
  CHECK(second[0]["sql"] == "UPDATE a");
  CHECK(stale.empty());
  rt.drop(id);
}

TEST_CASE("background work that only sends lets the run's end ride beside the early answer") {
  App app = make_test_app();
  Runtime rt(app);
  // Every effect ok, or the second queue send failing.
  auto results = [](const json& effects, bool second_send_fails) {
    json list = json::array();
    int sends = 0;
    for (const json& e : effects) {
      bool fail = e["kind"] == "queue.send" && ++sends == 2 && second_send_fails;
      list.push_back(
          fail ? json{{"id", e["id"]}, {"ok", false}, {"error", {{"code", "queue_error"}}}}
               : json{{"id", e["id"]}, {"ok", true}, {"value", json::object()}});
    }
    return dump_json(json{{"now", 1}, {"results", list}});
  };
  auto id = rt.start(dump_json(fetch_message("/sent")));
  REQUIRE(rt.state(id) == Runtime::State::waiting);
  auto [effects, promised] = effects_and_promise(rt, id);
  REQUIRE(effects.size() == 3);
  CHECK(effects[0]["kind"] == "response.send");
  CHECK(effects[0]["status"] == 202);
  CHECK(effects[1]["kind"] == "queue.send");
  CHECK(effects[1]["body"]["n"] == 1);
  CHECK(effects[2]["body"]["n"] == 2);
  REQUIRE(!promised.empty());
  CHECK(json::parse(promised) == json{{"sent", true}});
  // The promise holds: resumed with every effect ok, the core ends with exactly it.
  rt.resume(id, results(effects, false));
  REQUIRE(rt.state(id) == Runtime::State::done);
  CHECK(rt.data(id) == promised);
  rt.drop(id);

  // A failed send: the host resumes the core, which logs it (the promise was only for success).
  id = rt.start(dump_json(fetch_message("/sent")));
  auto [effects2, promised2] = effects_and_promise(rt, id);
  CHECK(promised2 == promised);
  rt.resume(id, results(effects2, true));
  REQUIRE(rt.state(id) == Runtime::State::done);
  json out = json::parse(rt.data(id));
  CHECK(out["sent"] == true);
  REQUIRE(out["logs"].is_array());
  bool logged = false;
  for (const json& line : out["logs"]) {
    logged = logged || line.get<std::string>().rfind("two not sent: ", 0) == 0;
  }
  CHECK(logged);
  rt.drop(id);

  // Work handed to wait_until besides: no promise (it may do anything after its effects).
  id = rt.start(dump_json(fetch_message("/sent?loud=1")));
  auto [effects3, none] = effects_and_promise(rt, id);
  CHECK(effects3.size() == 3);
  CHECK(none.empty());
  rt.drop(id);
}
}  // namespace ss
