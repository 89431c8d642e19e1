// timeline_indexer's materialized entity lists and GET /api/entities/{type}/{id}/timeline, through
// the native mesh on real SQLite: one entry per event however often a window is replayed, the
// not-yet-indexed tail read live, paging across the indexed/tail boundary, tenant scoping, and
// retention (a redacted event's entry keeps nothing of its payload).
#include "workers/events/timeline_indexer.h"

#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "tests/native/harness.h"
#include "workers/events/test_ledger.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <vector>

using ss::json;
using ss::native::Mesh;
using namespace ss::events::testing;

namespace timeline_test {

constexpr const char* kAutoToken = "auto-token-0123456789";

struct Timeline {
  Ledger l;
  Timeline() { l.mesh.provision("auto-repair", kAutoToken, "auto-admin-0123456789", {}, "events"); }

  std::string emit_as(const std::string& tenant, const std::string& token, const std::string& type,
                      const std::string& ref, const json& payload = json::object()) {
    auto h = Mesh::tenant_headers(tenant, token);
    h["Content-Type"] = "application/json";
    auto r = l.mesh.request("events", "POST", "/api/events", h,
                            json{{"event_type", type},
                                 {"entity_ref", ref},
                                 {"payload", payload.is_null() ? json::object() : payload}}
                                .dump());
    REQUIRE(r.status == 201);
    l.mesh.now_ms += 1;
    return r.body_json()["event_id"];
  }
  ss::native::HttpReply get(const std::string& path_and_query, const std::string& tenant = "bakery",
                            const std::string& token = kToken) {
    return l.mesh.request("events", "GET", path_and_query, Mesh::tenant_headers(tenant, token));
  }
  json page(const std::string& path_and_query) {
    auto r = get(path_and_query);
    REQUIRE(r.status == 200);
    return r.body_json();
  }
  // Every event_id of the timeline, page after page of `limit` (asc or desc), following `next`.
  std::vector<std::string> walk(const std::string& entity, int limit, const std::string& order) {
    std::vector<std::string> ids;
    std::string after;
    for (int guard = 0; guard < 100; ++guard) {
      std::string q = "/api/entities/" + entity + "/timeline?limit=" + std::to_string(limit) +
                      "&order=" + order + (after.empty() ? "" : "&after=" + after);
      json p = page(q);
      for (const json& e : p["events"]) ids.push_back(e["event_id"]);
      if (p["next"].is_null()) break;
      after = p["next"];
    }
    return ids;
  }
  std::int64_t entries() {
    return l.db("SELECT COUNT(*) AS n FROM entity_timeline_entries")[0]["n"].get<std::int64_t>();
  }
};

std::vector<std::string> ids_of(const json& page) {
  std::vector<std::string> out;
  for (const json& e : page["events"]) out.push_back(e["event_id"]);
  return out;
}

std::string slurp_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace timeline_test

using timeline_test::ids_of;
using timeline_test::Timeline;

TEST_CASE("timeline_title: the event type in words, never the payload") {
  CHECK(ss::events::timeline_title("lead.received") == "Lead received");
  CHECK(ss::events::timeline_title("workflow.run_failed") == "Workflow run failed");
  CHECK(ss::events::timeline_title("events.tombstoned") == "Events tombstoned");
}

TEST_CASE("timeline_indexer writes one entry per event, and a replay adds none") {
  Timeline t;
  std::vector<std::string> ids = {
      t.l.emit("lead.received", {{"name", "Jane"}}, "lead:L1"),
      t.l.emit("lead.delivered", {}, "lead:L1"),
      t.l.emit("workflow.run_failed", {}, "lead:L1"),
      t.l.emit("price.changed", {}, "item:7"),
  };
  CHECK(t.entries() == 0);
  CHECK(t.l.drain("timeline_indexer")["read"] == 4);
  json rows =
      t.l.db("SELECT * FROM entity_timeline_entries WHERE entity_type = 'lead' ORDER BY seq");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["event_id"] == ids[0]);
  CHECK(rows[0]["tenant_key"] == "bakery");
  CHECK(rows[0]["entity_id"] == "L1");
  CHECK(rows[0]["title"] == "Lead received");
  CHECK(rows[2]["title"] == "Workflow run failed");
  CHECK(rows[0]["recorded_at"].get<std::string>().size() > 0);
  CHECK(t.entries() == 4);
  // Nothing new: nothing written. A replay of the whole window: read again, written once.
  CHECK(t.l.drain("timeline_indexer")["read"] == 0);
  REQUIRE(t.l.admin("POST", "/admin/consumers/timeline_indexer/replay", {{"from_event_id", ids[0]}})
              .status == 200);
  CHECK(t.l.drain("timeline_indexer")["read"] == 4);
  CHECK(t.entries() == 4);
  json page = t.page("/api/entities/lead/L1/timeline");
  CHECK(ids_of(page) == std::vector<std::string>{ids[0], ids[1], ids[2]});
  CHECK(page["summary"]["event_count"] == 3);  // the summary is not double-counted either
  // Shown as the events show their times: a ledger stamp without ".000".
  CHECK(page["summary"]["last_occurred_at"] == page["events"][2]["occurred_at"]);
  CHECK(page["summary"]["last_occurred_at"].get<std::string>().find('.') == std::string::npos);
  // The keys an existing caller reads are all there, plus title and indexed; seq (the ledger-wide
  // order, whose gaps would count other tenants' events) only on the operator's page.
  const json& first = page["events"][0];
  for (const char* key :
       {"event_id", "tenant_id", "event_type", "entity_type", "entity_id", "entity_ref", "payload",
        "idempotency_key", "caused_by", "workflow_run_id", "source_system", "occurred_at",
        "recorded_at", "sequence_no", "title", "indexed"}) {
    CHECK_MESSAGE(first.contains(key), key);
  }
  CHECK_FALSE(first.contains("seq"));
  auto across = t.l.admin("GET", "/api/entities/lead/L1/timeline");
  REQUIRE(across.status == 200);
  CHECK(across.body_json()["events"][0]["seq"] ==
        t.l.db("SELECT seq FROM events WHERE event_id = '" + ids[0] + "'")[0]["seq"]);
  CHECK(first["payload"] == json{{"name", "Jane"}});
  CHECK(first["indexed"] == true);
  CHECK(first["tenant_id"] == "bakery");
  CHECK(page["entity_ref"] == "lead:L1");
  CHECK(page["order"] == "asc");
}

