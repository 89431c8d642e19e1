// Content-Type parsing (shared/form.h): no crash, bounded parameters, lower-case media types.
#include "shared/form.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto parsed = ss::parse_content_type(ss::fuzz::as_text(data, size));
  if (parsed) {
    ss::fuzz::require(parsed->params.size() <= ss::kMaxContentTypeParams);
    for (char c : parsed->media_type) ss::fuzz::require(!(c >= 'A' && c <= 'Z'));
    ss::fuzz::require(parsed->media_type.find('/') != std::string::npos);
  }
  return 0;
}
