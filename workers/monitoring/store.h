#pragma once
// Every SQL statement of the monitoring worker (migrations/monitoring/0002_monitors.sql), as named
// constants behind typed functions. Every statement on tenant data binds tenant_id.

#include "shared/effects.h"
#include "workers/monitoring/incident.h"
#include "workers/monitoring/probe.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ss::monitoring {

inline constexpr const char* kDbBinding = "MONITORING_DB";

struct MonitorRow {
  std::string tenant_id;
  std::string monitor_id;
  json spec = json::object();  // monitor_json(spec, false)
  bool enabled = true;
  std::string source;
  std::string created_at;
  std::string updated_at;
  int consecutive_failures = 0;
  std::int64_t probe_tick = 0;
  std::int64_t probing_until = 0;
  json last_probe;  // null until the first probe
  std::optional<std::string> incident_id;

  static MonitorRow decode(RowReader& r);
};

struct IncidentRow {
  std::string incident_id;
  std::string tenant_id;
  std::string monitor_id;
  std::string opened_at;
  std::optional<std::string> resolved_at;
  std::string reason;
  std::string dedup_key;

  static IncidentRow decode(RowReader& r);
  json to_json() const;  // {"id","openedAt","resolvedAt","reason"}
};

// An open incident whose monitor nobody watches any more, and why (kOrphanedIncidents).
struct OrphanedIncident {
  IncidentRow incident;
  Closure closure = Closure::monitor_deleted;

  static OrphanedIncident decode(RowReader& r);
};

struct AlertRow {
  std::string alert_id;
  std::string tenant_id;
  std::string monitor_id;
  std::string incident_id;
  std::string channel;
  std::string action;
  json request;  // {"url","body"}
  std::string state;
  int attempts = 0;
  std::optional<std::string> last_error;
  std::string created_at;
  std::string updated_at;

  static AlertRow decode(RowReader& r);
  json to_json() const;  // without the request (it holds the channel secrets)
};

struct MonitorKey {
  std::string tenant_id;
  std::string monitor_id;
};

// Uptime counts and latency percentiles of one monitor over some period.
struct MonitorStats {
  std::int64_t checks = 0;
  std::int64_t failures = 0;
  std::optional<std::int64_t> p50;
  std::optional<std::int64_t> p95;
};

struct DayRollup {
  std::string monitor_id;
  std::string day;
  std::int64_t checks = 0;
  std::int64_t failures = 0;
  std::vector<std::int64_t> histogram;
};

// What one finished probe changes, written in one D1 batch (a transaction).
struct ProbeCommit {
  MonitorKey key;
  std::int64_t tick = 0;
  std::int64_t at_ms = 0;
  ProbeResult result;
  bool maintenance = false;
  MonitorState next;
  std::optional<IncidentRow> opened;            // a new incident
  std::optional<std::string> resolved_id;       // the incident this success resolves
  std::optional<std::string> incident_id;       // the monitor's open incident after this probe
  std::optional<std::string> read_incident_id;  // the one the probe read (kUpdateMonitorState)
  std::vector<std::pair<std::string, AlertRequest>> alerts;  // alert id, request
};

// An incident closed without a probe (its monitor deleted or disabled), in one D1 batch: the
// incident resolved, the monitor's state (if it still exists) forgetting it, the resolves' outbox rows.
struct IncidentClose {
  MonitorKey key;
  std::string incident_id;
  std::int64_t at_ms = 0;
  std::vector<std::pair<std::string, AlertRequest>> alerts;  // alert id, request
};

class MonitorStore {
 public:
  explicit MonitorStore(std::string binding = kDbBinding) : db_(std::move(binding)) {}

  // ---- monitors
  Task<Result<std::optional<MonitorRow>>> find(const std::string& tenant,
                                               const std::string& id) const;
  Task<Result<std::vector<MonitorRow>>> list(const std::string& tenant) const;
  Task<Result<std::int64_t>> count(const std::string& tenant) const;
  // Inserts or replaces the definition (the probe state stays), in one D1 batch whose own answer
  // says which: concurrent creations of one id see one `created`, and a new id past `cap` monitors
  // of the tenant is `capped` (nothing written).
  enum class Saved { created, updated, capped };
  Task<Result<Saved>> upsert(const std::string& tenant, const std::string& id, const json& spec,
                             bool enabled, const std::string& source, const std::string& now,
                             std::int64_t cap) const;
  Task<Result<bool>> remove(const std::string& tenant, const std::string& id) const;
  // The manifest's monitors, in one batch: each upserted with source 'config', and the config
  // monitors it no longer declares deleted.
  Task<Status> sync_config_monitors(const std::string& tenant,
                                    const std::vector<DeclaredMonitor>& declared,
                                    const std::string& now) const;
  // Enabled monitors of every enabled tenant after (tenant, id), in key order: the cron's pages.
  Task<Result<std::vector<MonitorKey>>> enabled_page(const MonitorKey& after, int limit) const;

