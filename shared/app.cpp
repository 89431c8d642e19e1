#include "shared/app.h"

#include "shared/effects.h"
#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/tenant.h"
#include "shared/tenant_cache.h"
#include "shared/tenant_store.h"

#include <algorithm>

namespace ss {

namespace {

inline constexpr std::size_t kMaxTenantBody = 64 * 1024;
// Any non-empty secret is taken (the contract sets no minimum; scripts/provision and scripts/dev
// generate 32 random bytes); only its SHA-256 digest is stored.
inline constexpr std::size_t kMinSecretLength = 1;
inline constexpr std::size_t kMaxSecretLength = 512;

Task<Result<Response>> health(Context& ctx, const Request&, const Params&) {
  json body =
      json_object({{"ok", true}, {"service", ctx.app().service}, {"version", ctx.app().version}});
  if (ctx.app().health_details) {
    json details = co_await ctx.app().health_details(ctx);
    if (details.is_object()) {
      for (auto it = details.begin(); it != details.end(); ++it) {
        if (!body.contains(it.key())) body[it.key()] = it.value();
      }
    }
  }
  co_return Response::json_body(200, body);
}

Task<Result<Response>> whoami(Context& ctx, const Request& req, const Params&) {
  SS_CO_TRY(Tenant tenant, co_await authenticate_tenant(ctx, req));
  co_return Response::json_body(
      200,
      json_object({{"tenantId", tenant.id}, {"capabilityVersion", tenant.capability_version}}));
}

json tenant_view(const App& app, const TenantRow& row) {
  json config = row.config;
  if (app.redact_tenant_config) config = app.redact_tenant_config(std::move(config));
  return json_object({{"tenantId", row.tenant_id},
                      {"enabled", row.enabled},
                      {"config", config},
                      {"createdAt", row.created_at},
                      {"updatedAt", row.updated_at}});
}

Result<std::string> tenant_id_param(const Params& params) {
  auto it = params.find("tenantId");
  if (it == params.end() || !is_valid_tenant_id(it->second)) {
    Error e{ErrorCode::invalid_request, "tenant id must match [a-z0-9][a-z0-9-]{0,62}"};
    return std::move(name_field(e, "tenantId", "must match [a-z0-9][a-z0-9-]{0,62}"));
  }
  return it->second;
}

// Reads an optional secret field: absent is fine (keep the stored one), present must be a string of
// sensible length.
Result<std::optional<std::string>> secret_field(const json& body, const char* name) {
  const json* v = find_field(body, name);
  if (v == nullptr) return std::optional<std::string>{};
  // Visible ASCII only: a secret is presented in a header, which cannot carry a NUL or a control
  // character and trims spaces, so one with those (or "   ") could never be presented again.
  const std::string* s = v->get_ptr<const std::string*>();
  if (s == nullptr || s->size() < kMinSecretLength || s->size() > kMaxSecretLength ||
      !std::all_of(s->begin(), s->end(), [](char c) { return c > ' ' && c < '\x7f'; })) {
    static_assert(kMinSecretLength == 1 && kMaxSecretLength == 512, "the message names them");
    Error e{ErrorCode::invalid_request,
            std::string(name) + " must be 1–512 visible ASCII characters"};
    return std::move(name_field(e, name, "must be 1–512 visible ASCII characters"));
  }
  return std::optional<std::string>{v->get<std::string>()};
}

Task<Result<Response>> put_tenant(Context& ctx, const Request& req, const Params& params) {
  SS_CO_CHECK(authenticate_operator(ctx, req));
  SS_CO_TRY(std::string id, tenant_id_param(params));
  SS_CO_CHECK(require_json_body(req, kMaxTenantBody));
  SS_CO_TRY(json body, parse_json_object(req.body));
  // A misspelt key ("tokne") would otherwise be an update that keeps the old secret; the GET
  // view's other keys (enabled, tenantId, times) are not settable here either. Written out rather
  // than check_known_keys, which every worker but the floor links: it costs the floor 0.3 KiB gz.
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& key = it.key();
    if (key != "token" && key != "adminToken" && key != "config") {
      co_return invalid_field(key, "is not a known field (token, adminToken, config)");
    }
  }
  SS_CO_TRY(std::optional<std::string> token, secret_field(body, "token"));
  SS_CO_TRY(std::optional<std::string> admin_token, secret_field(body, "adminToken"));
  // Left out, an update keeps the stored config (as it keeps a secret left out: rotating a token
  // must not reset the tenant's channels or drop its manifest monitors); a new tenant gets {}.
  const json* sent = find_field(body, "config");
  if (sent != nullptr && !sent->is_object()) {
    Error e{ErrorCode::invalid_request, "config must be an object"};
    co_return std::move(name_field(e, "config", "must be an object"));
  }
  const json config = sent != nullptr ? *sent : json::object();
  if (ctx.app().validate_tenant_config) SS_CO_CHECK(ctx.app().validate_tenant_config(ctx, config));

