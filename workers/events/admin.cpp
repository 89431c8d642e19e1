// Operator surface of the ledger: subscriptions, workflow definitions, JSON Schemas, kill switches,
// drains on demand, replay, quarantine, retention — and the tenant-visible entity timelines.
#include "workers/events/admin.h"

#include "shared/field_error.h"

#include "shared/effects.h"
#include "shared/glob.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/tenant_store.h"
#include "shared/text.h"
#include "shared/ulid.h"
#include "shared/url_guard.h"
#include "workers/events/alerts.h"
#include "workers/events/drain.h"
#include "workers/events/filter_expr.h"
#include "workers/events/input_mapper.h"
#include "workers/events/json_schema.h"
#include "workers/events/ledger.h"

#include <algorithm>

namespace ss::events {

namespace {

inline constexpr std::size_t kMaxAdminBody = 64 * 1024;
inline constexpr std::size_t kMaxNameLength = 64;
inline constexpr int kDefaultRetentionDays = 730;  // two years
inline constexpr std::int64_t kMaxRiskLevel = 5;
inline constexpr int kDefaultReflexionLimit = 100;
// GET /admin/quarantine: a page of 100 rows by default, 500 at most, `next` for the rest.
inline constexpr int kDefaultQuarantinePage = 100;
inline constexpr int kMaxQuarantinePage = 500;
inline constexpr int kMaxReflexionLimit = 500;
inline constexpr int kAlertListLimit = 100;
inline constexpr const char* kFlagsBinding = "FLAGS";

// A parser's error about a field of the body, named in "field" and "fields" (its message the
// problem).
Error named_error(Error e, const std::string& field) {
  std::string problem = e.message;
  return std::move(name_field(e, field, problem));
}

// [a-z][a-z0-9_.-]{0,63}
bool is_workflow_type(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLength || s[0] < 'a' || s[0] > 'z') return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// The switches something reads (docs/runbook-events.md "emergency stop"): kill:fanout,
// kill:<consumer>, kill:high_risk_ops, and kill:notifications (read by the leads worker from
// FLAGS). Any other well-formed name is stored and listed too, but obeyed by nobody: its answer says
// so ("known": false and a warning naming these), so an operator's typo never looks like a stop
// that took effect.
std::vector<std::string> known_switches() {
  std::vector<std::string> names = {"kill:fanout", kHighRiskSwitch, "kill:notifications"};
  for (const auto& consumer : consumer_names()) names.push_back("kill:" + std::string(consumer));
  return names;
}

bool is_known_switch(const std::string& name) {
  for (const std::string& known : known_switches()) {
    if (known == name) return true;
  }
  return false;
}

// "kill:" and a name as workflow types are written (lower case, digits, _ . -; 64 at most).
bool is_switch_name(std::string_view name) {
  static constexpr std::string_view kPrefix = "kill:";
  return name.substr(0, kPrefix.size()) == kPrefix && is_workflow_type(name.substr(kPrefix.size()));
}

bool is_binding_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLength || s[0] < 'A' || s[0] > 'Z') return false;
  for (char c : s) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// Whether `binding` is in a comma-separated list of binding names ("LEADS_SERVICE,CMS_SERVICE,…"):
// the service bindings a workflow may start through.
bool is_workflow_service(std::string_view configured, std::string_view binding) {
  while (!configured.empty()) {
    std::size_t comma = configured.find(',');
    std::string_view item = configured.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == binding) return true;
    if (comma == std::string_view::npos) break;
    configured.remove_prefix(comma + 1);
  }
  return false;
}

// The bindings a workflow may start through, as "A,B": those of the comma-separated `configured`
// list that the worker has (`bound`), less the ledger's own workers' (EVENTS_RUNNER, EVENTS_CONFIG:
// bindings of its config worker, never workflow targets).
std::string usable_workflow_bindings(std::string_view configured, std::string_view bound) {
  std::string out;
  while (!configured.empty()) {
    std::size_t comma = configured.find(',');
    std::string_view item = configured.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty() && item != "EVENTS_RUNNER" && item != "EVENTS_CONFIG" &&
        is_workflow_service(bound, item)) {
      if (!out.empty()) out += ',';
      out += item;
    }
    if (comma == std::string_view::npos) break;
    configured.remove_prefix(comma + 1);
  }
  return out;
}

// The JSON object body of an operator write (the route's operator_only has authenticated it).
Result<json> operator_body(const Request& req) {
  if (Status ok = require_json_body(req, kMaxAdminBody); !ok) return std::move(ok).error();
  if (Status ok = require_identity_coding(req); !ok) return std::move(ok).error();
  return parse_json_object(req.body);
}

// Operator routes authenticate here, before their handler runs: one coroutine for every route
// rather than one more suspend point (and its error path) in each handler.
Task<Result<Response>> authenticate_then(const Handler& handler, Context& ctx, const Request& req,
                                         const Params& params) {
  SS_CO_CHECK(authenticate_operator(ctx, req));
  Result<Response> result = co_await handler(ctx, req, params);
  co_return result;
}

Handler operator_only(Handler handler) {
  return [handler = std::move(handler)](Context& ctx, const Request& req, const Params& params) {
    return authenticate_then(handler, ctx, req, params);
  };
}

