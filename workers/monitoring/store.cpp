#include "workers/monitoring/store.h"

#include <array>

#include "shared/json_util.h"
#include "shared/rfc3339.h"

namespace ss::monitoring {

namespace {

// Statements joined at compile time: a row's column list written once, each statement's own
// clauses after it (no run-time concatenation, no copy in the module beyond the joined text).
template <const std::string_view&... Parts>
struct Joined {
  static constexpr auto kText = [] {
    std::array<char, (Parts.size() + ...)> text{};
    std::size_t at = 0;
    for (std::string_view part : {Parts...}) {
      for (char c : part) text[at++] = c;
    }
    return text;
  }();
  static constexpr std::string_view value{kText.data(), kText.size()};
};

// Every read of stored rows casts its columns to the types the decoders expect and reads JSON
// that is not valid as null ([] for a histogram): a row edited by hand (wrong types, malformed
// JSON) is then shown and probed as what it holds (an invalid spec fails `ssrf_blocked`, as a
// monitor the rules now refuse), rather than failing the whole tenant's list or status page with
// corrupt_row.
constexpr std::string_view kMonitorColumns = R"sql(
SELECT CAST(tenant_id AS TEXT) AS tenant_id, CAST(monitor_id AS TEXT) AS monitor_id,
       CASE WHEN json_valid(spec_json) THEN CAST(spec_json AS TEXT) ELSE 'null' END AS spec_json,
       (enabled = 1) AS enabled, CAST(source AS TEXT) AS source,
       CAST(created_at AS TEXT) AS created_at, CAST(updated_at AS TEXT) AS updated_at,
       MIN(MAX(CAST(consecutive_failures AS INTEGER), 0), 1000000) AS consecutive_failures,
       CAST(probe_tick AS INTEGER) AS probe_tick, CAST(probing_until AS INTEGER) AS probing_until,
       CAST(last_probe_json AS TEXT) AS last_probe_json, CAST(incident_id AS TEXT) AS incident_id
FROM monitors )sql";

constexpr std::string_view kAlertColumns = R"sql(
SELECT CAST(alert_id AS TEXT) AS alert_id, CAST(tenant_id AS TEXT) AS tenant_id,
       CAST(monitor_id AS TEXT) AS monitor_id, CAST(incident_id AS TEXT) AS incident_id,
       CAST(channel AS TEXT) AS channel, CAST(action AS TEXT) AS action,
       CASE WHEN json_valid(request_json) THEN CAST(request_json AS TEXT) ELSE 'null' END
         AS request_json,
       CAST(state AS TEXT) AS state, CAST(attempts AS INTEGER) AS attempts,
       CAST(last_error AS TEXT) AS last_error, CAST(created_at AS TEXT) AS created_at,
       CAST(updated_at AS TEXT) AS updated_at
FROM alerts )sql";

constexpr std::string_view kIncidentColumns = R"sql(
SELECT CAST(incident_id AS TEXT) AS incident_id, CAST(tenant_id AS TEXT) AS tenant_id,
       CAST(monitor_id AS TEXT) AS monitor_id, CAST(opened_at AS TEXT) AS opened_at,
       CAST(resolved_at AS TEXT) AS resolved_at, CAST(reason AS TEXT) AS reason,
       CAST(dedup_key AS TEXT) AS dedup_key
FROM incidents )sql";

constexpr std::string_view kFindMonitorTail = R"sql(WHERE tenant_id = ?1 AND monitor_id = ?2
)sql";
constexpr std::string_view kFindMonitor = Joined<kMonitorColumns, kFindMonitorTail>::value;

constexpr std::string_view kListMonitorsTail = R"sql(WHERE tenant_id = ?1 ORDER BY monitor_id
)sql";
constexpr std::string_view kListMonitors = Joined<kMonitorColumns, kListMonitorsTail>::value;

constexpr std::string_view kCountMonitors = R"sql(
SELECT COUNT(*) AS n FROM monitors WHERE tenant_id = ?1
)sql";

// The definition changes; the probe state (failures, open incident, last probe) stays, except
// that a monitor disabled, or enabled again, forgets its failure count: failures from before it
// was disabled are not consecutive with those after (a probe that was running when it was
// disabled may still have written one), so enabled again it needs 3 new ones to open an incident.
// Enabled again, it also forgets its last probe: it is "unknown" until probed again, not shown up
// or down on the strength of a probe from before it was disabled.
constexpr std::string_view kUpsertMonitor = R"sql(
INSERT INTO monitors (tenant_id, monitor_id, spec_json, enabled, source, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
ON CONFLICT (tenant_id, monitor_id) DO UPDATE SET spec_json = ?3, enabled = ?4, source = ?5,
  updated_at = ?6,
  consecutive_failures = CASE WHEN ?4 = 0 OR enabled = 0 THEN 0 ELSE consecutive_failures END,
  last_probe_json = CASE WHEN ?4 = 1 AND enabled = 0 THEN NULL ELSE last_probe_json END
)sql";

