#include "workers/events/json_schema.h"

#include "shared/json_util.h"
#include "shared/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace ss::events {

namespace {

enum TypeBit : std::uint8_t {
  kTypeObject = 1 << 0,
  kTypeArray = 1 << 1,
  kTypeString = 1 << 2,
  kTypeNumber = 1 << 3,
  kTypeInteger = 1 << 4,
  kTypeBoolean = 1 << 5,
  kTypeNull = 1 << 6,
};

struct TypeName {
  std::string_view name;
  std::uint8_t bit;
};
constexpr TypeName kTypeNames[] = {
    {"object", kTypeObject}, {"array", kTypeArray},     {"string", kTypeString},
    {"number", kTypeNumber}, {"integer", kTypeInteger}, {"boolean", kTypeBoolean},
    {"null", kTypeNull},
};

// Standard keywords that would constrain a payload but are not implemented here, sorted. A schema
// using one is refused when registered (400 naming the keyword) rather than accepted and silently
// not enforced, which would let an operator believe payloads are checked that are not. Annotations
// (title, description, default, examples, $comment, $schema, $id, format — an annotation unless a
// validator opts in) and unknown vendor keywords stay ignored, as JSON Schema says. A schema stored
// before this check is read as before (JsonSchema::parse): what it can check stays checked.
constexpr std::string_view kUnsupportedKeywords[] = {
    "$dynamicRef",
    "$recursiveRef",
    "$ref",
    "additionalItems",
    "allOf",
    "anyOf",
    "contains",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "else",
    "if",
    "maxContains",
    "maxProperties",
    "minContains",
    "minProperties",
    "multipleOf",
    "not",
    "oneOf",
    "pattern",
    "patternProperties",
    "prefixItems",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
    "uniqueItems",
};

bool is_unsupported_keyword(std::string_view key) {
  return std::binary_search(std::begin(kUnsupportedKeywords), std::end(kUnsupportedKeywords), key);
}

// Violation messages quote enum/const values and bounds only when they stay short.
constexpr std::size_t kMaxQuotedValueLength = 120;

std::uint8_t type_bit(std::string_view name) {
  for (const TypeName& t : kTypeNames) {
    if (t.name == name) return t.bit;
  }
  return 0;
}

bool is_integral(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

bool has_type(const json& v, std::uint8_t mask) {
  if ((mask & kTypeObject) && v.is_object()) return true;
  if ((mask & kTypeArray) && v.is_array()) return true;
  if ((mask & kTypeString) && v.is_string()) return true;
  if ((mask & kTypeNumber) && v.is_number()) return true;
  if ((mask & kTypeInteger) && is_integral(v)) return true;
  if ((mask & kTypeBoolean) && v.is_boolean()) return true;
  if ((mask & kTypeNull) && v.is_null()) return true;
  return false;
}

std::string type_list(std::uint8_t mask) {
  std::string out;
  for (const TypeName& t : kTypeNames) {
    if ((mask & t.bit) == 0) continue;
    if (!out.empty()) out += " or ";
    out += t.name;
  }
  return out;
}

// RFC 6901 escaping of one reference token.
std::string pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out.push_back(c);
  }
  return out;
}

std::string quoted(const json& value, std::string_view fallback) {
  std::string text = dump_json(value);
  return text.size() <= kMaxQuotedValueLength ? text : std::string(fallback);
}

}  // namespace

// Turns a schema document into the flat node table, checking the shape of every supported keyword.
class SchemaCompiler {
 public:
  SchemaCompiler(std::vector<JsonSchema::Node>& nodes, bool refuse_unsupported)
      : nodes_(nodes), refuse_unsupported_(refuse_unsupported) {}

