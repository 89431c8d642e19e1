// Subscription filter expressions (workers/events/filter_expr.h): input is "filter NUL event-json".
// No crash; parse errors are invalid_request naming filter_expr; a parsed filter's source is the
// input; evaluation never fails on any JSON value.
#include "shared/json_util.h"
#include "tests/fuzz/fuzz_util.h"
#include "workers/events/filter_expr.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto [text, event_text] = ss::fuzz::split2(ss::fuzz::as_text(data, size));
  auto filter = ss::events::FilterExpr::parse(text);
  if (!filter) {
    ss::fuzz::require(filter.error().code == ss::ErrorCode::invalid_request);
    return 0;
  }
  auto event = ss::parse_json(event_text);
  ss::json subject = event ? *event : ss::json::object();
  (void)filter->matches(subject);
  (void)filter->matches(ss::json(nullptr));
  return 0;
}