// A write through the API, one batch: the capped insert, whose `changes` say whether this write
// created the monitor (a read before the write would tell concurrent creators all "created", and
// let them pass the cap together), then the update of an existing one.
constexpr std::string_view kCreateMonitorCapped = R"sql(
INSERT INTO monitors (tenant_id, monitor_id, spec_json, enabled, source, created_at, updated_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?6
WHERE (SELECT COUNT(*) FROM monitors WHERE tenant_id = ?1) < ?7
ON CONFLICT (tenant_id, monitor_id) DO NOTHING
)sql";
constexpr std::string_view kUpdateMonitor = R"sql(
UPDATE monitors SET spec_json = ?3, enabled = ?4, source = ?5, updated_at = ?6,
  consecutive_failures = CASE WHEN ?4 = 0 OR enabled = 0 THEN 0 ELSE consecutive_failures END,
  last_probe_json = CASE WHEN ?4 = 1 AND enabled = 0 THEN NULL ELSE last_probe_json END
WHERE tenant_id = ?1 AND monitor_id = ?2
)sql";

constexpr std::string_view kDeleteMonitor = R"sql(
DELETE FROM monitors WHERE tenant_id = ?1 AND monitor_id = ?2
)sql";
constexpr std::string_view kDeleteMonitorProbes = R"sql(
DELETE FROM probes WHERE tenant_id = ?1 AND monitor_id = ?2
)sql";
constexpr std::string_view kDeleteMonitorDays = R"sql(
DELETE FROM probe_days WHERE tenant_id = ?1 AND monitor_id = ?2
)sql";
// Its incidents are no longer any monitor's of that id (migrations/monitoring/0004_…): one made
// again under the id does not show them. They stay: an open one is closed by the sweep, which
// sends its resolves through the outbox (kInsertAlert needs the incident).
constexpr std::string_view kDetachMonitorIncidents = R"sql(
UPDATE incidents SET monitor_deleted = 1
WHERE tenant_id = ?1 AND monitor_id = ?2 AND monitor_deleted = 0
)sql";

// The history of the config monitors the manifest no longer declares goes with them, as with
// kDeleteMonitor (run before kDeleteConfigMonitorsExcept, which it reads).
constexpr std::string_view kDeleteConfigProbesExcept = R"sql(
DELETE FROM probes
WHERE tenant_id = ?1 AND monitor_id IN (
  SELECT monitor_id FROM monitors
  WHERE tenant_id = ?1 AND source = 'config' AND monitor_id NOT IN (SELECT value FROM json_each(?2)))
)sql";
constexpr std::string_view kDeleteConfigDaysExcept = R"sql(
DELETE FROM probe_days
WHERE tenant_id = ?1 AND monitor_id IN (
  SELECT monitor_id FROM monitors
  WHERE tenant_id = ?1 AND source = 'config' AND monitor_id NOT IN (SELECT value FROM json_each(?2)))
)sql";

constexpr std::string_view kDetachConfigIncidentsExcept = R"sql(
UPDATE incidents SET monitor_deleted = 1
WHERE tenant_id = ?1 AND monitor_deleted = 0 AND monitor_id IN (
  SELECT monitor_id FROM monitors
  WHERE tenant_id = ?1 AND source = 'config' AND monitor_id NOT IN (SELECT value FROM json_each(?2)))
)sql";

constexpr std::string_view kDeleteConfigMonitorsExcept = R"sql(
DELETE FROM monitors
WHERE tenant_id = ?1 AND source = 'config'
  AND monitor_id NOT IN (SELECT value FROM json_each(?2))
)sql";

constexpr std::string_view kEnabledPage = R"sql(
SELECT m.tenant_id, m.monitor_id FROM monitors m JOIN tenants t ON t.tenant_id = m.tenant_id
WHERE m.enabled = 1 AND t.enabled = 1
  AND (m.tenant_id > ?1 OR (m.tenant_id = ?1 AND m.monitor_id > ?2))
ORDER BY m.tenant_id, m.monitor_id LIMIT ?3
)sql";

// A probe job is claimed only while its monitor and its tenant are still enabled: a tenant disabled
// between the tick's enqueue and the job is not probed again. The casts: a hand-edited TEXT lease
// would compare above every number, and the monitor would never be claimed again.
constexpr std::string_view kClaimProbe = R"sql(
UPDATE monitors SET probe_tick = ?3, probing_until = ?5
WHERE tenant_id = ?1 AND monitor_id = ?2 AND enabled = 1 AND CAST(probe_tick AS INTEGER) < ?3
  AND CAST(probing_until AS INTEGER) <= ?4
  AND EXISTS (SELECT 1 FROM tenants WHERE tenant_id = ?1 AND enabled = 1)
)sql";

constexpr std::string_view kReleaseProbe = R"sql(
UPDATE monitors SET probing_until = 0 WHERE tenant_id = ?1 AND monitor_id = ?2 AND probe_tick = ?3
)sql";

// History is written only while the monitor still holds this probe's claim (probe_tick = ?9): not
// for a monitor deleted while its probe ran (its history went with it), nor for one made again
// under the same id meanwhile (the new monitor was never probed).
constexpr std::string_view kInsertProbe = R"sql(
INSERT INTO probes (tenant_id, monitor_id, at_ms, ok, status, latency_ms, reason, maintenance)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
WHERE EXISTS (SELECT 1 FROM monitors WHERE tenant_id = ?1 AND monitor_id = ?2 AND probe_tick = ?9)
)sql";

// One latency bucket incremented in the day's histogram (kHistogramSize zeros to start with).
// D1 binds JavaScript numbers as REAL, so the index is cast before it becomes part of a JSON path.
// Only while the monitor holds the claim (?7), as kInsertProbe. A histogram that is not valid JSON
// (edited by hand) starts again, rather than failing the probe's whole commit at every tick.
constexpr std::string_view kRollupProbe = R"sql(
INSERT INTO probe_days (tenant_id, monitor_id, day, checks, failures, hist_json)
SELECT ?1, ?2, ?3, 1, ?4,
       CASE WHEN ?6 IS NULL THEN ?5 ELSE json_set(?5, '$[' || CAST(?6 AS INTEGER) || ']', 1) END
