// RFC 3339 timestamps and dates (shared/rfc3339.h): no crash; every accepted instant is within the
// documented range and formats back to a string that parses to the same instant (at ms precision).
#include "shared/rfc3339.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = ss::fuzz::as_text(data, size);
  if (auto ms = ss::parse_rfc3339(in)) {
    ss::fuzz::require(*ms >= ss::kMinRfc3339Ms && *ms <= ss::kMaxRfc3339Ms);
    ss::fuzz::require(ss::parse_rfc3339(ss::format_rfc3339_ms(*ms)) == *ms);
  }
  if (auto ms = ss::parse_date(in)) {
    ss::fuzz::require(*ms % ss::kMsPerDay == 0);
  }
  return 0;
}