  // Hash whichever secrets were sent, concurrently; a digest left out keeps the stored one.
  std::optional<std::string> token_hash;
  std::optional<std::string> admin_hash;
  if (token && admin_token) {
    auto [t, a] = co_await when_all(sha256_hex(*token), sha256_hex(*admin_token));
    if (!t) co_return std::move(t).error();
    if (!a) co_return std::move(a).error();
    token_hash = std::move(*t);
    admin_hash = std::move(*a);
  } else if (token || admin_token) {
    SS_CO_TRY(std::string digest, co_await sha256_hex(token ? *token : *admin_token));
    (token ? token_hash : admin_hash) = std::move(digest);
  }

  // The site's token travels with every delegated call and lives in the client app: as the admin
  // token too it would read the tenant's leads. One sent alone is compared with the stored other.
  TenantStore store(ctx.app().db_binding);
  bool same = token_hash && admin_hash && *token_hash == *admin_hash;
  if (token_hash.has_value() != admin_hash.has_value()) {
    SS_CO_TRY(std::optional<TenantRow> stored, co_await store.find(id));
    same = stored && (token_hash ? *token_hash == stored->admin_token_hash
                                 : *admin_hash == stored->token_hash);
  }
  if (same) {
    Error e{ErrorCode::invalid_request, "adminToken must differ from token"};
    co_return std::move(name_field(e, "adminToken", "must differ from token"));
  }

  // Created or updated is what the writes themselves say, never a read before them: an INSERT that
  // changes nothing when the id exists (so of concurrent creations exactly one is 201), else the
  // UPDATE, which keeps a digest left out.
  std::string now = format_rfc3339(ctx.now_ms());
  bool created = false;
  if (token_hash && admin_hash) {
    SS_CO_TRY(created, co_await store.write(true, id, token_hash, admin_hash, &config, now));
  }
  if (!created) {
    SS_CO_TRY(bool updated, co_await store.write(false, id, token_hash, admin_hash, sent, now));
    if (!updated) {
      Error e{ErrorCode::invalid_request, "a new tenant needs token and adminToken"};
      name_field(e, !token ? "token" : "adminToken", "a new tenant needs it");
      if (!token && !admin_token) e.extra["fields"]["adminToken"] = "a new tenant needs it";
      co_return e;
    }
  }
  tenant_cache(ctx).forget(id);  // a new token or config takes effect in this instance at once
  SS_CO_TRY(std::optional<TenantRow> saved, co_await store.find(id));
  if (!saved) co_return Error{ErrorCode::internal, "put_tenant(): the row vanished"};
  // On every PUT, with the config as stored (the one sent, or the one kept): a worker's hook also
  // drops what it derived from the old row (cms: the KV document holding the old token's hash).
  if (ctx.app().apply_tenant_config) {
    SS_CO_CHECK(co_await ctx.app().apply_tenant_config(ctx, id, saved->config));
  }
  ctx.log("tenant " + id + (created ? " created" : " updated"));
  co_return Response::json_body(created ? 201 : 200, tenant_view(ctx.app(), *saved));
}

Task<Result<Response>> get_tenant(Context& ctx, const Request& req, const Params& params) {
  SS_CO_CHECK(authenticate_operator(ctx, req));
  SS_CO_TRY(std::string id, tenant_id_param(params));
  SS_CO_TRY(std::optional<TenantRow> row, co_await TenantStore(ctx.app().db_binding).find(id));
  if (!row) co_return Error{ErrorCode::not_found, "no tenant " + id};
  co_return Response::json_body(200, tenant_view(ctx.app(), *row));
}

Task<Result<Response>> delete_tenant(Context& ctx, const Request& req, const Params& params) {
  SS_CO_CHECK(authenticate_operator(ctx, req));
  SS_CO_TRY(std::string id, tenant_id_param(params));
  SS_CO_TRY(bool disabled,
            co_await TenantStore(ctx.app().db_binding).disable(id, format_rfc3339(ctx.now_ms())));
  tenant_cache(ctx).forget(id);  // other instances: within kTenantCacheTtlMs
  if (!disabled) co_return Error{ErrorCode::not_found, "no tenant " + id};
  if (ctx.app().forget_tenant) SS_CO_CHECK(co_await ctx.app().forget_tenant(ctx, id));
  ctx.log("tenant " + id + " disabled");
  co_return Response::json_body(200, json_object({{"tenantId", id}, {"enabled", false}}));
}

// One dependency check as a task, so all of them run concurrently.
json failed_check(const Error& e) { return json_object({{"ok", false}, {"error", e.message}}); }

Task<json> check_d1(const std::string& binding) {
  auto n = co_await TenantStore(binding).count();
  if (!n) co_return failed_check(n.error());
  co_return json_object({{"ok", true}, {"tenants", *n}});
}

Task<json> check_kv(const std::string& binding, std::string marker) {
  static constexpr const char* kKey = "__siteswarm_diagnostics";
  Kv kv(binding);
  auto put = co_await kv.put(kKey, marker, 60);
  if (!put) co_return failed_check(put.error());
  auto got = co_await kv.get(kKey);
  if (!got) co_return failed_check(got.error());
  co_return json_object({{"ok", *got == marker}});
}

Task<json> check_service(std::string binding) {
  HttpCall call;
  call.url = "https://" + binding + ".internal/health";
  auto r = co_await service_call(binding, call);
  if (!r) co_return failed_check(r.error());
  auto body = parse_json(r->body);
  json out = json_object({{"ok", r->status == 200}, {"status", r->status}});
  if (body) out["service"] = string_or(*body, "service", "");
  co_return out;
}

Task<Result<Response>> diagnostics(Context& ctx, const Request& req, const Params&) {
  SS_CO_CHECK(authenticate_operator(ctx, req));
  const App& app = ctx.app();
  std::vector<Task<json>> checks;
  checks.push_back(check_d1(app.db_binding));
  if (app.kv_binding) checks.push_back(check_kv(*app.kv_binding, std::to_string(ctx.now_ms())));
  for (const auto& binding : app.diagnostic_services) checks.push_back(check_service(binding));
  std::vector<json> results = co_await when_all(std::move(checks));

  std::size_t i = 0;
  json out = json::object();
  out["d1"] = results[i++];
  if (app.kv_binding) out["kv"] = results[i++];
  json services = json::object();
  for (const auto& binding : app.diagnostic_services) services[binding] = results[i++];
  out["services"] = services;
  bool ok = true;
  for (const auto& r : results) ok = ok && get_bool(r, "ok").value_or(false);
  json body = json_object({{"ok", ok}, {"checks", out}});
  if (!ok) {  // a 503 is an error like any other (docs/contract.md "Common rules"), checks beside it
    body["error"] =
        Error{ErrorCode::dependency_unavailable, "a dependency check failed: see checks"}
            .body()["error"];
  }
  co_return Response::json_body(ok ? 200 : 503, std::move(body));
}

// Lets integration tests prove that a trap answers 500 and the next request gets a fresh instance
// (a test route: it exists only with test hooks on).
Task<Result<Response>> test_trap(Context&, const Request&, const Params&) {
#if defined(__wasm__)
  __builtin_trap();
#endif
  co_return Error{ErrorCode::internal, "trap requested (native host)"};
}

}  // namespace

