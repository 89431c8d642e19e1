// The non-throwing JSON helpers (shared/json_util.h) every untrusted body goes through: no abort
// (nlohmann's throws are aborts here), the depth limit holds, dump → parse is a fixed point, and the
// RapidJSON reader agrees with nlohmann: what RapidJSON accepts nlohmann accepts, with the same value
// and number types; it refuses what nlohmann reads only as documented (shared/json_util.h).
#include "shared/json_util.h"
#include "tests/fuzz/fuzz_util.h"

#include <cstring>

namespace {

// Equal values of equal types all the way down (operator== calls 1, 1u and 1.0 equal).
bool same_json(const ss::json& a, const ss::json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_structured()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(), jt = b.begin(); it != a.end(); ++it, ++jt) {
      if (a.is_object() && it.key() != jt.key()) return false;
      if (!same_json(it.value(), jt.value())) return false;
    }
    return true;
  }
  if (a.is_number_float()) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  return a == b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = ss::fuzz::as_text(data, size);

  const ss::json reference = ss::nlohmann_parse_or_discarded(in);
  ss::json fast;
  const bool fast_ok = ss::rapid_json_parse(in, fast);
  if (fast_ok) {
    ss::fuzz::require(!reference.is_discarded());
    ss::fuzz::require(same_json(fast, reference));
  }
  ss::fuzz::require(ss::rapid_json_accept(in) == fast_ok);
  const ss::json combined = ss::parse_json_or_discarded(in);
  if (!reference.is_discarded() && combined.is_discarded()) {
    // The only texts nlohmann reads that the reader refuses (shared/json_util.h): a number RapidJSON
    // calls too big, nesting deeper than 256 levels.
    std::string_view body = in;
    if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);
    ss::fuzz::require(ss::rapid_json_number_too_big(body) || !ss::depth_within(reference, 256));
  } else {
    ss::fuzz::require(combined.is_discarded() == reference.is_discarded());
    if (!reference.is_discarded()) ss::fuzz::require(same_json(combined, reference));
  }
  ss::fuzz::require(ss::accept_json(in) == !combined.is_discarded());

  const ss::json raw = std::string(in);
  ss::fuzz::require(ss::dump_json(raw) == ss::nlohmann_dump(raw));

  auto parsed = ss::parse_json(in);
  if (!parsed) {
    ss::fuzz::require(parsed.error().code == ss::ErrorCode::invalid_json);
    return 0;
  }
  ss::fuzz::require(ss::depth_within(*parsed, ss::kMaxJsonDepth));
  std::string text = ss::dump_json(*parsed);
  // The writer writes what nlohmann's serializer writes, for every value and for the input itself
  // as a string (any bytes: ill-formed UTF-8 replaced the same way).
  ss::fuzz::require(text == ss::nlohmann_dump(*parsed));
  auto again = ss::parse_json(text);
  ss::fuzz::require(again.ok());
  ss::fuzz::require(ss::dump_json(*again) == text);
  // The accessors never abort, whatever the value's type.
  (void)ss::get_string(*parsed, "a");
  (void)ss::get_int(*parsed, "a");
  (void)ss::get_number(*parsed, "a");
  (void)ss::get_bool(*parsed, "a");
  (void)ss::parse_json_object(in);
  return 0;
}
