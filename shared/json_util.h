#pragma once
// nlohmann_json helpers that never abort on untrusted input. Built with JSON_NOEXCEPTION, every
// nlohmann "throw" is an abort() (a wasm trap), so: parse without exceptions, read fields only
// through these accessors (they check the type first), and serialise with invalid UTF-8 replaced,
// never rejected.

#include "shared/error.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace ss {

inline constexpr int kMaxJsonDepth = 64;

// Parses any JSON text; malformed or nested deeper than kMaxJsonDepth → 400 invalid_json.
Result<json> parse_json(std::string_view text);
// Parses JSON text into a value, or a discarded value (`is_discarded()`) when the text is not JSON:
// RapidJSON's SAX reader (validating UTF-8) into nlohmann's DOM builder, the value nlohmann's own
// parser would give (numbers converted the way its lexer converts them), nlohmann's parser not linked
// (docs/performance.md "RapidJSON as the reader"). Refused where nlohmann would accept: a number
// RapidJSON calls too big although its value is finite (`0e400`, `1` and 400 zeros `e-300`) and nesting
// deeper than 256 levels. A leading BOM is skipped. No other depth limit: parse_json adds one.
json parse_json_or_discarded(std::string_view text);
// True when the text is JSON (the same reader, nothing built).
bool accept_json(std::string_view text);

// For the differential tests, the fuzzer and the bench: RapidJSON's verdict (with the value in `out`),
// its error when it refused, and nlohmann's parser alone.
bool rapid_json_parse(std::string_view text, json& out);
bool rapid_json_accept(std::string_view text);
// True when RapidJSON refused `text` for a number its grammar allows but it calls too big.
bool rapid_json_number_too_big(std::string_view text);
json nlohmann_parse_or_discarded(std::string_view text);
// Parses a JSON object; malformed → 400 invalid_json, another JSON type → 400 invalid_request.
Result<json> parse_json_object(std::string_view text);
// The same, every number in it kept as its own text in a string (`1.50` as "1.50", `1e400` as
// "1e400"): for a form's fields, whose numbers are text to keep as sent, not values to compute with.
Result<json> parse_json_object_keeping_numbers(std::string_view text);
bool rapid_json_parse_numbers_as_text(std::string_view text, json& out);

// Serialises compactly; invalid UTF-8 in strings is replaced with U+FFFD instead of aborting. The
// text nlohmann's dump(-1, ' ', false, error_handler_t::replace) gives, without its serializer.
std::string dump_json(const json& value);
// Appends `s` as a JSON string literal, exactly as dump_json writes a string.
void append_json_string(std::string& out, std::string_view s);
// That nlohmann dump itself: the reference for the differential tests and the fuzzer.
std::string nlohmann_dump(const json& value);

// An object built from key/value pairs in place: `json_object({{"ok", true}, {"id", id}})`. What
// `json{{"ok", true}, {"id", id}}` gives (the first of two equal keys wins), without nlohmann's
// initializer-list detour — a two-element array per pair, checked and taken apart again — that costs
// code at every such site and an allocation per pair at run time. Values are moved in. One difference:
// an empty `{}` as a value is null here (value-initialised) where nlohmann's list makes it an empty
// object; write json::object() for that.
struct JsonField {
  std::string_view key;
  mutable json value;  // moved from by json_object: an initializer list's elements are const
};
json json_object(std::initializer_list<JsonField> fields);

// A stored time kept with milliseconds (for ordering and timers) as clients see it, to the second
// (shown_rfc3339_second), or null when there is none.
json optional_time(const std::optional<std::string>& stored);

// Field accessors that are safe on any json value (a non-object simply has no fields).
const json* find_field(const json& object, std::string_view key);
std::optional<std::string> get_string(const json& object, std::string_view key);
std::optional<std::int64_t> get_int(const json& object, std::string_view key);
std::optional<double> get_number(const json& object, std::string_view key);
std::optional<bool> get_bool(const json& object, std::string_view key);
std::string string_or(const json& object, std::string_view key, std::string_view fallback);
std::int64_t int_or(const json& object, std::string_view key, std::int64_t fallback);

// True when `value` nests at most `limit` levels of arrays/objects; the walk stops past the limit.
bool depth_within(const json& value, std::size_t limit);

// -1, 0 or 1 for two JSON numbers (both must be numbers); exact for any mix of signed and unsigned
// 64-bit integers, doubles otherwise.
int compare_numbers(const json& a, const json& b);

}  // namespace ss
