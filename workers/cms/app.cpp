// siteswarm-cms-service: per-tenant hours, overrides and announcements. This file wires the worker.
#include "shared/app.h"

#include "workers/cms/service.h"

namespace ss {

App make_cms_app() {
  App app;
  app.service = "siteswarm-cms-service";
  app.db_binding = "CMS_DB";
  app.kv_binding = cms::kCacheBinding;
  app.diagnostic_services = {"EVENTS_SERVICE"};
  app.validate_tenant_config = cms::validate_cms_config;
  app.apply_tenant_config = cms::apply_cms_config;
  app.forget_tenant = cms::forget_cms_tenant;
  add_platform_routes(app);
  cms::add_content_routes(app);
  cms::add_studio_routes(app);
  app.rpc = cms::cms_rpc;
  app.scheduled = cms::run_outbox;
  return app;
}

}  // namespace ss