// The body is moved into the output, not copied (a ledger page is ~240 KB).
json fetch_output(Response r) {
  std::string body = std::move(r.body);
  r.body.clear();
  json out = r.to_json();
  if (out.contains("body")) out["body"] = std::move(body);
  return out;
}

void expect_answer(Context& ctx, Response r) { ctx.expect_output(fetch_output(std::move(r))); }

void add_platform_routes(App& app) {
  app.router.add("GET", "/health", health)
      .add("GET", "/v1/tenant", whoami)
      .add("PUT", "/admin/tenants/{tenantId}", put_tenant)
      .add("GET", "/admin/tenants/{tenantId}", get_tenant)
      .add("DELETE", "/admin/tenants/{tenantId}", delete_tenant)
      .add("GET", "/admin/diagnostics", diagnostics)
      .add("GET", "/__test/trap", test_trap);
}

namespace {

Task<json> dispatch_message(Context& ctx, json message) {
  const App& app = ctx.app();
  std::string op = string_or(message, "op", "");
  if (op == "fetch") {
    auto request = message.find("request");
    Request req =
        Request::from_json(request != message.end() ? std::move(*request) : json::object());
    ctx.allow_expected_output(req.method != "HEAD");  // a HEAD's body is cleared below
    // A workflow start from the ledger names its run; events this request emits carry it.
    static constexpr std::size_t kMaxProvenance = 200;
    std::string run_id = req.header("x-siteswarm-workflow-run-id");
    std::string workflow_type = req.header("x-siteswarm-workflow-type");
    if (!run_id.empty() && run_id.size() <= kMaxProvenance &&
        workflow_type.size() <= kMaxProvenance) {
      ctx.set_provenance({run_id, workflow_type.empty() ? "" : "workflow:" + workflow_type});
    }
    Response res = co_await app.router.dispatch(ctx, req);
    // A promise the handler made and did not await effects after (it returned or failed first) must
    // not ride on a later list: the answer and the background work's, for one.
    ctx.take_expected_output();
    if (req.method == "HEAD") {
      res.body.clear();
      res.splices.clear();
    }
    const std::optional<std::int64_t> until = ctx.replay_until();
    // request.cf is not part of what the host compares: an answer given with it is never replayed.
    const bool replayable = until && req.method == "GET" && res.status == 200 && !res.streamed &&
                            res.splices.empty() && ctx.logs().empty() && !ctx.has_background() &&
                            req.cf.empty();
    json out = fetch_output(std::move(res));
    if (replayable)
      out["replay"] = json_object({{"until", *until}, {"headers", req.headers_read()}});
    co_return out;
  }
  if (op == "scheduled") {
    std::string cron = string_or(message, "cron", "");
    if (!app.scheduled) co_return json_object({{"ok", true}, {"skipped", true}});
    ctx.set_scheduled_input(&message);
    Status s = co_await app.scheduled(ctx, cron);
    if (!s) co_return json_object({{"ok", false}, {"error", s.error().body()["error"]}});
    co_return json_object({{"ok", true}});
  }
  if (op == "queue") {
    std::vector<QueueMessage> batch;
    std::vector<std::string> ids;
    if (const json* list = find_field(message, "messages"); list && list->is_array()) {
      for (const json& m : *list) {
        QueueMessage qm;
        qm.id = string_or(m, "id", "");
        if (const json* body = find_field(m, "body")) qm.body = *body;
        qm.attempts = static_cast<int>(int_or(m, "attempts", 1));
        qm.timestamp = int_or(m, "timestamp", 0);
        ids.push_back(qm.id);
        batch.push_back(std::move(qm));
      }
    }
    QueueOutcome outcome;
    if (app.queue) {
      outcome = co_await app.queue(ctx, string_or(message, "queue", ""), std::move(batch));
    } else {
      ctx.log("queue message for a worker without a queue handler; retrying later");
      for (auto& id : ids) outcome.retry.emplace_back(id, 60);
    }
    json retry = json::array();
    for (auto& [id, delay] : outcome.retry)
      retry.push_back(json_object({{"id", id}, {"delaySeconds", delay}}));
    co_return json_object({{"ack", outcome.ack}, {"retry", retry}});
  }
  if (op == "rpc") {
    std::string method = string_or(message, "method", "");
    const json* args = find_field(message, "args");
    // No conditional temporaries inside co_await operands: g++-12 destroys them twice.
    json arg_list = args ? *args : json::array();
    Result<json> r = Error{ErrorCode::not_found, "no RPC method " + method};
    if (app.rpc) r = co_await app.rpc(ctx, method, arg_list);
    if (!r) {
      const Error& e = r.error();
      co_return json_object({{"ok", false}, {"status", e.status()}, {"error", e.body()["error"]}});
    }
    co_return json_object({{"ok", true}, {"value", std::move(r).value()}});
  }
  co_return Response::from_error(Error{ErrorCode::internal, "unknown message op"}).to_json();
}

// A fetch run's output once its answer has gone out early (docs/abi.md "Answering early").
[[gnu::noinline]] json sent_output() { return json_object({{"sent", true}}); }

// The work handed to Context::wait_until, all of it concurrently, until none is left (a background
// task may hand over more).
Task<Unit> run_background(Context& ctx) {
  for (auto work = ctx.take_background(); !work.empty(); work = ctx.take_background()) {
    std::vector<Status> done = co_await when_all(std::move(work));
    for (const Status& s : done) {
      if (!s) ctx.log("background work failed: " + s.error().message);
    }
  }
  co_return Unit{};
}

}  // namespace

