// The ledger's write and read paths through the native mesh.
#include "shared/emit.h"
#include "shared/json_util.h"
#include "shared/ulid.h"
#include "tests/native/harness.h"
#include "tests/native/test_support.h"
#include "workers/events/json_schema.h"
#include "workers/events/ledger.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

using ss::json;
using ss::native::Mesh;
using ss::test::kAutoToken;
using ss::test::kBakeryToken;

namespace {

struct ApiLedger {
  Mesh mesh;
  ApiLedger() {
    mesh.provision("bakery", kBakeryToken, "bakery-admin-0123456789", {}, "events");
    mesh.provision("auto-repair", kAutoToken, "auto-admin-0123456789", {}, "events");
  }
  ss::native::HttpReply post(const std::string& tenant, const std::string& token,
                             const json& body) {
    auto h = Mesh::tenant_headers(tenant, token);
    h["Content-Type"] = "application/json";
    return mesh.request("events", "POST", "/api/events", h, body.dump());
  }
  ss::native::HttpReply get(const std::string& tenant, const std::string& token,
                            const std::string& q) {
    return mesh.request("events", "GET", "/api/events" + q, Mesh::tenant_headers(tenant, token));
  }
  json rows() { return mesh.db("EVENTS_DB").rows("SELECT * FROM events ORDER BY event_id"); }
};

// A 400 invalid_event naming `field`, for the posted `what` (a key, a type).
void check_refused(const ss::native::HttpReply& r, const char* field, const std::string& what) {
  CHECK_MESSAGE(r.status == 400, what);
  CHECK(r.body_json()["error"]["code"] == "invalid_event");
  CHECK(r.body_json()["error"]["field"] == field);
}

json price_event(int amount) {
  return json{{"event_type", "price.changed"},
              {"entity_ref", "item:10472"},
              {"payload", {{"old_price", 1.42}, {"amount", amount}}}};
}
// The queue message the leads worker sends for a lead (shared/emit.cpp event_message).
json lead_received_message(std::int64_t now_ms) {
  ss::EventDraft draft;
  draft.event_type = "lead.received";
  draft.entity_ref = "lead:01JH0000000000000000000001";
  draft.tenant_id = "bakery";
  draft.payload = {{"channel", "form"}};
  return ss::event_message(draft, "01JH0000000000000000000009", "siteswarm-leads-service", now_ms);
}
}  // namespace

TEST_CASE("the same idempotency key emitted 5 times is one event") {
  ApiLedger l;
  json body = price_event(1);
  body["idempotency_key"] = "bid-B5875";
  auto first = l.post("bakery", kBakeryToken, body);
  REQUIRE(first.status == 201);
  std::string id = first.body_json()["event_id"];
  CHECK(ss::is_ulid(id));
  for (int i = 0; i < 4; ++i) {
    auto again = l.post("bakery", kBakeryToken, body);
    CHECK(again.status == 200);
    CHECK(again.body_json() == json{{"event_id", id}, {"duplicate", true}});
  }
  CHECK(l.rows().size() == 1);
  // Keys are per tenant: another tenant's identical key is its own event.
  CHECK(l.post("auto-repair", kAutoToken, body).status == 201);
  CHECK(l.rows().size() == 2);
}

TEST_CASE("an emit is one D1 round trip, two when its type has a schema to check first") {
  ApiLedger l;
  auto d1_calls = [&] { return l.mesh.take_effects("d1."); };
  REQUIRE(l.post("bakery", kBakeryToken, price_event(0)).status == 201);  // the tenant row, cached
  d1_calls();

  json keyed = price_event(1);
  keyed["idempotency_key"] = "k-1";
  auto first = l.post("bakery", kBakeryToken, keyed);
  REQUIRE(first.status == 201);
  CHECK(d1_calls() == 1);
  auto again = l.post("bakery", kBakeryToken, keyed);
  CHECK(again.status == 200);
  CHECK(again.body_json() ==
        json{{"event_id", first.body_json()["event_id"]}, {"duplicate", true}});
  CHECK(d1_calls() == 1);

  // A producer's own id sent again: ignored by the insert, then found as that event.
  json own = price_event(2);
  own["event_id"] = "01JH0000000000000000000042";
  REQUIRE(l.post("bakery", kBakeryToken, own).status == 201);
  auto redelivered = l.post("bakery", kBakeryToken, own);
  CHECK(redelivered.status == 200);
  CHECK(redelivered.body_json()["event_id"] == "01JH0000000000000000000042");
  CHECK(l.rows().size() == 3);
  // A duplicate is not even attempted: an ignored INSERT would still draw a seq (AUTOINCREMENT).
  CHECK(l.mesh.db("EVENTS_DB").rows("SELECT seq FROM sqlite_sequence WHERE name = 'events'") ==
        json::array({{{"seq", 3}}}));

  l.mesh.db("EVENTS_DB")
      .rows(
          "INSERT INTO events_schema (event_type, schema_json, updated_at) VALUES "
          "('code.changed', '{\"required\":[\"code\"]}', '2026-01-01T00:00:00Z')");
  d1_calls();
  json coded{{"event_type", "code.changed"}, {"entity_ref", "item:1"}, {"payload", json::object()}};
  CHECK(l.post("bakery", kBakeryToken, coded).status == 422);  // nothing written before the check
  CHECK(d1_calls() == 1);
  CHECK(l.rows().size() == 3);
  coded["payload"] = {{"code", "A1"}};
  coded["idempotency_key"] = "k-2";
  auto checked = l.post("bakery", kBakeryToken, coded);
  CHECK(checked.status == 201);
  CHECK(d1_calls() == 2);
  CHECK(l.post("bakery", kBakeryToken, coded).body_json() ==
        json{{"event_id", checked.body_json()["event_id"]}, {"duplicate", true}});
  CHECK(d1_calls() == 1);
  CHECK(l.rows().size() == 4);
}

TEST_CASE("events are stamped with the caller's tenant, and reads see only their own") {
  ApiLedger l;
  json spoof = price_event(2);
  spoof["tenant_id"] = "auto-repair";
  REQUIRE(l.post("bakery", kBakeryToken, spoof).status == 201);
  REQUIRE(l.post("auto-repair", kAutoToken, price_event(3)).status == 201);
  json rows = l.rows();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["tenant_id"] == "bakery");
  CHECK(rows[1]["tenant_id"] == "auto-repair");

  auto mine = l.get("bakery", kBakeryToken, "");
  REQUIRE(mine.status == 200);
  json events = mine.body_json()["events"];
  REQUIRE(events.size() == 1);
  CHECK(events[0]["tenant_id"] == "bakery");
  CHECK(events[0]["payload"]["amount"] == 2);
  CHECK(events[0]["entity_ref"] == "item:10472");
}