TEST_CASE("the timeline shows events the indexer has not read yet, then the same list indexed") {
  Timeline t;
  std::string a = t.l.emit("lead.received", {}, "lead:L2");
  std::string b = t.l.emit("lead.delivered", {}, "lead:L2");
  json before = t.page("/api/entities/lead/L2/timeline");
  CHECK(ids_of(before) == std::vector<std::string>{a, b});
  CHECK(before["events"][0]["indexed"] == false);
  CHECK(before["events"][0]["title"] == "Lead received");
  CHECK(before["summary"].is_null());  // the summary is the indexer's: none yet
  CHECK(t.l.drain("timeline_indexer")["read"] == 2);
  json after = t.page("/api/entities/lead/L2/timeline");
  CHECK(ids_of(after) == std::vector<std::string>{a, b});
  CHECK(after["events"][0]["indexed"] == true);
  CHECK(after["events"][1]["title"] == "Lead delivered");
  // A view of the entry without its payload: the UI list.
  json list = t.page("/api/entities/lead/L2/timeline?payload=false");
  REQUIRE(list["events"].size() == 2);
  CHECK_FALSE(list["events"][0].contains("payload"));
  CHECK(list["events"][0]["title"] == "Lead received");
}

TEST_CASE(
    "paging across the indexed/tail boundary: no gap, no repeat, both orders, after a replay") {
  Timeline t;
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(t.l.emit("price.changed", {{"i", i}}, "item:9"));
  t.l.emit("price.changed", {}, "item:10");  // another entity of the same tenant
  CHECK(t.l.drain("timeline_indexer")["read"] == 6);
  for (int i = 5; i < 9; ++i) ids.push_back(t.l.emit("price.changed", {{"i", i}}, "item:9"));
  std::vector<std::string> reversed(ids.rbegin(), ids.rend());
  for (int limit : {1, 2, 3, 4, 500}) {
    CAPTURE(limit);
    CHECK(t.walk("item/9", limit, "asc") == ids);
    CHECK(t.walk("item/9", limit, "desc") == reversed);
  }
  // The page that crosses the cursor: the last indexed entries, then the first live ones.
  json cross = t.page("/api/entities/item/9/timeline?limit=3&after=" + ids[2]);
  CHECK(ids_of(cross) == std::vector<std::string>{ids[3], ids[4], ids[5]});
  CHECK(cross["events"][1]["indexed"] == true);
  CHECK(cross["events"][2]["indexed"] == false);
  CHECK(cross["next"] == ids[5]);
  // The last page, full (9 entries, 3 to a page): no cursor to an empty page, either order.
  json last = t.page("/api/entities/item/9/timeline?limit=3&after=" + ids[5]);
  CHECK(ids_of(last) == std::vector<std::string>{ids[6], ids[7], ids[8]});
  CHECK(last["next"].is_null());
  json whole = t.page("/api/entities/item/9/timeline?limit=9&order=desc");
  CHECK(ids_of(whole) == reversed);
  CHECK(whole["next"].is_null());
  // A replay moves the cursor back over entries already written: still each event once.
  REQUIRE(t.l.admin("POST", "/admin/consumers/timeline_indexer/replay", {{"from_event_id", ids[1]}})
              .status == 200);
  CHECK(t.walk("item/9", 2, "asc") == ids);
  CHECK(t.walk("item/9", 3, "desc") == reversed);
  CHECK(t.l.drain("timeline_indexer")["read"] == 9);  // 4 re-read + the other entity + 4 new
  CHECK(t.walk("item/9", 2, "asc") == ids);
  CHECK(t.entries() == 10);
  // A cursor that is not an event of this entity is refused (400 naming `after`), neither the
  // whole list again nor an empty page that would read as "nothing after it".
  auto unknown = t.get("/api/entities/item/9/timeline?after=01J00000000000000000000000");
  CHECK(unknown.status == 400);
  CHECK(unknown.body_json()["error"]["fields"]["after"].is_string());
  auto foreign =
      t.get("/api/entities/item/9/timeline?after=" + ids_of(t.page("/api/entities/item/10/"
                                                                   "timeline"))[0]);
  CHECK(foreign.status == 400);
  CHECK(foreign.body_json()["error"]["field"] == "after");
}

