// multipart/form-data (shared/form.h): the first line of the input is the boundary, the rest the
// body. No crash; the field cap holds; a refusal always says why.
#include "shared/form.h"
#include "tests/fuzz/fuzz_util.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = ss::fuzz::as_text(data, size);
  auto nl = in.find('\n');
  std::string_view boundary = nl == std::string_view::npos ? in : in.substr(0, nl);
  std::string_view body = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  if (boundary.size() > ss::kMaxBoundaryLength) boundary = boundary.substr(0, ss::kMaxBoundaryLength);
  std::string why;
  auto fields = ss::parse_multipart(body, boundary, &why);
  if (fields) {
    ss::fuzz::require(fields->size() <= ss::kMaxFormFields);
  } else {
    ss::fuzz::require(!why.empty());
  }
  return 0;
}