TEST_CASE("a tenant id without its token writes nothing") {
  ApiLedger l;
  auto r = l.post("auto-repair", kBakeryToken, price_event(1));
  CHECK(r.status == 401);
  CHECK(r.body_json()["error"]["code"] == "unauthenticated_tenant");
  auto h = std::map<std::string, std::string>{{"X-SiteSwarm-Tenant-Id", "bakery"},
                                              {"Content-Type", "application/json"}};
  CHECK(l.mesh.request("events", "POST", "/api/events", h, price_event(1).dump()).status == 401);
  CHECK(l.rows().empty());
}

TEST_CASE("reads filter by glob, entity and cursor") {
  ApiLedger l;
  const char* types[] = {"price.changed", "price.bid_line_changed", "lead.received", "pricex.y"};
  for (const char* t : types) {
    json b = price_event(1);
    b["event_type"] = t;
    REQUIRE(l.post("bakery", kBakeryToken, b).status == 201);
    l.mesh.now_ms += 1;
  }
  auto count = [&](const std::string& q) {
    auto r = l.get("bakery", kBakeryToken, q);
    REQUIRE(r.status == 200);
    return r.body_json()["events"].size();
  };
  CHECK(count("?type=price.*") == 2);
  CHECK(count("?type=*") == 4);
  CHECK(count("?type=price.bid_line_*") == 1);  // '_' is literal, not a LIKE wildcard
  CHECK(count("?type=*.changed") == 1);
  CHECK(count("?type=*changed") == 2);
  CHECK(count("?entity=item:10472") == 4);
  CHECK(count("?entity=item:1") == 0);
  CHECK(count("?entity=item") == 4);  // a bare type: every entity of it

  auto page1 = l.get("bakery", kBakeryToken, "?limit=3").body_json();
  REQUIRE(page1["events"].size() == 3);
  REQUIRE(page1["next"].is_string());
  auto page2 = l.get("bakery", kBakeryToken, "?limit=3&after=" + page1["next"].get<std::string>())
                   .body_json();
  CHECK(page2["events"].size() == 1);
  CHECK(page2["next"].is_null());
  CHECK(page2["events"][0]["event_type"] == "pricex.y");

  // A full page that is the last one has no cursor (the read goes one row past the page), whether
  // the host holds the views or sends them to the core; the extra row is never shown.
  for (bool hold : {true, false}) {
    CAPTURE(hold);
    l.mesh.hold_columns = hold;
    for (const char* order : {"asc", "desc"}) {
      CAPTURE(order);
      json all = l.get("bakery", kBakeryToken, std::string("?limit=4&order=") + order).body_json();
      CHECK(all["events"].size() == 4);
      CHECK(all["next"].is_null());
      json half = l.get("bakery", kBakeryToken, std::string("?limit=2&order=") + order).body_json();
      REQUIRE(half["events"].size() == 2);
      CHECK(half["next"] == half["events"][1]["event_id"]);
      json rest = l.get("bakery", kBakeryToken,
                        std::string("?limit=2&order=") + order +
                            "&after=" + half["next"].get<std::string>())
                      .body_json();
      CHECK(rest["events"].size() == 2);
      CHECK(rest["next"].is_null());
      CHECK(rest["events"][0]["event_id"] == all["events"][2]["event_id"]);
    }
  }
}

TEST_CASE("reads page in insertion order: an event with a late producer id is on the next page") {
  ApiLedger l;
  auto ids = [](const json& page) {
    std::vector<std::string> out;
    for (const json& e : page["events"]) out.push_back(e["event_id"]);
    return out;
  };
  REQUIRE(l.post("bakery", kBakeryToken, price_event(1)).status == 201);
  l.mesh.now_ms += 1;
  REQUIRE(l.post("bakery", kBakeryToken, price_event(2)).status == 201);
  l.mesh.now_ms += 1;
  json first = l.get("bakery", kBakeryToken, "").body_json();
  REQUIRE(first["events"].size() == 2);
  const std::string cursor = first["events"][1]["event_id"];
  // A producer's late event: its id sorts before everything the reader has already seen.
  const std::string late_id = "01H00000000000000000000000";
  json late = price_event(3);
  late["event_id"] = late_id;
  REQUIRE(l.post("bakery", kBakeryToken, late).status == 201);
  json next = l.get("bakery", kBakeryToken, "?after=" + cursor).body_json();
  CHECK(ids(next) == std::vector<std::string>{late_id});
  CHECK(next["next"].is_null());
  // The default is ascending; desc is its reverse; both in insertion order.
  std::vector<std::string> asc = ids(l.get("bakery", kBakeryToken, "?order=asc").body_json());
  CHECK(asc == std::vector<std::string>{first["events"][0]["event_id"], cursor, late_id});
  std::vector<std::string> desc = ids(l.get("bakery", kBakeryToken, "?order=desc").body_json());
  CHECK(desc == std::vector<std::string>{late_id, cursor, first["events"][0]["event_id"]});
  // Pages of one: every event exactly once.
  std::vector<std::string> walked;
  std::string after;
  for (int i = 0; i < 5; ++i) {
    json page = l.get("bakery", kBakeryToken, "?limit=1" + (after.empty() ? "" : "&after=" + after))
                    .body_json();
    for (const std::string& id : ids(page)) walked.push_back(id);
    if (page["next"].is_null()) break;
    after = page["next"];
  }
  CHECK(walked == asc);
  // An id the ledger does not hold (a client's own "since" ULID) starts at the first insertion of
  // the smallest id after it; one after every id is past the end.
  CHECK(ids(l.get("bakery", kBakeryToken, "?after=01H00000000000000000000001").body_json()) == asc);
  CHECK(l.get("bakery", kBakeryToken, "?after=7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
            .body_json()["events"]
            .empty());
}

TEST_CASE(
    "an operator's pages across tenants: an event_id two tenants hold is one position each, every "
    "event once; a since-ULID cursor loses nothing") {
  ApiLedger l;
  std::map<std::string, std::string> op{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken}};
  const std::string shared_id = "01H00000000000000000000005";
  json e = price_event(1);
  e["event_id"] = shared_id;
  REQUIRE(l.post("bakery", kBakeryToken, e).status == 201);
  l.mesh.now_ms += 1;
  REQUIRE(l.post("bakery", kBakeryToken, price_event(2)).status == 201);
  l.mesh.now_ms += 1;
  REQUIRE(l.post("auto-repair", kAutoToken, e).status == 201);  // the same id, its own event
  l.mesh.now_ms += 1;
  REQUIRE(l.post("auto-repair", kAutoToken, price_event(3)).status == 201);
  auto page = [&](const std::string& q) {
    auto r = l.mesh.request("events", "GET", "/api/events" + q, op);
    REQUIRE(r.status == 200);
    return r.body_json();
  };
  const std::size_t all = page("")["events"].size();
  REQUIRE(all == 4);
  for (const char* order : {"asc", "desc"}) {
    CAPTURE(order);
    std::vector<json> walked;
    std::string after;
    for (int i = 0; i < 10; ++i) {
      json p =
          page(std::string("?limit=1&order=") + order + (after.empty() ? "" : "&after=" + after));
      for (const json& ev : p["events"]) walked.push_back(ev);
      if (p["next"].is_null()) break;
      after = p["next"];
      // Across tenants the cursor carries its position: "<event_id>.<seq>".
      CHECK(after.find('.') == 26);
    }
    REQUIRE(walked.size() == all);
    std::set<std::string> distinct;
    for (const json& ev : walked)
      distinct.insert(ev["tenant_id"].get<std::string>() + "/" + ev["event_id"].get<std::string>());
    CHECK(distinct.size() == all);
  }
  // A tenant's cursor is its plain event_id (unique per tenant).
  json tenant_page = l.get("bakery", kBakeryToken, "?limit=1").body_json();
  CHECK(tenant_page["next"] == tenant_page["events"][0]["event_id"]);
  // A cursor of the wrong shape names the field.
  for (const char* bad : {"?after=01H00000000000000000000005.x", "?after=.5", "?after=nope.5"}) {
    CAPTURE(bad);
    auto r = l.mesh.request("events", "GET", std::string("/api/events") + bad, op);
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["field"] == "after");
  }
}