std::string param(const Params& params, const char* name) {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

Error no_such(const std::string& what, const std::string& value) {
  return Error{ErrorCode::not_found, "no " + what + " " + value};
}

// {"<name>": list}: one function for every operator list (the template below only collects views).
Response named_list(const char* name, json list) {
  json body = json::object();
  body[name] = std::move(list);
  return Response::json_body(200, body);
}

// Every row of an operator list, through its view, as {"<name>": [...]}.
template <class Row>
Response list_response(const char* name, const std::vector<Row>& rows) {
  json list = json::array();
  for (const Row& row : rows) list.push_back(row.view());
  return named_list(name, std::move(list));
}

// --- subscriptions -------------------------------------------------------------------------------

// The fields a subscription's POST or PATCH may set; a view's own (id, created_at) pass a POST
// unread, so a subscription read back can be sent again as a new one.
constexpr std::string_view kSubscriptionFields[] = {"event_type_glob", "workflow_type",
                                                    "filter_expr", "input_mapper", "enabled"};
constexpr std::string_view kSubscriptionViewFields[] = {"id", "created_at"};

// The fields of a subscription in a POST (`patch` false) or PATCH body, validated in this order and
// set on `row` (400 naming the field). A POST needs event_type_glob and workflow_type, and a null
// filter_expr, input_mapper or enabled there is "not given"; a PATCH changes the fields it names,
// and null clears filter_expr or input_mapper. One function for both routes: the same checks.
Status read_subscription_fields(const json& body, bool patch, SubscriptionRow& row) {
  if (const json* g = find_field(body, "event_type_glob"); g != nullptr || !patch) {
    if (g == nullptr || !g->is_string()) {
      return invalid_field("event_type_glob", patch ? "must be a string" : "is required");
    }
    std::string why;
    if (!is_valid_glob(g->get<std::string>(), &why)) return invalid_field("event_type_glob", why);
    row.event_type_glob = g->get<std::string>();
  }
  if (const json* w = find_field(body, "workflow_type"); w != nullptr || !patch) {
    if (w == nullptr || !w->is_string() || !is_workflow_type(w->get<std::string>())) {
      return invalid_field("workflow_type", "must match [a-z][a-z0-9_.-]{0,63}");
    }
    row.workflow_type = w->get<std::string>();
  }
  if (const json* f = find_field(body, "filter_expr")) {
    if (f->is_null()) {
      row.filter_expr.reset();
    } else {
      if (!f->is_string()) {
        return invalid_field("filter_expr",
                             patch ? "must be a string or null" : "must be a string");
      }
      auto parsed = FilterExpr::parse(f->get<std::string>());
      if (!parsed) return named_error(std::move(parsed).error(), "filter_expr");
      row.filter_expr = f->get<std::string>();
    }
  }
  if (const json* m = find_field(body, "input_mapper")) {
    if (m->is_null()) {
      row.input_mapper.reset();
    } else {
      auto parsed = InputMapper::parse(*m);
      if (!parsed) return named_error(std::move(parsed).error(), "input_mapper");
      row.input_mapper = dump_json(*m);
    }
  }
  if (const json* e = find_field(body, "enabled"); e && (patch || !e->is_null())) {
    if (!e->is_boolean()) return invalid_field("enabled", "must be true or false");
    row.enabled = e->get<bool>();
  }
  return Unit{};
}

Task<Result<Response>> create_subscription(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(json body, operator_body(req));
  // A misspelt setting ("enable": false) is refused, never read as its default (a live
  // subscription).
  SS_CO_CHECK(check_known_keys(body, kSubscriptionFields, "", kSubscriptionViewFields));
  SubscriptionRow row;
  row.enabled = true;
  SS_CO_CHECK(read_subscription_fields(body, /*patch=*/false, row));
  SS_CO_TRY(std::string id, co_await ctx.new_ulid());
  row.subscription_id = id;
  row.created_at = format_rfc3339(ctx.now_ms());
  SS_CO_CHECK(co_await ConfigStore::insert_subscription(row));
  json view{
      {"id", id},
      {"event_type_glob", row.event_type_glob},
      {"workflow_type", row.workflow_type},
      {"filter_expr", row.filter_expr ? json(*row.filter_expr) : json(nullptr)},
      {"input_mapper", find_field(body, "input_mapper") ? body["input_mapper"] : json(nullptr)},
      {"enabled", row.enabled},
      {"created_at", row.created_at}};  // as stored: the clock has moved during the write
  co_return Response::json_body(201, view);
}

Task<Result<Response>> list_subscriptions(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(std::vector<SubscriptionRow> rows, co_await ConfigStore::subscriptions());
  co_return list_response("subscriptions", rows);
}

// A subscription's id from the path: a ULID, which Crockford base32 reads in either case (as the
// ledger reads event ids); stored upper case.
std::string subscription_id(const Params& params) { return canonical_ulid(param(params, "id")); }

Task<Result<Response>> get_subscription(Context& ctx, const Request& req, const Params& params) {
  std::string id = subscription_id(params);
  SS_CO_TRY(std::optional<SubscriptionRow> row, co_await ConfigStore::subscription(id));
  if (!row) co_return no_such("subscription", id);
  co_return Response::json_body(200, row->view());
}

// PATCH /admin/subscriptions/{id}: any of event_type_glob, workflow_type, filter_expr (null
// clears), input_mapper (null clears), enabled — and the view's own id and created_at, which pass
// when they are the record's (the view read back with a change), else 400 "cannot be changed";
// validated like a POST (400 naming the field), an
// unknown id is 404, whatever the body (the path's record first, as replay's consumer). The change
// applies from the next drain on: events already started stay started.
Task<Result<Response>> patch_subscription(Context& ctx, const Request& req, const Params& params) {
  std::string id = subscription_id(params);
  SS_CO_TRY(std::optional<SubscriptionRow> found, co_await ConfigStore::subscription(id));
  if (!found) co_return no_such("subscription", id);
  SS_CO_TRY(json body, operator_body(req));
  SubscriptionRow row = *found;
  // A view read back passes with its own fields as they are (`id` in either case, as in the
  // path); another value there is a change nothing may make.
  const json view = found->view();
  bool names_a_field = false;
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (std::find(std::begin(kSubscriptionFields), std::end(kSubscriptionFields), it.key()) !=
        std::end(kSubscriptionFields)) {
      names_a_field = true;
      continue;
    }
    // The view's other keys are its own fields (id, created_at): as stored, the id in any case.
    const json* stored = find_field(view, it.key());
    const bool unchanged =
        stored != nullptr &&
        (it.key() == "id" ? it->is_string() && canonical_ulid(it->get<std::string>()) == id
                          : *it == *stored);
    if (!unchanged) co_return invalid_field(it.key(), "cannot be changed");
  }
  if (!names_a_field) co_return invalid_field("body", "name at least one field to change");
  SS_CO_CHECK(read_subscription_fields(body, /*patch=*/true, row));
  SS_CO_TRY(bool updated, co_await ConfigStore::update_subscription(row));
  if (!updated) co_return no_such("subscription", id);
  ctx.log("subscription " + id + " changed: " + dump_json(body));
  co_return Response::json_body(200, row.view());
}

