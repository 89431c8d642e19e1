#include "shared/response_stream.h"

namespace ss {

namespace {
Result<Unit> ignore_value(json&&) { return Unit{}; }
}  // namespace

EffectOf<Unit> response_open(int status,
                             const std::vector<std::pair<std::string, std::string>>& headers) {
  json h = json::object();
  for (const auto& [k, v] : headers) h[k] = v;
  return {json{{"kind", "response.open"}, {"status", status}, {"headers", std::move(h)}},
          ignore_value};
}

EffectOf<Unit> response_write(std::string chunk) {
  return {json{{"kind", "response.write"}, {"chunk", std::move(chunk)}}, ignore_value};
}

}  // namespace ss