TEST_CASE("a since-ULID cursor the ledger does not hold starts early enough to lose nothing") {
  ApiLedger l;
  // Z is inserted before M although its id sorts after M's: a reader asking for everything after K
  // (K < M < Z) gets both.
  json z = price_event(1);
  z["event_id"] = "01H0000000000000000000000Z";
  json m = price_event(2);
  m["event_id"] = "01H0000000000000000000000M";
  REQUIRE(l.post("bakery", kBakeryToken, z).status == 201);
  l.mesh.now_ms += 1;
  REQUIRE(l.post("bakery", kBakeryToken, m).status == 201);
  json p = l.get("bakery", kBakeryToken, "?after=01H0000000000000000000000K").body_json();
  REQUIRE(p["events"].size() == 2);
  CHECK(p["events"][0]["event_id"] == z["event_id"]);
  CHECK(p["events"][1]["event_id"] == m["event_id"]);
}

TEST_CASE("invalid events and queries get the contract's clear errors, nothing written") {
  ApiLedger l;
  auto expect = [&](const json& body, int status, const std::string& code,
                    const std::string& field) {
    auto r = l.post("bakery", kBakeryToken, body);
    CHECK(r.status == status);
    json b = r.body_json();
    CHECK(b["error"]["code"] == code);
    if (!field.empty()) CHECK(b["error"]["field"] == field);
  };
  expect(json{{"entity_ref", "item:1"}}, 400, "invalid_event", "event_type");
  expect(json{{"event_type", "Price.Changed"}, {"entity_ref", "item:1"}}, 400, "invalid_event",
         "event_type");
  expect(json{{"event_type", "price"}, {"entity_ref", "item:1"}}, 400, "invalid_event",
         "event_type");
  expect(json{{"event_type", "price.changed"}, {"entity_ref", "item"}}, 400, "invalid_event",
         "entity_ref");
  expect(
      json{{"event_type", "price.changed"}, {"entity_ref", "item:1"}, {"payload", json::array()}},
      400, "invalid_event", "payload");
  // payload is required (the contract lists it without "?"): absent or null is a 400 naming it.
  expect(json{{"event_type", "price.changed"}, {"entity_ref", "item:1"}}, 400, "invalid_event",
         "payload");
  expect(json{{"event_type", "price.changed"}, {"entity_ref", "item:1"}, {"payload", nullptr}}, 400,
         "invalid_event", "payload");
  const json data = json::object();
  expect(json{{"event_type", "price.changed"},
              {"entity_ref", "item:1"},
              {"payload", data},
              {"event_id", "not-a-ulid"}},
         400, "invalid_event", "event_id");
  expect(json{{"event_type", "price.changed"},
              {"entity_ref", "item:1"},
              {"payload", data},
              {"occurred_at", "yesterday"}},
         400, "invalid_event", "occurred_at");
  expect(json{{"event_type", "price.changed"},
              {"entity_ref", "item:1"},
              {"payload", data},
              {"sequence_no", "x"}},
         400, "invalid_event", "sequence_no");
  // Past 2^53 - 1 a sequence number would come back changed through JavaScript's doubles.
  expect(json{{"event_type", "price.changed"},
              {"entity_ref", "item:1"},
              {"payload", data},
              {"sequence_no", std::int64_t{9007199254740992}}},
         400, "invalid_event", "sequence_no");
  expect(json{{"event_type", "price.changed"},
              {"entity_ref", "item:1"},
              {"payload", {{"blob", std::string(65 * 1024, 'x')}}}},
         413, "payload_too_large", "payload");
  auto h = Mesh::tenant_headers("bakery", kBakeryToken);
  h["Content-Type"] = "application/json";
  CHECK(l.mesh.request("events", "POST", "/api/events", h, "{\"event_type\":").status == 400);
  h["Content-Type"] = "text/plain";
  CHECK(l.mesh.request("events", "POST", "/api/events", h, price_event(1).dump()).status == 415);
  CHECK(l.rows().empty());

  auto bad_type = l.get("bakery", kBakeryToken, "?type=PRICE.*");
  CHECK(bad_type.status == 400);
  CHECK(bad_type.body_json()["error"]["fields"]["type"].is_string());
  CHECK(l.get("bakery", kBakeryToken, "?after=zzz").status == 400);
  CHECK(l.get("bakery", kBakeryToken, "?limit=0").status == 400);
  auto too_many = l.get("bakery", kBakeryToken, "?limit=501");
  CHECK(too_many.status == 400);
  // The contract's validation shape: "fields" names the parameter and its bounds.
  CHECK(too_many.body_json()["error"]["fields"]["limit"] == "must be 1–500");
}

