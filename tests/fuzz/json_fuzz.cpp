// The non-throwing JSON helpers (shared/json_util.h) every untrusted body goes through: no abort
// (nlohmann's throws are aborts here), the depth limit holds, and dump → parse is a fixed point.
#include "shared/json_util.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = ss::fuzz::as_text(data, size);
  auto parsed = ss::parse_json(in);
  if (!parsed) {
    ss::fuzz::require(parsed.error().code == ss::ErrorCode::invalid_json);
    return 0;
  }
  ss::fuzz::require(ss::depth_within(*parsed, ss::kMaxJsonDepth));
  std::string text = ss::dump_json(*parsed);
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
