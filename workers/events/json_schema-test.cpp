#include "workers/events/json_schema.h"

#include <doctest/doctest.h>

#include <string>

namespace ss::events {
namespace {

JsonSchema compile(const char* schema_text) {
  auto parsed = JsonSchema::parse(json::parse(schema_text));
  REQUIRE_MESSAGE(parsed.ok(), schema_text, " -> ", parsed.ok() ? "" : parsed.error().message);
  return std::move(parsed).value();
}

std::vector<json> violations(const char* schema_text, const char* instance_text) {
  return compile(schema_text).validate(json::parse(instance_text));
}

bool valid(const char* schema_text, const char* instance_text) {
  return violations(schema_text, instance_text).empty();
}

// The single violation's {"path","message"}, as compact text.
std::string only_violation(const char* schema_text, const char* instance_text) {
  auto v = violations(schema_text, instance_text);
  REQUIRE_MESSAGE(v.size() == 1, instance_text);
  return v[0].dump();
}

std::string schema_error(const json& schema) {
  auto parsed = JsonSchema::parse_for_registration(schema);
  REQUIRE_MESSAGE(!parsed.ok(), schema.dump());
  CHECK(parsed.error().code == ErrorCode::invalid_request);
  return parsed.error().message;
}

TEST_CASE("json_schema: empty and boolean schemas") {
  CHECK(valid("{}", "1"));
  CHECK(valid("{}", R"({"a":[1,2]})"));
  CHECK(valid("true", "null"));
  CHECK(only_violation("false", "1") == R"({"message":"no value is allowed here","path":""})");
  CHECK(valid(R"({"unknownKeyword": 5, "format": "email"})", R"("y")"));
}

TEST_CASE("json_schema: type") {
  CHECK(valid(R"({"type":"object"})", "{}"));
  CHECK(valid(R"({"type":"array"})", "[]"));
  CHECK(valid(R"({"type":"string"})", R"("")"));
  CHECK(valid(R"({"type":"number"})", "1"));
  CHECK(valid(R"({"type":"number"})", "1.5"));
  CHECK(valid(R"({"type":"integer"})", "-3"));
  CHECK(valid(R"({"type":"integer"})", "2.0"));
  CHECK(valid(R"({"type":"integer"})", "18446744073709551615"));
  CHECK(valid(R"({"type":"boolean"})", "false"));
  CHECK(valid(R"({"type":"null"})", "null"));
  CHECK(only_violation(R"({"type":"integer"})", "2.5") ==
        R"({"message":"expected integer","path":""})");
  CHECK(only_violation(R"({"type":"number"})", R"("1")") ==
        R"({"message":"expected number","path":""})");
  CHECK(only_violation(R"({"type":"object"})", "[]") ==
        R"({"message":"expected object","path":""})");
  CHECK(only_violation(R"({"type":"boolean"})", "0") ==
        R"({"message":"expected boolean","path":""})");
  CHECK(only_violation(R"({"type":"null"})", "false") ==
        R"({"message":"expected null","path":""})");
  CHECK(valid(R"({"type":["string","null"]})", "null"));
  CHECK(valid(R"({"type":["string","null"]})", R"("x")"));
  CHECK(only_violation(R"({"type":["null","string"]})", "1") ==
        R"({"message":"expected string or null","path":""})");
}

TEST_CASE("json_schema: properties, required and nested objects") {
  const char* schema = R"({
    "type": "object",
    "required": ["amount", "customer"],
    "properties": {
      "amount": {"type": "number", "minimum": 0},
      "customer": {
        "type": "object",
        "required": ["id"],
        "properties": {"id": {"type": "string", "minLength": 1}, "email": {"type": "string"}}
      }
    }
  })";
  CHECK(valid(schema, R"({"amount": 5, "customer": {"id": "c"}, "extra": true})"));
  CHECK(only_violation(schema, R"({"amount": "5", "customer": {"id": "c"}})") ==
        R"({"message":"expected number","path":"/amount"})");
  CHECK(only_violation(schema, R"({"amount": 5, "customer": {"id": ""}})") ==
        R"({"message":"expected at least 1 characters","path":"/customer/id"})");
  CHECK(only_violation(schema, R"({"amount": 5, "customer": {}})") ==
        R"({"message":"is required","path":"/customer/id"})");
  CHECK(only_violation(schema, R"({"amount": 5, "customer": {"id": "c", "email": 3}})") ==
        R"({"message":"expected string","path":"/customer/email"})");
  auto v = violations(schema, R"({"customer": 1})");
  REQUIRE(v.size() == 2);
  CHECK(v[0].dump() == R"({"message":"is required","path":"/amount"})");
  CHECK(v[1].dump() == R"({"message":"expected object","path":"/customer"})");
  // properties and required do nothing to non-objects.
  CHECK(valid(R"({"required":["a"],"properties":{"a":{"type":"string"}}})", "[1]"));
  // JSON Pointer escaping of odd keys.
  CHECK(only_violation(R"({"properties":{"a/b~c":{"type":"string"}}})", R"({"a/b~c":1})") ==
        R"({"message":"expected string","path":"/a~1b~0c"})");
}