WHERE EXISTS (SELECT 1 FROM monitors WHERE tenant_id = ?1 AND monitor_id = ?2 AND probe_tick = ?7)
ON CONFLICT (tenant_id, monitor_id, day) DO UPDATE SET
  checks = checks + 1,
  failures = failures + ?4,
  hist_json = CASE WHEN ?6 IS NULL THEN hist_json
    WHEN NOT json_valid(hist_json) THEN json_set(?5, '$[' || CAST(?6 AS INTEGER) || ']', 1) ELSE
    json_set(hist_json, '$[' || CAST(?6 AS INTEGER) || ']',
             COALESCE(json_extract(hist_json, '$[' || CAST(?6 AS INTEGER) || ']'), 0) + 1) END
)sql";

// Only the claim holder of this tick writes the state. The failure count and the open incident
// only while the monitor still holds the incident the probe read (?7): a sweep that closed it
// meanwhile (the monitor disabled while this probe ran) cleared them, and they stay cleared. A new
// incident (?6 not NULL) only while the monitor and its tenant are enabled: one disabled (or whose
// tenant was disabled) while this probe ran opens none; a resolve (?6 NULL) clears its incident
// whether the monitor is enabled or not, or the monitor would keep the id of a resolved incident
// and, enabled again, never open a new one. (SQLite reads every SET expression from the row as it
// was.)
constexpr std::string_view kUpdateMonitorState = R"sql(
UPDATE monitors
SET consecutive_failures = CASE WHEN incident_id IS ?7 AND (?6 IS NULL OR (enabled = 1
      AND EXISTS (SELECT 1 FROM tenants WHERE tenant_id = ?1 AND enabled = 1))) THEN ?4
    ELSE consecutive_failures END,
    incident_id = CASE WHEN incident_id IS ?7 AND (?6 IS NULL OR (enabled = 1
      AND EXISTS (SELECT 1 FROM tenants WHERE tenant_id = ?1 AND enabled = 1))) THEN ?6
    ELSE incident_id END,
    last_probe_json = ?5, probing_until = 0
WHERE tenant_id = ?1 AND monitor_id = ?2 AND probe_tick = ?3
)sql";

// Only when kUpdateMonitorState (earlier in the same batch) gave the monitor this incident: not for
// a monitor disabled, deleted or made anew while its probe ran (nobody watches it; its trigger
// would page and the next sweep resolve it).
constexpr std::string_view kInsertIncident = R"sql(
INSERT INTO incidents (incident_id, tenant_id, monitor_id, opened_at, reason, dedup_key)
SELECT ?1, ?2, ?3, ?4, ?5, ?6
WHERE EXISTS (SELECT 1 FROM monitors WHERE tenant_id = ?2 AND monitor_id = ?3 AND incident_id = ?1)
)sql";

constexpr std::string_view kResolveIncident = R"sql(
UPDATE incidents SET resolved_at = ?3 WHERE tenant_id = ?1 AND incident_id = ?2
  AND resolved_at IS NULL
)sql";

// Only for an incident that exists (a trigger whose incident kInsertIncident did not open is not
// written).
constexpr std::string_view kInsertAlert = R"sql(
INSERT OR IGNORE INTO alerts (alert_id, tenant_id, monitor_id, incident_id, channel, action,
                              request_json, created_at, updated_at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8
WHERE EXISTS (SELECT 1 FROM incidents WHERE tenant_id = ?2 AND incident_id = ?4)
)sql";

// Open incidents nobody watches any more (incident.h Closure), oldest first; `?1` one tenant's, or
// every tenant's when ''. The partial index incidents_open keeps this to the open ones.
constexpr std::string_view kOrphanedIncidents = R"sql(
SELECT i.incident_id, i.tenant_id, i.monitor_id, i.opened_at, i.resolved_at, i.reason,
       i.dedup_key,
       CASE WHEN t.enabled IS NOT 1 THEN 'tenant_disabled'
            WHEN m.monitor_id IS NULL THEN 'monitor_deleted'
            WHEN m.enabled = 0 THEN 'monitor_disabled'
            ELSE 'superseded' END AS closure
FROM incidents i
LEFT JOIN monitors m ON m.tenant_id = i.tenant_id AND m.monitor_id = i.monitor_id
LEFT JOIN tenants t ON t.tenant_id = i.tenant_id
WHERE i.resolved_at IS NULL AND (?1 = '' OR i.tenant_id = ?1)
  AND (t.enabled IS NOT 1 OR m.monitor_id IS NULL OR m.enabled = 0
       OR m.incident_id IS NOT i.incident_id)
ORDER BY i.opened_at LIMIT ?2
)sql";

// A disabled monitor's state forgets the incident it closes: enabled again, it starts afresh and a
// new outage opens a new incident.
constexpr std::string_view kForgetMonitorIncident = R"sql(
UPDATE monitors SET incident_id = NULL, consecutive_failures = 0
WHERE tenant_id = ?1 AND monitor_id = ?2 AND incident_id = ?3
)sql";

