#pragma once
// Payload schemas registered per event type. A producer registers a schema once; the ledger
// validates every payload of that type against it and answers 422 with the violations. The schema
// is compiled when registered, so a malformed schema is refused up front (400) and validation
// itself cannot fail.
//
// Supported keywords (a JSON Schema subset; any other keyword is ignored):
//   type                 "object" | "array" | "string" | "number" | "integer" | "boolean" | "null",
//                        or a non-empty array of those. "integer" accepts 2.0; "number" accepts 2.
//   properties           object of schemas
//   required             array of strings
//   additionalProperties boolean or schema (applies to keys not listed in "properties")
//   items                schema applied to every element (the tuple form is refused)
//   enum                 array of values; const: any value (JSON equality, 1 == 1.0)
//   minimum, maximum, exclusiveMinimum, exclusiveMaximum   numbers (the draft-6+ numeric form)
//   minLength, maxLength (UTF-8 code points), minItems, maxItems   non-negative integers
// A schema is an object or a boolean (true accepts everything, false nothing). Keywords that
// constrain a type only apply to instances of that type (minimum ignores strings, and so on).
//
// Violations are {"path": <JSON Pointer into the instance, "" for the root>, "message": <text>}, in
// document order, at most kMaxSchemaViolations.

#include "shared/error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ss::events {

inline constexpr std::size_t kMaxSchemaDepth = 32;  // nested schemas, and nesting of the instance
inline constexpr std::size_t kMaxSchemaViolations = 10;

class JsonSchema {
 public:
  // invalid_request on a schema whose supported keywords are malformed, e.g.
  // `json_schema: /properties/amount/type: expected a type name or an array of type names`.
  static Result<JsonSchema> parse(const json& schema);

  // Empty when `instance` is valid; otherwise up to kMaxSchemaViolations entries like
  // {"path":"/amount","message":"expected number"}.
  std::vector<json> validate(const json& instance) const;

 private:
  friend class SchemaCompiler;
  friend class SchemaValidator;

  struct Node {
    bool reject_all = false;                                      // the `false` schema
    std::uint8_t type_mask = 0;                                   // 0: any type
    std::vector<std::pair<std::string, std::size_t>> properties;  // sorted by key
    std::vector<std::string> required;
    bool additional_allowed = true;
    std::optional<std::size_t> additional_schema;
    std::optional<std::size_t> items;
    std::optional<json> enum_values;  // an array
    std::optional<json> const_value;
    std::optional<json> minimum, maximum, exclusive_minimum, exclusive_maximum;  // numbers
    std::optional<std::uint64_t> min_length, max_length, min_items, max_items;
  };

  std::vector<Node> nodes_;  // nodes_[0] is the root
};

}  // namespace ss::events