TEST_CASE("producer-supplied ULIDs: kept, deduplicated per tenant") {
  ApiLedger l;
  json b = price_event(1);
  b["event_id"] = "01JH0000000000000000000000";
  CHECK(l.post("bakery", kBakeryToken, b).status == 201);
  auto again = l.post("bakery", kBakeryToken, b);
  CHECK(again.status == 200);
  CHECK(again.body_json()["duplicate"] == true);
  CHECK(l.rows().size() == 1);
  // Either case names the same ULID (the ULID spec); it is stored upper case.
  b["event_id"] = "01jh0000000000000000000000";
  auto lower = l.post("bakery", kBakeryToken, b);
  CHECK(lower.status == 200);
  CHECK(lower.body_json()["duplicate"] == true);
  b["event_id"] = "01jh0000000000000000000001";
  auto fresh = l.post("bakery", kBakeryToken, b);
  CHECK(fresh.status == 201);
  CHECK(fresh.body_json()["event_id"] == "01JH0000000000000000000001");
  CHECK(l.rows().size() == 2);
}

TEST_CASE("a producer's occurred_at reads back as sent (RFC 3339, no zero milliseconds added)") {
  ApiLedger l;
  l.mesh.now_ms += 250;  // the ledger's clock inside a second: its stamps drop the 250 ms
  json b = price_event(1);
  b["occurred_at"] = "2026-05-25T14:23:11Z";
  REQUIRE(l.post("bakery", kBakeryToken, b).status == 201);
  json offset = price_event(2);
  offset["occurred_at"] = "2026-05-25T16:23:11.250+02:00";  // normalised to UTC, milliseconds kept
  REQUIRE(l.post("bakery", kBakeryToken, offset).status == 201);
  json events = l.get("bakery", kBakeryToken, "?limit=10").body_json()["events"];
  REQUIRE(events.size() == 2);
  CHECK(events[0]["occurred_at"] == "2026-05-25T14:23:11Z");
  CHECK(events[1]["occurred_at"] == "2026-05-25T14:23:11.250Z");
  // Stored with milliseconds (fixed width, so stored times compare as strings).
  CHECK(l.rows()[0]["occurred_at"] == "2026-05-25T14:23:11.000Z");
  // The ledger's own stamp is whole seconds, written as the contract writes times.
  for (const json& e : events) {
    std::string recorded = e["recorded_at"];
    CHECK(recorded.size() == 20);
    CHECK(recorded.back() == 'Z');
  }
  CHECK(l.rows()[0]["recorded_at"].get<std::string>().substr(19) == ".000Z");
}

TEST_CASE("the operator may post platform-wide or for a tenant, and read across tenants") {
  ApiLedger l;
  auto op = std::map<std::string, std::string>{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
      {"Content-Type", "application/json"}};
  json platform = price_event(1);
  CHECK(l.mesh.request("events", "POST", "/api/events", op, platform.dump()).status == 201);
  platform["tenant_id"] = "bakery";
  CHECK(l.mesh.request("events", "POST", "/api/events", op, platform.dump()).status == 201);
  json all = l.mesh.request("events", "GET", "/api/events", op).body_json();
  REQUIRE(all["events"].size() == 2);
  CHECK(all["events"][0]["tenant_id"].is_null());
  json one = l.mesh.request("events", "GET", "/api/events?tenant=bakery", op).body_json();
  CHECK(one["events"].size() == 1);
  CHECK(l.get("bakery", kBakeryToken, "").body_json()["events"].size() == 1);
}

TEST_CASE("emit_event goes through the queue; redelivery lands once") {
  ApiLedger l;
  json body = lead_received_message(l.mesh.now_ms);
  json batch{{"op", "queue"},
             {"queue", "siteswarm-events"},
             {"messages",
              {{{"id", "m1"}, {"body", body}, {"attempts", 1}},
               {{"id", "m2"}, {"body", body}, {"attempts", 2}},
               {{"id", "m3"}, {"body", {{"event_type", "nope"}}}, {"attempts", 1}}}}};
  json out = l.mesh.message("events", batch);
  CHECK(out["ack"] == json::array({"m1", "m2", "m3"}));
  json rows = l.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["event_id"] == "01JH0000000000000000000009");
  CHECK(rows[0]["tenant_id"] == "bakery");
  CHECK(rows[0]["source_system"] == "siteswarm-leads-service");
}

TEST_CASE("a queued event its type's schema refuses is dropped with a log line, not retried") {
  ApiLedger l;
  json schema{{"type", "object"}, {"required", {"zzz_never"}}};
  std::map<std::string, std::string> op{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
      {"Content-Type", "application/json"}};
  REQUIRE(l.mesh
              .request("events", "PUT", "/admin/schemas/lead.received", op,
                       json{{"schema", schema}}.dump())
              .status == 201);
  json body = lead_received_message(l.mesh.now_ms);
  json batch{{"op", "queue"},
             {"queue", "siteswarm-events"},
             {"messages", {{{"id", "m1"}, {"body", body}, {"attempts", 1}}}}};
  json out = l.mesh.message("events", batch);
  CHECK(out["ack"] == json::array({"m1"}));
  CHECK((!out.contains("retry") || out["retry"].empty()));
  CHECK(l.rows().empty());
  CHECK(out["logs"].dump().find("dropping refused message m1: payload does not match the "
                                "schema") != std::string::npos);
}

TEST_CASE("a schema's wrapper takes the schema and its view's fields, no other key") {
  ApiLedger l;
  std::map<std::string, std::string> op{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
      {"Content-Type", "application/json"}};
  json schema{{"type", "object"}};
  auto extra = l.mesh.request("events", "PUT", "/admin/schemas/p6.unk", op,
                              json{{"schema", schema}, {"extra", 1}}.dump());
  CHECK(extra.status == 400);
  CHECK(extra.body_json()["error"]["field"] == "extra");
  CHECK(l.mesh.request("events", "GET", "/admin/schemas/p6.unk", op, "").status == 404);
  // What GET answers can be sent back.
  REQUIRE(
      l.mesh.request("events", "PUT", "/admin/schemas/p6.unk", op, json{{"schema", schema}}.dump())
          .status == 201);
  auto read = l.mesh.request("events", "GET", "/admin/schemas/p6.unk", op, "");
  REQUIRE(read.status == 200);
  CHECK(l.mesh.request("events", "PUT", "/admin/schemas/p6.unk", op, read.body).status == 200);
}

TEST_CASE("an entity_ref over 200 bytes is refused for its length") {
  ApiLedger l;
  json e = price_event(1);
  e["entity_ref"] = "enc:" + std::string(197, 'x');
  auto r = l.post("bakery", kBakeryToken, e);
  CHECK(r.status == 400);
  CHECK(r.body_json()["error"]["field"] == "entity_ref");
  CHECK(r.body_json()["error"]["message"] == "entity_ref: must be at most 200 bytes");
  // A read's ?entity= likewise.
  auto read = l.mesh.request(
      "events", "GET", "/api/events?entity=enc:" + std::string(197, 'x'),
      {{"X-SiteSwarm-Tenant-Id", "bakery"}, {"X-SiteSwarm-Tenant-Token", kBakeryToken}});
  CHECK(read.status == 400);
  CHECK(read.body_json()["error"]["field"] == "entity");
  CHECK(read.body_json()["error"]["message"].get<std::string>().find("at most 200 bytes") !=
        std::string::npos);
}