// A fetch run with background work answers the client first (the `response.send` effect, docs/abi.md
// "Answering early") and ends with {"sent":true}; a host that cannot answer early gets the response
// as the output once the background work is done, as if there had been none. The answer and the
// background work's first effects go to the host together, the answer first: one crossing fewer than
// sending the answer, being resumed, then starting the work (the lead intake's notification and event).
Task<json> handle_message(Context& ctx, json message) {
  bool fetch = string_or(message, "op", "") == "fetch";
  json out = co_await dispatch_message(ctx, std::move(message));
  if (!ctx.has_background()) co_return out;
  // An answer with held values to splice in (docs/abi.md "Held columns") is not sent early: the
  // host splices a run's output, not a response.send.
  if (fetch && out.is_object() && !out.contains("streamed") && !out.contains("splice")) {
    json send = out;
    send["kind"] = "response.send";
    // Background work that only sends (wait_until_sent) ends quietly when its effects succeed: the
    // run's end is known, and the host need not resume the core for it (docs/abi.md).
    if (ctx.background_quiet()) ctx.expect_output(sent_output());
    auto [sent, done] = co_await when_all(Effect(std::move(send)), run_background(ctx));
    if (sent) out = sent_output();
    co_return out;
  }
  co_await run_background(ctx);
  co_return out;
}

}  // namespace ss
