// siteswarm-leads-service: lead intake. This file wires the worker; routes live beside it.
#include "shared/app.h"
#include "workers/leads/admin.h"
#include "workers/leads/config.h"
#include "workers/leads/intake.h"
#include "workers/leads/notify.h"

namespace ss {

namespace {
Task<Status> run_cron(Context& ctx, const std::string& cron) {
  if (cron == "0 3 * * *") {
    SS_CO_RETURN_AWAIT(leads::enforce_retention(ctx));
  }
  SS_CO_RETURN_AWAIT(leads::sweep_unsent(ctx));
}
}  // namespace

App make_leads_app() {
  App app;
  app.service = "siteswarm-leads-service";
  app.db_binding = "LEADS_DB";
  app.diagnostic_services = {"EVENTS_SERVICE"};
  app.validate_tenant_config = [](const Context& ctx, const json& config) -> Status {
    auto parsed = leads::parse_config(config, ctx.allow_local_outbound());
    if (!parsed) return parsed.error();
    if (Status known = leads::check_config_keys(config); !known) return known;
    return leads::check_config_for_write(*parsed);
  };
  app.redact_tenant_config = leads::redact_config;
  add_platform_routes(app);
  leads::add_intake_routes(app);
  leads::add_admin_routes(app);
  app.queue = [](Context& ctx, const std::string&, std::vector<QueueMessage> batch) {
    return leads::deliver_batch(ctx, std::move(batch));
  };
  app.scheduled = run_cron;
  return app;
}

}  // namespace ss
