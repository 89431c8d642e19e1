// Event payload schemas (workers/events/json_schema.h): input is "schema-json NUL instance-json".
// No crash; violations are capped; a valid instance validates the same way twice.
#include "shared/json_util.h"
#include "tests/fuzz/fuzz_util.h"
#include "workers/events/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto [schema_text, instance_text] = ss::fuzz::split2(ss::fuzz::as_text(data, size));
  auto schema_json = ss::parse_json(schema_text);
  if (!schema_json) return 0;
  auto schema = ss::events::JsonSchema::parse(*schema_json);
  if (!schema) return 0;
  auto instance = ss::parse_json(instance_text);
  if (!instance) return 0;
  auto violations = schema->validate(*instance);
  ss::fuzz::require(violations.size() <= ss::events::kMaxSchemaViolations);
  ss::fuzz::require(schema->validate(*instance).size() == violations.size());
  return 0;
}
