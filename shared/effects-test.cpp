// The typed effect layer: D1 rows decoded into structs (corrupt rows reported, never defaulted),
// fetch replies, KV values, and the heterogeneous when_all.
#include "shared/effects.h"

#include "shared/app.h"
#include "shared/json_util.h"
#include "shared/tenant_store.h"
#include "tests/native/harness.h"
#include "tests/native/test_support.h"

#include <doctest/doctest.h>

namespace ss {
namespace {

using test::fetch_message;

struct Item {
  std::string id;
  std::int64_t qty = 0;
  std::optional<std::string> note;
  json extra;
  static Item decode(RowReader& r) {
    Item i;
    i.id = r.text("id");
    i.qty = r.integer("qty");
    i.note = r.nullable_text("note");
    i.extra = r.json_text("extra");
    return i;
  }
};

json ok(const json& effect, json value) {
  return json{{"id", effect["id"]}, {"ok", true}, {"value", std::move(value)}};
}

App make_app() {
  App app;
  app.service = "typed-effects-test";
  app.db_binding = "DB";
  app.router.add(
      "GET", "/items", [](Context&, const Request&, const Params&) -> Task<Result<Response>> {
        SS_CO_TRY(D1Result r, co_await D1("DB").all("SELECT * FROM items"));
        SS_CO_TRY(std::vector<Item> items, r.as<Item>());
        json out = json::array();
        for (const Item& i : items) out.push_back({i.id, i.qty, i.note ? json(*i.note) : json()});
        co_return Response::json_body(200, {{"items", out}, {"changes", r.meta.changes}});
      });
  app.router.add("GET", "/pair",
                 [](Context&, const Request&, const Params&) -> Task<Result<Response>> {
                   HttpCall call;
                   call.url = "https://example.com/";
                   auto [reply, value, digest] =
                       co_await when_all(fetch(call), Kv("KV").get("k"), sha256_hex("abc"));
                   SS_CO_TRY(FetchReply got, std::move(reply));
                   SS_CO_TRY(std::optional<std::string> v, std::move(value));
                   SS_CO_TRY(std::string hex, std::move(digest));
                   co_return Response::json_body(200, {{"status", got.status},
                                                       {"type", got.header("Content-Type")},
                                                       {"elapsed", got.elapsed_ms},
                                                       {"kv", v ? json(*v) : json()},
                                                       {"hex", hex}});
                 });
  // Held values to splice in, and background work: the answer waits for the run's output.
  app.router.add("GET", "/held-later",
                 [](Context& ctx, const Request&, const Params&) -> Task<Result<Response>> {
                   SS_CO_TRY(D1Result r,
                             co_await D1("DB").all_holding("SELECT v FROM t", json::array(), "v"));
                   ctx.wait_until([]() -> Task<Status> {
                     SS_CO_CHECK(co_await Kv("KV").get("later"));
                     co_return Unit{};
                   }());
                   Response res = Response::text(200, "[]", "application/json");
                   res.splices.push_back(Splice{1, r.held, ","});
                   co_return res;
                 });
  return app;
}

json body_of(const json& out) { return *parse_json(out["body"].get<std::string>()); }

// TenantStore's calls are effects decoded to their types (no coroutine of their own): the same
// typed results and corrupt_row errors as any D1 read.
App make_tenant_app() {
  App app;
  app.service = "tenant-store-test";
  app.db_binding = "DB";
  app.router.add(
      "GET", "/tenant", [](Context&, const Request&, const Params&) -> Task<Result<Response>> {
        TenantStore store("DB");
        const json empty = json::object();
        auto [found, count] = co_await when_all(store.find("t1"), store.count());
        SS_CO_TRY(std::optional<TenantRow> row, std::move(found));
        SS_CO_TRY(std::int64_t n, std::move(count));
        SS_CO_TRY(bool disabled, co_await store.disable("t1", "now"));
        SS_CO_TRY(bool created, co_await store.write(true, "t1", "h", "a", &empty, "now"));
        SS_CO_TRY(bool updated,
                  co_await store.write(false, "t1", std::nullopt, "a2", &empty, "now"));
        co_return Response::json_body(200, {{"found", row ? json(row->tenant_id) : json()},
                                            {"enabled", row ? json(row->enabled) : json()},
                                            {"config", row ? row->config : json()},
                                            {"n", n},
                                            {"disabled", disabled},
                                            {"created", created},
                                            {"updated", updated}});
      });
  return app;
}

}  // namespace

TEST_CASE("D1 rows decode into structs; meta is typed") {
  App app = make_app();
  Runtime rt(app);
  std::int64_t now = 0;
  json out = native::drive(rt, fetch_message("/items"), now, [](const json& e) {
    return ok(e, {{"results",
                   {{{"id", "a"}, {"qty", 2}, {"note", nullptr}, {"extra", "{}"}},
                    {{"id", "b"}, {"qty", 3}, {"note", "n"}, {"extra", "[1]"}}}},
                  {"meta", {{"changes", 7}}}});
  });
  REQUIRE(out["status"] == 200);
  json body = body_of(out);
  CHECK(body["items"] == json::parse(R"([["a",2,null],["b",3,"n"]])"));
  CHECK(body["changes"] == 7);
}

TEST_CASE("D1 rows in the compact form (columns once, rows as arrays) decode the same") {
  App app = make_app();
  Runtime rt(app);
  std::int64_t now = 0;
  // Columns in another order than the decoder reads them, and one it does not read.
  json out = native::drive(rt, fetch_message("/items"), now, [](const json& e) {
    return ok(e, json::parse(R"({"columns":["extra","qty","unused","id","note"],
                                  "rows":[["{}",2,0,"a",null],["[1]",3,0,"b","n"]]})"));
  });
  REQUIRE(out["status"] == 200);
  json body = body_of(out);
  CHECK(body["items"] == json::parse(R"([["a",2,null],["b",3,"n"]])"));
  CHECK(body["changes"] == 0);  // d1.all carries no meta

  // A column the row lacks, a short row, rows without their columns: errors, not defaults.
  for (const char* bad : {R"({"columns":["id","qty","note"],"rows":[["a",1,null]]})",
                          R"({"columns":["id","qty","note","extra"],"rows":[["a",1,null]]})",
                          R"({"rows":[["a",1,null,"{}"]]})"}) {
    CAPTURE(bad);
    json value = json::parse(bad);
    json failed = native::drive(rt, fetch_message("/items"), now,
                                [&](const json& e) { return ok(e, value); });
    CHECK(failed["status"] == 500);
  }
}

// docs/abi.md "Held columns": a d1.all whose column the host held answers its handle, and with a
// tail the count of every row; anything else in those fields is a malformed answer, not a default.
TEST_CASE("a d1.all answer's held handle and row count are read and checked") {
  auto decode = [](const char* text) { return D1::all_result(json::parse(text)); };
  auto held = decode(R"({"columns":["seq"],"rows":[[7]],"held":2,"count":5})");
  REQUIRE(held.ok());
  CHECK(held.value().held == 2);
  CHECK(held.value().count == 5);
  CHECK(held.value().size() == 1);
  auto plain = decode(R"({"columns":["seq"],"rows":[[1],[2]]})");
  REQUIRE(plain.ok());
  CHECK(plain.value().held == 0);
  CHECK(plain.value().count == 2);
  for (const char* bad :
       {R"({"columns":[],"rows":[],"held":0})", R"({"columns":[],"rows":[],"held":"1"})",
        R"({"columns":[],"rows":[],"held":1.5})", R"({"columns":["a"],"rows":[[1],[2]],"count":1})",
        R"({"columns":[],"rows":[],"count":-1})", R"({"columns":[],"rows":[],"count":"3"})"}) {
    CAPTURE(bad);
    CHECK(!decode(bad).ok());
  }
}

// A response.send is not spliced by the host: an answer with splices waits for the run's output.
TEST_CASE("an answer with held values is not sent early; its background work still runs") {
  App app = make_app();
  Runtime rt(app);
  std::int64_t now = 0;
  std::vector<std::string> kinds;
  json out = native::drive(rt, fetch_message("/held-later"), now, [&](const json& e) {
    kinds.push_back(e["kind"].get<std::string>());
    if (e["kind"] == "d1.all") return ok(e, json::parse(R"({"columns":[],"rows":[[]],"held":4})"));
    return ok(e, {{"value", nullptr}});
  });
  CHECK(kinds == std::vector<std::string>{"d1.all", "kv.get"});  // no response.send
  REQUIRE(out["status"] == 200);
  CHECK(out["body"] == "[]");
  CHECK(out["splice"] == json::parse(R"([{"at":1,"held":4,"sep":","}])"));
}

TEST_CASE("a response's splices go into its output message") {
  Response r = Response::text(200, "[]", "application/json");
  r.splices.push_back(Splice{1, 3, ","});
  json out = r.to_json();
  CHECK(out["body"] == "[]");
  CHECK(out["splice"] == json::parse(R"([{"at":1,"held":3,"sep":","}])"));
  CHECK(!Response::text(200, "[]", "application/json").to_json().contains("splice"));
}

TEST_CASE("D1Result::first() and RowReader::has() read either form") {
  D1Result compact;
  compact.columns = json::array({"n", "name"});
  compact.rows = json::parse(R"([[3,"x"],[4,"y"]])");
  std::optional<json> first = compact.first();
  REQUIRE(first);
  CHECK(*first == json::parse(R"({"n":3,"name":"x"})"));
  RowReader reader(compact.columns, compact.rows[1]);
  CHECK(reader.has("name"));
  CHECK_FALSE(reader.has("missing"));
  CHECK(reader.integer("n") == 4);
  CHECK(reader.text("name") == "y");

  D1Result objects;
  objects.rows = json::parse(R"([{"n":5}])");
  CHECK(objects.first() == json::parse(R"({"n":5})"));
  CHECK_FALSE(D1Result{}.first());
}

TEST_CASE(
    "as<Row>() on a result the caller gives up moves the TEXT values; on one it keeps, copies") {
  D1Result kept;
  kept.columns = json::array({"id", "qty", "note", "extra"});
  kept.rows = json::parse(R"([["a-long-identifier-0001",1,"a note longer than SSO","{}"],
                              ["b-long-identifier-0002",2,null,"{\"k\":1}"]])");
  const json before = kept.rows;
  Result<std::vector<Item>> copied = kept.as<Item>();
  REQUIRE(copied.ok());
  CHECK(kept.rows == before);  // a kept result is left as it was