TEST_CASE("another tenant's entity never appears in a tenant's timeline") {
  Timeline t;
  std::string mine = t.l.emit("lead.received", {}, "lead:L1");
  std::string theirs = t.emit_as("auto-repair", timeline_test::kAutoToken, "lead.received",
                                 "lead:L1", {{"name", "Other"}});
  std::string mine_live;
  for (bool indexed : {false, true}) {
    CAPTURE(indexed);
    if (indexed) {
      CHECK(t.l.drain("timeline_indexer")["read"] == 2);
      mine_live = t.l.emit("lead.delivered", {}, "lead:L1");
    }
    std::vector<std::string> expected = {mine};
    if (!mine_live.empty()) expected.push_back(mine_live);
    CHECK(ids_of(t.page("/api/entities/lead/L1/timeline")) == expected);
    CHECK(ids_of(t.page("/api/entities/lead/L1/timeline?order=desc")).size() == expected.size());
    // The other tenant's cursor is not a position in this tenant's timeline: refused, as an
    // unknown one is.
    CHECK(t.get("/api/entities/lead/L1/timeline?after=" + theirs).status == 400);
    auto other = t.get("/api/entities/lead/L1/timeline", "auto-repair", timeline_test::kAutoToken);
    REQUIRE(other.status == 200);
    CHECK(ids_of(other.body_json()) == std::vector<std::string>{theirs});
    // The operator: one tenant with ?tenant=, every tenant without it.
    auto op = t.l.admin("GET", "/api/entities/lead/L1/timeline?tenant=auto-repair");
    REQUIRE(op.status == 200);
    CHECK(ids_of(op.body_json()) == std::vector<std::string>{theirs});
    auto all = t.l.admin("GET", "/api/entities/lead/L1/timeline");
    REQUIRE(all.status == 200);
    CHECK(all.body_json()["events"].size() == expected.size() + 1);
  }
  // No tenant token, a wrong one: refused as before.
  CHECK(t.l.mesh.request("events", "GET", "/api/entities/lead/L1/timeline").status == 401);
  CHECK(t.get("/api/entities/lead/L1/timeline", "bakery", "wrong-token-0123456789").status == 401);
}