TEST_CASE("json_schema: additionalProperties") {
  const char* closed = R"({"properties":{"a":{}},"additionalProperties":false})";
  CHECK(valid(closed, R"({"a":1})"));
  CHECK(only_violation(closed, R"({"a":1,"b":2})") ==
        R"({"message":"is not an allowed property","path":"/b"})");
  CHECK(valid(R"({"properties":{"a":{}},"additionalProperties":true})", R"({"b":2})"));
  const char* typed =
      R"({"properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer"}})";
  CHECK(valid(typed, R"({"a":"x","b":2,"c":3})"));
  CHECK(only_violation(typed, R"({"a":"x","b":"2"})") ==
        R"({"message":"expected integer","path":"/b"})");
  CHECK(only_violation(typed, R"({"a":2})") == R"({"message":"expected string","path":"/a"})");
}

TEST_CASE("json_schema: items, minItems, maxItems") {
  const char* schema =
      R"({"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"}}},
                           "minItems":1,"maxItems":3})";
  CHECK(valid(schema, R"([{"sku":"a"},{"sku":"b"}])"));
  CHECK(only_violation(schema, "[]") == R"({"message":"expected at least 1 items","path":""})");
  CHECK(only_violation(schema, "[{},{},{},{}]") ==
        R"({"message":"expected at most 3 items","path":""})");
  CHECK(only_violation(schema, R"([{"sku":"a"},{"sku":2}])") ==
        R"({"message":"expected string","path":"/1/sku"})");
  CHECK(valid(R"({"items":{"type":"number"}})", R"({"not":"an array"})"));
  CHECK(valid(R"({"items":false})", "[]"));
  CHECK(only_violation(R"({"items":false})", "[1]") ==
        R"({"message":"no value is allowed here","path":"/0"})");
}

TEST_CASE("json_schema: enum and const") {
  CHECK(valid(R"({"enum":["a","b",1]})", R"("b")"));
  CHECK(valid(R"({"enum":["a","b",1]})", "1.0"));
  CHECK(valid(R"({"enum":[1.5,0.1]})", "0.1"));
  CHECK(valid(R"({"enum":[1.5,0.1]})", "1.5"));
  CHECK_FALSE(valid(R"({"enum":[1.5,0.1]})", "0.30000000000000004"));
  CHECK_FALSE(valid(R"({"enum":[1.5]})", "1.5000000000000002"));
  CHECK(only_violation(R"({"enum":["a","b"]})", R"("c")") ==
        R"({"message":"expected one of [\"a\",\"b\"]","path":""})");
  CHECK(valid(R"({"enum":[{"x":[1]}]})", R"({"x":[1]})"));
  CHECK_FALSE(valid(R"({"enum":[]})", "1"));
  CHECK(valid(R"({"const":{"k":null}})", R"({"k":null})"));
  CHECK(only_violation(R"({"const":"x"})", R"("y")") ==
        R"({"message":"expected \"x\"","path":""})");
  std::string long_enum = R"({"enum":[")" + std::string(200, 'a') + R"("]})";
  CHECK(only_violation(long_enum.c_str(), "1") ==
        R"({"message":"expected one of the enum values","path":""})");
}

