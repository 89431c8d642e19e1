#include "workers/events/input_mapper.h"

#include <doctest/doctest.h>

#include <string>

namespace ss::events {
namespace {

json order_event_sample() {
  return json::parse(R"({
    "event_id": "01J0000000000000000000000",
    "event_type": "order.placed",
    "entity_type": "vendor",
    "entity_id": "v-7",
    "payload": {"amount": 150, "items": [{"sku": "A1", "qty": 2}, {"sku": "B2", "qty": 1}],
                "matrix": [[1, 2], [3, 4]], "weird-key_1": true},
    "caused_by": null
  })");
}

std::string parse_error(const json& mapper) {
  auto parsed = InputMapper::parse(mapper);
  REQUIRE_MESSAGE(!parsed.ok(), mapper.dump());
  CHECK(parsed.error().code == ErrorCode::invalid_request);
  return parsed.error().message;
}

json apply(const json& mapper, const json& event = order_event_sample()) {
  auto parsed = InputMapper::parse(mapper);
  REQUIRE_MESSAGE(parsed.ok(), mapper.dump(), " -> ", parsed.ok() ? "" : parsed.error().message);
  return parsed->apply(event);
}

TEST_CASE("input_mapper: paths, literals and nested objects") {
  const json mapper = json::parse(R"({
    "vendor": {"id": "$.entity_id", "kind": "$.entity_type"},
    "amount": "$.payload.amount",
    "first_sku": "$.payload.items[0].sku",
    "second_qty": "$.payload.items[1].qty",
    "cell": "$.payload.matrix[1][0]",
    "weird": "$.payload.weird-key_1",
    "cause": "$.caused_by",
    "source": 1,
    "enabled": true,
    "nothing": null,
    "tags": ["$.entity_id", 2],
    "empty": {}
  })");
  const json out = apply(mapper);
  CHECK(out == json::parse(R"({
    "vendor": {"id": "v-7", "kind": "vendor"},
    "amount": 150,
    "first_sku": "A1",
    "second_qty": 1,
    "cell": 3,
    "weird": true,
    "cause": null,
    "source": 1,
    "enabled": true,
    "nothing": null,
    "tags": ["$.entity_id", 2],
    "empty": {}
  })"));
}

TEST_CASE("input_mapper: the whole event and whole subtrees") {
  const json event = order_event_sample();
  const json out = apply({{"event", "$"}, {"payload", "$.payload"}, {"items", "$.payload.items"}});
  CHECK(out["event"] == event);
  CHECK(out["payload"] == event["payload"]);
  CHECK(out["items"].size() == 2);
}

TEST_CASE("input_mapper: a numeric name on a list is an index, as a filter path reads it") {
  const json out = apply(json::parse(R"({
    "first": "$.payload.items.0.sku",
    "second": "$.payload.items[1].sku",
    "cell": "$.payload.matrix.1.0",
    "past": "$.payload.items.2",
    "name": "$.payload.amount.0"
  })"));
  CHECK(out["first"] == "A1");
  CHECK(out["second"] == "B2");
  CHECK(out["cell"] == 3);
  CHECK(out["past"].is_null());
  CHECK(out["name"].is_null());
}

TEST_CASE("input_mapper: missing paths give null") {
  const json out = apply(json::parse(R"({
    "a": "$.nope",
    "b": "$.payload.nope.deeper",
    "c": "$.payload.items[2].sku",
    "d": "$.payload.items[99999].sku",
    "e": "$.payload.amount.x",
    "f": "$.payload[0]",
    "g": "$.entity_id[0]",
    "h": "$.payload.items.sku",
    "i": "$[0]"
  })"));
  for (const char* key : {"a", "b", "c", "d", "e", "f", "g", "h", "i"}) {
    CAPTURE(key);
    CHECK(out.contains(key));
    CHECK(out[key].is_null());
  }
  // Any event value works, even a non-object.
  const json from_string = apply({{"id", "$.entity_id"}, {"all", "$"}}, json("text"));
  CHECK(from_string == json::parse(R"({"id": null, "all": "text"})"));
}