TEST_CASE("a misspelt key in a posted event is refused by name; an event's view passes") {
  ApiLedger l;
  json typo = price_event(1);
  typo["idempotencyKey"] = "bid-1";  // read as "no key", it would have let every retry through
  for (int i = 0; i < 2; ++i)
    check_refused(l.post("bakery", kBakeryToken, typo), "idempotencyKey", "idempotencyKey");
  json camel{{"eventType", "price.changed"}, {"entity_ref", "item:1"}, {"payload", json::object()}};
  check_refused(l.post("bakery", kBakeryToken, camel), "eventType", "eventType");
  CHECK(l.rows().empty());
  // What GET /api/events shows can be posted again (to another ledger, say): the keys the view adds
  // pass unread, and the same event_id is the same event.
  REQUIRE(l.post("bakery", kBakeryToken, price_event(2)).status == 201);
  json view = l.get("bakery", kBakeryToken, "").body_json()["events"][0];
  REQUIRE(view.contains("recorded_at"));
  auto again = l.post("bakery", kBakeryToken, view);
  CHECK(again.status == 200);
  CHECK(again.body_json()["duplicate"] == true);
  CHECK(l.rows().size() == 1);
}

TEST_CASE("an event_id another tenant already used is a different event: no 409, nothing leaked") {
  // Before: 409 "event_id is already used" told auto-repair that some tenant holds that id.
  ApiLedger l;
  json b = price_event(1);
  b["event_id"] = "01JH0000000000000000000000";
  REQUIRE(l.post("bakery", kBakeryToken, b).status == 201);
  b["payload"]["amount"] = 2;
  auto other = l.post("auto-repair", kAutoToken, b);
  CHECK(other.status == 201);
  CHECK(other.body_json() == json{{"event_id", "01JH0000000000000000000000"}});
  CHECK(l.rows().size() == 2);
  json mine = l.get("auto-repair", kAutoToken, "").body_json();
  REQUIRE(mine["events"].size() == 1);
  CHECK(mine["events"][0]["payload"]["amount"] == 2);
  json theirs = l.get("bakery", kBakeryToken, "").body_json();
  REQUIRE(theirs["events"].size() == 1);
  CHECK(theirs["events"][0]["payload"]["amount"] == 1);
  // Within a tenant the id still deduplicates.
  auto again = l.post("auto-repair", kAutoToken, b);
  CHECK(again.status == 200);
  CHECK(again.body_json()["duplicate"] == true);
  CHECK(l.rows().size() == 2);
}

TEST_CASE("a 20,001-item payload against an enum schema at the cap is answered 201 or 422") {
  ApiLedger l;
  json values = json::array();
  for (std::size_t i = 0; i < ss::events::kMaxEnumValues; ++i) values.push_back(i);
  auto op = std::map<std::string, std::string>{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
      {"Content-Type", "application/json"}};
  json schema{{"schema",
               {{"type", "object"},
                {"properties", {{"codes", {{"type", "array"}, {"items", {{"enum", values}}}}}}}}}};
  REQUIRE(l.mesh.request("events", "PUT", "/admin/schemas/bulk.coded", op, schema.dump()).status ==
          201);
  json codes = json::array();
  for (int i = 0; i < 20001; ++i) codes.push_back(i % 10);
  json body{
      {"event_type", "bulk.coded"}, {"entity_ref", "batch:1"}, {"payload", {{"codes", codes}}}};
  CHECK(l.post("bakery", kBakeryToken, body).status == 201);
  body["payload"]["codes"][20000] = 9999;
  auto refused = l.post("bakery", kBakeryToken, body);
  CHECK(refused.status == 422);
  CHECK(refused.body_json()["error"]["violations"][0]["path"] == "/codes/20000");
  // One value over the cap is refused when the schema is registered.
  values.push_back(ss::events::kMaxEnumValues);
  schema["schema"]["properties"]["codes"]["items"]["enum"] = values;
  auto over = l.mesh.request("events", "PUT", "/admin/schemas/bulk.coded", op, schema.dump());
  CHECK(over.status == 400);
  CHECK(over.body_json()["error"]["field"] == "schema");
}

TEST_CASE("order=desc pages newest first by insertion, cursor-paged, tenant-scoped") {
  ApiLedger l;
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto r = l.post("bakery", kBakeryToken, price_event(i));
    REQUIRE(r.status == 201);
    ids.push_back(r.body_json()["event_id"]);
    l.mesh.now_ms += 1;
  }
  // Another tenant's newer events never show, and never break the cursor.
  REQUIRE(l.post("auto-repair", kAutoToken, price_event(9)).status == 201);
  // A late producer id (older timestamp) inserted last is still the newest by insertion.
  json late = price_event(7);
  late["event_id"] = ss::encode_ulid(l.mesh.now_ms - 60000, ss::UlidRandom{});
  REQUIRE(l.post("bakery", kBakeryToken, late).status == 201);
  ids.push_back(late["event_id"]);

  auto page1 = l.get("bakery", kBakeryToken, "?order=desc&limit=4").body_json();
  REQUIRE(page1["events"].size() == 4);
  CHECK(page1["events"][0]["event_id"] == ids[5]);
  CHECK(page1["events"][1]["event_id"] == ids[4]);
  CHECK(page1["events"][3]["event_id"] == ids[2]);
  REQUIRE(page1["next"] == ids[2]);
  auto page2 = l.get("bakery", kBakeryToken, "?order=desc&limit=4&after=" + ids[2]).body_json();
  REQUIRE(page2["events"].size() == 2);
  CHECK(page2["events"][0]["event_id"] == ids[1]);
  CHECK(page2["events"][1]["event_id"] == ids[0]);
  CHECK(page2["next"].is_null());
  // Filters apply; a bad order is 400 naming it.
  CHECK(l.get("bakery", kBakeryToken, "?order=desc&type=lead.*").body_json()["events"].empty());
  auto bad = l.get("bakery", kBakeryToken, "?order=sideways");
  CHECK(bad.status == 400);
  CHECK(bad.body_json()["error"]["field"] == "order");
  // Ascending (the default) is still accepted by name.
  CHECK(l.get("bakery", kBakeryToken, "?order=asc").body_json()["events"].size() == 6);
}