  // Compiles `schema` (found at `pointer` in the document) and returns its node index.
  Result<std::size_t> compile(const json& schema, const std::string& pointer, std::size_t depth) {
    if (depth > kMaxSchemaDepth) {
      return fail(pointer, "schemas nested deeper than " + std::to_string(kMaxSchemaDepth));
    }
    const std::size_t index = nodes_.size();
    nodes_.emplace_back();
    if (schema.is_boolean()) {
      nodes_[index].reject_all = !schema.get<bool>();
      return index;
    }
    if (!schema.is_object()) return fail(pointer, "expected a schema (an object or a boolean)");

    if (refuse_unsupported_) {
      for (auto it = schema.begin(); it != schema.end(); ++it) {
        if (is_unsupported_keyword(it.key())) {
          return fail(pointer + "/" + it.key(),
                      "the keyword is not supported (docs/runbook-events.md lists those that are)");
        }
      }
    }
    // Build into a local node: compiling children grows nodes_, which would invalidate a reference.
    JsonSchema::Node node;
    if (const json* type = find_field(schema, "type")) {
      Status s = compile_type(*type, pointer + "/type", node);
      if (!s.ok()) return std::move(s).error();
    }
    if (const json* properties = find_field(schema, "properties")) {
      if (!properties->is_object()) return fail(pointer + "/properties", "expected an object");
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        auto child =
            compile(it.value(), pointer + "/properties/" + pointer_token(it.key()), depth + 1);
        if (!child.ok()) return std::move(child).error();
        node.properties.emplace_back(it.key(), *child);
      }
      // nlohmann keeps object keys sorted already; sort anyway so lookups never depend on that.
      std::sort(node.properties.begin(), node.properties.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    if (const json* required = find_field(schema, "required")) {
      if (!required->is_array()) return fail(pointer + "/required", "expected an array of strings");
      for (const json& name : *required) {
        if (!name.is_string()) return fail(pointer + "/required", "expected an array of strings");
        node.required.push_back(name.get<std::string>());
      }
    }
    if (const json* additional = find_field(schema, "additionalProperties")) {
      if (additional->is_boolean()) {
        node.additional_allowed = additional->get<bool>();
      } else {
        auto child = compile(*additional, pointer + "/additionalProperties", depth + 1);
        if (!child.ok()) return std::move(child).error();
        node.additional_schema = *child;
      }
    }
    if (const json* items = find_field(schema, "items")) {
      if (items->is_array()) {
        return fail(pointer + "/items", "expected a schema (the tuple form is not supported)");
      }
      auto child = compile(*items, pointer + "/items", depth + 1);
      if (!child.ok()) return std::move(child).error();
      node.items = *child;
    }
    if (const json* values = find_field(schema, "enum")) {
      if (!values->is_array()) return fail(pointer + "/enum", "expected an array");
      if (!depth_within(*values, kMaxSchemaDepth)) {
        return fail(pointer + "/enum", "nested deeper than " + std::to_string(kMaxSchemaDepth));
      }
      if (values->size() > kMaxEnumValues) {
        return fail(pointer + "/enum",
                    "has more than " + std::to_string(kMaxEnumValues) + " values");
      }
      node.enum_values = *values;
      for (const json& v : *values) node.enum_keys.insert(canonical_key(v));
    }
    if (const json* value = find_field(schema, "const")) {
      if (!depth_within(*value, kMaxSchemaDepth)) {
        return fail(pointer + "/const", "nested deeper than " + std::to_string(kMaxSchemaDepth));
      }
      node.const_value = *value;
    }
    for (auto [keyword, slot] :
         {std::pair{"minimum", &node.minimum}, std::pair{"maximum", &node.maximum},
          std::pair{"exclusiveMinimum", &node.exclusive_minimum},
          std::pair{"exclusiveMaximum", &node.exclusive_maximum}}) {
      if (const json* bound = find_field(schema, keyword)) {
        if (!bound->is_number()) return fail(pointer + "/" + keyword, "expected a number");
        *slot = *bound;
      }
    }
    for (auto [keyword, slot] :
         {std::pair{"minLength", &node.min_length}, std::pair{"maxLength", &node.max_length},
          std::pair{"minItems", &node.min_items}, std::pair{"maxItems", &node.max_items}}) {
      if (const json* count = find_field(schema, keyword)) {
        auto value = non_negative_integer(*count);
        if (!value) return fail(pointer + "/" + keyword, "expected a non-negative integer");
        *slot = *value;
      }
    }
    nodes_[index] = std::move(node);
    return index;
  }

 private:
  // `pointer` locates the offending keyword in the schema document ("" for the document itself).
  static Error fail(const std::string& pointer, std::string_view what) {
    const std::string where = pointer.empty() ? std::string() : pointer + ": ";
    return Error{ErrorCode::invalid_request, "json_schema: " + where + std::string(what)};
  }

  static std::optional<std::uint64_t> non_negative_integer(const json& v) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer()) {
      const auto i = v.get<std::int64_t>();
      if (i < 0) return std::nullopt;
      return static_cast<std::uint64_t>(i);
    }
    if (v.is_number_float()) {
      const double d = v.get<double>();
      // 2.0 is an integer in JSON Schema; anything past 2^53 is not exact anyway.
      if (!std::isfinite(d) || std::floor(d) != d || d < 0 || d > 9.0e15) return std::nullopt;
      return static_cast<std::uint64_t>(d);
    }
    return std::nullopt;
  }

  static Status compile_type(const json& type, const std::string& pointer, JsonSchema::Node& node) {
    constexpr std::string_view kExpected =
        "expected a type name or a non-empty array of type names";
    if (type.is_string()) {
      const std::uint8_t bit = type_bit(type.get_ref<const std::string&>());
      if (bit == 0) return fail(pointer, "unknown type " + quoted(type, "name"));
      node.type_mask = bit;
      return Unit{};
    }
    if (!type.is_array() || type.empty()) return fail(pointer, kExpected);
    for (const json& name : type) {
      if (!name.is_string()) return fail(pointer, kExpected);
      const std::uint8_t bit = type_bit(name.get_ref<const std::string&>());
      if (bit == 0) return fail(pointer, "unknown type " + quoted(name, "name"));
      node.type_mask |= bit;
    }
    return Unit{};
  }

  std::vector<JsonSchema::Node>& nodes_;
  bool refuse_unsupported_;
};

