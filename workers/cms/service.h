#pragma once
// The cms service's routes and the pieces they share: tenant authentication that survives storage
// outages, the KV cache document, the isolate's last-known-good copy and the bundled seeds.
// See docs/cms.md for the read path and the zero-lockout design.

#include "shared/app.h"
#include "shared/tenant_store.h"
#include "workers/cms/model.h"

#include <optional>
#include <string>

namespace ss::cms {

inline constexpr const char* kCacheBinding = "CMS_CACHE";
// The snapshot bundled into the deployed worker: {"<tenantId>":{"tokenHash","content"}}.
inline constexpr const char* kSeedsVar = "CMS_FALLBACK_SEEDS";
inline constexpr std::size_t kMaxStudioBody = 64 * 1024;

std::string cache_key(const std::string& tenant_id);
// {"tokenHash","content":content_json()}: what KV and the isolate copy hold.
json cache_document(const Content& content, const std::string& token_hash);
// Writes the KV document; a failed put removes the key so no reader sees the old one. After a put,
// D1 is read again (version and tenant row): a document that no longer stands for them (a newer
// version, a disabled tenant, a new token or version-0 snapshot) is removed, and when the tenant
// changed this isolate forgets it (its copy, and tenant_cache().forget(): a generation the callers
// check before they remember what they read).
Task<Status> refresh_cache(Context& ctx, const Content& content, const std::string& token_hash);
// The isolate's last-known-good copy (survives across requests in one isolate).
// The isolate's last-known-good copy (kv_text: the KV document it was read from, if it was).
void remember(const Content& content, const std::string& token_hash, std::string kv_text = "");
void forget_all_remembered();  // tests
// How many times this process has parsed a CMS_FALLBACK_SEEDS text (tests).
std::size_t bundled_seed_parses();
// How many times this process has computed a status answer, HTTP or RPC (tests).
std::size_t status_computations();

// A tenant's version-0 content: the manifest snapshot of its config (config.fallback) in its zone.
Content seed_content(const TenantRow& row);

// The Cron Trigger (wrangler/cms.jsonc, any pattern): committed versions' cms.* events the queue
// refused at write time (the outbox, migrations/cms/0003_event_outbox.sql), sent again.
Task<Status> run_outbox(Context& ctx, const std::string& cron);

void add_content_routes(App& app);
void add_studio_routes(App& app);
// Workers RPC: getContent(auth), getStatus(auth, at?) with auth {tenantId, token,
// capabilityVersion?}.
Task<Result<json>> cms_rpc(Context& ctx, const std::string& method, const json& args);
Status validate_cms_config(const Context& ctx, const json& config);
// PUT /admin/tenants/{id} on cms: the tenant's config (time zone, the manifest's fallback snapshot)
// feeds its version-0 content, so the KV document and this isolate's copy are dropped; the next read
// refills them from D1.
Task<Status> apply_cms_config(Context& ctx, const std::string& tenant_id, const json& config);
// DELETE /admin/tenants/{id} on cms: the KV document (its token hash would still authenticate the
// disabled tenant during a D1 outage) and this isolate's copy are dropped.
Task<Status> forget_cms_tenant(Context& ctx, const std::string& tenant_id);

}  // namespace ss::cms