  D1Result given = kept;
  Result<std::vector<Item>> moved = std::move(given).as<Item>();
  REQUIRE(moved.ok());
  REQUIRE(moved->size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK((*moved)[i].id == (*copied)[i].id);
    CHECK((*moved)[i].qty == (*copied)[i].qty);
    CHECK((*moved)[i].note == (*copied)[i].note);
    CHECK((*moved)[i].extra == (*copied)[i].extra);
  }
  // The strings left the rows (moved, not copied); the cells are NULL now.
  CHECK(given.rows[0][0].is_null());  // NOLINT(bugprone-use-after-move): checked on purpose
  CHECK(given.rows[0][2].is_null());

  // Rows as objects take the same path.
  D1Result objects;
  objects.rows =
      json::parse(R"([{"id":"object-row-identifier","qty":3,"note":null,"extra":"[]"}])");
  Result<std::vector<Item>> from_objects = std::move(objects).as<Item>();
  REQUIRE(from_objects.ok());
  CHECK((*from_objects)[0].id == "object-row-identifier");
  CHECK((*from_objects)[0].extra == json::array());

  // A decoder that read a column twice from a moving reader gets corrupt_row, not an empty string.
  json row = json::array({"twice-read-identifier"});
  const json columns = json::array({"id"});
  RowReader twice(columns, row, RowReader::TakeValues{});
  CHECK(twice.text("id") == "twice-read-identifier");
  CHECK(twice.text("id").empty());
  REQUIRE_FALSE(twice.status().ok());
  CHECK(twice.status().error().message.find("is NULL") != std::string::npos);