// The monitors of disabled tenants forget their failure count (the tenant's PUT enables it again
// with its monitors as they were): failures from before are not consecutive with those after.
constexpr std::string_view kForgetDisabledTenantFailures = R"sql(
UPDATE monitors SET consecutive_failures = 0
WHERE tenant_id IN (SELECT tenant_id FROM tenants WHERE enabled = 0) AND consecutive_failures > 0
)sql";

constexpr std::string_view kTriggersOfTail =
    R"sql(WHERE incident_id = ?2 AND tenant_id = ?1 AND action = 'trigger' ORDER BY channel
)sql";
constexpr std::string_view kTriggersOf = Joined<kAlertColumns, kTriggersOfTail>::value;

constexpr std::string_view kFindIncidentTail = R"sql(WHERE tenant_id = ?1 AND incident_id = ?2
)sql";
constexpr std::string_view kFindIncident = Joined<kIncidentColumns, kFindIncidentTail>::value;

// The incidents a tenant's monitors point at (monitors.incident_id): an overview's in one read,
// not one per monitor.
constexpr std::string_view kCurrentIncidentsTail = R"sql(WHERE tenant_id = ?1
  AND incident_id IN (SELECT incident_id FROM monitors
                      WHERE tenant_id = ?1 AND incident_id IS NOT NULL)
)sql";
constexpr std::string_view kCurrentIncidents =
    Joined<kIncidentColumns, kCurrentIncidentsTail>::value;

// The public page's incidents: only those of the monitors it shows (enabled ones); a disabled or
// deleted monitor's incidents are no more public than the monitor, and a monitor made again under
// a deleted one's id does not show the old one's.
constexpr std::string_view kRecentIncidentsTail =
    R"sql(WHERE tenant_id = ?1 AND (opened_at >= ?2 OR resolved_at IS NULL)
  AND monitor_deleted = 0
  AND monitor_id IN (SELECT monitor_id FROM monitors WHERE tenant_id = ?1 AND enabled = 1)
ORDER BY opened_at DESC LIMIT ?3
)sql";
constexpr std::string_view kRecentIncidents = Joined<kIncidentColumns, kRecentIncidentsTail>::value;

constexpr std::string_view kFindAlertTail = R"sql(WHERE alert_id = ?1
)sql";
constexpr std::string_view kFindAlert = Joined<kAlertColumns, kFindAlertTail>::value;

// Pending, or sending with a lapsed lease (the sender died): one sender at a time.
// A trigger is claimed only while its incident is unresolved, in the same statement: a resolve that
// found it still pending (and so gave itself up) can never be followed by the trigger going out.
constexpr std::string_view kClaimAlert = R"sql(
UPDATE alerts SET state = 'sending', lease_until = ?3, attempts = attempts + 1, updated_at = ?4
WHERE alert_id = ?1 AND (state = 'pending' OR (state = 'sending' AND lease_until <= ?2))
  AND NOT (action = 'trigger' AND EXISTS (
    SELECT 1 FROM incidents i
    WHERE i.tenant_id = alerts.tenant_id AND i.incident_id = alerts.incident_id
      AND i.resolved_at IS NOT NULL))
)sql";

// An attempt's outcome is written only by the sender that still holds the claim (its lease, ?3 /
// ?5, stands for the claim): one whose lease lapsed mid-send and was claimed again meanwhile must
// not put a sent alert back to pending (a second send, its resolve dropped) nor mark it sent.
constexpr std::string_view kAlertSent = R"sql(
UPDATE alerts SET state = 'sent', lease_until = 0, last_error = NULL, updated_at = ?2
WHERE alert_id = ?1 AND state = 'sending' AND lease_until = ?3
)sql";

constexpr std::string_view kAlertFailed = R"sql(
UPDATE alerts SET state = ?3, lease_until = 0, last_error = ?2, updated_at = ?4
WHERE alert_id = ?1 AND state = 'sending' AND lease_until = ?5
)sql";

// An alert that will not go out, given up only while nobody is sending it (pending, or a lapsed
// claim): a copy of its job that judges a trigger moot while another copy is mid-send must not
// mark it dead under that sender, or its resolve would find it "never sent" and be dropped.
constexpr std::string_view kGiveUpAlert = R"sql(
UPDATE alerts SET state = 'dead', lease_until = 0, last_error = ?2, updated_at = ?3
WHERE alert_id = ?1 AND (state = 'pending' OR (state = 'sending' AND lease_until <= ?4))
)sql";

constexpr std::string_view kStaleAlertsTail =
    R"sql(WHERE state IN ('pending', 'sending') AND updated_at < ?1
ORDER BY updated_at LIMIT ?2
)sql";
constexpr std::string_view kStaleAlerts = Joined<kAlertColumns, kStaleAlertsTail>::value;

// A monitor's alerts: not those of a deleted monitor that had its id (kDetachMonitorIncidents).
constexpr std::string_view kAlertsOfTail = R"sql(WHERE tenant_id = ?1 AND monitor_id = ?2
  AND incident_id NOT IN (SELECT incident_id FROM incidents
                          WHERE tenant_id = ?1 AND monitor_id = ?2 AND monitor_deleted = 1)
ORDER BY created_at DESC, alert_id DESC
LIMIT ?3
)sql";
constexpr std::string_view kAlertsOf = Joined<kAlertColumns, kAlertsOfTail>::value;