// GET /api/events answers each event's view as SQLite writes it (kEventView), the stored payload
// spliced as it is: the text must be exactly what dumping the events' JSON views gives, escapes and
// all — whether the host holds the views and splices them (docs/abi.md "Held columns") or sends
// them along to the core.
TEST_CASE("a read is written as the events' JSON views; an unreadable stored payload shows as {}") {
  for (const bool held : {true, false}) {
    CAPTURE(held);
    ApiLedger l;
    l.mesh.hold_columns = held;
    json tricky{
        {"event_type", "note.added"},
        {"entity_ref", "note:quote\"back\\slash\x7f \xe2\x80\xa8"},
        {"caused_by", "tab\there\x01\x1f\b\f\r"},
        {"source_system", "caf\xc3\xa9 \xf0\x9f\x8d\xb0 </script>"},
        {"occurred_at", "2026-05-25T14:23:11.123Z"},
        {"payload",
         {{"text", "line\nbreak \"quoted\" caf\xc3\xa9 \xe2\x82\xac \\u0041 \x1f\x7f \xe2\x80\xa9"},
          {"nul", std::string("a\0b", 3)},
          {"numbers", json::array({0, -1, 2.5, 1e300, -1.5e-7, 12345678901234567LL, 0.1})},
          {"nested", {{"list", json::array({1, 2.5, nullptr, true, false, "", json::object()})}}},
          {"empty", json::array()}}},
        {"idempotency_key", "k-1"},
        {"sequence_no", 7}};
    REQUIRE(l.post("bakery", kBakeryToken, tricky).status == 201);
    l.mesh.now_ms += 1;
    REQUIRE(l.post("bakery", kBakeryToken, price_event(3)).status == 201);
    l.mesh.db("EVENTS_DB")
        .execute(
            "UPDATE events SET payload_json = '{\"broken\":' WHERE event_type = 'price.changed'",
            json::array());

    auto r = l.get("bakery", kBakeryToken, "?limit=2");
    REQUIRE(r.status == 200);
    CHECK(r.header("content-type") == "application/json; charset=utf-8");
    json page = json::parse(r.body, nullptr, false);
    REQUIRE(!page.is_discarded());
    CHECK(r.body == ss::dump_json(page));  // the same text nlohmann writes for the same value
    REQUIRE(page["events"].size() == 2);
    json first = page["events"][0];
    CHECK(first["entity_id"] == "quote\"back\\slash\x7f \xe2\x80\xa8");
    CHECK(first["entity_ref"] == "note:quote\"back\\slash\x7f \xe2\x80\xa8");
    CHECK(first["caused_by"] == "tab\there\x01\x1f\b\f\r");
    CHECK(first["source_system"] == "caf\xc3\xa9 \xf0\x9f\x8d\xb0 </script>");
    CHECK(first["payload"] == tricky["payload"]);
    CHECK(first["occurred_at"] == "2026-05-25T14:23:11.123Z");  // milliseconds kept when not .000
    CHECK(first["idempotency_key"] == "k-1");
    CHECK(first["sequence_no"] == 7);
    CHECK(first["workflow_run_id"].is_null());
    CHECK(first["tenant_id"] == "bakery");
    // The stored payload text is what the page shows, byte for byte.
    auto stored = l.mesh.db("EVENTS_DB")
                      .execute("SELECT payload_json FROM events WHERE event_type = 'note.added'",
                               json::array());
    REQUIRE(stored["results"].size() == 1);
    const std::string payload_text = stored["results"][0]["payload_json"].get<std::string>();
    CHECK(r.body.find("\"payload\":" + payload_text + ",") != std::string::npos);
    json second = page["events"][1];
    CHECK(second["payload"] == json::object());
    // The ledger's own stamp (whole seconds, stored with ".000") is shown without milliseconds.
    CHECK(second["recorded_at"].get<std::string>().size() == 20);
    CHECK(page["next"].is_null());  // the last page, though full: nothing follows
    // Every one of them equals the view the ledger gives its consumers (EventRow::view()).
    auto rows = l.mesh.db("EVENTS_DB").execute("SELECT * FROM events ORDER BY seq", json::array());
    REQUIRE(rows["results"].size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      ss::RowReader reader(rows["results"][i]);
      auto decoded = ss::decode_row<ss::events::EventRow>(reader);
      REQUIRE(decoded.ok());
      CHECK(ss::dump_json(decoded.value().view()) == ss::dump_json(page["events"][i]));
    }
    // A page that is not full has no next; an empty page is an empty list.
    json tail = l.get("bakery", kBakeryToken, "?limit=5").body_json();
    CHECK(tail["events"].size() == 2);
    CHECK(tail["next"].is_null());
    auto none = l.get("bakery", kBakeryToken, "?type=nothing.*");
    CHECK(none.body == "{\"events\":[],\"next\":null}");
    // HEAD: the same status and headers, no body, nothing spliced.
    auto head = l.mesh.request("events", "HEAD", "/api/events?limit=2",
                               ss::native::Mesh::tenant_headers("bakery", kBakeryToken));
    CHECK(head.status == 200);
    CHECK(head.body.empty());
    CHECK(head.header("content-type") == "application/json; charset=utf-8");
  }
}

TEST_CASE("a producer cannot take an idempotency key the ledger mints for its own records") {
  // A tenant that knows the ledger's key formats
  // (workflow.run_started:<consumer>:<event_id>:<type>, tenant.health_changed:<tenant>:<seq>,
  // anomaly:..., ...) and posts first would have the ledger's own record dropped as its duplicate:
  // such keys are refused, over HTTP and on the queue.
  ApiLedger l;
  const std::vector<std::string> keys = {
      "workflow.run_started:workflow_runner:01JH0000000000000000000009:notify",
      "workflow.run_failed:01JH0000000000000000000009",
      "workflow.run_completed:01JH0000000000000000000009",
      "tenant.health_changed:bakery:7",
      "anomaly:rate:lead.received:1767225600000",
      "fanout_capped:workflow_runner:01JH0000000000000000000009",
      "retention:01JH0000000000000000000001:01JH0000000000000000000009",
      "ledger:anything"};
  json messages = json::array();
  for (const std::string& key : keys) {
    json body = price_event(1);
    body["idempotency_key"] = key;
    check_refused(l.post("bakery", kBakeryToken, body), "idempotency_key", key);
    body["tenant_id"] = "bakery";
    messages.push_back({{"id", key}, {"body", body}, {"attempts", 1}});
  }
  // The operator is held to the same rule.
  json body = price_event(1);
  body["idempotency_key"] = keys[0];
  std::map<std::string, std::string> h{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
      {"Content-Type", "application/json"}};
  CHECK(l.mesh.request("events", "POST", "/api/events", h, body.dump()).status == 400);
  // On the queue a reserved key is a malformed message: acked (retrying cannot fix it), not stored.
  json out = l.mesh.message(
      "events", {{"op", "queue"}, {"queue", "siteswarm-events"}, {"messages", messages}});
  CHECK(out["ack"].size() == keys.size());
  CHECK(l.rows().empty());

  // Keys that only look alike stay the producer's: other prefixes, another case.
  for (const char* key :
       {"workflow.run_started", "Anomaly:x", "lead.received:42", "my-anomaly:1"}) {
    json ok = price_event(1);
    ok["idempotency_key"] = key;
    CHECK_MESSAGE(l.post("bakery", kBakeryToken, ok).status == 201, key);
  }
}