TEST_CASE("the operator pages an entity across tenants that share an event_id, each event once") {
  // event_ids are unique per tenant only: two tenants may send the same producer id for one entity.
  // The operator's `next` without ?tenant= used to be the bare id, which names both events: paging
  // oldest first never ended (the second event again and again), newest first skipped the first.
  Timeline t;
  const std::string shared_id = "01KA0000000000000000000001";
  auto emit_with_id = [&](const std::string& tenant, const std::string& token) {
    auto h = Mesh::tenant_headers(tenant, token);
    h["Content-Type"] = "application/json";
    auto r = t.l.mesh.request("events", "POST", "/api/events", h,
                              json{{"event_type", "lead.received"},
                                   {"entity_ref", "lead:L7"},
                                   {"event_id", shared_id},
                                   {"payload", json::object()}}
                                  .dump());
    REQUIRE(r.status == 201);
  };
  emit_with_id("bakery", kToken);
  emit_with_id("auto-repair", timeline_test::kAutoToken);
  for (bool indexed : {false, true}) {
    CAPTURE(indexed);
    if (indexed) CHECK(t.l.drain("timeline_indexer")["read"] == 2);
    for (const char* order : {"asc", "desc"}) {
      CAPTURE(order);
      std::vector<std::string> tenants;
      std::string after;
      for (int guard = 0; guard < 5; ++guard) {
        auto r = t.l.admin("GET", std::string("/api/entities/lead/L7/timeline?limit=1&order=") +
                                      order + (after.empty() ? "" : "&after=" + after));
        REQUIRE(r.status == 200);
        json p = r.body_json();
        for (const json& e : p["events"]) tenants.push_back(e["tenant_id"]);
        if (p["next"].is_null()) break;
        after = p["next"];
      }
      std::vector<std::string> expected = {"bakery", "auto-repair"};
      if (std::string(order) == "desc") std::swap(expected[0], expected[1]);
      CHECK(tenants == expected);
    }
  }
  // A tenant's own `next` stays the bare event_id (with another of its events after it: a last
  // page has no `next`).
  t.l.emit("lead.delivered", json::object(), "lead:L7");
  json mine = t.page("/api/entities/lead/L7/timeline?limit=1");
  CHECK(mine["next"] == shared_id);
}