// Failures in maintenance windows do not count against uptime; p50/p95 by nearest rank over the
// probes that got an answer (a status): a refused connection, a timeout or a blocked URL has no
// latency of the site's to rank, and its 0 (or its time limit) would pull the figures away.
constexpr std::string_view kRawStats = R"sql(
SELECT monitor_id,
       COUNT(*) AS checks,
       SUM(CASE WHEN ok = 0 AND maintenance = 0 THEN 1 ELSE 0 END) AS failures,
       MAX(CASE WHEN answered AND rn = (n * 50 + 99) / 100 THEN latency_ms END) AS p50,
       MAX(CASE WHEN answered AND rn = (n * 95 + 99) / 100 THEN latency_ms END) AS p95
FROM (
  SELECT monitor_id, ok, maintenance, latency_ms, answered,
         ROW_NUMBER() OVER (PARTITION BY monitor_id, answered ORDER BY latency_ms) AS rn,
         COUNT(*) OVER (PARTITION BY monitor_id, answered) AS n
  FROM (SELECT monitor_id, ok, maintenance, CAST(latency_ms AS INTEGER) AS latency_ms,
               status IS NOT NULL AS answered
        FROM probes WHERE tenant_id = ?1 AND at_ms >= ?2)
)
GROUP BY monitor_id
)sql";

constexpr std::string_view kDayStats = R"sql(
SELECT monitor_id, SUM(CAST(checks AS INTEGER)) AS checks,
       SUM(CAST(failures AS INTEGER)) AS failures
FROM probe_days WHERE tenant_id = ?1 AND day >= ?2 GROUP BY monitor_id
)sql";

constexpr std::string_view kDays = R"sql(
SELECT monitor_id, CAST(day AS TEXT) AS day, CAST(checks AS INTEGER) AS checks,
       CAST(failures AS INTEGER) AS failures,
       CASE WHEN json_valid(hist_json) THEN CAST(hist_json AS TEXT) ELSE '[]' END AS hist_json
FROM probe_days WHERE tenant_id = ?1 AND day >= ?2 ORDER BY monitor_id, day
)sql";

constexpr std::string_view kPruneProbes = R"sql(
DELETE FROM probes WHERE rowid IN (SELECT rowid FROM probes WHERE at_ms < ?1 LIMIT ?2)
)sql";
constexpr std::string_view kPruneDays = R"sql(
DELETE FROM probe_days WHERE rowid IN (SELECT rowid FROM probe_days WHERE day < ?1 LIMIT ?2)
)sql";

json nullable(const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); }

struct KeyRow {
  MonitorKey key;
  static KeyRow decode(RowReader& r) { return {{r.text("tenant_id"), r.text("monitor_id")}}; }
};

struct StatsRow {
  std::string monitor_id;
  MonitorStats stats;
  static StatsRow decode(RowReader& r) {
    StatsRow row;
    row.monitor_id = r.text("monitor_id");
    row.stats.checks = r.nullable_integer("checks").value_or(0);
    row.stats.failures = r.nullable_integer("failures").value_or(0);
    if (r.has("p50")) row.stats.p50 = r.nullable_integer("p50");
    if (r.has("p95")) row.stats.p95 = r.nullable_integer("p95");
    return row;
  }
};

Result<std::map<std::string, MonitorStats>> stats_map(const D1Result& r) {
  auto rows = r.as<StatsRow>();
  if (!rows) return std::move(rows).error();
  std::map<std::string, MonitorStats> out;
  for (auto& row : *rows) out[row.monitor_id] = row.stats;
  return out;
}

}  // namespace

MonitorRow MonitorRow::decode(RowReader& r) {
  MonitorRow m;
  m.tenant_id = r.text("tenant_id");
  m.monitor_id = r.text("monitor_id");
  m.spec = r.json_text("spec_json");
  m.enabled = r.flag("enabled");
  m.source = r.text("source");
  m.created_at = r.text("created_at");
  m.updated_at = r.text("updated_at");
  m.consecutive_failures = static_cast<int>(r.integer("consecutive_failures"));
  m.probe_tick = r.integer("probe_tick");
  m.probing_until = r.integer("probing_until");
  auto last = r.nullable_text("last_probe_json");
  if (last) {
    auto parsed = parse_json(*last);
    m.last_probe = parsed ? *parsed : json(nullptr);
  }
  m.incident_id = r.nullable_text("incident_id");
  return m;
}

IncidentRow IncidentRow::decode(RowReader& r) {
  IncidentRow i;
  i.incident_id = r.text("incident_id");
  i.tenant_id = r.text("tenant_id");
  i.monitor_id = r.text("monitor_id");
  i.opened_at = r.text("opened_at");
  i.resolved_at = r.nullable_text("resolved_at");
  i.reason = r.text("reason");
  i.dedup_key = r.text("dedup_key");
  return i;
}

OrphanedIncident OrphanedIncident::decode(RowReader& r) {
  OrphanedIncident o;
  o.incident = IncidentRow::decode(r);
  o.closure = closure_from(r.text("closure"));
  return o;
}

json IncidentRow::to_json() const {
  return json_object({{"id", incident_id},
                      {"monitorId", monitor_id},
                      {"openedAt", opened_at},
                      {"resolvedAt", nullable(resolved_at)},
                      {"reason", reason}});
}

