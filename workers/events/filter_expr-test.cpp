#include "workers/events/filter_expr.h"

#include <doctest/doctest.h>

#include <string>

namespace ss::events {
namespace {

json price_event_sample() {
  return json::parse(R"({
    "event_id": "01J0000000000000000000000",
    "event_type": "price.changed",
    "entity_type": "item",
    "entity_id": "10472",
    "tenant_id": "bakery",
    "payload": {"amount": 150, "ratio": 0.5, "tags": ["a", "b"], "note": "", "zero": 0,
                "flag": false, "customer": {"id": "c-1"}, "empty": [], "big": 18446744073709551615},
    "source_system": "platform",
    "caused_by": null
  })");
}

// Parses (failing the test if it does not) and evaluates against the sample event.
bool eval(std::string_view text, const json& event = price_event_sample()) {
  auto parsed = FilterExpr::parse(text);
  REQUIRE_MESSAGE(parsed.ok(), std::string(text), " -> ",
                  parsed.ok() ? std::string() : parsed.error().message);
  return parsed->matches(event);
}

std::string parse_error(std::string_view text) {
  auto parsed = FilterExpr::parse(text);
  REQUIRE_MESSAGE(!parsed.ok(), std::string(text));
  CHECK(parsed.error().code == ErrorCode::invalid_request);
  return parsed.error().message;
}

TEST_CASE("filter_expr: the input mapper's $. paths and single-quoted strings read the same") {
  CHECK(eval("$.payload.amount > 100"));
  CHECK_FALSE(eval("$.payload.amount > 200"));
  CHECK(eval("$.entity_type == 'item' && $.payload.customer.id == \"c-1\""));
  CHECK(eval("$.payload.tags.1 in ['b', 'c']"));
  CHECK(eval("exists($.payload.note) && !exists($.payload.missing)"));
  CHECK(eval("startsWith($.event_type, 'price.')"));
  CHECK(eval(R"(payload.customer.id == 'c-1')"));
  CHECK(eval(R"('it\'s' == "it's")"));
  CHECK(parse_error("$payload.amount > 1").find("'.' after '$'") != std::string::npos);
  CHECK(!parse_error("$. > 1").empty());
  CHECK(!parse_error("'open").empty());
}

TEST_CASE("filter_expr: the documented example") {
  auto filter = FilterExpr::parse(R"(payload.amount > 100 && entity_type == "item")");
  REQUIRE(filter.ok());
  CHECK(filter->source() == R"(payload.amount > 100 && entity_type == "item")");
  json event = price_event_sample();
  CHECK(filter->matches(event));
  event["payload"]["amount"] = 99;
  CHECK_FALSE(filter->matches(event));
  event["payload"]["amount"] = 101;
  event["entity_type"] = "vendor";
  CHECK_FALSE(filter->matches(event));
  // Parsed once, evaluated many times, against anything.
  CHECK_FALSE(filter->matches(json()));
  CHECK_FALSE(filter->matches(json::array({1, 2})));
  CHECK_FALSE(filter->matches(json("text")));
}

TEST_CASE("filter_expr: literals") {
  CHECK(eval("true"));
  CHECK_FALSE(eval("false"));
  CHECK_FALSE(eval("null"));
  CHECK(eval("1"));
  CHECK_FALSE(eval("0"));
  CHECK_FALSE(eval("0.0"));
  CHECK(eval("-1.5e2"));
  CHECK(eval(R"("x")"));
  CHECK_FALSE(eval(R"("")"));
  CHECK(eval(R"("a\"b\\c\nd" == "a\"b\\c\nd")"));
  CHECK(eval(R"(payload.amount == 1.5e2)"));
  CHECK(eval(R"(payload.amount == 150.0)"));
  CHECK(eval(R"(payload.ratio == 0.5)"));
  CHECK(eval("-3 < -2"));
  CHECK(eval("payload.big == 18446744073709551615"));
  CHECK(eval("payload.big > 9223372036854775807"));
  CHECK(eval("-9223372036854775808 < payload.big"));
}

TEST_CASE("filter_expr: paths and truthiness") {
  CHECK(eval("entity_type"));
  CHECK(eval("payload.amount"));
  CHECK(eval("payload.customer.id == \"c-1\""));
  CHECK(eval("payload.tags"));
  CHECK(eval("payload.empty"));  // arrays are truthy even when empty
  CHECK(eval("payload.customer"));
  CHECK_FALSE(eval("payload.note"));
  CHECK_FALSE(eval("payload.zero"));
  CHECK_FALSE(eval("payload.flag"));
  CHECK_FALSE(eval("caused_by"));
  CHECK(eval("payload.tags.0 == \"a\""));
  CHECK(eval("payload.tags.1 == \"b\""));
  CHECK(eval("payload.tags.2 == null"));
  CHECK(eval("payload.tags.99999999999 == null"));
  CHECK(eval("payload.customer.0 == null"));
  CHECK(eval("_x == null"));
}

TEST_CASE("filter_expr: missing paths are null") {
  CHECK_FALSE(eval("payload.nope"));
  CHECK_FALSE(eval("nope.deeper.still"));
  CHECK(eval("payload.nope == null"));
  CHECK(eval("payload.nope == caused_by"));
  CHECK(eval("payload.nope != 1"));
  CHECK_FALSE(eval("payload.nope == 0"));
  CHECK_FALSE(eval("payload.nope < 1"));
  CHECK_FALSE(eval("payload.nope >= 1"));
  CHECK_FALSE(eval("entity_id.x"));       // walking into a string
  CHECK_FALSE(eval("payload.amount.x"));  // walking into a number
  CHECK(eval("!payload.nope"));
}

TEST_CASE("filter_expr: comparison operators") {
  CHECK(eval("payload.amount == 150"));
  CHECK_FALSE(eval("payload.amount == 151"));
  CHECK(eval("payload.amount != 151"));
  CHECK_FALSE(eval("payload.amount != 150"));
  CHECK(eval("payload.amount < 151"));
  CHECK_FALSE(eval("payload.amount < 150"));
  CHECK(eval("payload.amount <= 150"));
  CHECK_FALSE(eval("payload.amount <= 149.9"));
  CHECK(eval("payload.amount > 149.5"));
  CHECK_FALSE(eval("payload.amount > 150"));
  CHECK(eval("payload.amount >= 150"));
  CHECK_FALSE(eval("payload.amount >= 150.01"));
  // Strings: bytewise lexicographic.
  CHECK(eval(R"(entity_id < "2")"));
  CHECK(eval(R"("apple" < "banana")"));
  CHECK(eval(R"("b" > "abc")"));
  CHECK(eval(R"("abc" >= "abc")"));
  CHECK(eval(R"("ab" < "abc")"));
  // JSON equality of whole structures.
  json event = price_event_sample();
  event["payload"]["copy"] = event["payload"]["tags"];
  CHECK(eval("payload.copy == payload.tags", event));
  CHECK_FALSE(eval("payload.copy == payload.customer", event));
  CHECK(eval("payload == payload", event));
}

TEST_CASE("filter_expr: type mismatches are false") {
  CHECK_FALSE(eval(R"(payload.amount == "150")"));
  CHECK(eval(R"(payload.amount != "150")"));
  CHECK_FALSE(eval(R"(payload.amount < "200")"));
  CHECK_FALSE(eval(R"(payload.amount > "1")"));
  CHECK_FALSE(eval(R"(entity_id > 5)"));
  CHECK_FALSE(eval("true > false"));
  CHECK_FALSE(eval("null <= null"));
  CHECK_FALSE(eval("payload.tags < payload.tags"));
  CHECK_FALSE(eval("payload.flag == 0"));
  CHECK_FALSE(eval("true == 1"));
  CHECK_FALSE(eval("caused_by == false"));
}

TEST_CASE("filter_expr: in") {
  CHECK(eval(R"(entity_type in ["item", "vendor"])"));
  CHECK_FALSE(eval(R"(entity_type in ["vendor", "order"])"));
  CHECK_FALSE(eval("entity_type in []"));
  CHECK(eval("payload.amount in [1, 150.0, null]"));
  CHECK(eval("caused_by in [null]"));
  CHECK(eval("payload.nope in [true, null]"));
  CHECK_FALSE(eval(R"(payload.amount in ["150"])"));
  CHECK(eval(R"(!(entity_type in ["vendor"]))"));
  CHECK(eval(R"(entity_type in["item"]&&payload.amount in[150])"));
}

TEST_CASE("filter_expr: functions") {
  CHECK(eval("exists(payload.amount)"));
  CHECK(eval("exists(caused_by)"));  // present, even though null
  CHECK(eval("exists(payload.tags.1)"));
  CHECK_FALSE(eval("exists(payload.tags.2)"));
  CHECK_FALSE(eval("exists(payload.x)"));
  CHECK_FALSE(eval("exists(payload.amount.x)"));
  CHECK(eval(R"(startsWith(event_type, "price."))"));
  CHECK(eval(R"(startsWith(event_type, ""))"));
  CHECK_FALSE(eval(R"(startsWith(event_type, "lead."))"));
  CHECK_FALSE(eval(R"(startsWith("pr", "price"))"));
  CHECK_FALSE(eval(R"(startsWith(payload.amount, "1"))"));
  CHECK_FALSE(eval(R"(startsWith(payload.x, "p"))"));
  CHECK(eval(R"(contains(payload.tags, "a"))"));
  CHECK_FALSE(eval(R"(contains(payload.tags, "c"))"));
  CHECK_FALSE(eval(R"(contains(payload.empty, "a"))"));
  CHECK(eval(R"(contains(event_type, "ice.ch"))"));
  CHECK_FALSE(eval(R"(contains(event_type, "lead"))"));
  CHECK_FALSE(eval(R"(contains(payload.amount, 1))"));
  CHECK_FALSE(eval(R"(contains(entity_id, 1))"));
  CHECK_FALSE(eval(R"(contains(payload.x, "a"))"));
  CHECK(eval(R"(contains(payload.customer.id, payload.customer.id))"));
  CHECK(eval(R"(contains ( payload.tags , "b" ) )"));
  // Arguments are full expressions.
  CHECK(eval(R"(contains(payload.tags, true || false) == false)"));
  CHECK(eval(R"(!exists(payload.x) && exists(payload.customer.id))"));
}

TEST_CASE("filter_expr: boolean operators and precedence") {
  CHECK(eval("true && true"));
  CHECK_FALSE(eval("true && false"));
  CHECK(eval("false || true"));
  CHECK_FALSE(eval("false || false"));
  CHECK(eval("!false"));
  CHECK_FALSE(eval("!true"));
  CHECK(eval("!!true"));
  // && binds tighter than ||.
  CHECK(eval("true || false && false"));
  CHECK_FALSE(eval("(true || false) && false"));
  CHECK(eval("false && false || true"));
  CHECK_FALSE(eval("false && (false || true)"));
  // Comparisons bind tighter than && and ||.
  CHECK(eval("payload.amount > 100 && payload.amount < 200 || false"));
  CHECK(eval("1 == 2 || 2 == 2"));
  // ! binds tighter than comparisons: (!payload.amount) == false.
  CHECK(eval("!payload.amount == false"));
  CHECK(eval("!(payload.amount == 1)"));
  CHECK(eval("a == null && b == null && c == null && d == null || false"));
  CHECK(eval(" ( ( true ) ) "));
  // A boolean sub-expression has a JSON value.
  CHECK(eval("(payload.amount > 1) == true"));
  CHECK(eval("\tpayload.amount\n>\r100"));
}

TEST_CASE("filter_expr: invalid input gives clear errors") {
  CHECK(parse_error("") == "filter_expr: expression is empty at offset 0");
  CHECK(parse_error("   ") == "filter_expr: expression is empty at offset 0");
  CHECK(parse_error(R"((payload.amount > 100 && entity_type == "item")") ==
        "filter_expr: expected ')' at offset 46");
  CHECK(parse_error("(a == 1))") == "filter_expr: expected end of expression at offset 8");
  CHECK(parse_error("a == 1 b") == "filter_expr: expected end of expression at offset 7");
  CHECK(parse_error(")") == "filter_expr: unexpected character ')' at offset 0");
  CHECK(parse_error(R"(entity_type == "item)") == "filter_expr: unterminated string at offset 15");
  CHECK(parse_error(R"(entity_type == "item\)") == "filter_expr: unterminated string at offset 15");
  CHECK(parse_error(R"(entity_type == "it\tem")") ==
        "filter_expr: unsupported escape (only \\\" \\\\ \\n) at offset 18");
  CHECK(parse_error("matchesAll(event_type)") ==
        "filter_expr: unknown function 'matchesAll' at offset 0");
  CHECK(parse_error("a && foo (b)") == "filter_expr: unknown function 'foo' at offset 5");
  CHECK(parse_error("a ==") ==
        "filter_expr: expected a value, found end of expression at offset 4");
  CHECK(parse_error("a = 1") ==
        "filter_expr: expected '==' (a single '=' is not an operator) at offset 2");
  CHECK(parse_error("a == b == c") ==
        "filter_expr: comparisons do not chain; use parentheses at offset 7");
  CHECK(parse_error("a & b") == "filter_expr: expected end of expression at offset 2");
  CHECK(parse_error("a in b") == "filter_expr: expected '[' after 'in' at offset 5");
  CHECK(parse_error("a in [b]").find("expected a literal") != std::string::npos);
  CHECK(parse_error("a in [1,]").find("expected a literal") != std::string::npos);
  CHECK(parse_error("a in [1 2]") == "filter_expr: expected ',' or ']' in list at offset 8");
  CHECK(parse_error("in") == "filter_expr: expected a value before 'in' at offset 0");
  CHECK(parse_error("exists(\"a\")") == "filter_expr: exists() takes a path at offset 7");
  CHECK(parse_error("exists(a.b c)") == "filter_expr: expected ')' at offset 11");
  CHECK(parse_error("startsWith(a)") == "filter_expr: expected ',' at offset 12");
  CHECK(parse_error("contains(a, b, c)") == "filter_expr: expected ')' at offset 13");
  CHECK(parse_error("payload..x") ==
        "filter_expr: expected a name or an array index after '.' at offset 8");
  CHECK(parse_error("payload.") ==
        "filter_expr: expected a name or an array index after '.' at offset 8");
  CHECK(parse_error("payload.1x").find("after '.'") != std::string::npos);
  CHECK(parse_error("a > 01") == "filter_expr: invalid number at offset 4");
  CHECK(parse_error("a > 1.") == "filter_expr: invalid number at offset 4");
  CHECK(parse_error("a > -") == "filter_expr: invalid number at offset 4");
  CHECK(parse_error("a > 1e400") == "filter_expr: invalid number at offset 4");
  CHECK(parse_error("a > 12abc") == "filter_expr: invalid number at offset 4");
  CHECK(parse_error("!") == "filter_expr: expected a value, found end of expression at offset 1");
  CHECK(parse_error("a !== b") == "filter_expr: unexpected character '=' at offset 4");
  CHECK(parse_error("é == 1") == "filter_expr: unexpected character '\xC3' at offset 0");
}

TEST_CASE("filter_expr: limits") {
  // 1000 levels of parentheses are refused at the depth limit, without recursing 1000 deep.
  const std::string deep = std::string(1000, '(') + "true" + std::string(1000, ')');
  CHECK(parse_error(deep) == "filter_expr: expression longer than 1024 characters");
  const std::string deep_short = std::string(500, '(') + "1" + std::string(500, ')');
  CHECK(parse_error(deep_short) == "filter_expr: nesting deeper than 32 at offset 33");
  CHECK(parse_error(std::string(1000, '!') + "a") ==
        "filter_expr: nesting deeper than 32 at offset 33");
  CHECK(parse_error(std::string(500, '(')).find("nesting deeper") != std::string::npos);
  std::string nested_calls;
  for (int i = 0; i < 100; ++i) nested_calls += "contains(";
  CHECK(parse_error(nested_calls).find("nesting deeper") != std::string::npos);

  // Exactly at the depth limit is fine.
  const std::string at_limit =
      std::string(kMaxFilterDepth, '(') + "true" + std::string(kMaxFilterDepth, ')');
  CHECK(eval(at_limit));
  CHECK(eval(std::string(kMaxFilterDepth, '!') + "true"));  // an even number of negations

  // Length: exactly the limit parses; one more does not.
  std::string padded = "true" + std::string(kMaxFilterLength - 4, ' ');
  CHECK(eval(padded));
  CHECK(parse_error(padded + " ") == "filter_expr: expression longer than 1024 characters");

  // Node count: a long && chain, and a long `in` list.
  std::string chain = "a";
  for (int i = 0; i < 300; ++i) chain += "||a";
  CHECK(parse_error(chain).find("more than 256 nodes") != std::string::npos);
  std::string list = "a in [";
  for (int i = 0; i < 300; ++i) list += i == 0 ? "1" : ",1";
  list += "]";
  CHECK(parse_error(list).find("more than 256 nodes") != std::string::npos);
  std::string ok_chain = "a";
  for (int i = 0; i < 200; ++i) ok_chain += "||a";
  CHECK_FALSE(eval(ok_chain));
}

TEST_CASE("filter_expr: hostile events do not break evaluation") {
  // Two 10000-deep equal arrays: equality stops at its depth bound instead of recursing.
  json event = json::object();
  for (const char* key : {"a", "b"}) {
    json deep = json::array();
    for (int i = 0; i < 10000; ++i) {
      json outer = json::array();
      outer.push_back(std::move(deep));
      deep = std::move(outer);
    }
    event["payload"][key] = std::move(deep);
  }
  CHECK_FALSE(eval("payload.a == payload.b", event));
  CHECK(eval("payload.a != payload.b", event));
  CHECK_FALSE(eval("contains(payload.a, payload.b)", event));
  // Invalid UTF-8 in strings is just bytes.
  json bad = {{"entity_type", std::string("\xff\xfe", 2)}};
  CHECK(eval("entity_type", bad));
  CHECK_FALSE(eval(R"(entity_type == "item")", bad));
}

TEST_CASE("contains() searches strings in linear time and agrees with std::string::find") {
  for (const char* h : {"", "a", "abc", "abcabcabd", "aaaaaaaab", "mississippi"}) {
    for (const char* n : {"", "a", "b", "abd", "aab", "issip", "ssippi", "abcabd", "x"}) {
      CHECK_MESSAGE(contains_substring(h, n) == (std::string(h).find(n) != std::string::npos), h,
                    " / ", n);
    }
  }
  // The worst case of a naive search: 60 KB of 'a' against "a…ab". Answered, never timed.
  json event = price_event_sample();
  event["payload"]["text"] = std::string(60 * 1024, 'a');
  event["payload"]["needle"] = std::string(30 * 1024, 'a') + "b";
  CHECK_FALSE(eval("contains(payload.text, payload.needle)", event));
  event["payload"]["text"] = event["payload"]["text"].get<std::string>() + "b";
  CHECK(eval("contains(payload.text, payload.needle)", event));
}

}  // namespace
}  // namespace ss::events