TEST_CASE(
    "a queued event naming an invalid tenant_id is dropped as malformed, never platform-wide") {
  ApiLedger l;
  json messages = json::array();
  int n = 0;
  for (const json& tenant : {json("Not A Tenant"), json(42), json(""), json("-bakery")}) {
    json body = price_event(1);
    body["tenant_id"] = tenant;
    messages.push_back({{"id", "bad" + std::to_string(++n)}, {"body", body}, {"attempts", 1}});
  }
  json platform = price_event(2);
  platform["tenant_id"] = nullptr;  // null (or absent): a platform-wide event, as before
  messages.push_back({{"id", "platform"}, {"body", platform}, {"attempts", 1}});
  json out = l.mesh.message(
      "events", {{"op", "queue"}, {"queue", "siteswarm-events"}, {"messages", messages}});
  CHECK(out["ack"].size() == 5);  // retrying cannot fix them: acked, logged, not stored
  CHECK(out["retry"].empty());
  json rows = l.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["tenant_id"].is_null());
  CHECK(json::parse(rows[0]["payload_json"].get<std::string>())["amount"] == 2);
}

TEST_CASE("a malformed entity filter or a type filter no event type can match is a 400") {
  ApiLedger l;
  REQUIRE(l.post("bakery", kBakeryToken, price_event(1)).status == 201);
  auto field_of = [&](const std::string& q) {
    auto r = l.get("bakery", kBakeryToken, q);
    CHECK_MESSAGE(r.status == 400, q);
    return r.body_json()["error"]["field"];
  };
  for (const char* q : {"?entity=noColon", "?entity=item:", "?entity=:10472", "?entity=Item:10472",
                        "?entity=it-em:10472"}) {
    CHECK_MESSAGE(field_of(q) == "entity", q);
  }
  // Event types are [a-z0-9_] segments joined by dots: '-' (which subscription globs accept) can
  // never match one.
  CHECK(field_of("?type=price-changed") == "type");
  CHECK(field_of("?type=price.*-x") == "type");
  CHECK(field_of("?type=Price.changed") == "type");
  // Whatever character is out of place, the message says what a type holds (not the subscription
  // glob's rule, which names '-').
  for (const char* q : {"?type=PROBE.*", "?type=price-changed", "?type=price%20changed"}) {
    auto message =
        l.get("bakery", kBakeryToken, q).body_json()["error"]["message"].get<std::string>();
    CHECK_MESSAGE(
        message.find("an event type holds only a-z, 0-9, '_' and '.'") != std::string::npos, q);
  }
  CHECK(field_of("?type=" + std::string(300, 'a')) == "type");  // the glob's own length rule
  auto count = [&](const std::string& q) {
    auto r = l.get("bakery", kBakeryToken, q);
    REQUIRE(r.status == 200);
    return r.body_json()["events"].size();
  };
  CHECK(count("?entity=item:10472") == 1);
  CHECK(count("?entity=item:10472:x") == 0);  // an id may hold colons
  CHECK(count("?type=price.chang?d") == 1);
  CHECK(count("?type=price.changed") == 1);
}

TEST_CASE("a type filter of any length an event type may have: exact up to 128, a glob up to 50") {
  ApiLedger l;
  // 51 and 128 characters: valid types, longer than D1's 50-byte GLOB pattern.
  const std::string t51 = "a." + std::string(49, 'b');
  const std::string t128 = "a." + std::string(126, 'c');
  for (const std::string& t : {t51, t128}) {
    json b = price_event(1);
    b["event_type"] = t;
    REQUIRE(l.post("bakery", kBakeryToken, b).status == 201);
  }
  auto events_of = [&](const std::string& q) {
    auto r = l.get("bakery", kBakeryToken, q);
    REQUIRE(r.status == 200);
    return r.body_json()["events"];
  };
  for (const std::string& t : {t51, t128}) {
    CAPTURE(t.size());
    auto found = events_of("?type=" + t);
    REQUIRE(found.size() == 1);
    CHECK(found[0]["event_type"] == t);
  }
  CHECK(events_of("?type=" + t51 + "x").empty());
  // A glob of 50 characters matches; one of 51 is refused as a 400 naming `type` (never a 503).
  CHECK(events_of("?type=a." + std::string(47, 'b') + "*").size() == 1);
  auto too_long = l.get("bakery", kBakeryToken, "?type=a." + std::string(48, 'b') + "*");
  CHECK(too_long.status == 400);
  CHECK(too_long.body_json()["error"]["field"] == "type");
  // The operator's read across tenants takes the same filter.
  auto op = l.mesh.request("events", "GET", "/api/events?type=" + t128,
                           {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken}});
  REQUIRE(op.status == 200);
  CHECK(op.body_json()["events"].size() == 1);
}

TEST_CASE("a tenant cannot post the ledger's own record types; the operator can") {
  // Retention never redacts an events.tombstoned, and the detectors take anomaly.*, events.* and
  // tenant.health* for the ledger's word: posted by a tenant, one would outlive retention and the
  // others would forge findings.
  ApiLedger l;
  for (const char* type : {"events.tombstoned", "events.fanout_capped", "anomaly.detected",
                           "tenant.health_changed", "tenant.healthy"}) {
    json body = price_event(1);
    body["event_type"] = type;
    check_refused(l.post("bakery", kBakeryToken, body), "event_type", type);
  }
  CHECK(l.rows().empty());
  // A workflow reports its own run; types that only start alike are anyone's.
  for (const char* type : {"workflow.run_completed", "eventsx.sent", "tenant.signed_up"}) {
    json body = price_event(1);
    body["event_type"] = type;
    CHECK_MESSAGE(l.post("bakery", kBakeryToken, body).status == 201, type);
  }
  // The operator's tombstone for a wrong event (docs/runbook-events.md).
  json tomb = price_event(1);
  tomb["event_type"] = "events.tombstoned";
  tomb["tenant_id"] = "bakery";
  std::map<std::string, std::string> h{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
      {"Content-Type", "application/json"}};
  CHECK(l.mesh.request("events", "POST", "/api/events", h, tomb.dump()).status == 201);
  CHECK(l.rows().size() == 4);
}