// Walks an instance alongside the compiled schema, collecting at most kMaxSchemaViolations.
class SchemaValidator {
 public:
  SchemaValidator(const std::vector<JsonSchema::Node>& nodes, std::vector<json>& out)
      : nodes_(nodes), out_(out) {}

  // `path` is the JSON Pointer of `instance`; it is extended and restored in place.
  void validate(std::size_t index, const json& instance, std::string& path) {
    if (full()) return;
    const JsonSchema::Node& node = nodes_[index];
    if (node.reject_all) return add(path, "no value is allowed here");
    if (node.type_mask != 0 && !has_type(instance, node.type_mask)) {
      return add(path, "expected " + type_list(node.type_mask));
    }
    if (node.enum_values && node.enum_keys.count(canonical_key(instance)) == 0) {
      add(path, "expected one of " + quoted(*node.enum_values, "the enum values"));
    }
    if (node.const_value && !(*node.const_value == instance)) {
      add(path, "expected " + quoted(*node.const_value, "the const value"));
    }
    if (instance.is_number()) check_number(node, instance, path);
    if (instance.is_string()) {
      const std::size_t length = code_points(instance.get_ref<const std::string&>());
      if (node.min_length && length < *node.min_length) {
        add(path, "expected at least " + std::to_string(*node.min_length) + " characters");
      }
      if (node.max_length && length > *node.max_length) {
        add(path, "expected at most " + std::to_string(*node.max_length) + " characters");
      }
    }
    if (instance.is_array()) {
      if (node.min_items && instance.size() < *node.min_items) {
        add(path, "expected at least " + std::to_string(*node.min_items) + " items");
      }
      if (node.max_items && instance.size() > *node.max_items) {
        add(path, "expected at most " + std::to_string(*node.max_items) + " items");
      }
      if (node.items) {
        for (std::size_t i = 0; i < instance.size() && !full(); ++i) {
          const std::size_t saved = path.size();
          path += "/" + std::to_string(i);
          validate(*node.items, instance[i], path);
          path.resize(saved);
        }
      }
    }
    if (instance.is_object()) check_object(node, instance, path);
  }

 private:
  bool full() const { return out_.size() >= kMaxSchemaViolations; }
  void add(const std::string& path, std::string message) {
    if (full()) return;
    out_.push_back(json_object({{"path", path}, {"message", std::move(message)}}));
  }

  void check_number(const JsonSchema::Node& node, const json& instance, const std::string& path) {
    if (node.minimum && compare_numbers(instance, *node.minimum) < 0) {
      add(path, "expected a number >= " + dump_json(*node.minimum));
    }
    if (node.exclusive_minimum && compare_numbers(instance, *node.exclusive_minimum) <= 0) {
      add(path, "expected a number > " + dump_json(*node.exclusive_minimum));
    }
    if (node.maximum && compare_numbers(instance, *node.maximum) > 0) {
      add(path, "expected a number <= " + dump_json(*node.maximum));
    }
    if (node.exclusive_maximum && compare_numbers(instance, *node.exclusive_maximum) >= 0) {
      add(path, "expected a number < " + dump_json(*node.exclusive_maximum));
    }
  }

