#pragma once
// Subscription filters of the event ledger. A subscription stores its filter as text; the ledger
// parses it once when the subscription is registered (so a bad filter is a 400, not a silent
// non-delivery) and evaluates the parsed form against every event it fans out. Evaluation never
// fails: a type mismatch or a missing field simply makes the comparison false.
//
// Filter language
// ---------------
// An expression is evaluated against an event object such as
//   {"event_id":"01J…","event_type":"price.changed","entity_type":"item","entity_id":"10472",
//    "tenant_id":"bakery","payload":{"amount":150,"tags":["a"]},"source_system":"platform",
//    "caused_by":null}
//
//   expr     := or
//   or       := and ( "||" and )*
//   and      := cmp ( "&&" cmp )*
//   cmp      := unary ( ( "==" | "!=" | "<" | "<=" | ">" | ">=" ) unary | "in" array )?
//   unary    := "!" unary | primary
//   primary  := literal | path | call | "(" expr ")"
//   call     := "exists" "(" path ")"
//             | "startsWith" "(" expr "," expr ")"
//             | "contains" "(" expr "," expr ")"
//   array    := "[" ( literal ( "," literal )* )? "]"
//   literal  := number | string | "true" | "false" | "null"
//   path     := ( "$." )? ident ( "." ( ident | digits ) )*   ident := [A-Za-z_][A-Za-z0-9_]*
//
// - Numbers follow JSON syntax (`150`, `-2`, `0.5`, `1e3`); strings are double- or single-quoted
//   with the escapes \" \' \\ and \n only.
// - A path may start with `$.` as input mapper paths do (`$.payload.amount` is `payload.amount`).
// - A path walks object keys from the event (`payload.customer.id`); a digits segment indexes an
//   array (`payload.tags.0`). A missing path evaluates to null.
// - `==` is JSON equality (1 == 1.0, "a" != 1, null == missing path); `!=` is its negation.
//   `<` `<=` `>` `>=` compare numbers numerically and strings bytewise (lexicographically); between
//   any other pair of types they are false.
// - `x in ["item","vendor"]` is true when x == one of the literals.
// - `exists(p)` is true when the path is present in the event, even if its value is null.
//   `startsWith(s, prefix)` needs two strings. `contains(a, x)` is array membership when a is an
//   array and substring search when both are strings. Any other types give false.
// - Precedence, highest first: `!`, comparisons / `in`, `&&`, `||`. Comparisons do not chain
//   (`a == b == c` is an error); parenthesise instead. Note `!a == b` means `(!a) == b`.
// - Where a condition is expected, a value counts as true unless it is null, false, 0 or "".
//   Arrays and objects, even empty, are true.
// - Limits: kMaxFilterLength characters, kMaxFilterDepth nested parentheses / `!` / calls,
//   kMaxFilterNodes syntax nodes (each literal of an `in` list counts as one).

#include "shared/error.h"
#include "workers/events/work_budget.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ss::events {

inline constexpr std::size_t kMaxFilterLength = 1024;
inline constexpr std::size_t kMaxFilterDepth = 32;
inline constexpr std::size_t kMaxFilterNodes = 256;

// Substring search in linear time (Knuth-Morris-Pratt), for contains() on strings.
bool contains_substring(std::string_view haystack, std::string_view needle);

// A parsed filter: immutable, cheap to evaluate many times, copyable.
class FilterExpr {
 public:
  // ErrorCode::invalid_request with a message like `filter_expr: expected ')' at offset 17` (byte
  // offsets, 0-based).
  static Result<FilterExpr> parse(std::string_view text);

  // True when the event satisfies the filter. Never fails; works on any json value.
  bool matches(const json& event) const;
  // The same, adding the evaluation's work to `meter` (work_budget.h: one per node and path
  // segment, plus the bytes or values each comparison and search scans).
  bool matches(const json& event, WorkMeter& meter) const;

  // The text the filter was parsed from.
  const std::string& source() const { return source_; }

 private:
  friend class FilterParser;

  enum class NodeKind : std::uint8_t {
    literal,      // value
    path,         // path
    logical_not,  // children[0]
    logical_and,  // children (two or more)
    logical_or,   // children (two or more)
    compare,      // op, children[0] op children[1]
    in_list,      // children[0] in value (an array)
    exists,       // path
    starts_with,  // children[0], children[1]
    contains,     // children[0], children[1]
  };
  enum class CompareOp : std::uint8_t { eq, ne, lt, le, gt, ge };

  struct Node {
    NodeKind kind = NodeKind::literal;
    CompareOp op = CompareOp::eq;
    json value;                     // literal value, or the array of an `in` list
    std::vector<std::string> path;  // path segments
    std::vector<std::uint16_t> children;
  };

  const json* resolve(const Node& node, const json& event, WorkMeter& meter) const;
  const json& eval_value(std::size_t index, const json& event, WorkMeter& meter) const;
  bool eval_bool(std::size_t index, const json& event, WorkMeter& meter) const;

  std::string source_;
  std::vector<Node> nodes_;  // nodes_[root_] is the whole expression
  std::size_t root_ = 0;
};

}  // namespace ss::events
