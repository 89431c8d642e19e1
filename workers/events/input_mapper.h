#pragma once
// Builds a workflow's input from the event that triggered it. A subscription stores a mapper, a
// JSON object that looks like the input it produces: string values are JSON paths into the event,
// everything else is copied as is. The mapper is checked once when the subscription is registered,
// so applying it to an event cannot fail; a path the event lacks yields null.
//
//   {"vendor": {"id": "$.entity_id"}, "amount": "$.payload.amount",
//    "first_sku": "$.payload.items[0].sku", "event": "$", "source": 1, "tags": ["x"]}
//
// Path syntax: `$` (the whole event) followed by any number of `.name` (name := [A-Za-z0-9_-]+) and
// `[index]` (decimal digits) steps. No wildcards, no `..`, no quoted names. Nested objects in the
// mapper are mapped recursively; arrays and other non-string values are literals (strings inside an
// array are not paths).

#include "shared/error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ss::events {

inline constexpr std::size_t kMaxMapperKeys = 64;         // keys in total, nested objects included
inline constexpr std::size_t kMaxMapperPathLength = 256;  // characters of one path string
inline constexpr std::size_t kMaxMapperDepth = 8;         // the mapper object itself is depth 1

class InputMapper {
 public:
  // `mapper` must be an object; every string value must be a valid path. Errors are invalid_request
  // with messages like `input_mapper: "vendor_id": expected a path starting with $` (nested keys
  // are joined with '.').
  static Result<InputMapper> parse(const json& mapper);

  // The mapped input object. Never fails: missing paths (and indices past the end) give null.
  json apply(const json& event) const;

  // The work of apply(event) and of serialising its result, in work units (work_budget.h: about
  // the bytes of JSON it copies), measured by walking what each path selects without copying it.
  std::uint64_t cost(const json& event) const;

 private:
  struct Step {
    std::string key;  // when !is_index
    std::size_t index = 0;
    bool is_index = false;
  };
  struct Field {
    enum class Kind { path, literal, object };
    std::string key;
    Kind kind = Kind::literal;
    std::vector<Step> path;
    json literal;
    std::vector<Field> fields;  // for Kind::object
  };

  static Status parse_object(const json& mapper, const std::string& prefix, std::size_t depth,
                             std::size_t& key_count, std::vector<Field>& out);
  static json apply_fields(const std::vector<Field>& fields, const json& event);
  static std::uint64_t cost_fields(const std::vector<Field>& fields, const json& event);
  static const json* select(const Field& field, const json& event);

  std::vector<Field> fields_;
};

}  // namespace ss::events
