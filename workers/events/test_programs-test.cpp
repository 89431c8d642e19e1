// The bench's hook POST /__test/programs: absent unless test hooks are on; runs each program as the
// ledger does and answers what it gave, a compile error as the admin routes would (400).
#include "tests/native/harness.h"

#include <doctest/doctest.h>

#include <string>

using ss::json;
using ss::native::Mesh;

namespace {

ss::native::HttpReply post(Mesh& mesh, const json& body) {
  return mesh.request("events", "POST", "/__test/programs", {{"Content-Type", "application/json"}},
                      body.dump());
}

json enum_schema(int n) {
  json values = json::array();
  for (int i = 0; i < n; ++i) values.push_back(i);
  return json{{"type", "object"},
              {"properties", {{"items", {{"type", "array"}, {"items", {{"enum", values}}}}}}}};
}

}  // namespace

TEST_CASE("events test programs: no route without test hooks") {
  Mesh mesh;
  CHECK(post(mesh, json{{"filter", "true"}}).status == 404);
}

TEST_CASE("events test programs: glob, filter, mapper and schema answer like the ledger") {
  Mesh mesh;
  mesh.set_env("events", "SITESWARM_TEST_HOOKS", "1");
  json event = {{"event_type", "price.changed"},
                {"payload", {{"s", std::string(1000, 'a') + "b"}, {"items", {1, 2, 99}}}}};
  auto reply = post(mesh, json{{"glob", "price.*"},
                               {"filter", "contains(payload.s, \"aab\")"},
                               {"mapper", {{"a", "$.payload.items[2]"}, {"b", 1}}},
                               {"schema", enum_schema(10)},
                               {"event", event},
                               {"compile", 3},
                               {"run", 5}});
  REQUIRE(reply.status == 200);
  json body = reply.body_json();
  CHECK(body["glob"] == true);
  CHECK(body["filter"] == true);
  CHECK(body["mapper_bytes"] == json{{"a", 99}, {"b", 1}}.dump().size());
  CHECK(body["violations"] == 1);  // 99 is not in the enum

  // The 20,001-value enum is refused when compiled, as registering it would be.
  reply = post(mesh, json{{"schema", enum_schema(20001)}, {"event", event}});
  CHECK(reply.status == 400);
  reply = post(mesh, json{{"filter", "contains("}, {"event", event}});
  CHECK(reply.status == 400);
  reply = post(mesh, json{{"glob", "*"}, {"event", event}, {"run", 0}});
  CHECK(reply.status == 400);
}