TEST_CASE("a redacted event's timeline entry carries no payload text") {
  Timeline t;
  std::string indexed =
      t.l.emit("lead.received", {{"name", "Jane Roe"}, {"email", "jane@x.test"}}, "lead:L3");
  CHECK(t.l.drain("timeline_indexer")["read"] == 1);
  std::string tail = t.l.emit("lead.received", {{"name", "John Roe"}}, "lead:L3");
  t.l.mesh.now_ms += 731LL * ss::kMsPerDay;
  auto r = t.l.admin("POST", "/admin/events/retention");
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["redacted"] == 2);
  // The stored entries, every column: nothing of the payload.
  std::string stored = t.l.db("SELECT * FROM entity_timeline_entries").dump();
  CHECK(stored.find("Roe") == std::string::npos);
  CHECK(stored.find("jane@") == std::string::npos);
  for (const char* q : {"", "?payload=false", "?order=desc"}) {
    CAPTURE(q);
    std::string body = t.get(std::string("/api/entities/lead/L3/timeline") + q).body;
    CHECK(body.find("Roe") == std::string::npos);
    CHECK(body.find("jane@") == std::string::npos);
  }
  json page = t.page("/api/entities/lead/L3/timeline");
  REQUIRE(page["events"].size() == 2);
  CHECK(page["events"][0]["indexed"] == true);
  CHECK(page["events"][1]["indexed"] == false);
  CHECK(page["events"][0]["payload"] == json{{"_redacted", true}});
  CHECK(page["events"][1]["payload"] == json{{"_redacted", true}});
  CHECK(page["events"][0]["title"] == "Lead received");
  // Indexed after the redaction: the same.
  CHECK(t.l.drain("timeline_indexer")["read"] >= 1);
  CHECK(t.l.db("SELECT * FROM entity_timeline_entries").dump().find("Roe") == std::string::npos);
}

TEST_CASE("a timeline's `after` must name an event of that timeline: id and seq cross-checked") {
  // Paging on: bakery's item:9 (3 events), another entity of bakery's (item:10) and another
  // tenant's event on the same entity (auto-repair's item:9).
  Timeline t;
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(t.l.emit("price.changed", {{"i", i}}, "item:9"));
  std::string other_entity = t.l.emit("price.changed", {}, "item:10");
  std::string theirs =
      t.emit_as("auto-repair", timeline_test::kAutoToken, "price.changed", "item:9", {{"x", 1}});
  auto seq_of = [&](const std::string& id) {
    return std::to_string(
        t.l.db("SELECT seq FROM events WHERE event_id = '" + id + "'")[0]["seq"].get<long long>());
  };
  const std::string path = "/api/entities/item/9/timeline";
  // Every refusal is the same 400, whatever the cursor names (or whether it names anything):
  // the answer never tells that an id exists elsewhere.
  std::string refusal;
  auto refused = [&](const ss::native::HttpReply& r) {
    CHECK(r.status == 400);
    json error = r.body_json()["error"];
    CHECK(error["code"] == "invalid_request");
    CHECK(error["field"] == "after");
    CHECK(error["fields"]["after"].is_string());
    CHECK(r.body.find("\"x\":1") == std::string::npos);  // nothing of another tenant's event
    if (refusal.empty() && error["message"].is_string()) refusal = error["message"];
    CHECK(error["message"] == refusal);
  };
  for (bool indexed : {false, true}) {
    CAPTURE(indexed);
    if (indexed) CHECK(t.l.drain("timeline_indexer")["read"] == 5);
    refusal.clear();
    // A good cursor: the bare id; the page after it, each event once. A tenant's cursor never
    // carries a seq (its `next` is the bare id): the id with its own seq is refused like the others
    // below, so no seq can be probed.
    CHECK(ids_of(t.page(path + "?after=" + ids[0])) == std::vector<std::string>{ids[1], ids[2]});
    refused(t.get(path + "?after=" + ids[0] + "." + seq_of(ids[0])));
    CHECK(ids_of(t.page(path + "?after=" + ids[2] + "&order=desc")) ==
          std::vector<std::string>{ids[1], ids[0]});
    // The last event: an empty page, the end of the list (not a refusal).
    json end = t.page(path + "?after=" + ids[2]);
    CHECK(end["events"].empty());
    CHECK(end["next"].is_null());

    // Mismatched: an id with another event's seq, a seq no event has. Before: an empty page with
    // `next: null`, which a client reads as "nothing after it" (every later event skipped).
    refused(t.get(path + "?after=" + ids[0] + "." + seq_of(ids[1])));
    refused(t.get(path + "?after=" + ids[0] + ".999999"));
    refused(t.get(path + "?after=" + ids[1] + "." + seq_of(theirs)));
    // Another tenant's event on the same entity, bare or with its own seq; another entity's event;
    // an id no event has.
    refused(t.get(path + "?after=" + theirs));
    refused(t.get(path + "?after=" + theirs + "." + seq_of(theirs)));
    refused(t.get(path + "?after=" + other_entity));
    refused(t.get(path + "?after=01J00000000000000000000000"));
    // Garbage: not an event_id, or not `<event_id>.<seq>`.
    for (const std::string& bad :
         std::vector<std::string>{"nope", ids[0] + ".", ids[0] + ".x", ids[0] + ".-1", ".5",
                                  ids[0] + "." + seq_of(ids[0]) + ".1"}) {
      CAPTURE(bad);
      auto r = t.get(path + "?after=" + bad);
      CHECK(r.status == 400);
      CHECK(r.body_json()["error"]["code"] == "invalid_request");
      CHECK(r.body_json()["error"]["fields"]["after"].is_string());
    }

    // The operator: across tenants `next` is `<event_id>.<seq>`, and paging on it reads every
    // tenant's event once; with ?tenant= a cursor of that tenant's only.
    auto first = t.l.admin("GET", path + "?limit=1");
    REQUIRE(first.status == 200);
    std::string next = first.body_json()["next"];
    CHECK(next == ids[0] + "." + seq_of(ids[0]));
    auto rest = t.l.admin("GET", path + "?after=" + next);
    REQUIRE(rest.status == 200);
    CHECK(ids_of(rest.body_json()) == std::vector<std::string>{ids[1], ids[2], theirs});
    CHECK(t.l.admin("GET", path + "?tenant=auto-repair&after=" + theirs).status == 200);
    refused(t.l.admin("GET", path + "?tenant=bakery&after=" + theirs));
    refused(t.l.admin("GET", path + "?after=" + theirs + "." + seq_of(ids[0])));
    // The cross-check of an id with its seq, now that only the operator may send a seq.
    refused(t.l.admin("GET", path + "?after=" + ids[0] + "." + seq_of(ids[1])));
    refused(t.l.admin("GET", path + "?after=" + ids[0] + ".999999"));
    CHECK(t.l.admin("GET", path + "?after=" + ids[0] + "." + seq_of(ids[0])).status == 200);
  }
}

