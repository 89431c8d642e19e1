// Subscription input mappers (workers/events/input_mapper.h): input is "mapper-json NUL event-json".
// No crash; a parsed mapper always yields an object.
#include "shared/json_util.h"
#include "tests/fuzz/fuzz_util.h"
#include "workers/events/input_mapper.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto [mapper_text, event_text] = ss::fuzz::split2(ss::fuzz::as_text(data, size));
  auto mapper_json = ss::parse_json(mapper_text);
  if (!mapper_json) return 0;
  auto mapper = ss::events::InputMapper::parse(*mapper_json);
  if (!mapper) return 0;
  auto event = ss::parse_json(event_text);
  ss::json out = mapper->apply(event ? *event : ss::json::object());
  ss::fuzz::require(out.is_object());
  return 0;
}