TEST_CASE("json_schema: numeric bounds") {
  CHECK(valid(R"({"minimum":5})", "5"));
  CHECK(only_violation(R"({"minimum":5})", "4.99") ==
        R"({"message":"expected a number >= 5","path":""})");
  CHECK(valid(R"({"maximum":5})", "5.0"));
  CHECK(only_violation(R"({"maximum":5})", "6") ==
        R"({"message":"expected a number <= 5","path":""})");
  CHECK(valid(R"({"exclusiveMinimum":5})", "5.5"));
  CHECK(only_violation(R"({"exclusiveMinimum":5})", "5") ==
        R"({"message":"expected a number > 5","path":""})");
  CHECK(valid(R"({"exclusiveMaximum":0.5})", "0"));
  CHECK(only_violation(R"({"exclusiveMaximum":0.5})", "0.5") ==
        R"({"message":"expected a number < 0.5","path":""})");
  CHECK(valid(R"({"minimum":-1})", "18446744073709551615"));
  CHECK(valid(R"({"maximum":18446744073709551615})", "-9223372036854775808"));
  CHECK(only_violation(R"({"maximum":9223372036854775807})", "9223372036854775808") ==
        R"({"message":"expected a number <= 9223372036854775807","path":""})");
  // Bounds ignore non-numbers.
  CHECK(valid(R"({"minimum":5})", R"("1")"));
  auto v = violations(R"({"minimum":10,"exclusiveMaximum":0})", "5");
  CHECK(v.size() == 2);
}

TEST_CASE("json_schema: string lengths count code points") {
  CHECK(valid(R"({"minLength":2,"maxLength":2})", R"("ab")"));
  CHECK(valid(R"({"maxLength":2})", R"("éü")"));  // 4 bytes, 2 code points
  CHECK(valid(R"({"maxLength":1})", R"("🍞")"));   // 4 bytes, 1 code point
  CHECK(only_violation(R"({"maxLength":2})", R"("abc")") ==
        R"({"message":"expected at most 2 characters","path":""})");
  CHECK(only_violation(R"({"minLength":3})", R"("éü")") ==
        R"({"message":"expected at least 3 characters","path":""})");
  CHECK(valid(R"({"minLength":3})", "12"));  // not a string
  CHECK(valid(R"({"minLength":2.0})", R"("ab")"));
}

TEST_CASE("json_schema: at most 10 violations") {
  const char* schema = R"({"additionalProperties":{"type":"string"}})";
  json instance = json::object();
  for (int i = 0; i < 50; ++i) instance["k" + std::to_string(100 + i)] = i;
  auto v = compile(schema).validate(instance);
  CHECK(v.size() == kMaxSchemaViolations);
  CHECK(v[0]["path"] == "/k100");
  auto items = compile(R"({"items":{"type":"string"},"minItems":100})")
                   .validate(json(std::vector<int>(30, 1)));
  CHECK(items.size() == kMaxSchemaViolations);
  CHECK(items[0]["message"] == "expected at least 100 items");
}

