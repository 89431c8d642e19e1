// RapidJSON's SAX reader into nlohmann's DOM: the reader of parse_json_or_discarded and accept_json
// (shared/json_util.h). In a file of its own: RapidJSON 1.1's internal stack adds an offset to its
// null pointer before its first allocation, which the sanitized native builds are told to ignore for
// this file only (CMakeLists.txt).
#include "shared/json_util.h"

#if defined(__wasm__)
// RapidJSON's always_inline hints: -0.25 KiB gz per module without them and no slower in wasm; natively
// they make the reader ~1.3x faster (docs/performance.md "RapidJSON in front of nlohmann", measured there).
#define RAPIDJSON_FORCEINLINE
#endif
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stream.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace ss {

namespace {
// The reader of parse_json_or_discarded and accept_json: RapidJSON's SAX reader (docs/performance.md
// "RapidJSON as the reader"), giving the value nlohmann's parser gives. Where the two differ and how
// that is closed:
// - numbers come as text (kParseNumbersAsStringsFlag) and are converted the way nlohmann's lexer does
//   (rapid_json_number); RapidJSON refuses a few numbers nlohmann takes as finite ("0e400", a 400-digit
//   integer part with exponent -300): refused here too (rapid_json_number_too_big tells them; the tests and the fuzzer
//   allow no other disagreement);
// - RapidJSON 1.1 decodes a lone low surrogate escape ("\udc00") into UTF-8 that nlohmann refuses:
//   such a string is refused (rapid_json_lone_surrogate);
// - RapidJSON's reader recurses: nesting deeper than kRapidJsonDepth is refused (nlohmann parses
//   iteratively; every body goes through parse_json's 64-level limit first anyway);
// - a leading UTF-8 BOM, which nlohmann skips, is skipped by the callers (json_util.cpp).
// A NUL byte ends the text for both (nlohmann's lexer takes it for the end of input; the in-place
// stream RapidJSON reads, a NUL-padded copy of the text, stops there as at the text's end).
constexpr int kRapidJsonDepth = 256;
constexpr unsigned kRapidJsonFlags =
    rapidjson::kParseValidateEncodingFlag | rapidjson::kParseNumbersAsStringsFlag;
// The readers of rapid_json_parse and rapid_json_accept read in place: each string is decoded where
// it lies in a copy of the text, instead of being pushed onto the reader's stack a character at a
// time (docs/performance.md "Reading in place"). Numbers then come without a NUL after them.
constexpr unsigned kRapidJsonInsituFlags = kRapidJsonFlags | rapidjson::kParseInsituFlag;

struct RapidJsonNumber {
  enum class Kind { integer, unsigned_integer, floating } kind = Kind::floating;
  std::int64_t integer = 0;
  std::uint64_t unsigned_integer = 0;
  double floating = 0;
};

// A number's text (RapidJSON checked its grammar; not NUL-terminated when read in place) converted
// the way nlohmann's lexer converts it: without fraction or exponent, as a signed integer when it
// starts with '-', else unsigned, when in range (std::from_chars: the digits and the range
// strtoll/strtoull take); otherwise strtod on a NUL-terminated copy (`scratch`), and a result that
// is not finite is an error (nlohmann: "number overflow").
bool rapid_json_number(const char* text, std::size_t length, RapidJsonNumber& out,
                       std::string& scratch) {
  const char* end = text + length;
  const bool integral =
      std::none_of(text, end, [](char c) { return c == '.' || c == 'e' || c == 'E'; });
  if (integral) {
    // std::from_chars takes the same digits strtoll/strtoull do here (RapidJSON checked the grammar:
    // an optional '-', then digits) and reports overflow as strtoll's ERANGE would.
    if (*text == '-') {
      long long value = 0;
      auto [last, ec] = std::from_chars(text, end, value);
      if (ec == std::errc() && last == end) {
        out.kind = RapidJsonNumber::Kind::integer;
        out.integer = value;
        return true;
      }
    } else {
      unsigned long long value = 0;
      auto [last, ec] = std::from_chars(text, end, value);
      if (ec == std::errc() && last == end) {
        out.kind = RapidJsonNumber::Kind::unsigned_integer;
        out.unsigned_integer = value;
        return true;
      }
    }
  }
  out.kind = RapidJsonNumber::Kind::floating;
  scratch.assign(text, length);
  out.floating = std::strtod(scratch.c_str(), nullptr);
  return std::isfinite(out.floating);
}

// True when decoded string bytes hold an encoded UTF-16 surrogate (ED A0..BF): with the input's UTF-8
// validated, only a lone low surrogate escape puts one there.
bool rapid_json_lone_surrogate(const char* text, std::size_t length) {
  const char* end = text + length;
  for (const char* p = text;
       (p = static_cast<const char*>(std::memchr(p, '\xED', static_cast<std::size_t>(end - p)))) !=
       nullptr;
       ++p) {
    if (end - p > 1 && static_cast<unsigned char>(p[1]) >= 0xA0) return true;
  }
  return false;
}

// RapidJSON events into nlohmann's own DOM builder (the one json::parse uses), or, without a result,
// only the checks (accept_json): one handler type, so the reader is instantiated once.
class RapidJsonHandler {
 public:
  explicit RapidJsonHandler(json* result, bool numbers_as_text = false)
      : builder_(result != nullptr ? *result : unused_, false),
        build_(result != nullptr),
        numbers_as_text_(numbers_as_text) {}

  bool Null() { return !build_ || builder_.null(); }
  bool Bool(bool value) { return !build_ || builder_.boolean(value); }
  // With kParseNumbersAsStringsFlag every number comes through RawNumber; these only satisfy the
  // handler concept.
  bool Int(int) { return false; }
  bool Uint(unsigned) { return false; }
  bool Int64(std::int64_t) { return false; }
  bool Uint64(std::uint64_t) { return false; }
  bool Double(double) { return false; }
  bool RawNumber(const char* text, rapidjson::SizeType length, bool) {
    RapidJsonNumber number;
    if (!rapid_json_number(text, length, number, text_))
      return false;  // the same verdict either way
    if (!build_) return true;
    if (numbers_as_text_) {  // the number's own spelling, as a string (rapid_json_parse_numbers_as_text)
      text_.assign(text, length);
      return builder_.string(text_);
    }
    switch (number.kind) {
      case RapidJsonNumber::Kind::integer:
        return builder_.number_integer(number.integer);
      case RapidJsonNumber::Kind::unsigned_integer:
        return builder_.number_unsigned(number.unsigned_integer);
      case RapidJsonNumber::Kind::floating:
        break;
    }
    return builder_.number_float(number.floating, text_);
  }
  bool String(const char* text, rapidjson::SizeType length, bool) {
    if (rapid_json_lone_surrogate(text, length)) return false;
    if (!build_) return true;
    text_.assign(text, length);
    return builder_.string(text_);
  }
  bool Key(const char* text, rapidjson::SizeType length, bool) {
    if (rapid_json_lone_surrogate(text, length)) return false;
    if (!build_) return true;
    text_.assign(text, length);
    return builder_.key(text_);
  }
  bool StartObject() {
    return ++depth_ <= kRapidJsonDepth &&
           (!build_ || builder_.start_object(static_cast<std::size_t>(-1)));
  }
  bool EndObject(rapidjson::SizeType) {
    --depth_;
    return !build_ || builder_.end_object();
  }
  bool StartArray() {
    return ++depth_ <= kRapidJsonDepth &&
           (!build_ || builder_.start_array(static_cast<std::size_t>(-1)));
  }
  bool EndArray(rapidjson::SizeType) {
    --depth_;
    return !build_ || builder_.end_array();
  }
  bool errored() const { return builder_.is_errored(); }

 private:
  json unused_;
  nlohmann::detail::json_sax_dom_parser<json> builder_;
  bool build_;
  bool numbers_as_text_;
  std::string text_;  // one buffer for every string and key: the builder copies it into the DOM
  int depth_ = 0;
};

// True when RapidJSON read all of `text` as one JSON value and the handler took every event. Read
// in place in a copy of the text followed by NULs: the first is where the in-place stream stops (as
// MemoryStream did at the end of the text, or at a NUL inside it); the others are what its UTF-8
// check reads, without a bounds check of its own, after a sequence cut short by the end (a lead
// byte takes at most 3 more).
bool rapid_json_read(std::string_view text, RapidJsonHandler& handler) {
  constexpr std::size_t kPadding = 4;
  std::string copy;
  copy.reserve(text.size() + kPadding);
  copy.append(text).append(kPadding, '\0');
  rapidjson::InsituStringStream stream(copy.data());
  rapidjson::Reader reader;
  return !reader.Parse<kRapidJsonInsituFlags>(stream, handler).IsError();
}
}  // namespace

bool rapid_json_parse(std::string_view text, json& out) {
  json result;
  RapidJsonHandler handler(&result);
  if (!rapid_json_read(text, handler) || handler.errored()) return false;
  out = std::move(result);
  return true;
}

bool rapid_json_parse_numbers_as_text(std::string_view text, json& out) {
  json result;
  RapidJsonHandler handler(&result, true);
  if (!rapid_json_read(text, handler) || handler.errored()) return false;
  out = std::move(result);
  return true;
}

bool rapid_json_accept(std::string_view text) {
  RapidJsonHandler handler(nullptr);
  return rapid_json_read(text, handler);
}

bool rapid_json_number_too_big(std::string_view text) {
  RapidJsonHandler handler(nullptr);
  rapidjson::MemoryStream stream(text.data(), text.size());
  rapidjson::Reader reader;
  return reader.Parse<kRapidJsonFlags>(stream, handler).Code() ==
         rapidjson::kParseErrorNumberTooBig;
}

}  // namespace ss