AlertRow AlertRow::decode(RowReader& r) {
  AlertRow a;
  a.alert_id = r.text("alert_id");
  a.tenant_id = r.text("tenant_id");
  a.monitor_id = r.text("monitor_id");
  a.incident_id = r.text("incident_id");
  a.channel = r.text("channel");
  a.action = r.text("action");
  a.request = r.json_text("request_json");
  a.state = r.text("state");
  a.attempts = static_cast<int>(r.integer("attempts"));
  a.last_error = r.nullable_text("last_error");
  a.created_at = r.text("created_at");
  a.updated_at = r.text("updated_at");
  return a;
}

json AlertRow::to_json() const {
  return json_object({{"id", alert_id},
                      {"incidentId", incident_id},
                      {"channel", channel},
                      {"action", action},
                      {"state", state},
                      {"attempts", attempts},
                      {"lastError", nullable(last_error)},
                      // Stored with milliseconds (the stale-alert sweep compares them); shown
                      // to the second, as the contract writes times.
                      {"createdAt", shown_rfc3339_second(created_at)},
                      {"updatedAt", shown_rfc3339_second(updated_at)}});
}

Task<Result<std::optional<MonitorRow>>> MonitorStore::find(const std::string& tenant,
                                                           const std::string& id) const {
  json params = json::array({tenant, id});
  SS_CO_TRY(D1Result r, co_await db_.first(kFindMonitor, params));
  co_return r.first_as<MonitorRow>();
}

Task<Result<std::vector<MonitorRow>>> MonitorStore::list(const std::string& tenant) const {
  json params = json::array({tenant});
  SS_CO_TRY(D1Result r, co_await db_.all(kListMonitors, params));
  co_return r.as<MonitorRow>();
}

Task<Result<std::int64_t>> MonitorStore::count(const std::string& tenant) const {
  json params = json::array({tenant});
  SS_CO_TRY(D1Result r, co_await db_.first(kCountMonitors, params));
  std::optional<json> row = r.first();
  co_return row ? int_or(*row, "n", 0) : 0;
}

Task<Result<MonitorStore::Saved>> MonitorStore::upsert(const std::string& tenant,
                                                       const std::string& id, const json& spec,
                                                       bool enabled, const std::string& source,
                                                       const std::string& now,
                                                       std::int64_t cap) const {
  json params = json::array({tenant, id, dump_json(spec), enabled ? 1 : 0, source, now});
  json capped = params;
  capped.push_back(cap);
  std::vector<D1Statement> batch{{std::string(kCreateMonitorCapped), std::move(capped)},
                                 {std::string(kUpdateMonitor), std::move(params)}};
  SS_CO_TRY(std::vector<D1Result> r, co_await db_.batch(batch));
  if (r.size() != 2)
    co_return Error{ErrorCode::internal, "monitor upsert: a short D1 batch answer"};
  if (r[0].meta.changes > 0) co_return Saved::created;
  co_return r[1].meta.changes > 0 ? Saved::updated : Saved::capped;
}

Task<Result<bool>> MonitorStore::remove(const std::string& tenant, const std::string& id) const {
  json params = json::array({tenant, id});
  std::vector<D1Statement> batch{{std::string(kDeleteMonitor), params},
                                 {std::string(kDeleteMonitorProbes), params},
                                 {std::string(kDeleteMonitorDays), params},
                                 {std::string(kDetachMonitorIncidents), params}};
  SS_CO_TRY(std::vector<D1Result> r, co_await db_.batch(batch));
  co_return !r.empty() && r[0].meta.changes > 0;
}

Task<Status> MonitorStore::sync_config_monitors(const std::string& tenant,
                                                const std::vector<DeclaredMonitor>& declared,
                                                const std::string& now) const {
  std::vector<D1Statement> batch;
  json ids = json::array();
  for (const auto& d : declared) {
    ids.push_back(d.id);
    batch.push_back({std::string(kUpsertMonitor),
                     json::array({tenant, d.id, dump_json(monitor_json(d.spec, false)),
                                  d.spec.enabled ? 1 : 0, "config", now})});
  }
  const json except = json::array({tenant, dump_json(ids)});
  batch.push_back({std::string(kDeleteConfigProbesExcept), except});
  batch.push_back({std::string(kDeleteConfigDaysExcept), except});
  batch.push_back({std::string(kDetachConfigIncidentsExcept), except});
  batch.push_back({std::string(kDeleteConfigMonitorsExcept), except});
  SS_CO_TRY(std::vector<D1Result> ignored, co_await db_.batch(batch));
  co_return Unit{};
}

Task<Result<std::vector<MonitorKey>>> MonitorStore::enabled_page(const MonitorKey& after,
                                                                 int limit) const {
  json params = json::array({after.tenant_id, after.monitor_id, limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kEnabledPage, params));
  SS_CO_TRY(std::vector<KeyRow> rows, r.as<KeyRow>());
  std::vector<MonitorKey> out;
  out.reserve(rows.size());
  for (auto& row : rows) out.push_back(std::move(row.key));
  co_return out;
}

Task<Result<bool>> MonitorStore::claim_probe(const MonitorKey& key, std::int64_t tick,
                                             std::int64_t now_ms,
                                             std::int64_t lease_until_ms) const {
  json params = json::array({key.tenant_id, key.monitor_id, tick, now_ms, lease_until_ms});
  SS_CO_TRY(D1Result r, co_await db_.run(kClaimProbe, params));
  co_return r.meta.changes == 1;
}

Task<Status> MonitorStore::release_probe(const MonitorKey& key, std::int64_t tick) const {
  json params = json::array({key.tenant_id, key.monitor_id, tick});
  SS_CO_TRY(D1Result ignored, co_await db_.run(kReleaseProbe, params));
  co_return Unit{};
}