TEST_CASE("a tenant's read cursor is the bare event_id: a seq in it is refused, never a position") {
  // seq is the ledger-wide insertion order. Were a tenant's "<id>.<seq>" taken as a position,
  // paging from guessed seqs would show where its own events sit among every tenant's: a count of
  // the other tenants' events. Its pages never hand it a seq (`next` is the bare id).
  ApiLedger l;
  std::string first = l.post("bakery", kBakeryToken, price_event(1)).body_json()["event_id"];
  l.post("auto-repair", kAutoToken, price_event(2));
  l.post("bakery", kBakeryToken, price_event(3));
  auto seq = l.mesh.db("EVENTS_DB")
                 .rows("SELECT seq FROM events WHERE event_id = '" + first + "'")[0]["seq"]
                 .get<long long>();
  for (long long probe : {seq, seq + 1, 1LL}) {
    auto r = l.get("bakery", kBakeryToken, "?after=" + first + "." + std::to_string(probe));
    CHECK(r.status == 400);
    CHECK(r.body_json()["error"]["code"] == "invalid_request");
    CHECK(r.body_json()["error"]["field"] == "after");
  }
  auto page = l.get("bakery", kBakeryToken, "?limit=1");
  REQUIRE(page.status == 200);
  CHECK(page.body_json()["next"] == first);
  CHECK(l.get("bakery", kBakeryToken, "?after=" + first).body_json()["events"].size() == 1);
  // The operator pages across tenants on "<id>.<seq>".
  auto across = l.mesh.request("events", "GET", "/api/events?limit=1",
                               {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken}});
  REQUIRE(across.status == 200);
  std::string next = across.body_json()["next"];
  CHECK(next == first + "." + std::to_string(seq));
  auto rest = l.mesh.request("events", "GET", "/api/events?after=" + next,
                             {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken}});
  CHECK(rest.status == 200);
  CHECK(rest.body_json()["events"].size() == 2);
}

TEST_CASE("a schema stored before unsupported keywords were refused still checks what it can") {
  // Registration refuses `pattern` now; a row written before that check is read leniently, so its
  // `required` and `type` stay enforced rather than the whole schema turning unreadable.
  ApiLedger l;
  l.mesh.db("EVENTS_DB")
      .rows(
          "INSERT INTO events_schema (event_type, schema_json, updated_at) VALUES "
          "('code.changed', '{\"required\":[\"code\"],\"properties\":{\"code\":"
          "{\"type\":\"string\",\"pattern\":\"^[A-Z]+$\"}}}', '2026-01-01T00:00:00Z')");
  json body{{"event_type", "code.changed"}, {"entity_ref", "item:1"}, {"payload", json::object()}};
  auto missing = l.post("bakery", kBakeryToken, body);
  CHECK(missing.status == 422);
  body["payload"] = {{"code", 7}};
  CHECK(l.post("bakery", kBakeryToken, body).status == 422);
  body["payload"] = {{"code", "lower is not checked"}};
  CHECK(l.post("bakery", kBakeryToken, body).status == 201);
}

namespace {
// 20,000 events seeded straight into SQLite (through the core they would test emitting, not
// reading): ids `<prefix>` + the 22-digit i, tenant `tenant` (an SQL expression of i).
void seed_events(ApiLedger& l, const std::string& prefix, const std::string& tenant) {
  auto seeded = l.mesh.db("EVENTS_DB")
                    .execute(R"sql(
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
INSERT INTO events (event_id, tenant_id, event_type, entity_type, entity_id, payload_json,
                    source_system, occurred_at, recorded_at, sequence_no)
SELECT printf(?1 || '%022d', i), )sql" +
                                 tenant +
                                 R"sql(, 'price.changed', 'item', 'i' || i, '{}',
       'seed', '2025-11-29T14:20:00Z', '2025-11-29T14:20:00Z', 1 FROM n
)sql",
                             json::array({prefix}));
  REQUIRE(seeded.contains("results"));
}
}  // namespace

TEST_CASE("a tenant's page reads that tenant's events, not every other tenant's after its cursor") {
  ApiLedger l;
  REQUIRE(l.post("bakery", kBakeryToken, price_event(1)).status == 201);
  // 20,000 events of 50 other tenants, then one more of the bakery's.
  seed_events(l, "01KB", "'other-' || (i % 50)");
  REQUIRE(l.post("bakery", kBakeryToken, price_event(2)).status == 201);
  // The bakery's page for `query`. Each read seeks the tenant's indexes to its cursor: a few
  // hundred SQLite VM steps, where walking the ledger's seq range past the 20,000 others took
  // about 80,000 (60,000 for a cursor the ledger does not hold; a late page of a large tenant
  // without migration 0008's index read and sorted its whole history: 240,000).
  auto page = [&l](const std::string& query) {
    l.mesh.max_d1_vm_steps = 0;
    auto r = l.get("bakery", kBakeryToken, query);
    REQUIRE(r.status == 200);
    CHECK_MESSAGE(l.mesh.max_d1_vm_steps < 5000, query);
    return r.body_json()["events"];
  };
  json events = page("?limit=100");
  REQUIRE(events.size() == 2);
  CHECK(events[0]["payload"]["amount"] == 1);
  CHECK(events[1]["payload"]["amount"] == 2);
  // Paged from the first event's cursor: only the second. Newest first, likewise.
  json next = page("?limit=1&after=" + events[0]["event_id"].get<std::string>());
  REQUIRE(next.size() == 1);
  CHECK(next[0]["payload"]["amount"] == 2);
  json desc = page("?limit=100&order=desc");
  REQUIRE(desc.size() == 2);
  CHECK(desc[0]["payload"]["amount"] == 2);
  // A cursor the ledger does not hold (a client's own "since" ULID) is looked up among the
  // tenant's own ids: before every id, both events; after every id, an empty page.
  CHECK(page("?limit=100&after=00000000000000000000000000").size() == 2);
  CHECK(page("?limit=100&after=7ZZZZZZZZZZZZZZZZZZZZZZZZZ").empty());
  // A large tenant's late page seeks to its cursor in (tenant_id, seq) (migration 0008).
  seed_events(l, "01KC", "'bakery'");
  json late = page("?limit=3&after=01KC0000000000000000019990");
  REQUIRE(late.size() == 3);
  CHECK(late[0]["event_id"] == "01KC0000000000000000019991");
  CHECK(late[2]["event_id"] == "01KC0000000000000000019993");
}
