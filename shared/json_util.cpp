#include "shared/json_util.h"

#include "shared/rfc3339.h"
#include "shared/text.h"

#include <charconv>
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
  // A raw NUL byte is JSON nowhere (RFC 8259), but both readers take it for the end of the text:
  // `{"a":1}\0junk` would have been read as `{"a":1}`.
  if (value.is_discarded() || text.find('\0') != std::string_view::npos) {
    return Error{ErrorCode::invalid_json, "the body is not valid JSON"};
  }
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

Result<json> parse_json_object_keeping_numbers(std::string_view text) {
  // parse_json's checks and verdict (a number is still converted, to refuse what parse_json refuses),
  // with each number kept as its text.
  if (!nesting_within(text, kMaxJsonDepth)) {
    return Error{ErrorCode::invalid_json,
                 "the body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"};
  }
  json value;
  if (!rapid_json_parse_numbers_as_text(without_bom(text), value) ||
      text.find('\0') != std::string_view::npos) {
    return Error{ErrorCode::invalid_json, "the body is not valid JSON"};
  }
  if (!value.is_object())
    return Error{ErrorCode::invalid_request, "the body must be a JSON object"};
  return value;
}

namespace {
// dump_json's writer: the text nlohmann's `dump(-1, ' ', false, error_handler_t::replace)` writes,
// byte for byte (json_util-test.cpp and the json fuzzer compare the two on every input), without
// nlohmann's serializer: that one carries indentation, ASCII-only and strict modes the runtime never
// uses and writes `\u00XX` escapes through snprintf; this one appends runs of plain characters at once
// (docs/performance.md "Writing JSON without nlohmann's serializer").
//
// Strings: `"` `\\` and the control characters U+0000..U+001F are escaped as nlohmann escapes them
// (\b \t \n \f \r, else \u00xx in lower-case hex); everything else is copied, U+007F and non-ASCII
// included. Ill-formed UTF-8 (by Unicode's table 3-7, the rule nlohmann's decoder implements) is
// replaced the way nlohmann replaces it: a byte that cannot start a sequence becomes one U+FFFD; a
// sequence broken off by a byte that cannot continue it becomes one U+FFFD and that byte is read
// again as the start of what follows; a sequence cut off by the end of the string becomes one U+FFFD.
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // A run of characters copied as they are.
    std::size_t run = i;
    while (run < n) {
      const auto c = static_cast<unsigned char>(s[run]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
      ++run;
    }
    out.append(s.data() + i, run - i);
    i = run;
    if (i == n) break;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      char escape = 0;
      switch (c) {
        case '"':
          escape = '"';
          break;
        case '\\':
          escape = '\\';
          break;
        case 0x08:
          escape = 'b';
          break;
        case 0x09:
          escape = 't';
          break;
        case 0x0A:
          escape = 'n';
          break;
        case 0x0C:
          escape = 'f';
          break;
        case 0x0D:
          escape = 'r';
          break;
        default:
          break;
      }
      if (escape != 0) {
        const char pair[2] = {'\\', escape};
        out.append(pair, 2);
      } else {
        const char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out.append(u, 6);
      }
      ++i;
      continue;
    }
    const Utf8Lead lead = utf8_lead(c);
    if (lead.continuations == 0) {  // cannot start a sequence: replaced, skipped
      out.append(kReplacement);
      ++i;
      continue;
    }
    std::size_t k = 1;
    for (; k <= static_cast<std::size_t>(lead.continuations) && i + k < n; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      const unsigned char low = k == 1 ? lead.low : 0x80;
      const unsigned char high = k == 1 ? lead.high : 0xBF;
      if (next < low || next > high) break;
    }
    if (k == static_cast<std::size_t>(lead.continuations) + 1) {
      out.append(s.data() + i, k);  // a whole, well-formed sequence
    } else {
      out.append(kReplacement);  // broken off (or cut off by the end): the breaking byte read again
    }
    i += k;
  }
  out.push_back('"');
}

namespace {

void write_json(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      const auto& object = value.get_ref<const json::object_t&>();
      out.push_back('{');
      bool first = true;
      for (const auto& [key, item] : object) {
        if (!first) out.push_back(',');
        first = false;
        append_json_string(out, key);
        out.push_back(':');
        write_json(out, item);
      }
      out.push_back('}');
      return;
    }
    case json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const json& item : value.get_ref<const json::array_t&>()) {
        if (!first) out.push_back(',');
        first = false;
        write_json(out, item);
      }
      out.push_back(']');
      return;
    }
    case json::value_t::string:
      append_json_string(out, value.get_ref<const json::string_t&>());
      return;
    case json::value_t::boolean:
      out.append(value.get<bool>() ? "true" : "false");
      return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: {
      char digits[24];
      const auto [end, ec] =
          value.is_number_unsigned()
              ? std::to_chars(digits, digits + sizeof digits, value.get<std::uint64_t>())
              : std::to_chars(digits, digits + sizeof digits, value.get<std::int64_t>());
      out.append(digits, static_cast<std::size_t>(end - digits));
      return;
    }
    case json::value_t::number_float: {
      const double x = value.get<double>();
      if (!std::isfinite(x)) {
        out.append("null");
        return;
      }
      char
          digits[64];  // nlohmann's own shortest round-trip form (grisu2), as its serializer writes
      const char* end = nlohmann::detail::to_chars(digits, digits + sizeof digits, x);
      out.append(digits, static_cast<std::size_t>(end - digits));
      return;
    }
    case json::value_t::binary: {  // never built by this code base; written as nlohmann writes it
      const auto& binary = value.get_binary();
      out.append("{\"bytes\":[");
      for (std::size_t i = 0; i < binary.size(); ++i) {
        if (i > 0) out.push_back(',');
        out.append(std::to_string(binary[i]));
      }
      out.append("],\"subtype\":");
      out.append(binary.has_subtype() ? std::to_string(binary.subtype()) : std::string("null"));
      out.push_back('}');
      return;
    }
    case json::value_t::discarded:
      out.append("<discarded>");
      return;
    case json::value_t::null:
    default:
      out.append("null");
      return;
  }
}
}  // namespace

std::string dump_json(const json& value) {
  std::string out;
  write_json(out, value);
  return out;
}

std::string nlohmann_dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json json_object(std::initializer_list<JsonField> fields) {
  json out = json::object();
  auto& object = out.get_ref<json::object_t&>();
  for (const JsonField& field : fields)
    object.emplace(std::string(field.key), std::move(field.value));
  return out;
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

json optional_time(const std::optional<std::string>& stored) {
  return stored ? json(shown_rfc3339_second(*stored)) : json(nullptr);
}

}  // namespace ss