  void check_object(const JsonSchema::Node& node, const json& instance, std::string& path) {
    for (const std::string& name : node.required) {
      if (!instance.contains(name)) add(path + "/" + pointer_token(name), "is required");
    }
    for (auto it = instance.begin(); it != instance.end() && !full(); ++it) {
      const std::string& key = it.key();
      auto found =
          std::lower_bound(node.properties.begin(), node.properties.end(), key,
                           [](const auto& p, const std::string& k) { return p.first < k; });
      const bool declared = found != node.properties.end() && found->first == key;
      const std::size_t saved = path.size();
      path += "/" + pointer_token(key);
      if (declared) {
        validate(found->second, it.value(), path);
      } else if (node.additional_schema) {
        validate(*node.additional_schema, it.value(), path);
      } else if (!node.additional_allowed) {
        add(path, "is not an allowed property");
      }
      path.resize(saved);
    }
  }

  const std::vector<JsonSchema::Node>& nodes_;
  std::vector<json>& out_;
};

namespace {

// Integral numbers (1, 1.0, -0.0) print as their exact integer; others as their IEEE bits (`#f…`),
// which two equal non-integral doubles share. Length prefixes keep strings, arrays and objects
// unambiguous.
void append_canonical(const json& v, std::string& out) {
  switch (v.type()) {
    case json::value_t::null:
      out += 'n';
      return;
    case json::value_t::boolean:
      out += v.get<bool>() ? 't' : 'f';
      return;
    case json::value_t::number_integer:
      out += '#' + std::to_string(v.get<std::int64_t>()) + ';';
      return;
    case json::value_t::number_unsigned:
      out += '#' + std::to_string(v.get<std::uint64_t>()) + ';';
      return;
    case json::value_t::number_float: {
      constexpr double kTwo63 = 9223372036854775808.0;
      const double d = v.get<double>();
      if (std::isfinite(d) && std::floor(d) == d && d >= -kTwo63 && d < 2 * kTwo63) {
        out += '#';
        out += d < kTwo63 ? std::to_string(static_cast<std::int64_t>(d))
                          : std::to_string(static_cast<std::uint64_t>(d));
        out += ';';
        return;
      }
      // Any other (finite: JSON has no NaN or infinity) double: its bits, which two equal
      // non-integral doubles share. No printf: the wasm build's formatter has no %g
      // (shared/printf_lite.h).
      std::uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      out += "#f" + std::to_string(bits) + ';';
      return;
    }
    case json::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      out += 's' + std::to_string(s.size()) + ':' + s;
      return;
    }
    case json::value_t::array:
      out += '[' + std::to_string(v.size()) + ':';
      for (const json& item : v) append_canonical(item, out);
      return;
    case json::value_t::object:
      out += '{' + std::to_string(v.size()) + ':';
      for (auto it = v.begin(); it != v.end(); ++it) {  // keys come sorted
        out += std::to_string(it.key().size()) + ':' + it.key();
        append_canonical(it.value(), out);
      }
      return;
    default:
      out += '?';  // binary / discarded: never produced by the JSON parser
      return;
  }
}

}  // namespace

std::string canonical_key(const json& value) {
  std::string out;
  append_canonical(value, out);
  return out;
}

Result<JsonSchema> JsonSchema::parse(const json& schema) { return compile(schema, false); }

Result<JsonSchema> JsonSchema::parse_for_registration(const json& schema) {
  return compile(schema, true);
}

Result<JsonSchema> JsonSchema::compile(const json& schema, bool refuse_unsupported) {
  JsonSchema result;
  SchemaCompiler compiler(result.nodes_, refuse_unsupported);
  auto root = compiler.compile(schema, "", 1);
  if (!root.ok()) return std::move(root).error();
  return result;
}

std::vector<json> JsonSchema::validate(const json& instance) const {
  std::vector<json> violations;
  if (nodes_.empty()) return violations;
  // Everything below recurses over the instance (and nlohmann's operator== for enum/const does
  // too), so bound the instance first.
  if (!depth_within(instance, kMaxSchemaDepth)) {
    violations.push_back(json_object(
        {{"path", ""},
         {"message", "nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels"}}));
    return violations;
  }
  std::string path;
  SchemaValidator(nodes_, violations).validate(0, instance, path);
  return violations;
}

bool has_schema_keyword(const json& body) {
  // The keywords this subset checks, and the identifiers, each between spaces.
  static constexpr std::string_view kChecked =
      " $id $schema additionalProperties const enum exclusiveMaximum exclusiveMinimum items "
      "maxItems maxLength maximum minItems minLength minimum properties required type ";
  if (!body.is_object()) return false;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& key = it.key();
    if (is_unsupported_keyword(key)) return true;
    if (key.find(' ') == std::string::npos &&
        kChecked.find(" " + key + " ") != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace ss::events
