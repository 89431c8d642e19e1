#include "workers/events/test_programs.h"

#include "shared/glob.h"
#include "shared/json_util.h"
#include "workers/events/filter_expr.h"
#include "workers/events/input_mapper.h"
#include "workers/events/json_schema.h"

namespace ss::events {

namespace {

Result<std::int64_t> repeats(const json& body, const char* field) {
  const json* v = find_field(body, field);
  if (v == nullptr) return std::int64_t{1};
  if (!v->is_number_integer() || v->get<std::int64_t>() < 1 ||
      v->get<std::int64_t>() > kMaxProgramRepeats) {
    return Error{ErrorCode::invalid_request, std::string(field) +
                                                 ": must be an integer from 1 to " +
                                                 std::to_string(kMaxProgramRepeats)};
  }
  return v->get<std::int64_t>();
}

Task<Result<Response>> test_programs(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(json body, parse_json_object(req.body));
  SS_CO_TRY(std::int64_t compile, repeats(body, "compile"));
  SS_CO_TRY(std::int64_t run, repeats(body, "run"));
  const json* found = find_field(body, "event");
  const json event = found != nullptr ? *found : json::object();
  const json* payload = find_field(event, "payload");
  const std::string type = string_or(event, "event_type", "");
  json out = json::object();

  if (std::optional<std::string> glob = get_string(body, "glob")) {
    std::string why;
    for (std::int64_t i = 0; i < compile; ++i) {
      if (!is_valid_glob(*glob, &why)) co_return Error{ErrorCode::invalid_request, why};
    }
    bool matched = false;
    for (std::int64_t i = 0; i < run; ++i) matched = glob_match(*glob, type);
    out["glob"] = matched;
  }
  if (std::optional<std::string> text = get_string(body, "filter")) {
    std::optional<FilterExpr> filter;
    for (std::int64_t i = 0; i < compile; ++i) {
      auto parsed = FilterExpr::parse(*text);
      if (!parsed) co_return std::move(parsed).error();
      filter = std::move(parsed).value();
    }
    bool matched = false;
    WorkMeter meter;  // the last evaluation's work units, as the drain counts them
    for (std::int64_t i = 0; i < run; ++i) {
      meter = WorkMeter{};
      matched = filter->matches(event, meter);
    }
    out["filter"] = matched;
    out["filter_work"] = meter.used;
  }
  if (const json* spec = find_field(body, "mapper")) {
    std::optional<InputMapper> mapper;
    for (std::int64_t i = 0; i < compile; ++i) {
      auto parsed = InputMapper::parse(*spec);
      if (!parsed) co_return std::move(parsed).error();
      mapper = std::move(parsed).value();
    }
    std::size_t bytes = 0;
    // The ledger sends the mapped input on as JSON text: serialising it is part of the cost.
    for (std::int64_t i = 0; i < run; ++i) bytes = dump_json(mapper->apply(event)).size();
    out["mapper_bytes"] = bytes;
    out["mapper_work"] = mapper->cost(event);
  }
  if (const json* spec = find_field(body, "schema")) {
    std::optional<JsonSchema> schema;
    for (std::int64_t i = 0; i < compile; ++i) {
      auto parsed = JsonSchema::parse(*spec);
      if (!parsed) co_return std::move(parsed).error();
      schema = std::move(parsed).value();
    }
    std::size_t violations = 0;
    const json instance = payload != nullptr ? *payload : json::object();
    for (std::int64_t i = 0; i < run; ++i) violations = schema->validate(instance).size();
    out["violations"] = violations;
  }
  co_return Response::json_body(200, out);
}

}  // namespace

void add_test_program_routes(App& app) {
  app.router.add("POST", "/__test/programs", test_programs);
}

}  // namespace ss::events