  D1Result corrupt = kept;
  corrupt.rows[1][1] = "2";
  Result<std::vector<Item>> refused = std::move(corrupt).as<Item>();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("qty") != std::string::npos);
}

TEST_CASE("a corrupt row is an error naming the column, not a silent default") {
  App app = make_app();
  Runtime rt(app);
  std::int64_t now = 0;
  for (const char* bad :
       {R"({"id":"a","qty":"2","note":null,"extra":"{}"})",
        R"({"id":"a","note":null,"extra":"{}"})", R"({"id":null,"qty":1,"note":null,"extra":"{}"})",
        R"({"id":"a","qty":1,"note":null,"extra":"{oops"})",
        // REAL where an INTEGER belongs, beyond int64 or not integral: corrupt, never converted.
        R"({"id":"a","qty":1e300,"note":null,"extra":"{}"})",
        R"({"id":"a","qty":-1e19,"note":null,"extra":"{}"})",
        R"({"id":"a","qty":9223372036854775808.0,"note":null,"extra":"{}"})",
        R"({"id":"a","qty":1.5,"note":null,"extra":"{}"})"}) {
    CAPTURE(bad);
    json row = json::parse(bad);
    json out = native::drive(rt, fetch_message("/items"), now, [&](const json& e) {
      return ok(e, {{"results", json::array({row})}, {"meta", json::object()}});
    });
    CHECK(out["status"] == 500);
    CHECK(body_of(out)["error"]["code"] == "corrupt_row");
  }
}

TEST_CASE("when_all(a, b, c) runs different effects together and returns a tuple") {
  App app = make_app();
  Runtime rt(app);
  auto id = rt.start(dump_json(fetch_message("/pair")));
  REQUIRE(rt.state(id) == Runtime::State::waiting);
  json effects = json::parse(rt.data(id));
  REQUIRE(effects.size() == 3);  // issued in one batch
  CHECK(effects[0]["kind"] == "fetch");
  CHECK(effects[1]["kind"] == "kv.get");
  CHECK(effects[2]["kind"] == "crypto.sha256");
  json results = json::array({ok(effects[2], {{"hex", std::string(64, 'f')}}),
                              ok(effects[1], {{"value", "v"}}),
                              ok(effects[0], {{"status", 201},
                                              {"headers", {{"content-type", "text/plain"}}},
                                              {"body", "x"},
                                              {"elapsedMs", 12}})});
  rt.resume(id, dump_json(json{{"now", 5}, {"results", results}}));
  REQUIRE(rt.state(id) == Runtime::State::done);
  json out = json::parse(rt.data(id));
  json body = body_of(out);
  CHECK(body["status"] == 201);
  CHECK(body["type"] == "text/plain");
  CHECK(body["elapsed"] == 12);
  CHECK(body["kv"] == "v");
  CHECK(body["hex"] == std::string(64, 'f'));
  rt.drop(id);
}

TEST_CASE("a missing KV key is nullopt; a host answer in the wrong shape is an internal error") {
  App app = make_app();
  Runtime rt(app);
  std::int64_t now = 0;
  bool malformed_fetch = false;
  auto perform = [&](const json& e) {
    if (e["kind"] == "fetch") {
      return malformed_fetch ? ok(e, {{"headers", json::object()}})  // no status
                             : ok(e, {{"status", 200}, {"body", ""}});
    }
    if (e["kind"] == "kv.get") return ok(e, {{"value", nullptr}});
    return ok(e, {{"hex", std::string(64, '0')}});
  };
  json out = native::drive(rt, fetch_message("/pair"), now, perform);
  REQUIRE(out["status"] == 200);
  CHECK(body_of(out)["kv"].is_null());
  malformed_fetch = true;
  out = native::drive(rt, fetch_message("/pair"), now, perform);
  CHECK(out["status"] == 500);
  CHECK(body_of(out)["error"]["code"] == "internal");
}

TEST_CASE("TenantStore: typed rows, counts and changes; a corrupt tenant row is an error") {
  App app = make_tenant_app();
  Runtime rt(app);
  std::int64_t now = 0;
  // create and update are d1.run each: create answers `changes` as given, update 1 (it names no
  // token digest: NULL keeps the stored one).
  auto host = [](json row, std::int64_t changes) {
    return [row, changes](const json& e) {
      if (e["kind"] == "d1.run" &&
          e["sql"].get<std::string>().find("UPDATE tenants SET token_hash") != std::string::npos) {
        CHECK(e["params"][1].is_null());
        return ok(e, {{"results", json::array()}, {"meta", {{"changes", 1}}}});
      }
      std::string sql = e["sql"].get<std::string>();
      if (e["kind"] == "d1.run") {
        return ok(e, {{"results", json::array()}, {"meta", {{"changes", changes}}}});
      }
      if (sql.find("COUNT(*)") != std::string::npos) return ok(e, {{"row", {{"n", 3}}}});
      return ok(e, {{"row", row}});
    };
  };
  json good = {{"tenant_id", "t1"},
               {"token_hash", "h"},
               {"admin_token_hash", "a"},
               {"config_json", R"({"k":1})"},
               {"enabled", 1},
               {"created_at", "c"},
               {"updated_at", "u"}};
  json out = native::drive(rt, fetch_message("/tenant"), now, host(good, 1));
  REQUIRE(out["status"] == 200);
  CHECK(body_of(out) == json::parse(R"({"found":"t1","enabled":true,"config":{"k":1},"n":3,
                                        "disabled":true,"created":true,"updated":true})"));

  out = native::drive(rt, fetch_message("/tenant"), now, host(nullptr, 0));
  REQUIRE(out["status"] == 200);
  CHECK(body_of(out) == json::parse(R"({"found":null,"enabled":null,"config":null,"n":3,
                                        "disabled":false,"created":false,"updated":true})"));

  json corrupt = good;
  corrupt.erase("token_hash");
  out = native::drive(rt, fetch_message("/tenant"), now, host(corrupt, 1));
  CHECK(out["status"] == 500);
}

}  // namespace ss