namespace {
// The outbox rows of alerts made for one incident (the probe's commit and close_incident).
void add_alert_rows(std::vector<D1Statement>& batch, const MonitorKey& key,
                    const std::string& incident_id,
                    const std::vector<std::pair<std::string, AlertRequest>>& alerts,
                    const std::string& now) {
  for (const auto& [alert_id, a] : alerts) {
    json request = json_object({{"url", a.url}, {"body", a.body}});
    batch.push_back({std::string(kInsertAlert),
                     json::array({alert_id, key.tenant_id, key.monitor_id, incident_id, a.channel,
                                  a.action, dump_json(request), now})});
  }
}
}  // namespace

Task<Result<bool>> MonitorStore::commit_probe(const ProbeCommit& c) const {
  const ProbeResult& r = c.result;
  std::vector<D1Statement> batch;
  batch.push_back({std::string(kInsertProbe),
                   json::array({c.key.tenant_id, c.key.monitor_id, c.at_ms, r.ok ? 1 : 0,
                                r.status ? json(*r.status) : json(nullptr), r.latency_ms,
                                r.reason.empty() ? json(nullptr) : json(r.reason),
                                c.maintenance ? 1 : 0, c.tick})});
  json zeros = json::array();
  for (std::size_t i = 0; i < kHistogramSize; ++i) zeros.push_back(0);
  std::string day = format_rfc3339(c.at_ms).substr(0, 10);
  int failed = !r.ok && !c.maintenance ? 1 : 0;
  batch.push_back(
      {std::string(kRollupProbe),
       json::array({c.key.tenant_id, c.key.monitor_id, day, failed, dump_json(zeros),
                    // A probe without an answer has no latency to count (kRawStats).
                    r.status ? json(static_cast<std::int64_t>(latency_bucket(r.latency_ms)))
                             : json(nullptr),
                    c.tick})});
  batch.push_back({std::string(kUpdateMonitorState),
                   json::array({c.key.tenant_id, c.key.monitor_id, c.tick,
                                c.next.consecutive_failures, dump_json(r.to_json(c.at_ms)),
                                c.incident_id ? json(*c.incident_id) : json(nullptr),
                                c.read_incident_id ? json(*c.read_incident_id) : json(nullptr)})});
  if (c.opened) {
    const IncidentRow& i = *c.opened;
    batch.push_back(
        {std::string(kInsertIncident), json::array({i.incident_id, i.tenant_id, i.monitor_id,
                                                    i.opened_at, i.reason, i.dedup_key})});
  }
  const std::size_t open_at = batch.size() - 1;
  std::size_t resolve_at = batch.size();
  if (c.resolved_id) {
    batch.push_back({std::string(kResolveIncident),
                     json::array({c.key.tenant_id, *c.resolved_id, format_rfc3339(c.at_ms)})});
  }
  add_alert_rows(batch, c.key, c.opened ? c.opened->incident_id : c.resolved_id.value_or(""),
                 c.alerts, format_rfc3339_ms(c.at_ms));
  SS_CO_TRY(std::vector<D1Result> done, co_await db_.batch(batch));
  // Opened by this commit (not refused: the monitor disabled, deleted or made anew meanwhile).
  if (c.opened) {
    const bool opened = done.size() > open_at && done[open_at].meta.changes == 1;
    co_return opened;
  }
  // Resolved by this commit, not by a sweep before it (whose resolves stand: each is unique per
  // incident, channel and action).
  const bool resolved =
      c.resolved_id.has_value() && done.size() > resolve_at && done[resolve_at].meta.changes == 1;
  co_return resolved;
}

Task<Result<std::vector<OrphanedIncident>>> MonitorStore::orphaned_incidents(
    const std::string& tenant, int limit) const {
  json params = json::array({tenant, limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kOrphanedIncidents, params));
  co_return r.as<OrphanedIncident>();
}

Task<Result<std::vector<AlertRow>>> MonitorStore::triggers_of(
    const std::string& tenant, const std::string& incident_id) const {
  json params = json::array({tenant, incident_id});
  SS_CO_TRY(D1Result r, co_await db_.all(kTriggersOf, params));
  co_return r.as<AlertRow>();
}

Task<Result<bool>> MonitorStore::close_incident(const IncidentClose& c) const {
  const std::string at = format_rfc3339(c.at_ms);
  std::vector<D1Statement> batch{
      {std::string(kResolveIncident), json::array({c.key.tenant_id, c.incident_id, at})},
      {std::string(kForgetMonitorIncident),
       json::array({c.key.tenant_id, c.key.monitor_id, c.incident_id})}};
  add_alert_rows(batch, c.key, c.incident_id, c.alerts, format_rfc3339_ms(c.at_ms));
  SS_CO_TRY(std::vector<D1Result> r, co_await db_.batch(batch));
  // Another sweep may have closed it first: its alerts stand (each is unique per incident, channel
  // and action), and this one reports nothing.
  co_return !r.empty() && r[0].meta.changes == 1;
}

Task<Status> MonitorStore::forget_disabled_tenant_failures() const {
  SS_CO_TRY(D1Result ignored, co_await db_.run(kForgetDisabledTenantFailures, json::array()));
  co_return Unit{};
}