Task<Result<Response>> delete_subscription(Context& ctx, const Request& req, const Params& params) {
  std::string id = subscription_id(params);
  SS_CO_TRY(bool deleted, co_await ConfigStore::delete_subscription(id));
  if (!deleted) co_return no_such("subscription", id);
  co_return Response::empty(204);
}

// --- workflow definitions ------------------------------------------------------------------------

Result<json> parse_target(const Context& ctx, const json& body) {
  const json* target = find_field(body, "target");
  if (target == nullptr || !target->is_object()) {
    return invalid_field("target",
                         R"(use {"service":"BINDING","path":"/…"} or {"webhook":"https://…"})");
  }
  auto service = get_string(*target, "service");
  auto webhook = get_string(*target, "webhook");
  if (service.has_value() == webhook.has_value()) {
    return invalid_field("target", "name exactly one of service or webhook");
  }
  // Only the keys of the kind named: a misspelt one ("pth") is refused, not read as its default.
  Status keys = service ? check_known_keys(*target, {"service", "path"}, "target.")
                        : check_known_keys(*target, {"webhook"}, "target.");
  if (!keys) return std::move(keys).error();
  if (service) {
    if (!is_binding_name(*service))
      return invalid_field("target.service", "must be a binding name");
    // WORKFLOW_SERVICES narrows the bindings a workflow may use when set; otherwise every service
    // binding the worker has (the host lists them in SS_SERVICE_BINDINGS) may be named.
    std::string bound = ctx.env("SS_SERVICE_BINDINGS");
    std::string configured = ctx.env("WORKFLOW_SERVICES");
    if (configured.empty()) configured = bound;
    // The ledger's own workers are bindings of this one, never workflow targets: neither accepted
    // nor offered in the refusal's list, which names what a PUT would accept.
    std::string usable = usable_workflow_bindings(configured, bound);
    if (!is_workflow_service(usable, *service)) {
      return invalid_field("target.service", "is not a service binding of this worker (it has: " +
                                                 (usable.empty() ? std::string("none") : usable) +
                                                 ")");
    }
    std::string path = string_or(*target, "path", "/");
    if (path.empty() || path[0] != '/' || path.size() > 512) {
      return invalid_field("target.path", "must start with /");
    }
    return json_object({{"service", *service}, {"path", path}});
  }
  auto url = check_outbound_url(*webhook, ctx.allow_local_outbound());
  if (!url) {
    return invalid_field("target.webhook", webhook_url_problem(url.error()));
  }
  return json_object(
      {{"webhook", url->href}});  // normalised: the host judged here is the host called
}

Task<Result<Response>> put_workflow(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(json body, operator_body(req));
  std::string type = param(params, "workflowType");
  if (!is_workflow_type(type))
    co_return invalid_field("workflow_type", "must match [a-z][a-z0-9_.-]{0,63}");
  // "risklevel" must not leave a risky workflow at 0, out of kill:high_risk_ops' reach. The view's
  // own fields (workflow_type, updated_at) pass, so a definition read back can be sent again.
  static constexpr std::string_view kKnown[] = {"target", "risk_level"};
  static constexpr std::string_view kView[] = {"workflow_type", "updated_at"};
  SS_CO_CHECK(check_known_keys(body, kKnown, "", kView));
  SS_CO_TRY(json target, parse_target(ctx, body));
  std::int64_t risk = 0;
  if (const json* r = find_field(body, "risk_level"); r && !r->is_null()) {
    auto level = get_int(body, "risk_level");
    if (!level || *level < 0 || *level > kMaxRiskLevel) {
      co_return invalid_field("risk_level", "must be an integer from 0 to 5");
    }
    risk = *level;
  }
  // One reading of the clock: the answer shows what was stored (time moves during the write).
  std::string now = format_rfc3339(ctx.now_ms());
  SS_CO_TRY(bool created,
            co_await ConfigStore::upsert_workflow(type, dump_json(target), risk, now));
  co_return Response::json_body(created ? 201 : 200, json_object({{"workflow_type", type},
                                                                  {"target", target},
                                                                  {"risk_level", risk},
                                                                  {"updated_at", now}}));
}

Task<Result<Response>> list_workflows(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(std::vector<WorkflowRow> rows, co_await ConfigStore::workflows());
  co_return list_response("workflows", rows);
}

Task<Result<Response>> get_workflow(Context& ctx, const Request& req, const Params& params) {
  std::string type = param(params, "workflowType");
  SS_CO_TRY(std::optional<WorkflowRow> row, co_await ConfigStore::workflow(type));
  if (!row) co_return no_such("workflow", type);
  co_return Response::json_body(200, row->view());
}

Task<Result<Response>> delete_workflow(Context& ctx, const Request& req, const Params& params) {
  std::string type = param(params, "workflowType");
  SS_CO_TRY(bool deleted, co_await ConfigStore::delete_workflow(type));
  if (!deleted) co_return no_such("workflow", type);
  co_return Response::empty(204);
}

// --- JSON Schemas per event type -----------------------------------------------------------------

Task<Result<Response>> put_schema(Context& ctx, const Request& req, const Params& params) {
  SS_CO_TRY(json body, operator_body(req));
  std::string type = param(params, "eventType");
  if (!is_event_type(type))
    co_return invalid_field("event_type", "must be a dotted lower-case name");
  // {"schema": …} (what GET answers, with its event_type), or the schema itself as the body, the
  // resource's own representation: `PUT /admin/schemas/price.changed {"type":"object",…}`. A body
  // is the schema only when it holds a schema keyword, so a misspelt wrapper is still a 400.
  const json* schema = find_field(body, "schema");
  if (schema != nullptr) {
    // The wrapper holds the schema and nothing else (what GET answers passes, to be sent back).
    static constexpr std::string_view kKnown[] = {"schema"};
    static constexpr std::string_view kView[] = {"event_type", "updated_at"};
    SS_CO_CHECK(check_known_keys(body, kKnown, "", kView));
  }
  if (schema == nullptr && has_schema_keyword(body)) schema = &body;
  if (schema == nullptr) {
    co_return invalid_field("schema", "is required: {\"schema\": {…}}, or the schema as the body");
  }
  auto parsed = JsonSchema::parse_for_registration(*schema);
  if (!parsed) co_return named_error(std::move(parsed).error(), "schema");
  // 201 when this write registered the event type's first schema, 200 when it replaced one (as for
  // workflows and tenants).
  SS_CO_TRY(bool created, co_await ConfigStore::upsert_schema(type, dump_json(*schema),
                                                              format_rfc3339(ctx.now_ms())));
  co_return Response::json_body(created ? 201 : 200,
                                json_object({{"event_type", type}, {"schema", *schema}}));
}

Task<Result<Response>> list_schemas(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(std::vector<SchemaRow> rows, co_await ConfigStore::schemas());
  co_return list_response("schemas", rows);
}

// The one type's entry of the list (schemas are few: one per event type that has one).
Task<Result<Response>> get_schema(Context& ctx, const Request& req, const Params& params) {
  std::string type = param(params, "eventType");
  SS_CO_TRY(std::vector<SchemaRow> rows, co_await ConfigStore::schemas());
  for (const SchemaRow& row : rows) {
    if (row.event_type == type) co_return Response::json_body(200, row.view());
  }
  co_return no_such("schema for", type);
}

Task<Result<Response>> delete_schema(Context& ctx, const Request& req, const Params& params) {
  std::string type = param(params, "eventType");
  SS_CO_TRY(bool deleted, co_await ConfigStore::delete_schema(type));
  if (!deleted) co_return no_such("schema for", type);
  co_return Response::empty(204);
}

// --- kill switches -------------------------------------------------------------------------------

Task<Result<Response>> put_kill_switch(Context& ctx, const Request& req, const Params& params,
                                       Task<Result<json>> (*release)(Context&)) {
  SS_CO_TRY(json body, operator_body(req));
  std::string name = param(params, "name");
  std::string list;
  for (const std::string& known : known_switches()) list += (list.empty() ? "" : ", ") + known;
  if (!is_switch_name(name)) {
    co_return invalid_field("name",
                            "must be kill:<name> (lower case, digits, _ . -); the switches "
                            "something obeys are " +
                                list);
  }
  // A misspelt "enable" must not pass (the fields of a listed switch or of this answer do, so
  // either can be sent back).
  static constexpr std::string_view kKnown[] = {"enabled"};
  static constexpr std::string_view kView[] = {"name",    "updated_at", "known",
                                               "warning", "shared",     "released"};
  SS_CO_CHECK(check_known_keys(body, kKnown, "", kView));
  auto enabled = get_bool(body, "enabled");
  if (!enabled) co_return invalid_field("enabled", "must be true or false");
  std::string now = format_rfc3339(ctx.now_ms());
  SS_CO_CHECK(co_await ConfigStore::put_kill_switch(name, *enabled, now));
  ctx.log("kill switch " + name + (*enabled ? " on" : " off"));
  const bool known = is_known_switch(name);
  json out = KillSwitchRow{name, *enabled, now}.view();
  out["known"] = known;
  if (!known) {
    out["warning"] = name +
                     " is stored, but nothing on this platform obeys it; the switches "
                     "something obeys are " +
                     list;
  }
  // The shared flag store every platform worker reads (KV: eventually consistent, up to ~60 s).
  // The ledger's own switches live in D1 above; a failed KV write is reported, not fatal.
  Kv flags(kFlagsBinding);
  Status shared = Unit{};
  if (*enabled) {
    shared = co_await flags.put(name, now);
  } else {
    shared = co_await flags.remove(name);
  }
  out["shared"] = shared.ok();
  if (!shared) ctx.log("kill switch " + name + " not written to FLAGS: " + shared.error().message);
  if (!*enabled && name == kHighRiskSwitch) {
    // The switch is written whatever the release does: a pass that fails is reported (the */2 cron
    // runs the next one), never the PUT's failure.
    auto released = co_await release(ctx);
    if (released) {
      out["released"] = std::move(released).value();
    } else {
      ctx.log("release of held starts failed: " + released.error().message);
      out["released"] = json_object({{"released", 0}, {"error", released.error().message}});
    }
  }
  co_return Response::json_body(200, out);
}

// A switch nothing obeys (a typo, a name from another platform) is taken away whole: its row and its
// FLAGS key. One something obeys is turned off with PUT {"enabled":false} instead (which also runs
// what turning it off does, e.g. kill:high_risk_ops's release), and stays listed.
Task<Result<Response>> delete_kill_switch(Context& ctx, const Request& req, const Params& params) {
  std::string name = param(params, "name");
  if (!is_switch_name(name)) co_return invalid_field("name", "must be kill:<name>");
  if (is_known_switch(name)) {
    co_return invalid_field(
        "name", "something obeys this switch: turn it off with PUT {\"enabled\":false}");
  }
  SS_CO_TRY(bool deleted, co_await ConfigStore::delete_kill_switch(name));
  if (!deleted) co_return no_such("kill switch", name);
  Status shared = co_await Kv(kFlagsBinding).remove(name);
  if (!shared)
    ctx.log("kill switch " + name + " not removed from FLAGS: " + shared.error().message);
  ctx.log("kill switch " + name + " deleted");
  co_return Response::empty(204);
}

Task<Result<Response>> list_kill_switches(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(std::vector<KillSwitchRow> rows, co_await ConfigStore::kill_switches());
  json list = json::array();
  for (const KillSwitchRow& row : rows) {
    json view = row.view();
    view["known"] = is_known_switch(row.name);
    list.push_back(std::move(view));
  }
  co_return named_list("kill_switches", std::move(list));
}

// --- drains, replay, quarantine, retention -------------------------------------------------------

Task<Result<Response>> drain_now(Context& ctx, const Request& req, const Params&,
                                 LedgerWiring wiring) {
  std::string only = req.query_param("consumer");
  if (!only.empty() && !is_consumer(only)) co_return invalid_field("consumer", "unknown consumer");
  if (wiring.runner_only && only != kWorkflowRunner) {
    co_return invalid_field("consumer", "this worker drains workflow_runner alone");
  }
  // One batch per consumer unless asked for more: an operator's call answers in about one batch's
  // time, and each call's report says what that batch did. `batches=N` drains like a cron run does
  // (up to N batches while they come back full).
  SS_CO_TRY(std::int64_t batches, req.int_param("batches", 1, 1, kMaxDrainBatchesPerRun));
  json consumers = json::object();
  // Every consumer is drained even when one cannot be (the runner down, D1 refusing one of them):
  // the others' work is not held back. Then the first failure is the answer, its message naming the
  // consumer, with every failure in "failed" and the reports of those that drained in "consumers".
  std::optional<Error> first;
  std::string first_name;
  json failed = json::object();
  for (const std::string& name : consumer_names()) {
    if (!only.empty() && name != only) continue;
    Result<json> report = co_await wiring.drain(ctx, name, batches);
    if (!report) {
      Error e = std::move(report).error();
      ctx.log("drain of " + name + " failed: " + e.message);
      failed[name] = e.message;
      if (!first) {
        first = std::move(e);
        first_name = name;
      }
      continue;
    }
    consumers[name] = std::move(*report);
  }
  if (first) {
    first->message = first_name + ": " + first->message;
    co_return std::move(first->with("failed", std::move(failed)).with("consumers", consumers));
  }
  co_return Response::json_body(200, json_object({{"consumers", consumers}}));
}

Task<Result<Response>> replay(Context& ctx, const Request& req, const Params& params) {
  // The path's record first: a consumer no drainer has is 404 whatever the body says.
  std::string name = param(params, "name");
  if (!is_consumer(name)) co_return Error{ErrorCode::not_found, "no consumer " + name};
  SS_CO_TRY(json body, operator_body(req));
  SS_CO_CHECK(check_known_keys(body, {"from_event_id"}, ""));
  auto from = get_string(body, "from_event_id");
  if (from) from = canonical_ulid(*from);
  if (!from || !is_ulid(*from))
    co_return invalid_field("from_event_id", "must be an event_id (ULID)");
  SS_CO_TRY(Cursor cursor, co_await replay_consumer(ctx, name, *from));
  co_return Response::json_body(
      200, json_object({{"consumer", name},
                        {"from_event_id", *from},
                        {"cursor", cursor.event_id.empty() ? json(nullptr) : json(cursor.event_id)},
                        {"cursor_seq", cursor.seq}}));
}

Task<Result<Response>> list_consumers(Context& ctx, const Request& req, const Params&) {
  json health = co_await consumer_health(ctx);
  co_return Response::json_body(200, health);
}

Task<Result<Response>> list_quarantine(Context& ctx, const Request& req, const Params&) {
  std::string consumer = req.query_param("consumer");
  // As on POST /admin/events/drain: a name no consumer has is a mistake, not an empty list.
  if (!consumer.empty() && !is_consumer(consumer)) {
    co_return invalid_field("consumer", "unknown consumer");
  }
  std::string all_param = req.query_param("all");
  if (!all_param.empty() && all_param != "0" && all_param != "1") {
    co_return invalid_field("all", "use 1 (resolved entries too) or 0");
  }
  bool all = all_param == "1";
  SS_CO_TRY(std::int64_t limit,
            req.int_param("limit", kDefaultQuarantinePage, 1, kMaxQuarantinePage));
  // `after`: a page's `next` ("<seq>:<consumer>"), or a bare seq (after every row of that event).
  std::string after = req.query_param("after");
  std::int64_t after_seq = 0;
  std::string after_consumer;
  if (!after.empty()) {
    const std::size_t colon = after.find(':');
    auto seq = parse_decimal(std::string_view(after).substr(0, colon), 0, INT64_MAX);
    if (!seq) co_return invalid_field("after", "use a page's next (<seq>:<consumer>)");
    after_seq = *seq;
    after_consumer =
        colon == std::string::npos ? "~" : after.substr(colon + 1);  // '~': past any name
  }
  SS_CO_TRY(std::vector<QuarantineRow> rows,
            co_await Quarantine::list(consumer, all, after_seq, after_consumer, limit + 1));
  json next = nullptr;
  if (rows.size() > static_cast<std::size_t>(limit)) {
    rows.resize(static_cast<std::size_t>(limit));
    next = std::to_string(rows.back().seq) + ":" + rows.back().consumer;
  }
  json list = json::array();
  for (const QuarantineRow& row : rows) list.push_back(row.view());
  co_return Response::json_body(200,
                                json_object({{"quarantined", std::move(list)}, {"next", next}}));
}

Task<Result<Response>> retry_quarantine(Context& ctx, const Request& req, const Params& params) {
  std::string consumer = param(params, "consumer");
  // The event's id, or the operator's `id.seq` (the list's `seq`): the row of one event when two
  // tenants' events share the id.
  std::string event_id;
  std::optional<std::int64_t> seq;
  const bool well_formed = parse_after(param(params, "eventId"), event_id, seq);
  if (!is_consumer(consumer)) co_return Error{ErrorCode::not_found, "no consumer " + consumer};
  if (!well_formed || !is_ulid(event_id)) {
    co_return Error{ErrorCode::not_found, "no quarantined event " + param(params, "eventId")};
  }
  SS_CO_TRY(json result, co_await retry_quarantined(ctx, consumer, event_id, seq));
  co_return Response::json_body(200, result);
}

int retention_days(const Context& ctx) {
  return static_cast<int>(ctx.env_int("EVENTS_RETENTION_DAYS", kDefaultRetentionDays, 1, 99999));
}

Task<Result<Response>> retention_now(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(json result, co_await apply_retention(ctx, retention_days(ctx)));
  co_return Response::json_body(200, result);
}

// --- health --------------------------------------------------------------------------------------

// GET /health: 200 {"ok":true,"service","version"} for anyone, exactly what every worker answers
// (the platform contract), from memory: no D1 query, so a /health load costs about what a
// hello-world worker's does. With the operator token it adds the consumers' status, cursors, lag,
// cap and quarantine counts (one D1 query, never cached).
//
// /health stays 200 while a consumer is stalled (it says the worker is up). Monitors that must page
// on a stall probe GET /health/consumers instead: one query on every hit (never cached), 200
// {"ok":true,"service","status"} (status ok | degraded) or, while a consumer is stalled (its oldest
// unread event recorded over an hour ago, and no kill switch stops it on purpose), 503
// {"ok":false,"status":"stalled","reason","error":{"code":"consumer_stalled","message"}}.
Task<Result<Response>> health(Context& ctx, const Request& req, const Params&) {
  json body =
      json_object({{"ok", true}, {"service", ctx.app().service}, {"version", ctx.app().version}});
  // (No co_await inside the condition: g++-12 fails on one in a short-circuit expression.)
  bool operator_view = false;
  if (!bearer_token(req).empty()) {
    Status op = authenticate_operator(ctx, req);
    operator_view = op.ok();
  }
  if (operator_view) {
    json details = co_await consumer_health(ctx);
    for (auto it = details.begin(); it != details.end(); ++it) body[it.key()] = it.value();
  }
  co_return Response::json_body(200, body);
}

Task<Result<Response>> consumers_probe(Context& ctx, const Request&, const Params&) {
  json details = co_await consumer_health(ctx);
  bool stalled = details["status"] == "stalled";
  json body = json_object(
      {{"ok", !stalled}, {"service", ctx.app().service}, {"status", details["status"]}});
  if (stalled) {
    body["reason"] = details["reason"];
    body["error"] = {{"code", "consumer_stalled"}, {"message", details["reason"]}};
  }
  co_return Response::json_body(stalled ? 503 : 200, body);
}

// --- consumers' products: tenant health, reflexion log, alerts -----------------------------------

// GET /admin/tenants/{id}/health (operator token: it reads one tenant's standing across the
// platform's signals). A tenant this worker does not know is 404; a known tenant without events yet
// is a healthy 100.
Task<Result<Response>> tenant_health(Context& ctx, const Request& req, const Params& params) {
  std::string id = param(params, "id");
  if (!is_valid_tenant_id(id)) co_return no_such("tenant", id);
  TenantStore tenants(kDb);
  auto tenant_lookup = tenants.find(id);
  auto health_lookup = HealthStore::find(id);
  auto [tenant, row] = co_await when_all(std::move(tenant_lookup), std::move(health_lookup));
  if (!tenant) co_return std::move(tenant).error();
  if (!row) co_return std::move(row).error();
  if (!*tenant) co_return no_such("tenant", id);
  co_return Response::json_body(200, health_view(id, *row));
}

// GET /admin/reflexion[?subject=<workflow or event type>&limit=] → {"patterns":[…]}, most failures
// first.
Task<Result<Response>> list_reflexion(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(std::int64_t limit,
            req.int_param("limit", kDefaultReflexionLimit, 1, kMaxReflexionLimit));
  std::string subject = req.query_param("subject");
  if (subject.size() > kMaxNameLength * 2) co_return invalid_field("subject", "is too long");
  SS_CO_TRY(std::vector<ReflexionRow> rows,
            co_await ReflexionStore::list(subject, static_cast<int>(limit)));
  co_return list_response("patterns", rows);
}

// GET /admin/alerts → {"alerts":[…]} (the outbox, newest first, with what was sent where).
Task<Result<Response>> list_alerts(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(std::vector<AlertRow> rows, co_await AlertStore::recent(kAlertListLimit));
  co_return list_response("alerts", rows);
}

}  // namespace