TEST_CASE("json_schema: bad schemas") {
  CHECK(schema_error(json(5)) == "json_schema: expected a schema (an object or a boolean)");
  CHECK(schema_error(json::parse(R"({"type":5})")) ==
        "json_schema: /type: expected a type name or a non-empty array of type names");
  CHECK(schema_error(json::parse(R"({"type":[]})")).find("/type:") != std::string::npos);
  CHECK(schema_error(json::parse(R"({"type":["string",1]})")).find("/type:") != std::string::npos);
  CHECK(schema_error(json::parse(R"({"type":"int"})")) ==
        R"(json_schema: /type: unknown type "int")");
  CHECK(schema_error(json::parse(R"({"type":["null","float"]})")) ==
        R"(json_schema: /type: unknown type "float")");
  CHECK(schema_error(json::parse(R"({"properties":[]})")) ==
        "json_schema: /properties: expected an object");
  CHECK(schema_error(json::parse(R"({"properties":{"a":{"properties":{"b":{"type":"x"}}}}})")) ==
        R"(json_schema: /properties/a/properties/b/type: unknown type "x")");
  CHECK(schema_error(json::parse(R"({"properties":{"a":1}})")) ==
        "json_schema: /properties/a: expected a schema (an object or a boolean)");
  CHECK(schema_error(json::parse(R"({"required":"a"})")) ==
        "json_schema: /required: expected an array of strings");
  CHECK(schema_error(json::parse(R"({"required":["a",1]})")) ==
        "json_schema: /required: expected an array of strings");
  CHECK(schema_error(json::parse(R"({"additionalProperties":"no"})")) ==
        "json_schema: /additionalProperties: expected a schema (an object or a boolean)");
  CHECK(schema_error(json::parse(R"({"items":[{}]})")) ==
        "json_schema: /items: expected a schema (the tuple form is not supported)");
  CHECK(schema_error(json::parse(R"({"items":{"type":{}}})")).find("/items/type:") !=
        std::string::npos);
  CHECK(schema_error(json::parse(R"({"enum":"a"})")) == "json_schema: /enum: expected an array");
  CHECK(schema_error(json::parse(R"({"minimum":"1"})")) ==
        "json_schema: /minimum: expected a number");
  CHECK(schema_error(json::parse(R"({"exclusiveMinimum":true})")) ==
        "json_schema: /exclusiveMinimum: expected a number");
  CHECK(schema_error(json::parse(R"({"maximum":null})")).find("/maximum") != std::string::npos);
  CHECK(schema_error(json::parse(R"({"exclusiveMaximum":[]})")).find("/exclusiveMaximum") !=
        std::string::npos);
  CHECK(schema_error(json::parse(R"({"minLength":-1})")) ==
        "json_schema: /minLength: expected a non-negative integer");
  CHECK(schema_error(json::parse(R"({"maxLength":1.5})")).find("/maxLength") != std::string::npos);
  CHECK(schema_error(json::parse(R"({"minItems":"2"})")).find("/minItems") != std::string::npos);
  CHECK(schema_error(json::parse(R"({"maxItems":1e300})")).find("/maxItems") != std::string::npos);
}

