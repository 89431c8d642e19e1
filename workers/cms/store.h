#pragma once
// Every SQL statement of the cms worker, behind typed functions (migrations/cms/0002_content.sql).
// Each one binds tenant_id: no statement can reach another tenant's rows.

#include "shared/effects.h"
#include "workers/cms/model.h"

#include <optional>
#include <string>
#include <vector>

namespace ss::cms {

struct VersionRow {
  std::int64_t version = 0;
  std::string changed_at;
  std::string actor;
  std::string change;
  json detail = json::object();
  static VersionRow decode(RowReader& r);
};

// One change, committed as version `version` with its history row. The statements come from the
// *_statement() builders below.
struct Commit {
  std::string tenant_id;
  std::int64_t version = 0;
  std::string at;
  std::string actor;
  std::string change;  // e.g. hours_changed
  json detail = json::object();
  const Hours* hours = nullptr;  // the hours after the change
  std::vector<D1Statement> statements;
  // The admin token hash of the tenant row that authenticated the write: the batch commits only
  // while the row stands (enabled, this hash), checked inside the batch.
  std::string admin_token_hash;
};

// A committed version's cms.* event not yet accepted by the ledger's queue
// (migrations/cms/0003_event_outbox.sql).
struct OutboxRow {
  std::string tenant_id;
  std::int64_t version = 0;
  json message;  // the queue message, its event_id drawn when the version was committed
  std::int64_t attempts = 0;
  static OutboxRow decode(RowReader& r);
};

class CmsStore {
 public:
  explicit CmsStore(std::string binding) : db_(std::move(binding)) {}

  // The stored content; nullopt when the tenant has never been edited (the seed applies).
  Task<Result<std::optional<Content>>> load(const std::string& tenant_id) const;
  Task<Result<std::int64_t>> version(const std::string& tenant_id) const;
  Task<Result<std::vector<VersionRow>>> history(const std::string& tenant_id,
                                                std::int64_t limit) const;
  // Fails as a whole (nothing written) when another writer committed that version first, or when
  // the tenant was disabled or given another admin token since the write authenticated.
  Task<Status> commit(const Commit& commit) const;
  // After a failed commit, in one read: the version stored (0: never edited) and whether the tenant
  // is still enabled with this admin token hash.
  struct Standing {
    std::int64_t version = 0;
    bool admitted = false;
  };
  Task<Result<Standing>> standing(const std::string& tenant_id,
                                  const std::string& admin_token_hash) const;

  // The version's event into the outbox, in the version's own batch (Commit::statements).
  static D1Statement outbox_statement(const std::string& tenant_id, std::int64_t version,
                                      const json& message, const std::string& at);
  // The event is in the queue: its outbox row goes.
  Task<Status> outbox_sent(const std::string& tenant_id, std::int64_t version) const;
  // Rows written before `before` (RFC 3339), fewest attempts first, then oldest; at most `limit`.
  Task<Result<std::vector<OutboxRow>>> outbox_due(const std::string& before,
                                                  std::int64_t limit) const;
  // After a sweep: the rows sent go (`sent`: "tenant:version" keys, a JSON array), the others
  // count one more attempt with the error.
  Task<Status> outbox_swept(const json& sent, const json& failed, const std::string& error) const;

  static D1Statement insert_override_statement(const std::string& tenant_id, const Override& o);
  static D1Statement delete_override_statement(const std::string& tenant_id, const std::string& id);
  static D1Statement upsert_announcement_statement(const std::string& tenant_id,
                                                   const Announcement& a);
  static D1Statement delete_announcement_statement(const std::string& tenant_id,
                                                   const std::string& id);

 private:
  D1 db_;
};

}  // namespace ss::cms
