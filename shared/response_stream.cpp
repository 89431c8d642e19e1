#include "shared/response_stream.h"

#include "shared/json_util.h"

namespace ss {

namespace {
Result<Unit> ignore_value(json&&) { return Unit{}; }
}  // namespace

EffectOf<Unit> response_open(int status,
                             const std::vector<std::pair<std::string, std::string>>& headers) {
  json h = json::object();
  for (const auto& [k, v] : headers) h[k] = v;
  return {json_object({{"kind", "response.open"}, {"status", status}, {"headers", std::move(h)}}),
          ignore_value};
}

EffectOf<Unit> response_write(std::string chunk) {
  return {json_object({{"kind", "response.write"}, {"chunk", std::move(chunk)}}), ignore_value};
}

}  // namespace ss
