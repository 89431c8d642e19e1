#pragma once
// Payload schemas registered per event type. A producer registers a schema once; the ledger
// validates every payload of that type against it and answers 422 with the violations. The schema
// is compiled when registered, so a malformed schema is refused up front (400) and validation
// itself cannot fail.
//
// Supported keywords (a JSON Schema subset). The standard keywords that would constrain a payload
// but are not among them ($ref, allOf/anyOf/oneOf/not, if/then/else, pattern, uniqueItems,
// multipleOf, min/maxProperties, contains, dependencies, …: kUnsupportedKeywords in the .cpp) are
// refused when a schema is registered (parse_for_registration); a stored schema is read by parse,
// which ignores them as it did before that check. Annotations and unknown keywords are ignored:
//   type                 "object" | "array" | "string" | "number" | "integer" | "boolean" | "null",
//                        or a non-empty array of those. "integer" accepts 2.0; "number" accepts 2.
//   properties           object of schemas
//   required             array of strings
//   additionalProperties boolean or schema (applies to keys not listed in "properties")
//   items                schema applied to every element (the tuple form is refused)
//   enum                 array of at most kMaxEnumValues values; const: any value (JSON equality,
//                        numbers by exact value: 1 == 1.0). An enum is hashed once when the schema
//                        is compiled, so checking a value costs its size, not the enum's.
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
#include <unordered_set>
#include <utility>
#include <vector>

namespace ss::events {

inline constexpr std::size_t kMaxSchemaDepth = 32;  // nested schemas, and nesting of the instance
inline constexpr std::size_t kMaxSchemaViolations = 10;
// A longer enum is refused when the schema is registered (400). With the hashed set, a payload's
// check costs O(its own size) whatever the enum size; the cap bounds the memory a schema holds and
// the one-off cost of compiling it.
inline constexpr std::size_t kMaxEnumValues = 4096;

class JsonSchema {
 public:
  // invalid_request on a schema whose supported keywords are malformed, e.g.
  // `json_schema: /properties/amount/type: expected a type name or an array of type names`.
  static Result<JsonSchema> parse(const json& schema);
  // parse, and a standard keyword this subset does not enforce is refused too (PUT /admin/schemas).
  static Result<JsonSchema> parse_for_registration(const json& schema);

  // Empty when `instance` is valid; otherwise up to kMaxSchemaViolations entries like
  // {"path":"/amount","message":"expected number"}.
  std::vector<json> validate(const json& instance) const;

 private:
  friend class SchemaCompiler;
  static Result<JsonSchema> compile(const json& schema, bool refuse_unsupported);
  friend class SchemaValidator;

  struct Node {
    bool reject_all = false;                                      // the `false` schema
    std::uint8_t type_mask = 0;                                   // 0: any type
    std::vector<std::pair<std::string, std::size_t>> properties;  // sorted by key
    std::vector<std::string> required;
    bool additional_allowed = true;
    std::optional<std::size_t> additional_schema;
    std::optional<std::size_t> items;
    std::optional<json> enum_values;            // an array (quoted in violation messages)
    std::unordered_set<std::string> enum_keys;  // canonical_key() of each enum value
    std::optional<json> const_value;
    std::optional<json> minimum, maximum, exclusive_minimum, exclusive_maximum;  // numbers
    std::optional<std::uint64_t> min_length, max_length, min_items, max_items;
  };

  std::vector<Node> nodes_;  // nodes_[0] is the root
};

// Whether `body` (a JSON object) holds a JSON Schema keyword at its top level: one this subset
// checks, one it refuses, or `$schema`/`$id`. PUT /admin/schemas/{type} takes such a body as the
// schema itself; an object without any (a misspelt `{"shema": …}` wrapper) is not read as a schema
// that accepts everything.
bool has_schema_keyword(const json& body);

// A text that two JSON values share exactly when they are equal in the sense above (objects by
// their keys and values, numbers by exact value whatever their representation). `value` must be
// nested at most kMaxSchemaDepth deep.
std::string canonical_key(const json& value);

}  // namespace ss::events