  // ---- probing
  // Claims the monitor for this tick: false when it was claimed for this tick already or a probe
  // of an earlier tick is still running (its lease has not run out).
  Task<Result<bool>> claim_probe(const MonitorKey& key, std::int64_t tick, std::int64_t now_ms,
                                 std::int64_t lease_until_ms) const;
  Task<Status> release_probe(const MonitorKey& key, std::int64_t tick) const;
  // True when this commit opened `opened` (false: the monitor was disabled, deleted or made anew
  // while the probe ran, so the incident and its triggers were not written), or, for a resolving
  // commit, resolved `resolved_id` (false: nothing to resolve, or a sweep did first).
  Task<Result<bool>> commit_probe(const ProbeCommit& c) const;

  // ---- incidents
  // The incidents the tenant's monitors point at now (open ones, or just resolved), in one read.
  Task<Result<std::vector<IncidentRow>>> current_incidents(const std::string& tenant) const;
  Task<Result<std::optional<IncidentRow>>> incident(const std::string& tenant,
                                                    const std::string& incident_id) const;
  // The status page's: incidents opened since `since` or still open, of enabled monitors only.
  Task<Result<std::vector<IncidentRow>>> recent_incidents(const std::string& tenant,
                                                          const std::string& since,
                                                          int limit) const;

  // Open incidents of `tenant` ('' for every tenant) that no enabled monitor holds, oldest first.
  Task<Result<std::vector<OrphanedIncident>>> orphaned_incidents(const std::string& tenant,
                                                                 int limit) const;
  // False when the incident was closed already (by a concurrent sweep).
  Task<Result<bool>> close_incident(const IncidentClose& c) const;
  // The monitors of disabled tenants forget their failure count (the cron's chore), so enabled
  // again they need 3 new consecutive failures to open an incident.
  Task<Status> forget_disabled_tenant_failures() const;

  // ---- alerts
  // The trigger alerts an incident recorded (what its resolves answer: incident.h resolves_for).
  Task<Result<std::vector<AlertRow>>> triggers_of(const std::string& tenant,
                                                  const std::string& incident_id) const;
  Task<Result<std::optional<AlertRow>>> alert(const std::string& alert_id) const;
  Task<Result<bool>> claim_alert(const std::string& alert_id, std::int64_t now_ms,
                                 std::int64_t lease_until_ms, const std::string& now) const;
  // An attempt's outcome, written only while the claim made with `lease_until_ms` still holds the
  // alert: false when it lapsed and another sender claimed it (nothing is written).
  Task<Result<bool>> alert_sent(const std::string& alert_id, std::int64_t lease_until_ms,
                                const std::string& now) const;
  Task<Result<bool>> alert_failed(const std::string& alert_id, const std::string& error, bool dead,
                                  std::int64_t lease_until_ms, const std::string& now) const;
  // Dead without being sent, only while nobody holds a claim on it: false when someone does (or
  // it is sent or dead already).
  Task<Result<bool>> give_up_alert(const std::string& alert_id, const std::string& error,
                                   std::int64_t now_ms, const std::string& now) const;
  // Pending alerts not touched since `before` (their queue message may have been lost).
  Task<Result<std::vector<AlertRow>>> stale_alerts(const std::string& before, int limit) const;
  Task<Result<std::vector<AlertRow>>> alerts_of(const std::string& tenant, const std::string& id,
                                                int limit) const;

  // ---- history
  // checks/failures since at_ms from the raw probes, with exact nearest-rank p50/p95 latencies.
  Task<Result<std::map<std::string, MonitorStats>>> raw_stats(const std::string& tenant,
                                                              std::int64_t since_ms) const;
  // checks/failures summed over the daily rollups from `since_day` (YYYY-MM-DD) on.
  Task<Result<std::map<std::string, MonitorStats>>> day_stats(const std::string& tenant,
                                                              const std::string& since_day) const;
  Task<Result<std::vector<DayRollup>>> days(const std::string& tenant,
                                            const std::string& since_day) const;
  // Deletes at most `limit` raw probes older than before_ms and rollups older than before_day.
  Task<Result<std::int64_t>> prune(std::int64_t before_ms, const std::string& before_day,
                                   int limit) const;

 private:
  D1 db_;
};

}  // namespace ss::monitoring