TEST_CASE("input_mapper: invalid mappers") {
  CHECK(parse_error(json::array()) == "input_mapper: the mapper must be a JSON object");
  CHECK(parse_error(json("$.a")) == "input_mapper: the mapper must be a JSON object");
  CHECK(parse_error(json()) == "input_mapper: the mapper must be a JSON object");
  CHECK(parse_error({{"vendor_id", "entity_id"}}) ==
        R"(input_mapper: "vendor_id": expected a path starting with $)");
  CHECK(parse_error({{"vendor_id", ""}}) ==
        R"(input_mapper: "vendor_id": expected a path starting with $)");
  CHECK(parse_error({{"vendor", {{"id", "entity_id"}}}}) ==
        R"(input_mapper: "vendor.id": expected a path starting with $)");
  CHECK(parse_error({{"x", "$.a[x]"}}) ==
        R"(input_mapper: "x": expected an array index like [0] at offset 3)");
  CHECK(parse_error({{"x", "$.a[]"}}).find("array index") != std::string::npos);
  CHECK(parse_error({{"x", "$.a[0"}}).find("array index") != std::string::npos);
  CHECK(parse_error({{"x", "$.a[-1]"}}).find("array index") != std::string::npos);
  CHECK(parse_error({{"x", "$.a[1234567890]"}}) ==
        R"(input_mapper: "x": array index too large at offset 3)");
  CHECK(parse_error({{"x", "$..a"}}) ==
        R"(input_mapper: "x": expected a name after '.' at offset 2)");
  CHECK(parse_error({{"x", "$.a."}}) ==
        R"(input_mapper: "x": expected a name after '.' at offset 4)");
  CHECK(parse_error({{"x", "$a"}}) == R"(input_mapper: "x": expected '.' or '[' at offset 1)");
  CHECK(parse_error({{"x", "$.a b"}}) == R"(input_mapper: "x": expected '.' or '[' at offset 3)");
  CHECK(parse_error({{"x", "$.*"}}).find("expected a name") != std::string::npos);
  CHECK(parse_error({{"x", "$[\"a\"]"}}).find("array index") != std::string::npos);
  // Keys with odd bytes are quoted safely in the message.
  CHECK(parse_error({{std::string("k\"\xff", 3), "a"}}) ==
        "input_mapper: \"k\\\"\xEF\xBF\xBD\": expected a path starting with $");
}

TEST_CASE("input_mapper: limits") {
  // Keys: 64 in total is fine, 65 is not, nested keys included.
  json flat = json::object();
  for (std::size_t i = 0; i < kMaxMapperKeys; ++i) flat["k" + std::to_string(i)] = "$.entity_id";
  CHECK(InputMapper::parse(flat).ok());
  flat["one_more"] = 1;
  CHECK(parse_error(flat) == "input_mapper: more than 64 keys");
  json nested = json::object();
  for (std::size_t i = 0; i < 40; ++i) nested["a"]["k" + std::to_string(i)] = 1;
  for (std::size_t i = 0; i < 30; ++i) nested["b"]["k" + std::to_string(i)] = 1;
  CHECK(parse_error(nested) == "input_mapper: more than 64 keys");

  // Path length.
  std::string path = "$.";
  path += std::string(kMaxMapperPathLength - 2, 'a');
  CHECK(InputMapper::parse({{"x", path}}).ok());
  CHECK(parse_error({{"x", path + "a"}}) ==
        R"(input_mapper: "x": path longer than 256 characters)");

  // Nesting: 8 levels of objects are fine, 9 are not.
  json deep = "$.entity_id";
  for (std::size_t i = 0; i < kMaxMapperDepth; ++i) deep = json{{"d", deep}};
  auto ok = InputMapper::parse(deep);
  REQUIRE(ok.ok());
  json out = ok->apply(order_event_sample());
  for (std::size_t i = 0; i + 1 < kMaxMapperDepth; ++i) out = out["d"];
  CHECK(out["d"] == "v-7");
  CHECK(parse_error(json{{"d", deep}}) ==
        R"(input_mapper: "d.d.d.d.d.d.d.d": nested deeper than 8)");
  // Literal arrays count towards the nesting as well.
  json deep_literal = 1;
  for (std::size_t i = 0; i < kMaxMapperDepth; ++i) deep_literal = json::array({deep_literal});
  CHECK(parse_error({{"x", deep_literal}}) == R"(input_mapper: "x": nested deeper than 8)");
  CHECK(InputMapper::parse({{"x", deep_literal[0]}}).ok());
}

TEST_CASE("input_mapper: hostile events") {
  // A value nested far deeper than any sane event maps to null rather than being copied
  // recursively.
  json deep = json::array();
  for (int i = 0; i < 10000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(deep));
    deep = std::move(outer);
  }
  json event = json::object();
  event["payload"]["deep"] = std::move(deep);
  event["entity_id"] = "e";
  const json out = apply(
      {{"deep", "$.payload.deep"}, {"inner", "$.payload.deep[0][0][0]"}, {"id", "$.entity_id"}},
      event);
  CHECK(out["deep"].is_null());
  CHECK(out["inner"].is_null());
  CHECK(out["id"] == "e");
}

}  // namespace
}  // namespace ss::events