// Under a lock so two cron invocations that fire together never send an alert twice.
Task<Result<json>> alert_pass(Context& ctx) {
  json health = co_await consumer_health(ctx);
  SS_CO_CHECK(co_await raise_stall_alerts(ctx, health));
  SS_CO_TRY(std::string holder, co_await ctx.new_ulid());
  SS_CO_TRY(bool acquired, co_await DrainState::claim("alerts", holder, ctx.now_ms(), kLockTtlMs));
  if (!acquired) co_return json_object({{"locked", true}});
  auto delivered = co_await deliver_alerts(ctx);
  Status released = co_await DrainState::release("alerts", holder);
  if (!released) ctx.log("alerts lock release failed (it expires by itself)");
  co_return delivered;
}

namespace {

// POST /admin/alerts/deliver: the alert pass of a cron run, now.
Task<Result<Response>> deliver_now(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(json result, co_await alert_pass(ctx));
  co_return Response::json_body(200, result);
}

// --- tenant timelines ----------------------------------------------------------------------------

Task<Result<Response>> entity_timeline(Context& ctx, const Request& req, const Params& params) {
  std::optional<std::string> tenant;
  bool operator_view = false;
  if (!bearer_token(req).empty()) {
    Status op = authenticate_operator(ctx, req);
    operator_view = op.ok();
  }
  if (!operator_view) {
    SS_CO_TRY(Tenant t, co_await authenticate_tenant(ctx, req));
    tenant = t.id;
  } else if (std::string named = req.query_param("tenant"); !named.empty()) {
    // The operator reads one tenant's timeline (summary and events) with ?tenant=, as on
    // /api/events; without it, the platform's own (tenant-less) summary and every tenant's events.
    if (!is_valid_tenant_id(named)) co_return invalid_field("tenant", "not a tenant id");
    tenant = named;
  }
  // The materialized list up to timeline_indexer's cursor, then the events after it read live:
  // a page is never staler than the ledger (docs/runbook-events.md, "Entity timelines").
  TimelineFilter f;
  f.tenant_id = tenant;
  f.entity_type = param(params, "entityType");
  f.entity_id = param(params, "entityId");
  // What an entity_ref can name (as on POST and GET /api/events?entity=): anything else could
  // never match, and is refused rather than answered with an empty timeline.
  bool type_ok = !f.entity_type.empty();
  for (char c : f.entity_type)
    type_ok = type_ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  if (!type_ok)
    co_return invalid_field("entityType", "must be lower case [a-z0-9_], as in entity_ref");
  if (f.entity_type.size() + 2 > kMaxRefLength)  // room for ':' and a one-character id
    co_return invalid_field("entityType", "is too long for an entity_ref (200 bytes)");
  if (f.entity_type.size() + 1 + f.entity_id.size() > kMaxRefLength)
    co_return invalid_field("entityId", "is too long for an entity_ref (200 bytes)");
  if (std::any_of(f.entity_id.begin(), f.entity_id.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
    co_return invalid_field("entityId", "must be an entity_ref id (no control characters)");
  if (!parse_after(req.query_param("after"), f.after, f.after_seq)) {
    co_return timeline_after_error(kTimelineAfterMalformed);
  }
  // A tenant's pages carry no seq (the ledger-wide insertion order: its gaps would count the other
  // tenants' events) and its `next` is the bare id, so a seq in its cursor is none of its own;
  // taken as a position it would let a tenant probe where its events sit among everyone's. Refused
  // with the one answer every unknown cursor gets.
  if (!operator_view && f.after_seq) co_return timeline_after_error(kTimelineAfterUnknown);
  f.with_seq = operator_view;
  std::string order = req.query_param("order");
  if (!order.empty() && order != "asc" && order != "desc") {
    co_return invalid_field("order", "use asc or desc");
  }
  f.newest_first = order == "desc";
  // payload=false: the list a UI shows (title, type, times, provenance) without reading payloads.
  std::string payload = req.query_param("payload");
  if (!payload.empty() && payload != "true" && payload != "false") {
    co_return invalid_field("payload", "use true or false");
  }
  f.with_payload = payload != "false";
  // Pages of kMaxReadLimit unless asked for fewer: what this endpoint has always answered.
  SS_CO_TRY(std::int64_t limit, req.int_param("limit", kMaxReadLimit, 1, kMaxReadLimit));
  f.limit = static_cast<int>(limit);
  auto [timeline, page] = co_await when_all(
      AggregateStore::timeline(tenant.value_or(""), f.entity_type, f.entity_id), read_timeline(f));
  if (!timeline) co_return std::move(timeline).error();
  if (!page) co_return std::move(page).error();
  json summary = *timeline ? (*timeline)->view() : json(nullptr);
  json out = std::move(page).value();
  out["entity_ref"] = f.entity_type + ":" + f.entity_id;
  out["summary"] = summary;
  out["order"] = f.newest_first ? "desc" : "asc";
  co_return Response::json_body(200, out);
}

}  // namespace

void add_health_route(App& app) {
  app.router.add("GET", "/health", health).add("GET", "/health/consumers", consumers_probe);
}

// The config routes, once: X(method, pattern, handler) per route.
#define SS_EVENTS_CONFIG_ROUTES(X)                                \
  X("POST", "/admin/subscriptions", create_subscription)          \
  X("GET", "/admin/subscriptions", list_subscriptions)            \
  X("GET", "/admin/subscriptions/{id}", get_subscription)         \
  X("PATCH", "/admin/subscriptions/{id}", patch_subscription)     \
  X("DELETE", "/admin/subscriptions/{id}", delete_subscription)   \
  X("GET", "/admin/workflows", list_workflows)                    \
  X("PUT", "/admin/workflows/{workflowType}", put_workflow)       \
  X("GET", "/admin/workflows/{workflowType}", get_workflow)       \
  X("DELETE", "/admin/workflows/{workflowType}", delete_workflow) \
  X("GET", "/admin/schemas", list_schemas)                        \
  X("GET", "/admin/schemas/{eventType}", get_schema)              \
  X("PUT", "/admin/schemas/{eventType}", put_schema)              \
  X("DELETE", "/admin/schemas/{eventType}", delete_schema)        \
  X("GET", "/admin/kill-switches", list_kill_switches)            \
  X("PUT", "/admin/kill-switches/{name}", put_kill_switch_here)   \
  X("DELETE", "/admin/kill-switches/{name}", delete_kill_switch)  \
  X("GET", "/admin/consumers", list_consumers)                    \
  X("GET", "/admin/quarantine", list_quarantine)                  \
  X("GET", "/admin/tenants/{id}/health", tenant_health)           \
  X("GET", "/admin/reflexion", list_reflexion)                    \
  X("GET", "/admin/alerts", list_alerts)

void add_admin_config_routes(App& app, const LedgerWiring& wiring) {
  auto release = wiring.release;
  Handler put_kill_switch_here = [release](Context& ctx, const Request& req, const Params& params) {
    return put_kill_switch(ctx, req, params, release);
  };
#define SS_X(method, pattern, handler) app.router.add(method, pattern, operator_only(handler));
  SS_EVENTS_CONFIG_ROUTES(SS_X)
#undef SS_X
}

void forward_admin_config_routes(App& app, const Handler& forward) {
#define SS_X(method, pattern, handler) app.router.add(method, pattern, forward);
  SS_EVENTS_CONFIG_ROUTES(SS_X)
#undef SS_X
}

#undef SS_EVENTS_CONFIG_ROUTES

void add_drain_route(App& app, const LedgerWiring& wiring) {
  app.router.add("POST", "/admin/events/drain",
                 operator_only([wiring](Context& ctx, const Request& req, const Params& params) {
                   return drain_now(ctx, req, params, wiring);
                 }));
}

void add_replay_route(App& app) {
  app.router.add("POST", "/admin/consumers/{name}/replay", operator_only(replay));
}

namespace {

Task<Result<Response>> retention_run_now(Context& ctx, const Request&, const Params&) {
  SS_CO_TRY(json result, co_await retention_here(ctx));
  co_return Response::json_body(200, result);
}

}  // namespace

void add_upkeep_routes(App& app) {
  app.router.add("POST", kRetentionPath, operator_only(retention_now))
      .add("POST", kAlertsDeliverPath, operator_only(deliver_now))
      .add("POST", "/admin/events/retention-run", operator_only(retention_run_now));
}

void add_quarantine_retry_route(App& app) {
  app.router.add("POST", kQuarantineRetryPath, operator_only(retry_quarantine));
}

namespace {

// ?batches=N: the entry's DRAIN_BATCHES_PER_RUN (its crons are configured in one place).
Task<Result<Response>> runner_cron_now(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(std::int64_t batches,
            req.int_param("batches", drain_batches_per_run(ctx), 1, kMaxDrainBatchesPerRun));
  SS_CO_TRY(json report, co_await runner_cron_here(ctx, batches));
  co_return Response::json_body(200, report);
}

Task<Result<Response>> release_now(Context& ctx, const Request&, const Params&) {
  SS_CO_TRY(json released, co_await release_here(ctx));
  co_return Response::json_body(200, released);
}

}  // namespace

void add_runner_routes(App& app) {
  app.router.add("POST", "/admin/events/runner-cron", operator_only(runner_cron_now))
      .add("POST", "/admin/events/release", operator_only(release_now));
}

Task<Result<json>> drain_report(Context& ctx, const std::string& consumer, std::int64_t batches,
                                BatchStep step) {
  SS_CO_TRY(DrainReport report, co_await drain_consumer_with(ctx, consumer, batches, step));
  co_return report.to_json();
}

Task<Result<json>> drain_here(Context& ctx, const std::string& consumer, std::int64_t batches) {
  return drain_report(ctx, consumer, batches, &run_any_batch);
}

Task<Result<json>> runner_cron_here(Context& ctx) {
  return runner_cron_here(ctx, drain_batches_per_run(ctx));
}

Task<Result<json>> runner_cron_here(Context& ctx, std::int64_t batches) {
  // What the release pass spent of workflow_runner's budgets (DRAIN_SUBREQUEST_BUDGET,
  // DRAIN_WORK_BUDGET): they are the invocation's, so the drain below goes on from there.
  InvocationSpend spent;
  // Starts held by kill:high_risk_ops go out once the switch is off (PUT releases the first
  // kMaxReleasePerCall at once; the rest follow here, while it and the stops stay off).
  auto released = co_await release_held(ctx, &spent);
  if (!released) ctx.log("release of held starts failed: " + released.error().message);
  // Quarantined events whose failed starts may pass are tried again once their time is due.
  auto retried = co_await retry_due(ctx, &spent);
  if (!retried) ctx.log("retry of quarantined starts failed: " + retried.error().message);
  SS_CO_TRY(DrainReport report,
            co_await drain_consumer_with(ctx, kWorkflowRunner, batches, &run_runner_batch, spent));
  co_return report.to_json();
}

Task<Result<json>> release_here(Context& ctx) { return release_held(ctx); }

Task<Result<json>> retention_here(Context& ctx) {
  // Batch after batch until the backlog is gone or the run's share is spent: one batch an hour
  // (12,000 events a day) could never keep up with a busy ledger (docs/runbook-events.md).
  const int days = retention_days(ctx);
  const auto batches = ctx.env_int("RETENTION_BATCHES_PER_RUN", kDefaultRetentionBatchesPerRun, 1,
                                   kMaxRetentionBatchesPerRun);
  std::int64_t redacted = 0;
  std::int64_t done = 0;
  while (done < batches) {
    SS_CO_TRY(json r, co_await apply_retention(ctx, days));
    const std::int64_t n = int_or(r, "redacted", 0);
    redacted += n;
    ++done;
    if (n < kRetentionBatch) break;  // caught up
  }
  co_return json_object({{"redacted", redacted}, {"batches", done}});
}

LedgerWiring whole_ledger() {
  LedgerWiring wiring;
  wiring.drain = &drain_here;
  wiring.runner_cron = &runner_cron_here;
  wiring.release = &release_here;
  wiring.retention = &retention_here;
  wiring.alerts = &alert_pass;
  return wiring;
}

void add_admin_routes(App& app) {
  const LedgerWiring wiring = whole_ledger();
  add_admin_config_routes(app, wiring);
  add_drain_route(app, wiring);
  add_replay_route(app);
  add_upkeep_routes(app);
  add_quarantine_retry_route(app);
}

void add_timeline_route(App& app) {
  app.router.add("GET", "/api/entities/{entityType}/{entityId}/timeline", entity_timeline);
}

Task<Status> run_cron(Context& ctx, const std::string& cron, LedgerWiring wiring) {
  std::vector<std::string> consumers;
  bool retention = false;
  if (cron == "*/15 * * * *") consumers = {kAnomalyDetector};
  if (cron == "*/30 * * * *") consumers = {kReflexionAnalyzer};
  if (cron == "*/5 * * * *") consumers = {kCustomerHealthWatcher};
  if (cron == "0 * * * *") {
    consumers = {kTimelineIndexer};
    retention = true;
  }
  Status result = Unit{};
  if (cron == "*/2 * * * *") {
    // workflow_runner: held starts released, then its drain, here or in the runner worker.
    auto report = co_await wiring.runner_cron(ctx);
    if (!report) {
      ctx.log("drain " + std::string(kWorkflowRunner) + " failed: " + report.error().message);
      result = report.error();
    } else {
      ctx.log("drain " + std::string(kWorkflowRunner) + ": " + dump_json(*report));
    }
  } else if (consumers.empty()) {
    ctx.log("events cron: no consumer for '" + cron + "'");
  }
  // Each consumer drains batch after batch until it has caught up or the run's bound is reached:
  // one batch per tick could never keep up with a busy ledger (docs/runbook-events.md).
  const std::int64_t batches = drain_batches_per_run(ctx);
  for (const std::string& name : consumers) {
    auto report = co_await wiring.drain(ctx, name, batches);
    if (!report) {
      ctx.log("drain " + name + " failed: " + report.error().message);
      result = report.error();
    } else {
      ctx.log("drain " + name + ": " + dump_json(*report));
    }
  }
  if (retention) {
    auto redacted = co_await wiring.retention(ctx);
    if (!redacted) {
      ctx.log("retention failed: " + redacted.error().message);
      result = redacted.error();
    }
  }
  // Every cron run ends with the alert pass: stalls are noticed within one run, and an alert
  // raised by a drain is sent within minutes. A pass that failed fails the run (its outcome shows
  // it, where a log line alone would hide an alerting that is down).
  auto alerts = co_await wiring.alerts(ctx);
  if (!alerts) {
    ctx.log("alert pass failed: " + alerts.error().message);
    result = alerts.error();
  }
  co_return result;
}

}  // namespace ss::events