Task<Result<std::optional<IncidentRow>>> MonitorStore::incident(
    const std::string& tenant, const std::string& incident_id) const {
  json params = json::array({tenant, incident_id});
  SS_CO_TRY(D1Result r, co_await db_.first(kFindIncident, params));
  co_return r.first_as<IncidentRow>();
}

Task<Result<std::vector<IncidentRow>>> MonitorStore::current_incidents(
    const std::string& tenant) const {
  json params = json::array({tenant});
  SS_CO_TRY(D1Result r, co_await db_.all(kCurrentIncidents, params));
  co_return r.as<IncidentRow>();
}

Task<Result<std::vector<IncidentRow>>> MonitorStore::recent_incidents(const std::string& tenant,
                                                                      const std::string& since,
                                                                      int limit) const {
  json params = json::array({tenant, since, limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kRecentIncidents, params));
  co_return r.as<IncidentRow>();
}

Task<Result<std::optional<AlertRow>>> MonitorStore::alert(const std::string& alert_id) const {
  json params = json::array({alert_id});
  SS_CO_TRY(D1Result r, co_await db_.first(kFindAlert, params));
  co_return r.first_as<AlertRow>();
}

Task<Result<bool>> MonitorStore::claim_alert(const std::string& alert_id, std::int64_t now_ms,
                                             std::int64_t lease_until_ms,
                                             const std::string& now) const {
  json params = json::array({alert_id, now_ms, lease_until_ms, now});
  SS_CO_TRY(D1Result r, co_await db_.run(kClaimAlert, params));
  co_return r.meta.changes == 1;
}

Task<Result<bool>> MonitorStore::alert_sent(const std::string& alert_id,
                                            std::int64_t lease_until_ms,
                                            const std::string& now) const {
  json params = json::array({alert_id, now, lease_until_ms});
  SS_CO_TRY(D1Result r, co_await db_.run(kAlertSent, params));
  co_return r.meta.changes == 1;
}

Task<Result<bool>> MonitorStore::alert_failed(const std::string& alert_id, const std::string& error,
                                              bool dead, std::int64_t lease_until_ms,
                                              const std::string& now) const {
  json params = json::array({alert_id, error, dead ? "dead" : "pending", now, lease_until_ms});
  SS_CO_TRY(D1Result r, co_await db_.run(kAlertFailed, params));
  co_return r.meta.changes == 1;
}

Task<Result<bool>> MonitorStore::give_up_alert(const std::string& alert_id,
                                               const std::string& error, std::int64_t now_ms,
                                               const std::string& now) const {
  json params = json::array({alert_id, error, now, now_ms});
  SS_CO_TRY(D1Result r, co_await db_.run(kGiveUpAlert, params));
  co_return r.meta.changes == 1;
}

Task<Result<std::vector<AlertRow>>> MonitorStore::stale_alerts(const std::string& before,
                                                               int limit) const {
  json params = json::array({before, limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kStaleAlerts, params));
  co_return r.as<AlertRow>();
}

Task<Result<std::vector<AlertRow>>> MonitorStore::alerts_of(const std::string& tenant,
                                                            const std::string& id,
                                                            int limit) const {
  json params = json::array({tenant, id, limit});
  SS_CO_TRY(D1Result r, co_await db_.all(kAlertsOf, params));
  co_return r.as<AlertRow>();
}

Task<Result<std::map<std::string, MonitorStats>>> MonitorStore::raw_stats(
    const std::string& tenant, std::int64_t since_ms) const {
  json params = json::array({tenant, since_ms});
  SS_CO_TRY(D1Result r, co_await db_.all(kRawStats, params));
  co_return stats_map(r);
}

Task<Result<std::map<std::string, MonitorStats>>> MonitorStore::day_stats(
    const std::string& tenant, const std::string& since_day) const {
  json params = json::array({tenant, since_day});
  SS_CO_TRY(D1Result r, co_await db_.all(kDayStats, params));
  co_return stats_map(r);
}

Task<Result<std::vector<DayRollup>>> MonitorStore::days(const std::string& tenant,
                                                        const std::string& since_day) const {
  struct Row {
    DayRollup d;
    static Row decode(RowReader& r) {
      Row row;
      row.d.monitor_id = r.text("monitor_id");
      row.d.day = r.text("day");
      row.d.checks = r.integer("checks");
      row.d.failures = r.integer("failures");
      json h = r.json_text("hist_json");
      if (h.is_array()) {
        for (const json& v : h)
          row.d.histogram.push_back(v.is_number_integer() ? v.get<std::int64_t>() : 0);
      }
      return row;
    }
  };
  json params = json::array({tenant, since_day});
  SS_CO_TRY(D1Result r, co_await db_.all(kDays, params));
  SS_CO_TRY(std::vector<Row> rows, r.as<Row>());
  std::vector<DayRollup> out;
  out.reserve(rows.size());
  for (auto& row : rows) out.push_back(std::move(row.d));
  co_return out;
}

Task<Result<std::int64_t>> MonitorStore::prune(std::int64_t before_ms,
                                               const std::string& before_day, int limit) const {
  std::vector<D1Statement> batch{{std::string(kPruneProbes), json::array({before_ms, limit})},
                                 {std::string(kPruneDays), json::array({before_day, limit})}};
  SS_CO_TRY(std::vector<D1Result> r, co_await db_.batch(batch));
  std::int64_t n = 0;
  for (const auto& x : r) n += x.meta.changes;
  co_return n;
}

}  // namespace ss::monitoring
