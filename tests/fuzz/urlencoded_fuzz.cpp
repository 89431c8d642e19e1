// application/x-www-form-urlencoded and query strings (shared/form.h): no crash, the field cap
// holds, and encoding then parsing gives back the same fields.
#include "shared/form.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = ss::fuzz::as_text(data, size);
  auto fields = ss::parse_urlencoded(in);
  if (fields) {
    ss::fuzz::require(fields->size() <= ss::kMaxFormFields);
    auto again = ss::parse_urlencoded(ss::encode_urlencoded(*fields));
    ss::fuzz::require(again.has_value());
    // Empty names with empty values are skipped segments on the way back ("=" vs "").
    ss::FormFields kept;
    for (auto& f : *fields) {
      if (!(f.first.empty() && f.second.empty())) kept.push_back(f);
    }
    ss::FormFields again_kept;
    for (auto& f : *again) {
      if (!(f.first.empty() && f.second.empty())) again_kept.push_back(f);
    }
    ss::fuzz::require(kept == again_kept);
  }
  auto query = ss::parse_query(in);
  ss::fuzz::require(query.size() <= ss::kMaxQueryParams);
  return 0;
}