TEST_CASE("the timeline's query parameters are checked") {
  Timeline t;
  t.l.emit("lead.received", {}, "lead:L1");
  for (const char* q : {"order=sideways", "payload=maybe", "limit=0", "limit=501", "after=nope"}) {
    CAPTURE(q);
    auto r = t.get(std::string("/api/entities/lead/L1/timeline?") + q);
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["code"] == "invalid_request");
    CHECK(r.body_json()["error"]["field"].is_string());
  }
}

TEST_CASE("migration 0007's backfill writes the entries the indexer writes") {
  // A ledger migrated with events already indexed gets their entries from the migration; its SQL
  // title must be the indexer's.
  Timeline t;
  t.l.emit("lead.received", {}, "lead:L1");
  t.l.emit("workflow.run_failed", {}, "workflow:notify");
  t.emit_as("auto-repair", timeline_test::kAutoToken, "monitor.incident_opened", "monitor:home");
  CHECK(t.l.drain("timeline_indexer")["read"] == 3);
  t.l.emit("price.changed", {}, "item:1");  // after the cursor: not backfilled
  const std::string all = "SELECT * FROM entity_timeline_entries ORDER BY seq";
  json written = t.l.db(all);
  REQUIRE(written.size() == 3);
  t.l.db("DELETE FROM entity_timeline_entries");
  std::string migration = timeline_test::slurp_file(std::string(SS_SOURCE_DIR) +
                                                    "/migrations/events/0007_timeline_entries.sql");
  auto at = migration.find("INSERT OR IGNORE INTO entity_timeline_entries");
  REQUIRE(at != std::string::npos);
  t.l.db(migration.substr(at));
  CHECK(t.l.db(all) == written);
}