TEST_CASE("json_schema: keywords that would constrain but are not supported are refused") {
  // Accepted and ignored, a payload breaking them would be stored (201) while the operator believes
  // it is checked: refused at registration instead, naming where.
  CHECK(schema_error(json::parse(R"({"$ref":"#/definitions/x","definitions":{"x":{}}})")) ==
        "json_schema: /$ref: the keyword is not supported (docs/runbook-events.md lists those "
        "that are)");
  CHECK(schema_error(json::parse(R"({"properties":{"s":{"type":"string","pattern":"^a+$"}}})"))
            .find("/properties/s/pattern:") != std::string::npos);
  CHECK(schema_error(json::parse(R"({"items":{"anyOf":[{"type":"string"}]}})"))
            .find("/items/anyOf:") != std::string::npos);
  for (const char* keyword : {"allOf", "oneOf", "not", "if", "patternProperties", "uniqueItems",
                              "multipleOf", "minProperties", "maxProperties", "contains",
                              "dependentRequired", "propertyNames", "prefixItems"}) {
    CHECK(schema_error(json{{keyword, true}}).find(std::string("/") + keyword + ":") !=
          std::string::npos);
  }
  // A schema stored before the check (read by parse, not parse_for_registration) keeps checking
  // what it can: refusing it there would check nothing at all.
  auto stored =
      JsonSchema::parse(json::parse(R"({"required":["a"],"properties":{"a":{"pattern":"x"}}})"));
  REQUIRE(stored.ok());
  CHECK(stored->validate(json::object()).size() == 1);
  // Annotations and vendor keywords stay ignored: the schema registers and checks what it can.
  auto registered = JsonSchema::parse_for_registration(json::parse(
      R"({"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t","description":"d",
          "$comment":"c","examples":[{}],"default":{},"x-owner":"team","format":"email",
          "definitions":{"unused":{}},"type":"object","required":["a"]})"));
  REQUIRE(registered.ok());
  CHECK(registered->validate(json::object()).size() == 1);
  CHECK(registered->validate(json{{"a", 1}}).empty());
}

TEST_CASE("json_schema: depth limits") {
  // Schema: 32 nested levels are fine, 33 are not.
  json schema = json::object();
  for (std::size_t i = 1; i < kMaxSchemaDepth; ++i) schema = json{{"items", schema}};
  CHECK(JsonSchema::parse(schema).ok());
  CHECK(schema_error(json{{"items", schema}}).find("schemas nested deeper than 32") !=
        std::string::npos);
  // 1000 levels are refused without recursing 1000 deep.
  json very_deep = json::object();
  for (int i = 0; i < 1000; ++i) {
    json outer = json::object();
    outer["items"] = std::move(very_deep);
    very_deep = std::move(outer);
  }
  CHECK(schema_error(very_deep).find("nested deeper") != std::string::npos);
  json deep_enum = json::array();
  for (int i = 0; i < 100; ++i) deep_enum = json::array({deep_enum});
  CHECK(schema_error(json{{"const", deep_enum}}) == "json_schema: /const: nested deeper than 32");
  CHECK(schema_error(json{{"enum", deep_enum}}) == "json_schema: /enum: nested deeper than 32");

  // Instance: 32 levels are fine, deeper is one violation at the root.
  auto any = JsonSchema::parse(json::object());
  REQUIRE(any.ok());
  json instance = 1;
  for (std::size_t i = 0; i < kMaxSchemaDepth; ++i) instance = json::array({instance});
  CHECK(any->validate(instance).empty());
  instance = json::array({instance});
  auto v = any->validate(instance);
  REQUIRE(v.size() == 1);
  CHECK(v[0].dump() == R"({"message":"nested deeper than 32 levels","path":""})");
  json hostile = json::array();
  for (int i = 0; i < 10000; ++i) {
    json outer = json::array();
    outer.push_back(std::move(hostile));
    hostile = std::move(outer);
  }
  CHECK(compile(R"({"enum":[[[1]]]})").validate(hostile).size() == 1);
}

TEST_CASE("json_schema: enum is a hashed set, capped at kMaxEnumValues") {
  json big = json::array();
  for (std::size_t i = 0; i <= kMaxEnumValues; ++i) big.push_back(i);
  CHECK(schema_error(json{{"enum", big}}).find("/enum") != std::string::npos);
  big.erase(big.size() - 1);
  auto schema = JsonSchema::parse(json{{"type", "array"}, {"items", {{"enum", big}}}});
  REQUIRE(schema.ok());
  // Every number representation of one value is the same enum member; other types are not.
  CHECK(schema->validate(json::parse("[0, 1.0, -0.0, 4095, 4095.0]")).empty());
  CHECK(schema->validate(json::parse(R"(["1"])")).size() == 1);
  CHECK(schema->validate(json::parse("[1.5]")).size() == 1);
  CHECK(schema->validate(json::parse("[4096]")).size() == 1);
  // Objects and arrays compare by value, keys in any order.
  auto objects = JsonSchema::parse(json::parse(R"({"enum":[{"a":1,"b":[1,"x"]},[null,true]]})"));
  REQUIRE(objects.ok());
  CHECK(objects->validate(json::parse(R"({"b":[1.0,"x"],"a":1})")).empty());
  CHECK(objects->validate(json::parse("[null,true]")).empty());
  CHECK(objects->validate(json::parse(R"({"a":1,"b":[1,"y"]})")).size() == 1);
  CHECK(objects->validate(json::parse("[true,null]")).size() == 1);
  CHECK(canonical_key(json::parse(R"("a1:")")) != canonical_key(json::parse(R"(["a"])")));
  CHECK(canonical_key(json(9007199254740993LL)) != canonical_key(json(9007199254740992.0)));
}

}  // namespace
}  // namespace ss::events
