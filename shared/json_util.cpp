#include "shared/json_util.h"

#include <cmath>

namespace ss {

namespace {
// nlohmann parses iteratively, but dump(), copies and comparisons recurse: refuse deep nesting up
// front with one linear scan rather than risk the wasm stack.
bool nesting_within(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}
}  // namespace

namespace {
// A leading UTF-8 byte order mark is skipped, as nlohmann does (RFC 8259 §8.1 lets a parser ignore it).
std::string_view without_bom(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  return text.substr(0, kBom.size()) == kBom ? text.substr(kBom.size()) : text;
}
}  // namespace

bool accept_json(std::string_view text) { return rapid_json_accept(without_bom(text)); }

json nlohmann_parse_or_discarded(std::string_view text) {
  // The same parser and DOM builder json::parse uses without a callback, driven through sax_parse so
  // the callback branch of parser::parse is never compiled in. Only the differential tests, the
  // fuzzer and the bench call it (what ships reads with RapidJSON).
  using Input = nlohmann::detail::iterator_input_adapter<const char*>;
  json result;
  nlohmann::detail::json_sax_dom_parser<json> builder(result, /*allow_exceptions_=*/false);
  nlohmann::detail::parser<json, Input> parser(Input(text.data(), text.data() + text.size()),
                                               nullptr, /*allow_exceptions_=*/false);
  if (!parser.sax_parse(&builder, /*strict=*/true) || builder.is_errored()) {
    return json(json::value_t::discarded);
  }
  return result;
}

json parse_json_or_discarded(std::string_view text) {
  json result;
  if (rapid_json_parse(without_bom(text), result)) return result;
  return json(json::value_t::discarded);
}

Result<json> parse_json(std::string_view text) {
  if (!nesting_within(text, kMaxJsonDepth)) {
    return Error{ErrorCode::invalid_json,
                 "the body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
  }
  json value = parse_json_or_discarded(text);
  if (value.is_discarded()) return Error{ErrorCode::invalid_json, "the body is not valid JSON"};
  return value;
}

Result<json> parse_json_object(std::string_view text) {
  auto parsed = parse_json(text);
  if (!parsed) return parsed;
  if (!parsed->is_object()) {
    return Error{ErrorCode::invalid_request, "the body must be a JSON object"};
  }
  return parsed;
}

std::string dump_json(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

const json* find_field(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end()) return nullptr;
  return &*it;
}

std::optional<std::string> get_string(const json& object, std::string_view key) {
  const json* v = find_field(object, key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::optional<std::int64_t> get_int(const json& object, std::string_view key) {
  const json* v = find_field(object, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15) {
      return static_cast<std::int64_t>(d);
    }
  }
  return std::nullopt;
}

std::optional<double> get_number(const json& object, std::string_view key) {
  const json* v = find_field(object, key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::optional<bool> get_bool(const json& object, std::string_view key) {
  const json* v = find_field(object, key);
  if (v == nullptr || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

std::string string_or(const json& object, std::string_view key, std::string_view fallback) {
  auto v = get_string(object, key);
  return v ? *v : std::string(fallback);
}

std::int64_t int_or(const json& object, std::string_view key, std::int64_t fallback) {
  auto v = get_int(object, key);
  return v ? *v : fallback;
}

bool depth_within(const json& value, std::size_t limit) {
  if (!value.is_structured()) return true;
  if (limit == 0) return false;
  for (const json& child : value) {
    if (!depth_within(child, limit - 1)) return false;
  }
  return true;
}

int compare_numbers(const json& a, const json& b) {
  if (a.is_number_integer() && b.is_number_integer()) {
    const bool a_unsigned = a.is_number_unsigned();
    const bool b_unsigned = b.is_number_unsigned();
    if (!a_unsigned && !b_unsigned) {
      const auto x = a.get<std::int64_t>();
      const auto y = b.get<std::int64_t>();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (!a_unsigned && a.get<std::int64_t>() < 0) return -1;
    if (!b_unsigned && b.get<std::int64_t>() < 0) return 1;
    const auto x = a.get<std::uint64_t>();
    const auto y = b.get<std::uint64_t>();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  const double x = a.get<double>();
  const double y = b.get<double>();
  return x < y ? -1 : (x > y ? 1 : 0);
}

}  // namespace ss
