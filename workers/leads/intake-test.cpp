// The leads service through the native mesh: every line of the contract's leads section, the
// notification pipeline with faults, and tenant isolation of the admin API.
#include "workers/leads/intake.h"
#include "shared/json_util.h"
#include "shared/rfc3339.h"
#include "shared/ulid.h"
#include "tests/native/harness.h"
#include "tests/native/test_support.h"
#include "workers/leads/config.h"
#include "workers/leads/lead.h"
#include "workers/leads/notify.h"

#include <doctest/doctest.h>

#include <cctype>
#include <set>

using ss::json;
using ss::native::HttpReply;
using ss::native::Mesh;
using ss::native::StubReply;
using ss::test::check_error;
using ss::test::kAutoAdmin;
using ss::test::kAutoToken;
using ss::test::kBakeryAdmin;
using ss::test::kBakeryToken;

namespace {

const char* kWebhookSecret = "whsec-0123456789abcdef";
const char* kDummyToken = "XXXX.DUMMY.TOKEN.XXXX";

json bakery_leads_config() {
  return json{
      {"fields", {"preferred_date"}},
      {"rateLimit", {{"limit", 5}, {"periodSeconds", 60}}},
      {"redirectUrl", "https://bakery.example/thanks"},
      {"notify",
       {{"email",
         {{"provider", "resend"},
          {"to", {"owner@bakery.example"}},
          {"from", "forms@bakery.example"}}},
        {"sms", {{"to", {"+15550100001"}}, {"from", "+15550100999"}}},
        {"webhook", {{"url", "https://hooks.bakery.example/leads"}, {"secret", kWebhookSecret}}}}}};
}

struct Leads {
  Mesh mesh;
  std::vector<json> requests;            // every outbound fetch, parsed a little
  std::map<std::string, int> fail_next;  // url substring -> failures left (-1: always)
  bool siteverify_down = false;

  Leads(json config = bakery_leads_config()) {
    mesh.set_env("leads", "TURNSTILE_SECRET_KEY", "1x0000000000000000000000000000000AA");
    mesh.set_env("leads", "TURNSTILE_VERIFY_URL", "https://turnstile.test/siteverify");
    mesh.set_env("leads", "RESEND_API_URL", "https://resend.test");
    mesh.set_env("leads", "RESEND_API_KEY", "re_test_key");
    mesh.set_env("leads", "SENDGRID_API_URL", "https://sendgrid.test");
    mesh.set_env("leads", "SENDGRID_API_KEY", "SG.test");
    mesh.set_env("leads", "TWILIO_API_URL", "https://twilio.test");
    mesh.set_env("leads", "TWILIO_ACCOUNT_SID", "AC123");
    mesh.set_env("leads", "TWILIO_AUTH_TOKEN", "twilio-secret");
    mesh.set_env("leads", "NOTIFY_BACKOFF_SECONDS", "0");
    mesh.provision("bakery", kBakeryToken, kBakeryAdmin, config, "leads");
    mesh.provision("auto-repair", kAutoToken, kAutoAdmin, json{{"turnstile", "off"}}, "leads");
    mesh.fetch_stub = [this](const json& req) { return answer(req); };
  }

  StubReply answer(const json& req) {
    std::string url = req["url"];
    requests.push_back(req);
    StubReply reply;
    for (auto& [part, left] : fail_next) {
      if (url.find(part) != std::string::npos && left != 0) {
        if (left > 0) --left;
        reply.status = 500;
        reply.body = "{}";
        return reply;
      }
    }
    if (url.find("siteverify") != std::string::npos) {
      if (siteverify_down) {
        reply.network_error = true;
        return reply;
      }
      auto form = ss::parse_urlencoded(req["body"].get<std::string>());
      std::map<std::string, std::string> f(form->begin(), form->end());
      bool ok =
          f["secret"] == "1x0000000000000000000000000000000AA" && f["response"] == kDummyToken;
      reply.body = ok ? R"({"success":true,"error-codes":[]})"
                      : R"({"success":false,"error-codes":["invalid-input-response"]})";
      return reply;
    }
    reply.status = url.find("twilio") != std::string::npos ? 201 : 200;
    reply.body = R"({"id":"stub"})";
    return reply;
  }

  std::map<std::string, std::string> headers(const std::string& type = "application/json",
                                             const std::string& ip = "203.0.113.7") {
    auto h = Mesh::tenant_headers("bakery", kBakeryToken);
    h["Content-Type"] = type;
    h["CF-Connecting-IP"] = ip;
    return h;
  }
  std::map<std::string, std::string> admin(const std::string& tenant = "bakery",
                                           const char* token = kBakeryAdmin) {
    return {{"X-SiteSwarm-Tenant-Id", tenant}, {"Authorization", std::string("Bearer ") + token}};
  }
  HttpReply submit(json body, std::map<std::string, std::string> h = {}) {
    if (h.empty()) h = headers();
    if (!body.contains("turnstileToken")) body["turnstileToken"] = kDummyToken;
    return mesh.request("leads", "POST", "/api/leads/submit", h, body.dump());
  }
  json rows(const std::string& sql) { return mesh.db("LEADS_DB").rows(sql); }
  std::vector<json> outbound(const std::string& part) {
    std::vector<json> out;
    for (const json& r : requests) {
      if (r["url"].get<std::string>().find(part) != std::string::npos) out.push_back(r);
    }
    return out;
  }
  std::vector<json> events(const std::string& type) {
    std::vector<json> out;
    for (const json& e : mesh.queue_sent["EVENTS_QUEUE"]) {
      if (e["event_type"] == type) out.push_back(e);
    }
    return out;
  }
  // The body of the notify message queued for `channel` (a delivery of the last submission).
  json queued_for(const std::string& channel) {
    json found;
    for (const json& body : mesh.queue_sent["NOTIFY_QUEUE"]) {
      if (body["channel"] == channel) found = body;
    }
    REQUIRE(found.is_object());
    return found;
  }
  // One notify message handed to the consumer as the queue's `attempts`-th delivery of it.
  json deliver(const json& body, const std::string& id = "a", int attempts = 1) {
    return mesh.message(
        "leads",
        {{"op", "queue"},
         {"queue", "siteswarm-leads-notify"},
         {"messages", json::array({{{"id", id}, {"body", body}, {"attempts", attempts}}})}});
  }
  // Plays the notify queue like Cloudflare Queues would: deliver, retry what is retried, until
  // empty.
  void drain_notifications(int max_rounds = 20) {
    std::vector<json> pending;
    std::map<std::string, int> attempts;
    int n = 0;
    for (int round = 0; round < max_rounds; ++round) {
      for (json& body : mesh.queue_sent["NOTIFY_QUEUE"]) {
        pending.push_back({{"id", "m" + std::to_string(++n)}, {"body", body}, {"attempts", 1}});
      }
      mesh.queue_sent["NOTIFY_QUEUE"].clear();
      if (pending.empty()) return;
      json out = mesh.message(
          "leads", {{"op", "queue"}, {"queue", "siteswarm-leads-notify"}, {"messages", pending}});
      std::vector<json> next;
      for (const json& r : out["retry"]) {
        for (json& m : pending) {
          if (m["id"] == r["id"]) {
            m["attempts"] = m["attempts"].get<int>() + 1;
            next.push_back(m);
          }
        }
      }
      pending = next;
    }
    FAIL("the notify queue did not drain");
  }
};

json lead_body() {
  return json{{"name", "Ada Baker"},
              {"email", "ada@example.com"},
              {"phone", "(555) 010-2000"},
              {"message", "Two dozen croissants for Saturday?"},
              {"preferred_date", "2026-12-05"}};
}

}  // namespace

TEST_CASE(
    "a JSON lead is verified, stored for its tenant, queued for every channel and announced") {
  Leads l;
  auto r = l.submit(lead_body());
  REQUIRE(r.status == 202);
  json b = r.body_json();
  CHECK(b["ok"] == true);
  std::string id = b["leadId"];
  CHECK(ss::is_ulid(id));
  json rows = l.rows("SELECT * FROM leads");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["id"] == id);
  CHECK(rows[0]["tenant_id"] == "bakery");
  CHECK(rows[0]["turnstile_verified"] == 1);
  json payload = json::parse(rows[0]["payload"].get<std::string>());
  CHECK(payload["phone"] == "+15550102000");  // normalised to E.164
  CHECK(payload["preferred_date"] == "2026-12-05");
  CHECK(!payload.contains("turnstileToken"));
  // siteverify got the secret, the token, the client IP and an idempotency key.
  auto verify = l.outbound("siteverify");
  REQUIRE(verify.size() == 1);
  auto form = ss::parse_urlencoded(verify[0]["body"].get<std::string>());
  std::map<std::string, std::string> f(form->begin(), form->end());
  CHECK(f["response"] == kDummyToken);
  CHECK(f["remoteip"] == "203.0.113.7");
  CHECK(f["idempotency_key"].size() == 36);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].size() == 3);  // email, sms, webhook
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'pending'").size() == 3);
  auto received = l.events("lead.received");
  REQUIRE(received.size() == 1);
  CHECK(received[0]["tenant_id"] == "bakery");
  CHECK(received[0]["payload"]["leadId"] == id);
  CHECK(received[0].dump().find("ada@example.com") == std::string::npos);  // no PII in the ledger
}

TEST_CASE(
    "repeats of an Idempotency-Key that race the first lead re-validate its Turnstile token") {
  // A repeat that arrives before the first one's commit cannot see its claim and checks the token
  // again: with the same siteverify idempotency key, which Cloudflare answers as the first check,
  // not `timeout-or-duplicate`. Simulated by erasing the first lead (its claim goes with it).
  Leads l;
  auto siteverify_key = [&](std::size_t i) {
    auto form = ss::parse_urlencoded(l.outbound("siteverify").at(i)["body"].get<std::string>());
    std::map<std::string, std::string> f(form->begin(), form->end());
    return f["idempotency_key"];
  };
  auto h = l.headers();
  h["Idempotency-Key"] = "order-77";
  std::string first = l.submit(lead_body(), h).body_json()["leadId"];
  REQUIRE(l.mesh.request("leads", "DELETE", "/api/leads/" + first, l.admin()).status == 204);
  std::string second = l.submit(lead_body(), h).body_json()["leadId"];
  REQUIRE(l.outbound("siteverify").size() == 2);
  REQUIRE(l.mesh.request("leads", "DELETE", "/api/leads/" + second, l.admin()).status == 204);
  const std::string key = siteverify_key(0);
  CHECK(key.size() == 36);
  CHECK(key[14] == '4');                                          // a version-4 UUID's form
  CHECK(std::string("89ab").find(key[19]) != std::string::npos);  // its variant
  CHECK(siteverify_key(1) == key);
  // Another token (a new form load), another key; no Idempotency-Key, a random key each time.
  json other = lead_body();
  other["turnstileToken"] = "XXXX.DUMMY.TOKEN.XXXX.2";
  l.submit(other, h);
  l.submit(lead_body());
  l.submit(lead_body());
  REQUIRE(l.outbound("siteverify").size() == 5);
  CHECK(siteverify_key(2) != key);
  CHECK(siteverify_key(3) != key);
  CHECK(siteverify_key(4) != siteverify_key(3));
}

TEST_CASE("a number in a JSON lead is stored as it was spelt") {
  // `1.50` is "1.50", not "1.5"; `1E+2` is not "100.0"; 10^21 is not "1e+21".
  Leads l;
  auto r = l.mesh.request(
      "leads", "POST", "/api/leads/submit", l.headers(),
      R"({"email":"n@example.com","name":1000000000000000000000,"message":1.50,)"
      R"("preferred_date":1E+2,"phone":5550102000,"turnstileToken":"XXXX.DUMMY.TOKEN.XXXX"})");
  REQUIRE(r.status == 202);
  json rows = l.rows("SELECT payload FROM leads");
  REQUIRE(rows.size() == 1);
  json payload = json::parse(rows[0]["payload"].get<std::string>());
  CHECK(payload["name"] == "1000000000000000000000");
  CHECK(payload["message"] == "1.50");
  CHECK(payload["preferred_date"] == "1E+2");
  CHECK(payload["phone"] == "+15550102000");  // a number is text, then normalised as a phone
  // A number no double holds is refused as before, nothing stored.
  auto huge = l.mesh.request("leads", "POST", "/api/leads/submit", l.headers(),
                             R"({"email":"n@example.com","message":1e400})");
  CHECK(huge.status == 400);
  CHECK(huge.body_json()["error"]["code"] == "invalid_json");
  CHECK(l.rows("SELECT id FROM leads").size() == 1);
}

TEST_CASE("urlencoded and multipart form posts work like JSON; HTML forms are redirected") {
  Leads l;
  auto form = l.mesh.request(
      "leads", "POST", "/api/leads/submit", l.headers("application/x-www-form-urlencoded"),
      "name=Bob+B&email=bob%40example.com&cf-turnstile-response=XXXX.DUMMY.TOKEN.XXXX");
  CHECK(form.status == 202);
  std::string boundary = "----ssb";
  std::string mp =
      "--" + boundary +
      "\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\ncy@example.com\r\n--" + boundary +
      "\r\nContent-Disposition: form-data; name=\"turnstileToken\"\r\n\r\n" + kDummyToken +
      "\r\n--" + boundary + "--\r\n";
  auto multi = l.mesh.request("leads", "POST", "/api/leads/submit",
                              l.headers("multipart/form-data; boundary=" + boundary), mp);
  CHECK(multi.status == 202);
  auto h = l.headers("application/x-www-form-urlencoded");
  h["Accept"] = "text/html,application/xhtml+xml";
  auto html = l.mesh.request("leads", "POST", "/api/leads", h,
                             "email=dee%40example.com&cf-turnstile-response=XXXX.DUMMY.TOKEN.XXXX");
  CHECK(html.status == 303);
  CHECK(html.header("location") == "https://bakery.example/thanks");
  CHECK(l.rows("SELECT * FROM leads").size() == 3);
}

TEST_CASE("a urlencoded form of more than 200 fields is refused for its count, not as malformed") {
  Leads l;
  auto form_of = [](int n) {
    std::string body = "email=bob%40example.com&cf-turnstile-response=XXXX.DUMMY.TOKEN.XXXX";
    for (int i = 2; i < n; ++i) body += "&f" + std::to_string(i) + "=x";
    return body;
  };
  auto over = l.mesh.request("leads", "POST", "/api/leads/submit",
                             l.headers("application/x-www-form-urlencoded"), form_of(201));
  CHECK(over.status == 400);
  CHECK(over.body_json()["error"]["code"] == "invalid_request");
  CHECK(over.body_json()["error"]["message"] == "too many form fields (at most 200)");
  // 200 fields are read: the undeclared ones are named, as in JSON.
  auto at =
      l.mesh.request("leads", "POST", "/api/leads/submit",
                     l.headers("application/x-www-form-urlencoded", "192.0.2.77"), form_of(200));
  CHECK(at.status == 400);
  CHECK(at.body_json()["error"]["code"] == "invalid_lead");
  CHECK(at.body_json()["error"]["fields"].size() == 198);
  // Multipart says the same.
  std::string mp;
  for (int i = 0; i < 201; ++i) {
    mp += "--b\r\nContent-Disposition: form-data; name=\"f" + std::to_string(i) + "\"\r\n\r\nx\r\n";
  }
  mp += "--b--\r\n";
  auto multi = l.mesh.request("leads", "POST", "/api/leads/submit",
                              l.headers("multipart/form-data; boundary=b", "192.0.2.78"), mp);
  CHECK(multi.status == 400);
  CHECK(multi.body_json()["error"]["message"] == "too many form fields (at most 200)");
  CHECK(l.rows("SELECT id FROM leads").empty());
}

TEST_CASE("a form post is redirected when its Accept header prefers HTML to JSON") {
  for (const char* yes :
       {"text/html", "TEXT/HTML", "text/html,application/xhtml+xml,*/*;q=0.8",
        "application/json;q=0.5, text/html", "text/html;q=0.5, application/json;q=0.5",
        "text/html ; Q=0.9", "text/html;level=1;q=0.3", "text/html;q=abc", "text/html;q=0x",
        "text/html;q=01", "text/html;q=0.5000", "text/html;q=1.000"}) {
    CHECK_MESSAGE(ss::leads::prefers_html(yes), yes);
  }
  for (const char* no : {"", "*/*", "application/json", "text/html;q=0", "text/html;q=0.000",
                         "text/html;q=0.", "application/json, text/html;q=0.5", "text/plain",
                         "text/htmlx", "application/json;q=1, text/html;q=0.999"}) {
    CHECK_FALSE_MESSAGE(ss::leads::prefers_html(no), no);
  }
  // Through the intake: HTML refused by its weight answers JSON, a media type in capitals redirects.
  Leads l;
  auto h = l.headers("application/x-www-form-urlencoded");
  h["Accept"] = "text/html;q=0";
  auto json_answer =
      l.mesh.request("leads", "POST", "/api/leads", h,
                     "email=dee%40example.com&cf-turnstile-response=XXXX.DUMMY.TOKEN.XXXX");
  CHECK(json_answer.status == 202);
  CHECK(json_answer.body_json()["leadId"].is_string());
  h["Accept"] = "TEXT/HTML";
  auto html = l.mesh.request("leads", "POST", "/api/leads", h,
                             "email=eve%40example.com&cf-turnstile-response=XXXX.DUMMY.TOKEN.XXXX");
  CHECK(html.status == 303);
  CHECK(html.header("location") == "https://bakery.example/thanks");
}

TEST_CASE("a field sent twice: a form's is refused, a JSON object's keeps its last value") {
  Leads l;
  auto form = l.mesh.request(
      "leads", "POST", "/api/leads/submit",
      l.headers("application/x-www-form-urlencoded", "192.0.2.41"),
      "email=a%40example.com&email=b%40example.com&turnstileToken=XXXX.DUMMY.TOKEN.XXXX");
  check_error(form, 400, "invalid_lead");
  CHECK(form.body_json()["error"]["fields"]["email"] == "is sent more than once");
  auto twice = l.mesh.request(
      "leads", "POST", "/api/leads/submit", l.headers("application/json", "192.0.2.42"),
      R"({"email":"a@example.com","email":"b@example.com","turnstileToken":"XXXX.DUMMY.TOKEN.XXXX"})");
  REQUIRE(twice.status == 202);
  json stored = l.rows("SELECT payload FROM leads");
  REQUIRE(stored.size() == 1);
  CHECK(json::parse(stored[0]["payload"].get<std::string>())["email"] == "b@example.com");
}

TEST_CASE("multipart files: refused after the honeypot, an empty file input skipped") {
  Leads l;
  const std::string b = "----ssf";
  auto part = [&](const std::string& disposition, const std::string& value) {
    return "--" + b + "\r\nContent-Disposition: form-data; " + disposition + "\r\n\r\n" + value +
           "\r\n";
  };
  auto post = [&](const std::string& parts, const std::string& ip) {
    return l.mesh.request("leads", "POST", "/api/leads/submit",
                          l.headers("multipart/form-data; boundary=" + b, ip),
                          parts + "--" + b + "--\r\n");
  };
  const std::string token = part("name=\"turnstileToken\"", kDummyToken);
  const std::string file = part("name=\"cv\"; filename=\"cv.pdf\"", "%PDF");
  // A file beside a person's fields: 400 invalid_lead naming its field, with the other problems.
  auto refused = post(part("name=\"email\"", "not-an-email") + token + file, "192.0.2.31");
  check_error(refused, 400, "invalid_lead");
  CHECK(refused.body_json()["error"]["fields"]["cv"] == "file uploads are not accepted");
  CHECK(refused.body_json()["error"]["fields"]["email"] == "is not an email address");
  // The trap filled beside a file, or a file in the trap: absorbed as a success is answered.
  auto beside = post(
      part("name=\"email\"", "bot@spam.example") + part("name=\"company_website\"", "x") + file,
      "192.0.2.32");
  CHECK(beside.status == 202);
  auto in_trap = post(part("name=\"email\"", "bot@spam.example") +
                          part("name=\"company_website\"; filename=\"x.txt\"", "x"),
                      "192.0.2.33");
  CHECK(in_trap.status == 202);
  // A file input left empty (filename="", no content) is no file: the lead goes through.
  auto empty =
      post(part("name=\"email\"", "e@example.com") + token + part("name=\"cv\"; filename=\"\"", ""),
           "192.0.2.34");
  CHECK(empty.status == 202);
  CHECK(l.rows("SELECT * FROM leads").size() == 1);
  // Each absorbed post is keyed by the decoy id it was answered with.
  std::set<std::string> keys;
  for (const json& e : l.events("lead.spam_absorbed")) keys.insert(e.value("idempotency_key", ""));
  CHECK(keys == std::set<std::string>{
                    "lead.spam_absorbed:" + beside.body_json()["leadId"].get<std::string>(),
                    "lead.spam_absorbed:" + in_trap.body_json()["leadId"].get<std::string>()});
}

TEST_CASE("a redirect stored before the ASCII rule that breaks it is not followed") {
  Leads l;
  json config = bakery_leads_config();
  config["redirectUrl"] = "/\t/evil.example/";  // what a browser reads as //evil.example/
  l.mesh.db("LEADS_DB")
      .execute("UPDATE tenants SET config_json = ?1 WHERE tenant_id = 'bakery'",
               json::array({config.dump()}));
  l.mesh.now_ms += 60 * 1000;  // past the instance's tenant cache
  auto h = l.headers("application/x-www-form-urlencoded");
  h["Accept"] = "text/html";
  auto html = l.mesh.request("leads", "POST", "/api/leads", h,
                             "email=dee%40example.com&cf-turnstile-response=XXXX.DUMMY.TOKEN.XXXX");
  CHECK(html.status == 202);
  CHECK(html.header("location").empty());
  CHECK(html.body_json()["leadId"].is_string());
  CHECK(l.rows("SELECT * FROM leads").size() == 1);
}

TEST_CASE("bad input gets the contract's errors and stores nothing") {
  Leads l;
  auto big = l.submit(json{{"email", "a@example.com"}, {"message", std::string(40 * 1024, 'x')}});
  check_error(big, 413, "payload_too_large");
  auto plain =
      l.mesh.request("leads", "POST", "/api/leads/submit", l.headers("text/plain"), "email=a@b.co");
  check_error(plain, 415, "unsupported_media_type");
  CHECK(plain.body_json()["error"]["field"] == "Content-Type");  // the header, named
  check_error(l.mesh.request("leads", "POST", "/api/leads/submit", l.headers(), "{\"email\":"), 400,
              "invalid_json");
  // A header that is wrong names itself, as a field would (other addresses: the window's count).
  auto no_boundary = l.mesh.request("leads", "POST", "/api/leads/submit",
                                    l.headers("multipart/form-data", "192.0.2.77"), "--x--\r\n");
  check_error(no_boundary, 400, "invalid_request");
  CHECK(no_boundary.body_json()["error"]["field"] == "Content-Type");
  auto h = l.headers("application/json", "192.0.2.78");
  h["Content-Length"] = "12x";
  auto bad_length = l.mesh.request("leads", "POST", "/api/leads/submit", h, "{}");
  check_error(bad_length, 400, "invalid_request");
  CHECK(bad_length.body_json()["error"]["fields"]["Content-Length"] == "must be a number of bytes");
  auto missing = l.submit(json{{"name", "No Contact"}});
  check_error(missing, 400, "invalid_lead");
  CHECK(missing.body_json()["error"]["fields"].contains("email"));
  CHECK(missing.body_json()["error"]["fields"].contains("phone"));
  auto bad = l.submit(json{{"email", "not-an-email"},
                           {"phone", "call me"},
                           {"favorite_color", "red"},
                           {"name", json::array({1})}});
  check_error(bad, 400, "invalid_lead");
  auto long_name = l.submit(json{{"email", "a@example.com"}, {"name", std::string(201, 'n')}});
  check_error(long_name, 400, "invalid_lead");
  CHECK(long_name.body_json()["error"]["fields"].contains("name"));
  auto extra = l.submit(json{{"email", "a@example.com"}, {"favorite_color", "red"}});
  CHECK(extra.body_json()["error"]["fields"]["favorite_color"] ==
        "is not a field this form accepts");
  CHECK(l.rows("SELECT * FROM leads").empty());
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());
}

TEST_CASE("form fields that are not UTF-8 are refused, naming each field, never stored mangled") {
  // JSON bodies are checked by the parser; urlencoded and multipart values are raw bytes after
  // percent-decoding (a form posted as Latin-1, an overlong or surrogate sequence).
  Leads l;
  auto h = l.headers("application/x-www-form-urlencoded");
  auto bad =
      l.mesh.request("leads", "POST", "/api/leads/submit", h,
                     "email=a%40example.com&name=Ren%E9&message=%C0%AFx&preferred_date=%ED%A0%80"
                     "&cf-turnstile-response=XXXX.DUMMY.TOKEN.XXXX");
  check_error(bad, 400, "invalid_lead");
  json fields = bad.body_json()["error"]["fields"];
  CHECK(fields.contains("name"));
  CHECK(fields.contains("message"));
  CHECK(fields.contains("preferred_date"));
  CHECK_FALSE(fields.contains("email"));
  CHECK(l.rows("SELECT * FROM leads").empty());
  auto good = l.mesh.request("leads", "POST", "/api/leads/submit", h,
                             "email=a%40example.com&name=Ren%C3%A9+%F0%9F%A5%90"
                             "&cf-turnstile-response=XXXX.DUMMY.TOKEN.XXXX");
  REQUIRE(good.status == 202);
  json rows = l.rows("SELECT payload FROM leads");
  REQUIRE(rows.size() == 1);
  CHECK(json::parse(rows[0]["payload"].get<std::string>())["name"] ==
        "Ren\xC3\xA9 \xF0\x9F\xA5\x90");
}

TEST_CASE("a body whose raw bytes are not UTF-8 is refused, never stored with U+FFFD") {
  // The host hands such a body over as its bytes (docs/abi.md `bodyHex`), not decoded with U+FFFD
  // in place of what the client sent: raw Latin-1 in a form names its field like a %E9 would, and
  // JSON that is not UTF-8 is malformed.
  Leads l;
  auto form = l.mesh.request(
      "leads", "POST", "/api/leads/submit", l.headers("application/x-www-form-urlencoded"),
      "email=a%40example.com&name=Ren\xE9&cf-turnstile-response=XXXX.DUMMY.TOKEN.XXXX");
  check_error(form, 400, "invalid_lead");
  CHECK(form.body_json()["error"]["fields"]["name"] == "must be UTF-8 text");
  std::string boundary = "----ssb";
  std::string mp =
      "--" + boundary +
      "\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\ncy@example.com\r\n--" + boundary +
      "\r\nContent-Disposition: form-data; name=\"message\"\r\n\r\nbad\xFF\xFEutf\r\n--" +
      boundary + "\r\nContent-Disposition: form-data; name=\"turnstileToken\"\r\n\r\n" +
      kDummyToken + "\r\n--" + boundary + "--\r\n";
  auto multi = l.mesh.request("leads", "POST", "/api/leads/submit",
                              l.headers("multipart/form-data; boundary=" + boundary), mp);
  check_error(multi, 400, "invalid_lead");
  CHECK(multi.body_json()["error"]["fields"]["message"] == "must be UTF-8 text");
  auto json_body = l.mesh.request(
      "leads", "POST", "/api/leads/submit", l.headers("application/json"),
      "{\"email\":\"a@example.com\",\"name\":\"bad\xFF\xFEutf\",\"turnstileToken\":\"" +
          std::string(kDummyToken) + "\"}");
  check_error(json_body, 400, "invalid_json");
  CHECK(l.rows("SELECT * FROM leads").empty());
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());
}

TEST_CASE("C1 control characters are refused like ASCII ones") {
  // U+0080..U+009F are control characters too (U+009B is a terminal's CSI, U+0085 a line break).
  Leads l;
  auto bad = l.submit(json{{"email", "a@example.com"},
                           {"name",
                            "Ada\xC2\x9B"
                            "31mRed"},
                           {"message",
                            "line\xC2\x85"
                            "Break"},
                           {"preferred_date", "\xC2\x80"}});
  check_error(bad, 400, "invalid_lead");
  json fields = bad.body_json()["error"]["fields"];
  CHECK(fields.contains("name"));
  CHECK(fields.contains("message"));
  CHECK(fields.contains("preferred_date"));
  // The message says why: a short value is refused for its control characters, not its length.
  CHECK(fields["message"] == "must be at most 5000 characters, without control characters");
  CHECK(l.rows("SELECT * FROM leads").empty());
  // U+00A0 and beyond are text.
  CHECK(l.submit(json{{"email", "a@example.com"}, {"name", "Ad\xC2\xA0\xC3\xA0"}}).status == 202);
}

TEST_CASE("a filled honeypot looks like success, stores nothing and notifies nobody") {
  Leads l;
  auto r =
      l.submit(json{{"email", "bot@spam.example"}, {"company_website", "http://spam.example"}});
  CHECK(r.status == 202);
  CHECK(r.body_json()["ok"] == true);
  CHECK(ss::is_ulid(r.body_json()["leadId"].get<std::string>()));
  CHECK(l.rows("SELECT * FROM leads").empty());
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());
  CHECK(l.outbound("siteverify").empty());
  CHECK(l.events("lead.spam_absorbed").size() == 1);
  CHECK(l.events("lead.received").empty());
}

TEST_CASE(
    "the honeypot is checked before the fields: a bot's object-valued JSON field is absorbed") {
  Leads l;
  // A field that is no text (an object, an array) is a validation problem: a person's lead is 400…
  auto bad = l.submit(json{{"email", "a@example.com"}, {"name", {{"first", "Ada"}}}});
  check_error(bad, 400, "invalid_lead");
  CHECK(bad.body_json()["error"]["fields"]["name"] == "must be text");
  auto list = l.submit(json{{"email", "a@example.com"}, {"message", json::array({"a", "b"})}});
  check_error(list, 400, "invalid_lead");
  CHECK(list.body_json()["error"]["fields"]["message"] == "must be text");
  // …but the honeypot comes first, so a bot that filled it is answered like a success either way,
  // and one that put an object in the honeypot itself filled it too.
  for (const json& body :
       {json{{"email", "bot@spam.example"}, {"name", {{"x", 1}}}, {"company_website", "http://x"}},
        json{{"email", "bot@spam.example"}, {"company_website", {{"url", "http://x"}}}},
        json{{"email", "bot@spam.example"}, {"company_website", json::array({"http://x"})}}}) {
    CAPTURE(body.dump());
    auto r = l.submit(body);
    CHECK(r.status == 202);
    CHECK(ss::is_ulid(r.body_json()["leadId"].get<std::string>()));
  }
  CHECK(l.rows("SELECT * FROM leads").empty());
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());
  CHECK(l.events("lead.spam_absorbed").size() == 3);
}

TEST_CASE("a filled honeypot answers repeats of an Idempotency-Key as a person's lead would be") {
  Leads l;
  json bot{{"email", "bot@spam.example"}, {"company_website", "http://spam.example"}};
  auto h = l.headers();
  h["Idempotency-Key"] = "bot-key-1";
  auto first = l.submit(bot, h);
  REQUIRE(first.status == 202);
  std::string decoy = first.body_json()["leadId"];
  // The same id again, as a real lead's repeat gets — not a new one that tells the bot it was seen.
  auto again = l.submit(bot, h);
  CHECK(again.status == 202);
  CHECK(again.body_json()["leadId"] == decoy);
  // Another key, another id; a key over 200 characters is refused as it is for everyone.
  h["Idempotency-Key"] = "bot-key-2";
  CHECK(l.submit(bot, h).body_json()["leadId"] != decoy);
  h["Idempotency-Key"] = std::string(201, 'k');
  HttpReply long_key = l.submit(bot, h);
  check_error(long_key, 400, "invalid_request");
  CHECK(long_key.body_json()["error"]["fields"]["Idempotency-Key"].is_string());
  // Still nothing stored but the keys' claims, nobody notified, the decoy is no lead.
  CHECK(l.rows("SELECT * FROM leads").empty());
  CHECK(l.rows("SELECT * FROM lead_idempotency").size() == 2);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());
  CHECK(l.outbound("siteverify").empty());
  auto admin = l.mesh.request("leads", "GET", "/api/leads/" + decoy, l.admin());
  CHECK(admin.status == 404);
  // Erasing the decoy finds no lead: 404, and nothing changes (its repeat still gets the decoy).
  check_error(l.mesh.request("leads", "DELETE", "/api/leads/" + decoy, l.admin()), 404,
              "not_found");
  CHECK(l.rows("SELECT * FROM lead_idempotency").size() == 2);
  h["Idempotency-Key"] = "bot-key-1";
  CHECK(l.submit(bot, h).body_json()["leadId"] == decoy);
}

TEST_CASE(
    "storeSubmissions:false: erasing a lead in delivery is a 204, an unknown id a 404 that changes "
    "nothing") {
  json config = bakery_leads_config();
  config["storeSubmissions"] = false;
  Leads l(config);
  auto h = l.headers();
  h["Idempotency-Key"] = "nostore-erase";
  std::string id = l.submit(lead_body(), h).body_json()["leadId"];
  REQUIRE(l.rows("SELECT * FROM lead_deliveries WHERE status = 'pending'").size() == 3);
  // An id of nothing (a ULID never given) changes nothing.
  check_error(l.mesh.request("leads", "DELETE", "/api/leads/01J0000000000000000000000Z", l.admin()),
              404, "not_found");
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'pending'").size() == 3);
  CHECK(l.rows("SELECT * FROM lead_idempotency").size() == 1);
  // The lead is in delivery (its data in the queued messages): erased, 204, nothing sent after it.
  auto erased = l.mesh.request("leads", "DELETE", "/api/leads/" + id, l.admin());
  CHECK(erased.status == 204);
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'cancelled'").size() == 3);
  CHECK(l.rows("SELECT * FROM lead_idempotency").empty());
  l.drain_notifications();
  CHECK(l.outbound("hooks.bakery.example").empty());
  // Nothing of it is left to erase: a second erasure is a 404.
  check_error(l.mesh.request("leads", "DELETE", "/api/leads/" + id, l.admin()), 404, "not_found");
}

TEST_CASE("Turnstile: failure is 403; unreachable siteverify keeps the lead, flagged") {
  Leads l;
  check_error(l.submit(json{{"email", "a@example.com"}, {"turnstileToken", "forged"}}), 403,
              "turnstile_failed");
  auto h = l.headers();
  auto no_token = l.mesh.request("leads", "POST", "/api/leads/submit", h,
                                 json{{"email", "a@example.com"}}.dump());
  check_error(no_token, 403, "turnstile_failed");
  CHECK(l.rows("SELECT * FROM leads").empty());
  l.siteverify_down = true;
  auto kept = l.submit(json{{"email", "a@example.com"}});
  CHECK(kept.status == 202);
  json rows = l.rows("SELECT turnstile_verified FROM leads");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["turnstile_verified"] == 0);
  l.siteverify_down = false;
  l.fail_next["siteverify"] = 1;  // a 500 from siteverify is "unreachable" too
  CHECK(l.submit(json{{"email", "b@example.com"}}).status == 202);
  CHECK(l.rows("SELECT * FROM leads WHERE turnstile_verified = 0").size() == 2);
}

TEST_CASE("Turnstile: siteverify refusing the worker's own secret keeps the lead, flagged") {
  // A wrong or rotated TURNSTILE_SECRET_KEY is the platform's fault, not the visitor's: like a
  // missing secret it must not turn every lead of every tenant into a 403.
  Leads l;
  l.mesh.set_env("leads", "TURNSTILE_SECRET_KEY", "0x-not-the-secret");
  std::string why = "invalid-input-secret";
  l.mesh.fetch_stub = [&](const json& req) {
    ss::native::StubReply reply;
    if (req["url"].get<std::string>().find("siteverify") == std::string::npos) return l.answer(req);
    reply.body = json{{"success", false}, {"error-codes", {why}}}.dump();
    return reply;
  };
  CHECK(l.submit(json{{"email", "a@example.com"}}).status == 202);
  why = "missing-input-secret";
  CHECK(l.submit(json{{"email", "b@example.com"}}).status == 202);
  CHECK(l.rows("SELECT * FROM leads WHERE turnstile_verified = 0").size() == 2);
  why = "invalid-input-response";  // the visitor's token: still refused
  check_error(l.submit(json{{"email", "c@example.com"}}), 403, "turnstile_failed");
  why = "timeout-or-duplicate";
  check_error(l.submit(json{{"email", "d@example.com"}}), 403, "turnstile_failed");
  why = "bad-request";  // the request holds the visitor's token: no way around the check
  check_error(l.submit(json{{"email", "e@example.com"}}), 403, "turnstile_failed");
  CHECK(l.rows("SELECT * FROM leads").size() == 2);
}

TEST_CASE("over the rate limit, a repeat of an Idempotency-Key still learns its leadId") {
  Leads l;
  // Over the limit, a repeat of a lead already taken still learns its id (nothing new stored); a
  // key never used is limited like any other post.
  auto keyed = l.headers();
  keyed["Idempotency-Key"] = "lost-answer-1";
  auto taken = l.submit(json{{"email", "a@example.com"}}, keyed);
  REQUIRE(taken.status == 202);
  for (int i = 0; i < 4; ++i) REQUIRE(l.submit(json{{"email", "a@example.com"}}).status == 202);
  auto repeat = l.submit(json{{"email", "a@example.com"}}, keyed);
  CHECK(repeat.status == 202);
  CHECK(repeat.body_json()["leadId"] == taken.body_json()["leadId"]);
  keyed["Idempotency-Key"] = "never-used";
  check_error(l.submit(json{{"email", "a@example.com"}}, keyed), 429, "rate_limited");
  CHECK(l.rows("SELECT * FROM leads").size() == 5);
}

TEST_CASE("the rate limit answers 429 with Retry-After before any storage, per tenant and IP") {
  Leads l;
  for (int i = 0; i < 5; ++i) REQUIRE(l.submit(json{{"email", "a@example.com"}}).status == 202);
  auto limited = l.submit(json{{"email", "a@example.com"}});
  check_error(limited, 429, "rate_limited");
  int retry = std::stoi(limited.header("retry-after"));
  CHECK(retry >= 1);
  CHECK(retry <= 60);
  CHECK(l.rows("SELECT * FROM leads").size() == 5);
  CHECK(l.outbound("siteverify").size() == 5);
  // Malformed and spam posts count as well: the limiter runs before parsing, honeypot and
  // validation.
  auto other_ip = l.headers("application/json", "198.51.100.9");
  for (int i = 0; i < 5; ++i) {
    CHECK(l.mesh.request("leads", "POST", "/api/leads/submit", other_ip, "{").status == 400);
  }
  check_error(l.mesh.request("leads", "POST", "/api/leads/submit", other_ip, "{"), 429,
              "rate_limited");
  // The window is anchored at its first hit: 59 s later it is still closed.
  l.mesh.now_ms += 59 * 1000;
  check_error(l.submit(json{{"email", "a@example.com"}}), 429, "rate_limited");
  CHECK(l.submit(json{{"email", "a@example.com"}}).header("retry-after") == "1");
  l.mesh.now_ms += 2 * 1000;
  // Another IP, or another tenant, has its own window; the next window is open again.
  CHECK(l.submit(json{{"email", "a@example.com"}}, l.headers("application/json", "198.51.100.1"))
            .status == 202);
  CHECK(l.submit(json{{"email", "a@example.com"}}).status == 202);
  CHECK(l.rows("SELECT * FROM rate_limit_windows WHERE bucket LIKE '%203.0.113.7%'")
            .empty());  // IPs are hashed
}

TEST_CASE("an Idempotency-Key replay returns the first leadId and creates nothing") {
  Leads l;
  auto h = l.headers();
  h["Idempotency-Key"] = "form-7f3a";
  auto first = l.submit(lead_body(), h);
  REQUIRE(first.status == 202);
  for (int i = 0; i < 3; ++i) {
    auto again = l.submit(lead_body(), h);
    CHECK(again.status == 202);
    CHECK(again.body_json()["leadId"] == first.body_json()["leadId"]);
  }
  CHECK(l.rows("SELECT * FROM leads").size() == 1);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].size() == 3);
  CHECK(l.outbound("siteverify").size() == 1);
  l.mesh.now_ms += 25LL * 60 * 60 * 1000;  // after 24 h the key is free again
  auto later = l.submit(lead_body(), h);
  CHECK(later.status == 202);
  CHECK(later.body_json()["leadId"] != first.body_json()["leadId"]);
}

TEST_CASE("an Idempotency-Key's claim is read with the rate window: one D1 round trip fewer") {
  Leads l;
  auto d1_calls = [&] { return l.mesh.take_effects("d1."); };
  REQUIRE(l.submit(lead_body()).status == 202);  // the tenant's row, cached from here on
  d1_calls();
  REQUIRE(l.submit(lead_body()).status == 202);
  const int without_key = d1_calls();  // the rate window, then the lead's transaction
  CHECK(without_key == 2);
  auto h = l.headers();
  h["Idempotency-Key"] = "one-trip-1";
  auto first = l.submit(lead_body(), h);
  REQUIRE(first.status == 202);
  CHECK(d1_calls() == without_key);
  auto again = l.submit(lead_body(), h);
  CHECK(again.body_json()["leadId"] == first.body_json()["leadId"]);
  CHECK(d1_calls() == 1);  // answered from the claim read with the window
  // A key too long to be a claim is refused before any lookup; the window still counts it.
  h["Idempotency-Key"] = std::string(201, 'k');
  CHECK(l.submit(lead_body(), h).status == 400);
  CHECK(d1_calls() == 1);
  CHECK(l.rows("SELECT * FROM leads").size() == 3);
}

TEST_CASE("storeSubmissions:false delivers without storing") {
  json config = bakery_leads_config();
  config["storeSubmissions"] = false;
  Leads l(config);
  auto r = l.submit(lead_body());
  REQUIRE(r.status == 202);
  CHECK(l.rows("SELECT * FROM leads").empty());
  l.drain_notifications();
  CHECK(l.outbound("resend.test/emails").size() == 1);
  CHECK(l.outbound("hooks.bakery.example").size() == 1);
  json sent = json::parse(l.outbound("hooks.bakery.example")[0]["body"].get<std::string>());
  CHECK(sent["lead"]["email"] == "ada@example.com");
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'delivered'").size() == 3);
}

TEST_CASE("storeSubmissions:false with no channel is taken as written: answered, not stored") {
  json config = bakery_leads_config();
  config["storeSubmissions"] = false;
  config.erase("notify");
  Leads l(config);
  auto r = l.submit(lead_body());
  REQUIRE(r.status == 202);
  CHECK(l.rows("SELECT id FROM leads").empty());
  CHECK(l.rows("SELECT * FROM lead_deliveries").empty());
}

TEST_CASE("a stored config that repeats a recipient texts and mails each one once") {
  Leads l;
  // Stored before repeats were refused at provisioning (written to D1 directly).
  json config = bakery_leads_config();
  config["notify"]["sms"]["to"] = {"+15550100001", "+15550100001"};
  config["notify"]["email"] = {{"provider", "sendgrid"},
                               {"to", {"owner@bakery.example", "OWNER@Bakery.example"}},
                               {"from", "forms@bakery.example"}};
  l.mesh.db("LEADS_DB")
      .execute("UPDATE tenants SET config_json = ?1 WHERE tenant_id = 'bakery'",
               json::array({config.dump()}));
  REQUIRE(l.submit(lead_body()).status == 202);
  l.drain_notifications();
  CHECK(l.outbound("twilio.test").size() == 1);
  auto sendgrid = l.outbound("sendgrid.test/v3/mail/send");
  REQUIRE(sendgrid.size() == 1);
  json mail = json::parse(sendgrid[0]["body"].get<std::string>());
  CHECK(mail["personalizations"][0]["to"] == json::array({{{"email", "owner@bakery.example"}}}));
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE channel = 'sms'").size() == 1);
}

TEST_CASE("notifications use each provider's real request format and a verifiable signature") {
  Leads l;
  std::string id = l.submit(lead_body()).body_json()["leadId"];
  l.drain_notifications();
  auto resend = l.outbound("resend.test/emails");
  REQUIRE(resend.size() == 1);
  CHECK(resend[0]["headers"]["authorization"] == "Bearer re_test_key");
  json email = json::parse(resend[0]["body"].get<std::string>());
  CHECK(email["to"] == json::array({"owner@bakery.example"}));
  CHECK(email["from"] == "forms@bakery.example");
  CHECK(email["reply_to"] == "ada@example.com");
  CHECK(email["text"].get<std::string>().find("croissants") != std::string::npos);
  auto twilio = l.outbound("twilio.test/2010-04-01/Accounts/AC123/Messages.json");
  REQUIRE(twilio.size() == 1);
  CHECK(twilio[0]["headers"]["authorization"] ==
        "Basic " + std::string("QUMxMjM6dHdpbGlvLXNlY3JldA=="));
  auto sms = ss::parse_urlencoded(twilio[0]["body"].get<std::string>());
  std::map<std::string, std::string> s(sms->begin(), sms->end());
  CHECK(s["To"] == "+15550100001");
  CHECK(s["From"] == "+15550100999");
  auto hook = l.outbound("hooks.bakery.example");
  REQUIRE(hook.size() == 1);
  std::string signature = hook[0]["headers"]["x-siteswarm-signature"];
  auto comma = signature.find(",v1=");
  REQUIRE(signature.rfind("t=", 0) == 0);
  REQUIRE(comma != std::string::npos);
  std::string t = signature.substr(2, comma - 2);
  std::string body = hook[0]["body"];
  CHECK(signature.substr(comma + 4) == ss::native::hmac_sha256_hex(kWebhookSecret, t + "." + body));
  CHECK(json::parse(body)["leadId"] == id);
  CHECK(l.events("lead.delivered").size() == 3);
}

TEST_CASE("SendGrid gets a sender's display name in from.name, the address alone in from.email") {
  json config = bakery_leads_config();
  config["notify"] = {{"email",
                       {{"provider", "sendgrid"},
                        {"to", {"owner@bakery.example"}},
                        {"from", "Crumb & Crust <forms@bakery.example>"}}}};
  Leads l(config);
  CHECK(l.submit(lead_body()).status == 202);
  l.drain_notifications();
  auto sent = l.outbound("sendgrid.test/v3/mail/send");
  REQUIRE(sent.size() == 1);
  json mail = json::parse(sent[0]["body"].get<std::string>());
  CHECK(mail["from"] == json{{"email", "forms@bakery.example"}, {"name", "Crumb & Crust"}});
  CHECK(mail["personalizations"][0]["to"] == json::array({{{"email", "owner@bakery.example"}}}));
  CHECK(mail["reply_to"] == json{{"email", "ada@example.com"}});
}

TEST_CASE("a sender's display name: quoted with a comma or escapes, unquoted as one phrase") {
  using ss::leads::split_sender;
  auto quoted = split_sender("\"Doe, Jane\" <jane@x.example>");
  REQUIRE(quoted);
  CHECK(quoted->name == "Doe, Jane");
  CHECK(quoted->address == "jane@x.example");
  auto escaped = split_sender("\t\"Say \\\"hi\\\" \\\\ co\" <a@x.example>");
  REQUIRE(escaped);
  CHECK(escaped->name == "Say \"hi\" \\ co");
  auto bare = split_sender("forms@bakery.example");
  REQUIRE(bare);
  CHECK(bare->name.empty());
  CHECK(split_sender("Crumb & Crust\t <forms@bakery.example>")->name == "Crumb & Crust");
  for (const char* bad : {"Doe, Jane <jane@x.example>", "Shop <Main> <a@x.example>",
                          "\"a\"b\" <a@x.example>", "\"open <a@x.example>", " <a@x.example>",
                          "Shop <not an address>", "Shop; Two <a@x.example>"}) {
    CHECK_MESSAGE(!split_sender(bad), bad);
  }
}

TEST_CASE("an email subject and an SMS body cut to length never split a character") {
  const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD: what a split character becomes
  for (int pad = 0; pad < 3; ++pad) {  // one of three offsets lands inside a 3-byte character
    Leads l;
    std::string name = std::string(97 + pad, 'a') + "\xE2\x82\xAC\xE2\x82\xAC";  // "€€"
    std::string message;
    for (int i = 0; i < 200; ++i) message += "\xE2\x82\xAC";
    REQUIRE(
        l.submit(json{{"name", name}, {"email", "ada@example.com"}, {"message", message}}).status ==
        202);
    l.drain_notifications();
    auto resend = l.outbound("resend.test/emails");
    REQUIRE(resend.size() == 1);
    std::string subject = json::parse(resend[0]["body"].get<std::string>())["subject"];
    CHECK(subject.find(kReplacement) == std::string::npos);
    auto twilio = l.outbound("twilio.test");
    REQUIRE(twilio.size() == 1);
    auto sms = ss::parse_urlencoded(twilio[0]["body"].get<std::string>());
    std::map<std::string, std::string> f(sms->begin(), sms->end());
    CHECK(ss::dump_json(json(f["Body"])).find(kReplacement) == std::string::npos);
  }
}

TEST_CASE("a webhook that fails twice then succeeds is delivered once with 3 attempts recorded") {
  Leads l;
  l.mesh.now_ms += 250;  // inside a second: the lead's stamp drops the 250 ms
  l.fail_next["hooks.bakery.example"] = 2;
  std::string id = l.submit(lead_body()).body_json()["leadId"];
  l.drain_notifications();
  CHECK(l.outbound("hooks.bakery.example").size() == 3);
  json d = l.rows("SELECT * FROM lead_deliveries WHERE channel = 'webhook'");
  REQUIRE(d.size() == 1);
  CHECK(d[0]["status"] == "delivered");
  CHECK(d[0]["attempts"] == 3);
  CHECK(l.rows("SELECT * FROM delivery_attempts WHERE delivery_id = '" +
               d[0]["id"].get<std::string>() + "'")
            .size() == 3);
  auto view = l.mesh.request("leads", "GET", "/api/leads/" + id, l.admin()).body_json();
  // The contract's fields at the top as well as in "fields" (an extra field only there).
  CHECK(view["name"] == "Ada Baker");
  CHECK(view["email"] == "ada@example.com");
  CHECK(view["phone"] == "+15550102000");
  CHECK(view["message"] == "Two dozen croissants for Saturday?");
  CHECK(view["fields"]["email"] == "ada@example.com");
  CHECK(view["fields"]["preferred_date"] == "2026-12-05");
  CHECK_FALSE(view.contains("preferred_date"));
  // A stored field that is not text (a row written by other means) stays in "fields" only.
  l.mesh.db("LEADS_DB")
      .execute("UPDATE leads SET payload = ?1 WHERE id = ?2",
               json::array({R"({"name":42,"email":"ada@example.com"})", id}));
  json odd = l.mesh.request("leads", "GET", "/api/leads/" + id, l.admin()).body_json();
  CHECK_FALSE(odd.contains("name"));
  CHECK(odd["fields"]["name"] == 42);
  CHECK(odd["email"] == "ada@example.com");
  // Times as the contract writes them: whole seconds, UTC (stored fixed width, "….000Z").
  std::string created = view["createdAt"];
  CHECK(created.size() == 20);
  CHECK(ss::parse_rfc3339(created).has_value());
  CHECK(l.rows("SELECT created_at FROM leads")[0]["created_at"].get<std::string>().substr(19) ==
        ".000Z");
  for (const json& r : l.outbound("hooks.bakery.example")) {
    auto body = ss::parse_json(r["body"].get<std::string>());
    REQUIRE(body);
    CHECK((*body)["submittedAt"] == created);
  }
  bool found = false;
  for (const json& del : view["deliveries"]) {
    if (del["channel"] != "webhook") continue;
    found = true;
    CHECK(del["history"].size() == 3);
    CHECK(del["history"][0]["ok"] == false);
    CHECK(del["history"][2]["ok"] == true);
  }
  CHECK(found);
}

// The webhook message of one fresh lead, handed to the notify consumer with the webhook answering
// `reply`: the consumer's verdict for it ({"ack":[…],"retry":[…]}).
static json deliver_webhook_answering(Leads& l, const StubReply& reply) {
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  l.submit(lead_body());
  json message;
  for (const json& body : l.mesh.queue_sent["NOTIFY_QUEUE"]) {
    if (body["channel"] == "webhook") message = {{"id", "m"}, {"body", body}, {"attempts", 1}};
  }
  REQUIRE(!message.is_null());
  l.mesh.fetch_stub = [&l, reply](const json& req) {
    if (req["url"].get<std::string>().find("hooks.bakery.example") != std::string::npos)
      return reply;
    return l.answer(req);
  };
  json out = l.mesh.message(
      "leads",
      {{"op", "queue"}, {"queue", "siteswarm-leads-notify"}, {"messages", json::array({message})}});
  l.mesh.fetch_stub = [&l](const json& req) { return l.answer(req); };
  return out;
}

TEST_CASE(
    "a receiver that refuses the message itself is dead at once; a 429 waits its Retry-After") {
  Leads l;
  auto webhook = [&] {
    json rows = l.rows(
        "SELECT status, attempts FROM lead_deliveries WHERE channel = 'webhook' ORDER BY rowid "
        "DESC");
    REQUIRE(!rows.empty());
    return rows[0];
  };
  StubReply refused;
  refused.status = 422;  // the request itself is invalid: trying again cannot help
  json out = deliver_webhook_answering(l, refused);
  CHECK(out["ack"] == json::array({"m"}));
  CHECK(out["retry"].empty());
  CHECK(webhook()["status"] == "dead");
  CHECK(webhook()["attempts"] == 1);
  CHECK(l.events("lead.delivery_failed").size() == 1);

  StubReply busy;
  busy.status = 429;  // come back later, in 15 minutes
  busy.headers = {{"retry-after", "900"}};
  out = deliver_webhook_answering(l, busy);
  REQUIRE(out["retry"].size() == 1);
  CHECK(out["retry"][0]["delaySeconds"] == 900);
  CHECK(webhook()["status"] == "pending");
  busy.headers = {{"retry-after", "7200"}};  // longer than the longest backoff: capped at the hour
  out = deliver_webhook_answering(l, busy);
  REQUIRE(out["retry"].size() == 1);
  CHECK(out["retry"][0]["delaySeconds"] == ss::leads::kMaxBackoffSeconds);
  // More digits than an int64 holds is still a long pause, capped; leading zeros are only zeros.
  l.mesh.now_ms += 61 * 1000;  // a fresh rate window for the submissions below
  busy.headers = {{"retry-after", "99999999999999999999"}};
  out = deliver_webhook_answering(l, busy);
  REQUIRE(out["retry"].size() == 1);
  CHECK(out["retry"][0]["delaySeconds"] == ss::leads::kMaxBackoffSeconds);
  busy.headers = {{"retry-after", "0000000000000000000000120"}};
  out = deliver_webhook_answering(l, busy);
  REQUIRE(out["retry"].size() == 1);
  CHECK(out["retry"][0]["delaySeconds"] == 120);

  StubReply unauthorized;
  unauthorized.status = 401;  // a key or a route that may be fixed meanwhile: retried with backoff
  out = deliver_webhook_answering(l, unauthorized);
  REQUIRE(out["retry"].size() == 1);
  CHECK(out["retry"][0]["delaySeconds"] == 0);  // the backoff (NOTIFY_BACKOFF_SECONDS 0 here)
  CHECK(webhook()["status"] == "pending");
  CHECK(l.events("lead.delivery_failed").size() == 1);
}

TEST_CASE(
    "a webhook that always fails is dead-lettered and visible; other channels still deliver") {
  Leads l;
  l.fail_next["hooks.bakery.example"] = -1;
  l.fail_next["resend.test"] = -1;  // Resend down as well
  l.submit(lead_body());
  l.drain_notifications();
  CHECK(l.outbound("hooks.bakery.example").size() == 5);
  auto dead = l.mesh.request("leads", "GET", "/api/leads/deliveries?status=dead", l.admin());
  REQUIRE(dead.status == 200);
  CHECK(dead.body_json()["deliveries"].size() == 2);
  CHECK(dead.body_json()["nextCursor"].is_null());
  // A page at a time, newest first: the cursor leads to the older one, and a bad cursor is a 400.
  auto first =
      l.mesh.request("leads", "GET", "/api/leads/deliveries?status=dead&limit=1", l.admin());
  REQUIRE(first.body_json()["deliveries"].size() == 1);
  std::string cursor = first.body_json()["nextCursor"];
  CHECK(cursor == first.body_json()["deliveries"][0]["id"]);
  auto second = l.mesh.request(
      "leads", "GET", "/api/leads/deliveries?status=dead&limit=1&cursor=" + cursor, l.admin());
  REQUIRE(second.body_json()["deliveries"].size() == 1);
  CHECK(second.body_json()["deliveries"][0] == dead.body_json()["deliveries"][1]);
  CHECK(second.body_json()["nextCursor"].is_null());
  auto bad_cursor =
      l.mesh.request("leads", "GET", "/api/leads/deliveries?status=dead&cursor=abc", l.admin());
  check_error(bad_cursor, 400, "invalid_request");
  CHECK(bad_cursor.body_json()["error"]["field"] == "cursor");
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE channel = 'sms' AND status = 'delivered'")
            .size() == 1);
  CHECK(l.events("lead.delivery_failed").size() == 2);
  CHECK(l.events("lead.delivered").size() == 1);
  // A redelivered message of a dead-lettered delivery sends nothing again.
  std::size_t before = l.requests.size();
  json msg = {{"deliveryId", dead.body_json()["deliveries"][0]["id"]},
              {"tenantId", "bakery"},
              {"provider", "webhook"}};
  json out =
      l.mesh.message("leads", {{"op", "queue"}, {"messages", {{{"id", "x"}, {"body", msg}}}}});
  CHECK(out["ack"] == json::array({"x"}));
  CHECK(l.requests.size() == before);
}

TEST_CASE(
    "tenant isolation: a tenant id without its token is 401, and admin calls never cross tenants") {
  Leads l;
  auto spoof =
      l.mesh.request("leads", "POST", "/api/leads/submit",
                     {{"X-SiteSwarm-Tenant-Id", "bakery"}, {"Content-Type", "application/json"}},
                     json{{"email", "a@example.com"}}.dump());
  check_error(spoof, 401, "unauthenticated_tenant");
  auto wrong = l.mesh.request("leads", "POST", "/api/leads/submit",
                              {{"X-SiteSwarm-Tenant-Id", "bakery"},
                               {"X-SiteSwarm-Tenant-Token", kAutoToken},
                               {"Content-Type", "application/json"}},
                              json{{"email", "a@example.com"}}.dump());
  check_error(wrong, 401, "unauthenticated_tenant");
  CHECK(l.rows("SELECT * FROM leads").empty());

  std::string id = l.submit(lead_body()).body_json()["leadId"];
  auto a = l.admin("auto-repair", kAutoAdmin);
  CHECK(l.mesh.request("leads", "GET", "/api/leads", a).body_json()["leads"].empty());
  check_error(l.mesh.request("leads", "GET", "/api/leads/" + id, a), 404, "not_found");
  check_error(l.mesh.request("leads", "DELETE", "/api/leads/" + id, a), 404, "not_found");
  std::string csv = l.mesh.request("leads", "GET", "/api/leads/export.csv", a).body;
  CHECK(csv.find(id) == std::string::npos);
  CHECK(l.rows("SELECT * FROM leads").size() == 1);
  check_error(l.mesh.request("leads", "GET", "/api/leads", {{"X-SiteSwarm-Tenant-Id", "bakery"}}),
              401, "unauthenticated_tenant");
  check_error(l.mesh.request("leads", "GET", "/api/leads", l.admin("bakery", kBakeryToken)), 401,
              "unauthenticated_tenant");
}

TEST_CASE("tenant admin: newest first with cursors, one lead with history, erasure") {
  Leads l;
  l.mesh.set_env("leads", "TURNSTILE_SECRET_KEY", "");  // verification skipped: flagged, still kept
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(l.submit(json{{"email", "p" + std::to_string(i) + "@example.com"}},
                           l.headers("application/json", "192.0.2." + std::to_string(i)))
                      .body_json()["leadId"]);
    l.mesh.now_ms += 1000;
  }
  auto page1 = l.mesh.request("leads", "GET", "/api/leads?limit=2", l.admin()).body_json();
  REQUIRE(page1["leads"].size() == 2);
  CHECK(page1["leads"][0]["id"] == ids[4]);
  CHECK(page1["leads"][1]["id"] == ids[3]);
  auto page2 =
      l.mesh
          .request("leads", "GET",
                   "/api/leads?limit=2&cursor=" + page1["nextCursor"].get<std::string>(), l.admin())
          .body_json();
  CHECK(page2["leads"][0]["id"] == ids[2]);
  auto page3 =
      l.mesh
          .request("leads", "GET",
                   "/api/leads?limit=2&cursor=" + page2["nextCursor"].get<std::string>(), l.admin())
          .body_json();
  CHECK(page3["leads"].size() == 1);
  CHECK(page3["nextCursor"].is_null());
  // A full page that is the last one says so: no cursor to an empty page.
  auto full = l.mesh.request("leads", "GET", "/api/leads?limit=5", l.admin()).body_json();
  CHECK(full["leads"].size() == 5);
  CHECK(full["nextCursor"].is_null());
  auto four = l.mesh.request("leads", "GET", "/api/leads?limit=4", l.admin()).body_json();
  CHECK(four["leads"].size() == 4);
  CHECK(four["nextCursor"] == ids[1]);
  CHECK(l.mesh.request("leads", "GET", "/api/leads?limit=0", l.admin()).status == 400);
  auto bad_cursor = l.mesh.request("leads", "GET", "/api/leads?cursor=zzz", l.admin());
  CHECK(bad_cursor.status == 400);
  CHECK(bad_cursor.body_json()["error"]["fields"]["cursor"].is_string());

  auto one = l.mesh.request("leads", "GET", "/api/leads/" + ids[0], l.admin());
  REQUIRE(one.status == 200);
  CHECK(one.body_json()["fields"]["email"] == "p0@example.com");
  CHECK(one.body_json()["deliveries"].size() == 3);
  // A ULID reads the same in either case (the ULID spec): lower case names the same lead and
  // cursor.
  std::string lower = ids[0];
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto lowered = l.mesh.request("leads", "GET", "/api/leads/" + lower, l.admin());
  CHECK(lowered.status == 200);
  CHECK(lowered.body_json()["id"] == ids[0]);
  std::string cursor = page1["nextCursor"];
  for (char& c : cursor) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  CHECK(l.mesh.request("leads", "GET", "/api/leads?limit=2&cursor=" + cursor, l.admin())
            .body_json()["leads"][0]["id"] == ids[2]);
  auto erased = l.mesh.request("leads", "DELETE", "/api/leads/" + lower, l.admin());
  CHECK(erased.status == 204);
  CHECK(erased.body.empty());
  check_error(l.mesh.request("leads", "GET", "/api/leads/" + ids[0], l.admin()), 404, "not_found");
  check_error(l.mesh.request("leads", "DELETE", "/api/leads/" + ids[0], l.admin()), 404,
              "not_found");
  CHECK(l.rows("SELECT * FROM leads WHERE payload LIKE '%p0@example.com%'").empty());
  // Its pending notifications are cancelled, not sent after the erasure.
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE lead_id = '" + ids[0] +
               "' AND status = 'cancelled'")
            .size() == 3);
}

TEST_CASE("a lead erased while its notification is in flight is not sent again") {
  Leads l;
  std::string id = l.submit(lead_body()).body_json()["leadId"];
  int hook_calls = 0;
  l.mesh.fetch_stub = [&](const json& req) {
    std::string url = req["url"];
    if (url.find("hooks.bakery.example") != std::string::npos) {
      ++hook_calls;
      // The tenant erases the lead while the receiver is still answering (then it fails).
      CHECK(l.mesh.request("leads", "DELETE", "/api/leads/" + id, l.admin()).status == 204);
      StubReply failed;
      failed.status = 500;
      return failed;
    }
    return l.answer(req);
  };
  l.drain_notifications();
  CHECK(hook_calls == 1);
  json hook = l.rows("SELECT status, attempts FROM lead_deliveries WHERE channel = 'webhook'");
  REQUIRE(hook.size() == 1);
  CHECK(hook[0]["status"] == "cancelled");
  CHECK(l.events("lead.delivery_failed").empty());
  CHECK(l.mesh.request("leads", "GET", "/api/leads/deliveries?status=dead", l.admin())
            .body_json()["deliveries"]
            .empty());
}

TEST_CASE(
    "a lead erased while its notification is in flight, which then succeeds, reads delivered") {
  // The receiver has the lead once it answers 200: the delivery says so (and lead.delivered is
  // emitted), rather than "cancelled", which would tell the tenant its data never went out.
  Leads l;
  std::string id = l.submit(lead_body()).body_json()["leadId"];
  l.mesh.fetch_stub = [&](const json& req) {
    std::string url = req["url"];
    if (url.find("hooks.bakery.example") != std::string::npos) {
      CHECK(l.mesh.request("leads", "DELETE", "/api/leads/" + id, l.admin()).status == 204);
    }
    return l.answer(req);
  };
  l.drain_notifications();
  json hook = l.rows(
      "SELECT status, attempts, delivered_at FROM lead_deliveries WHERE channel = 'webhook'");
  REQUIRE(hook.size() == 1);
  CHECK(hook[0]["status"] == "delivered");
  CHECK(hook[0]["attempts"] == 1);
  CHECK(hook[0]["delivered_at"].is_string());
  bool webhook_delivered = false;
  for (const json& e : l.events("lead.delivered")) {
    webhook_delivered = webhook_delivered || e["payload"]["channel"] == "webhook";
  }
  CHECK(webhook_delivered);
  CHECK(l.mesh.request("leads", "GET", "/api/leads/" + id, l.admin()).status == 404);
}

TEST_CASE("two copies of one notification message send once") {
  Leads l;
  l.submit(lead_body());
  std::vector<json> copies;
  for (const json& body : l.mesh.queue_sent["NOTIFY_QUEUE"]) {
    if (body["channel"] == "webhook") {
      copies.push_back({{"id", "a"}, {"body", body}, {"attempts", 1}});
      copies.push_back({{"id", "b"}, {"body", body}, {"attempts", 1}});
    }
  }
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  json out = l.mesh.message(
      "leads", {{"op", "queue"}, {"queue", "siteswarm-leads-notify"}, {"messages", copies}});
  CHECK(out["ack"].size() == 2);
  CHECK(l.outbound("hooks.bakery.example").size() == 1);
  CHECK(l.rows("SELECT * FROM delivery_attempts").size() == 1);
}

TEST_CASE("CSV export quotes per RFC 4180 and defuses spreadsheet formulas") {
  Leads l;
  l.submit(json{{"name", "=HYPERLINK(\"http://evil\")"},
                {"email", "q@example.com"},
                {"phone", "+1 555 010 2000"},
                {"message", "line one\nline \"two\", with comma"},
                {"preferred_date", "@SUM(A1)"}});
  l.submit(json{{"name", "-2+3"}, {"email", "r@example.com"}, {"preferred_date", "+1"}});
  auto r = l.mesh.request("leads", "GET", "/api/leads/export.csv", l.admin());
  REQUIRE(r.status == 200);
  CHECK(r.header("content-type").rfind("text/csv", 0) == 0);
  CHECK(r.header("content-disposition").find("attachment") != std::string::npos);
  CHECK(r.body.rfind("id,created_at,turnstile_verified,name,email,phone,message,preferred_date,"
                     "other_fields\r\n",
                     0) == 0);
  CHECK(r.body.find("\"'=HYPERLINK(\"\"http://evil\"\")\"") != std::string::npos);
  CHECK(r.body.find("\"line one\nline \"\"two\"\", with comma\"") != std::string::npos);
  CHECK(r.body.find("\"'@SUM(A1)\"") != std::string::npos);
  // A phone number exports as stored (E.164: a sign and digits, which no spreadsheet runs); a cell
  // with anything after its sign but digits is still defused.
  CHECK(r.body.find(",+15550102000,") != std::string::npos);
  CHECK(r.body.find("'+15550102000") == std::string::npos);
  CHECK(r.body.find(",\"'-2+3\",") != std::string::npos);
  CHECK(r.body.find(",+1,\r\n") != std::string::npos);
}

TEST_CASE("CSV export: a field the config no longer lists is kept, in other_fields") {
  Leads l;
  l.submit(json{{"email", "s@example.com"}, {"preferred_date", "Friday, \"late\""}});
  json config = bakery_leads_config();
  config["fields"] = json::array({"vehicle"});
  l.mesh.db("LEADS_DB")
      .execute("UPDATE tenants SET config_json = ?1 WHERE tenant_id = 'bakery'",
               json::array({config.dump()}));
  l.mesh.now_ms += 61 * 1000;  // past the instance's kept tenant row
  REQUIRE(l.submit(json{{"email", "t@example.com"}, {"vehicle", "van"}}).status == 202);
  auto r = l.mesh.request("leads", "GET", "/api/leads/export.csv", l.admin());
  REQUIRE(r.status == 200);
  CHECK(r.body.rfind(
            "id,created_at,turnstile_verified,name,email,phone,message,vehicle,other_fields\r\n",
            0) == 0);
  // The older lead's field, as JSON in one quoted cell; the newer lead has nothing else.
  CHECK(
      r.body.find(
          ",s@example.com,,,,\"{\"\"preferred_date\"\":\"\"Friday, \\\"\"late\\\"\"\"\"}\"\r\n") !=
      std::string::npos);
  CHECK(r.body.find(",t@example.com,,,van,\r\n") != std::string::npos);
}

TEST_CASE("CSV export: a stored config's repeated or reserved extra fields are one column each") {
  Leads l;
  // A config stored before such lists were refused at provisioning (written to D1 directly).
  json config = bakery_leads_config();
  config["fields"] = {"preferred_date", "preferred_date", "email", "id", "turnstileToken"};
  l.mesh.db("LEADS_DB")
      .execute("UPDATE tenants SET config_json = ?1 WHERE tenant_id = 'bakery'",
               json::array({config.dump()}));
  auto r = l.mesh.request("leads", "GET", "/api/leads/export.csv", l.admin());
  REQUIRE(r.status == 200);
  CHECK(r.body.rfind("id,created_at,turnstile_verified,name,email,phone,message,preferred_date,"
                     "other_fields\r\n",
                     0) == 0);
}

TEST_CASE("tenant config is validated on provisioning and the webhook secret is never shown") {
  Leads l;
  auto op = std::map<std::string, std::string>{
      {"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
      {"Content-Type", "application/json"}};
  auto bad = l.mesh.request("leads", "PUT", "/admin/tenants/bakery", op,
                            json{{"config", {{"turnstile", "maybe"}}}}.dump());
  CHECK(bad.status == 400);
  CHECK(bad.body_json()["error"]["field"] == "config.turnstile");
  CHECK(bad.body_json()["error"]["fields"]["config.turnstile"].is_string());
  // The platform's own tenant checks answer the same shape.
  auto bad_id = l.mesh.request("leads", "PUT", "/admin/tenants/Not_A_Tenant", op,
                               json{{"config", json::object()}}.dump());
  CHECK(bad_id.status == 400);
  CHECK(bad_id.body_json()["error"]["fields"]["tenantId"].is_string());
  auto bad_config =
      l.mesh.request("leads", "PUT", "/admin/tenants/bakery", op, json{{"config", "yes"}}.dump());
  CHECK(bad_config.status == 400);
  CHECK(bad_config.body_json()["error"]["fields"]["config"] == "must be an object");
  auto no_tokens = l.mesh.request("leads", "PUT", "/admin/tenants/new-tenant", op,
                                  json{{"config", json::object()}}.dump());
  CHECK(no_tokens.status == 400);
  CHECK(no_tokens.body_json()["error"]["fields"]["token"].is_string());
  auto bad_hook = l.mesh.request(
      "leads", "PUT", "/admin/tenants/bakery", op,
      json{
          {"config",
           {{"notify", {{"webhook", {{"url", "http://10.0.0.1/x"}, {"secret", kWebhookSecret}}}}}}}}
          .dump());
  CHECK(bad_hook.status == 400);
  json site = bakery_leads_config();
  site["redirectUrl"] = "/thanks.html";
  site["notify"]["email"]["from"] = "Crumb & Crust <forms@bakery.example>";
  CHECK(l.mesh.request("leads", "PUT", "/admin/tenants/bakery", op, json{{"config", site}}.dump())
            .status == 200);
  // Another site, however spelled: browsers drop tabs and line breaks from a URL; a Location
  // header cannot carry U+20AC (the host would fail after the lead was stored).
  for (const char* redirect :
       {"//evil.example/", "/\t/evil.example/", "/\n/evil.example/", "/thanks page.html",
        "/\xe2\x82\xac", "https://x.example/\xe2\x82\xac"}) {
    CAPTURE(redirect);
    site["redirectUrl"] = redirect;
    auto refused =
        l.mesh.request("leads", "PUT", "/admin/tenants/bakery", op, json{{"config", site}}.dump());
    CHECK(refused.status == 400);
    CHECK(refused.body_json()["error"]["fields"].contains("config.redirectUrl"));
  }
  // A misspelt setting is refused by its name, at any level, instead of read as its default.
  for (const auto& typo_at : std::vector<std::pair<json::json_pointer, std::string>>{
           {json::json_pointer("/storeSubmission"), "config.storeSubmission"},
           {json::json_pointer("/rateLimit/period"), "config.rateLimit.period"},
           {json::json_pointer("/notify/email/too"), "config.notify.email.too"},
           {json::json_pointer("/notify/webhook/secrets"), "config.notify.webhook.secrets"}}) {
    const std::string& field = typo_at.second;
    CAPTURE(field);
    json typo = bakery_leads_config();
    typo[typo_at.first] = false;
    auto refused =
        l.mesh.request("leads", "PUT", "/admin/tenants/bakery", op, json{{"config", typo}}.dump());
    CHECK(refused.status == 400);
    CHECK(refused.body_json()["error"]["field"] == field);
  }
  site["redirectUrl"] = "/danke-%E2%82%AC.html";  // percent-encoded: accepted
  CHECK(l.mesh.request("leads", "PUT", "/admin/tenants/bakery", op, json{{"config", site}}.dump())
            .status == 200);
  auto got = l.mesh.request("leads", "GET", "/admin/tenants/bakery", op);
  CHECK(got.status == 200);
  CHECK(got.body.find(kWebhookSecret) == std::string::npos);
  CHECK(got.body_json()["config"]["notify"]["webhook"]["secret"] == "[redacted]");
  // The config read back and written again would sign webhooks with "[redacted]": refused, and
  // the stored secret still signs.
  json read_back{{"config", got.body_json()["config"]}};
  auto again = l.mesh.request("leads", "PUT", "/admin/tenants/bakery", op, read_back.dump());
  CHECK(again.status == 400);
  CHECK(again.body_json()["error"]["fields"].contains("config.notify.webhook.secret"));
  json stored = json::parse(
      l.rows("SELECT config_json FROM tenants WHERE tenant_id = 'bakery'")[0]["config_json"]
          .get<std::string>());
  CHECK(stored["notify"]["webhook"]["secret"] == kWebhookSecret);
}

TEST_CASE("the retention job removes leads older than the tenant's retentionDays") {
  json config = bakery_leads_config();
  config["retentionDays"] = 30;
  Leads l(config);
  l.submit(json{{"email", "old@example.com"}});
  l.mesh.now_ms += 31LL * 24 * 60 * 60 * 1000;
  l.submit(json{{"email", "new@example.com"}});
  json out = l.mesh.message("leads", {{"op", "scheduled"}, {"cron", "0 3 * * *"}});
  CHECK(out["ok"] == true);
  json rows = l.rows("SELECT payload FROM leads");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["payload"].get<std::string>().find("new@example.com") != std::string::npos);
}

TEST_CASE("the daily job deletes Idempotency-Key claims past their 24 h, whatever the tenant") {
  // Claims are only replaced when their key comes back: without this, every key ever sent (a
  // honeypot decoy's included) stays in D1 for good, for tenants without retentionDays too.
  Leads l;
  auto h = l.headers();
  h["Idempotency-Key"] = "old-key";
  REQUIRE(l.submit(lead_body(), h).status == 202);
  l.mesh.now_ms += 25LL * 60 * 60 * 1000;
  h["Idempotency-Key"] = "new-key";
  REQUIRE(l.submit(lead_body(), h).status == 202);
  json out = l.mesh.message("leads", {{"op", "scheduled"}, {"cron", "0 3 * * *"}});
  CHECK(out["ok"] == true);
  json claims = l.rows("SELECT idempotency_key FROM lead_idempotency");
  REQUIRE(claims.size() == 1);
  CHECK(claims[0]["idempotency_key"] == "new-key");
  CHECK(l.rows("SELECT * FROM leads").size() == 2);  // the leads themselves stay
}

TEST_CASE("phone numbers normalise to E.164") {
  using ss::leads::normalize_phone;
  CHECK(normalize_phone("(555) 010-2000", "1") == "+15550102000");
  CHECK(normalize_phone("1-555-010-2000", "1") == "+15550102000");
  CHECK(normalize_phone("+44 20 7946 0018", "1") == "+442079460018");
  CHECK(normalize_phone("020 7946 0018", "44") == "+442079460018");
  CHECK(normalize_phone("0044 20 7946 0018", "1") == "+442079460018");
  CHECK_FALSE(normalize_phone("555-0100", "1").has_value());
  CHECK_FALSE(normalize_phone("call me", "1").has_value());
  CHECK_FALSE(normalize_phone("+1 555 010 2000 ext 5", "1").has_value());
  CHECK_FALSE(normalize_phone("+123456789012345678", "1").has_value());
}

TEST_CASE("the rate limit keys IPv6 clients by /64 and IPv4 by /32; no IP shares one window") {
  Leads l;
  auto from = [&](const std::string& ip) { return l.headers("application/json", ip); };
  // Two addresses in one /64 share a window: the sixth post from the /64 is refused.
  for (int i = 1; i <= 5; ++i) {
    REQUIRE(l.submit(json{{"email", "a@example.com"}}, from("2001:db8:0:1::" + std::to_string(i)))
                .status == 202);
  }
  check_error(l.submit(json{{"email", "a@example.com"}}, from("2001:db8:0:1:ffff:1:2:3")), 429,
              "rate_limited");
  // Another /64 (even next door) has its own window.
  CHECK(l.submit(json{{"email", "a@example.com"}}, from("2001:db8:0:2::1")).status == 202);
  // IPv4: each address its own window, as before.
  for (int i = 0; i < 5; ++i) {
    REQUIRE(l.submit(json{{"email", "a@example.com"}}, from("198.51.100.20")).status == 202);
  }
  check_error(l.submit(json{{"email", "a@example.com"}}, from("198.51.100.20")), 429,
              "rate_limited");
  CHECK(l.submit(json{{"email", "a@example.com"}}, from("198.51.100.21")).status == 202);
  // Without a usable client IP (no header, or garbage) requests share one window per tenant.
  auto no_ip = Mesh::tenant_headers("bakery", kBakeryToken);
  no_ip["Content-Type"] = "application/json";
  for (int i = 0; i < 3; ++i)
    REQUIRE(l.submit(json{{"email", "a@example.com"}}, no_ip).status == 202);
  REQUIRE(l.submit(json{{"email", "a@example.com"}}, from("not-an-ip")).status == 202);
  REQUIRE(l.submit(json{{"email", "a@example.com"}}, from("1.2.3.4.5")).status == 202);
  check_error(l.submit(json{{"email", "a@example.com"}}, no_ip), 429, "rate_limited");
  // The window table keeps hashes, never addresses.
  CHECK(l.rows("SELECT * FROM rate_limit_windows WHERE bucket LIKE '%2001%' OR bucket LIKE "
               "'%198.51%'")
            .empty());
}

TEST_CASE("CSV export streams 50,000 leads one page per chunk, each lead once") {
  Leads l;
  constexpr int kLeads = 50000;
  constexpr std::size_t kPage = 200;  // workers/leads/admin.cpp kExportPage
  // Seeded straight into SQLite: 50,000 submissions through the core would test the intake, not
  // the export. ULID-shaped ids in creation order.
  auto seeded =
      l.mesh.db("LEADS_DB")
          .execute(
              "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) "
              "INSERT INTO leads (id, tenant_id, payload, turnstile_verified, created_at) "
              "SELECT printf('01KB%022d', i), 'bakery', "
              "json_object('name', 'Lead ' || i, 'email', 'lead' || i || '@example.com'), 1, "
              "'2025-11-29T14:20:00.000Z' FROM n",
              json::array({kLeads}));
  REQUIRE(seeded.contains("results"));
  // Another tenant's leads never appear.
  l.mesh.db("LEADS_DB")
      .execute(
          "INSERT INTO leads (id, tenant_id, payload, turnstile_verified, created_at) VALUES "
          "('01KB9999999999999999999999', 'auto-repair', '{\"name\":\"Other\"}', 1, 'x')",
          json::array());
  l.mesh.max_d1_rows = 0;
  l.mesh.max_d1_vm_steps = 0;
  auto r = l.mesh.request("leads", "GET", "/api/leads/export.csv", l.admin());
  REQUIRE(r.status == 200);
  CHECK(r.streamed);
  CHECK_FALSE(r.aborted);
  CHECK(r.header("content-type").rfind("text/csv", 0) == 0);
  CHECK(r.header("content-disposition").find("attachment") != std::string::npos);
  // Constant memory: no D1 answer and no chunk the core handled held more than one page of leads.
  CHECK(l.mesh.max_d1_rows <= kPage);
  // Each page seeks to its bound: its statement visits about one page of rows, not every lead
  // newer than it (which took 301,414 VM steps for the last page; one page takes ~2,000).
  CHECK(l.mesh.max_d1_vm_steps < 20 * static_cast<std::int64_t>(kPage));
  CHECK(r.chunks.size() == kLeads / kPage);
  std::size_t header_lines = 1;
  for (const std::string& chunk : r.chunks) {
    std::size_t lines = static_cast<std::size_t>(std::count(chunk.begin(), chunk.end(), '\n'));
    CHECK(lines <= kPage + header_lines);
    header_lines = 0;
  }
  // Every lead exactly once, newest first, after one header line.
  std::set<std::string> seen;
  std::string previous = "~";
  std::size_t pos = r.body.find("\r\n");
  REQUIRE(r.body.substr(0, pos) ==
          "id,created_at,turnstile_verified,name,email,phone,message,preferred_date,other_fields");
  pos += 2;
  bool ordered = true;
  while (pos < r.body.size()) {
    std::size_t end = r.body.find("\r\n", pos);
    REQUIRE(end != std::string::npos);
    std::string id = r.body.substr(pos, r.body.find(',', pos) - pos);
    ordered = ordered && id < previous;
    previous = id;
    seen.insert(id);
    pos = end + 2;
  }
  CHECK(ordered);
  CHECK(seen.size() == kLeads);
  CHECK(seen.count("01KB0000000000000000000001") == 1);
  CHECK(seen.count("01KB0000000000000000050000") == 1);
  CHECK(seen.count("01KB9999999999999999999999") == 0);
}

TEST_CASE(
    "CSV export: a failure after the first chunk cuts the body; a client that leaves stops it") {
  Leads l;
  l.mesh.db("LEADS_DB")
      .execute(
          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 450) "
          "INSERT INTO leads (id, tenant_id, payload, turnstile_verified, created_at) "
          "SELECT printf('01KB%022d', i), 'bakery', json_object('name', 'L' || i), 1, 'x' FROM n",
          json::array());
  // D1 fails on the second page: the status is already sent, so the body is aborted, never
  // passed off as a complete file.
  int pages = 0;
  l.mesh.fail_effect = [&](const json& e) {
    return e["kind"] == "d1.all" &&
           e["sql"].get<std::string>().find("FROM leads") != std::string::npos && ++pages == 2;
  };
  auto cut = l.mesh.request("leads", "GET", "/api/leads/export.csv", l.admin());
  CHECK(cut.status == 200);
  CHECK(cut.streamed);
  CHECK(cut.aborted);
  CHECK(cut.chunks.size() == 1);
  // D1 down before anything is sent: a clean 503.
  l.mesh.fail_effect = [](const json& e) { return e["kind"] == "d1.all"; };
  check_error(l.mesh.request("leads", "GET", "/api/leads/export.csv", l.admin()), 503,
              "dependency_unavailable");
  // The client goes away after one chunk: the core stops at the page it was writing.
  l.mesh.fail_effect = nullptr;
  l.mesh.stream_reader_leaves_after = 1;
  l.mesh.effect_kinds.clear();
  auto left = l.mesh.request("leads", "GET", "/api/leads/export.csv", l.admin());
  CHECK(left.aborted);
  CHECK(std::count(l.mesh.effect_kinds.begin(), l.mesh.effect_kinds.end(), "d1.all") == 2);
  // HEAD answers the headers only, without streaming.
  l.mesh.stream_reader_leaves_after = -1;
  auto head = l.mesh.request("leads", "HEAD", "/api/leads/export.csv", l.admin());
  CHECK(head.status == 200);
  CHECK_FALSE(head.streamed);
  CHECK(head.body.empty());
  CHECK(head.header("content-type").rfind("text/csv", 0) == 0);
}

TEST_CASE(
    "an intake with Turnstile and one notification crosses into the core no more than needed") {
  json config = bakery_leads_config();
  config["notify"] = json{{"webhook", config["notify"]["webhook"]}};
  Leads l(config);
  std::vector<std::vector<std::string>>
      batches;  // the kinds of every effect list the core published
  l.mesh.observe_effects = [&](const json& effects) {
    std::vector<std::string> kinds;
    for (const json& e : effects) kinds.push_back(e.value("kind", ""));
    batches.push_back(kinds);
  };
  REQUIRE(l.submit(lead_body()).status == 202);  // the instance learns the tenant
  batches.clear();
  json second = lead_body();
  second["email"] = "grace@example.com";
  REQUIRE(l.submit(second).status == 202);
  // The message's 64 bytes of entropy cover the siteverify UUID and the lead's and delivery's
  // ULIDs: no crypto.random round trip.
  for (const auto& kinds : batches) {
    CHECK(std::find(kinds.begin(), kinds.end(), "crypto.random") == kinds.end());
  }
  // The answer goes out with the background work's first effects (the notification and the event),
  // the answer first: one list, not two after each other.
  auto sent = std::find_if(batches.begin(), batches.end(), [](const auto& kinds) {
    return !kinds.empty() && kinds[0] == "response.send";
  });
  REQUIRE(sent != batches.end());
  CHECK(sent->size() >= 2);
  CHECK(std::find(sent->begin(), sent->end(), "queue.send") != sent->end());
  // The rate limit's hash, its window, siteverify, the lead's transaction, then the answer with its
  // work: five lists, so six calls into the core (start and five resumes).
  CHECK(batches ==
        std::vector<std::vector<std::string>>{{"crypto.sha256"},
                                              {"d1.first"},
                                              {"fetch"},
                                              {"d1.batch"},
                                              {"response.send", "queue.send", "queue.send"}});
}

TEST_CASE("a request that is a workflow run stamps its events with the run (caused_by)") {
  // The ledger's workflow_runner names the run in headers; emit_event fills the provenance of the
  // events emitted while handling it, unless the producer set its own.
  Leads l;
  auto h = l.headers();
  h["X-SiteSwarm-Workflow-Run-Id"] = "run_01JH0000000000000000000001";
  h["X-SiteSwarm-Workflow-Type"] = "lead_followup";
  REQUIRE(l.submit(lead_body(), h).status == 202);
  auto received = l.events("lead.received");
  REQUIRE(received.size() == 1);
  CHECK(received[0]["workflow_run_id"] == "run_01JH0000000000000000000001");
  CHECK(received[0]["caused_by"] == "workflow:lead_followup");
  // Without the headers there is no run: nothing is stamped.
  l.mesh.queue_sent["EVENTS_QUEUE"].clear();
  REQUIRE(l.submit(lead_body()).status == 202);
  received = l.events("lead.received");
  REQUIRE(received.size() == 1);
  CHECK_FALSE(received[0].contains("workflow_run_id"));
  CHECK_FALSE(received[0].contains("caused_by"));
}

namespace {
// Index of the first effect of `kind` at or after `from` in the mesh's log, or -1.
long index_of(const std::vector<std::string>& kinds, const std::string& kind,
              std::size_t from = 0) {
  for (std::size_t i = from; i < kinds.size(); ++i) {
    if (kinds[i] == kind) return static_cast<long>(i);
  }
  return -1;
}
bool is_notify_send(const json& e) {
  return e["kind"] == "queue.send" && e.value("binding", "") == "NOTIFY_QUEUE";
}
}  // namespace

TEST_CASE("intake answers after its D1 commit; notifications and lead.received follow the 202") {
  Leads l;
  l.mesh.effect_kinds.clear();
  auto r = l.submit(lead_body());
  REQUIRE(r.status == 202);
  CHECK(r.answered_early);
  const auto& kinds = l.mesh.effect_kinds;
  long commit = index_of(kinds, "d1.batch");
  long answer = index_of(kinds, "response.send");
  REQUIRE(commit >= 0);
  REQUIRE(answer > commit);
  // Every queue send (3 notifications + lead.received) comes after the answer.
  CHECK(index_of(kinds, "queue.send") > answer);
  CHECK(std::count(kinds.begin() + answer, kinds.end(), "queue.send") == 4);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].size() == 3);
  CHECK(l.events("lead.received").size() == 1);
  l.drain_notifications();
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'delivered'").size() == 3);
}

TEST_CASE(
    "a trap between the commit and the enqueue: the 202 stands and the sweeper delivers once") {
  Leads l;
  l.mesh.trap_effect = is_notify_send;
  auto r = l.submit(lead_body());
  REQUIRE(r.status == 202);
  std::string id = r.body_json()["leadId"];
  CHECK(l.rows("SELECT * FROM leads").size() == 1);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'pending' AND attempts = 0").size() ==
        3);
  l.mesh.trap_effect = nullptr;
  // The next request is served as usual.
  REQUIRE(l.submit(lead_body(), l.headers("application/json", "203.0.113.8")).status == 202);
  l.drain_notifications();
  CHECK(l.outbound("hooks.bakery.example").size() == 1);  // the second lead's only

  // The sweeper (every 10 minutes) re-enqueues what was committed but never queued.
  const std::string deliveries_of_lead =
      "SELECT id, created_at FROM lead_deliveries WHERE lead_id = '" + id + "' ORDER BY id";
  json created = l.rows(deliveries_of_lead);
  l.mesh.now_ms += 11 * 60 * 1000;
  json out = l.mesh.message("leads", {{"op", "scheduled"}, {"cron", "*/10 * * * *"}});
  CHECK(out["ok"] == true);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].size() == 3);
  // Re-enqueued, not re-created: a delivery's created_at stays when it was made.
  CHECK(l.rows(deliveries_of_lead) == created);
  // Its message is lost again (the queue dropped it): ten minutes later it is swept again.
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  l.mesh.now_ms += 11 * 60 * 1000;
  CHECK(l.mesh.message("leads", {{"op", "scheduled"}, {"cron", "*/10 * * * *"}})["ok"] == true);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].size() == 3);
  l.drain_notifications();
  CHECK(l.outbound("hooks.bakery.example").size() == 2);
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE lead_id = '" + id +
               "' AND status = 'delivered' AND attempts = 1")
            .size() == 3);
  // Delivered once: a later sweep finds nothing to send.
  l.mesh.now_ms += 11 * 60 * 1000;
  l.mesh.message("leads", {{"op", "scheduled"}, {"cron", "*/10 * * * *"}});
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());
}

TEST_CASE("storeSubmissions:false queues before answering: a trap there is a 500, not a 202") {
  json config = bakery_leads_config();
  config["storeSubmissions"] = false;
  Leads l(config);
  l.mesh.trap_effect = is_notify_send;
  auto r = l.submit(lead_body());
  check_error(r, 500, "internal");
  CHECK_FALSE(r.answered_early);
  l.mesh.trap_effect = nullptr;
  auto ok = l.submit(lead_body(), l.headers("application/json", "203.0.113.9"));
  REQUIRE(ok.status == 202);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].size() == 3);
}

TEST_CASE(
    "storeSubmissions:false with an Idempotency-Key: a 503 for a failed enqueue leaves no claim, "
    "so the client's retry is queued") {
  json config = bakery_leads_config();
  config["storeSubmissions"] = false;
  Leads l(config);
  auto h = l.headers();
  h["Idempotency-Key"] = "nostore-retry-1";
  l.mesh.fail_effect = is_notify_send;
  auto r = l.submit(lead_body(), h);
  check_error(r, 503, "dependency_unavailable");
  l.mesh.fail_effect = nullptr;
  // Nothing of the refused submission is left: no claim, no delivery the sweeper would give up.
  CHECK(l.rows("SELECT * FROM lead_idempotency").empty());
  CHECK(l.rows("SELECT * FROM lead_deliveries").empty());
  auto retry = l.submit(lead_body(), h);
  REQUIRE(retry.status == 202);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].size() == 3);
  l.drain_notifications();
  CHECK(l.outbound("hooks.bakery.example").size() == 1);
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'delivered'").size() == 3);
}

// A twin with the same key (a client's retry after its first request timed out) that arrives
// while the first one's notifications are being queued: the first may still fail its enqueue and
// take its claim back (503). The twin must not have been answered that lead's id meanwhile —
// nothing of it was ever sent, and its client would not submit again.
TEST_CASE(
    "storeSubmissions:false: a twin that arrives while the first is being queued is not answered "
    "its leadId") {
  json config = bakery_leads_config();
  config["storeSubmissions"] = false;
  Leads l(config);
  auto h = l.headers();
  h["Idempotency-Key"] = "nostore-twin-1";
  HttpReply twin;
  bool fired = false;
  l.mesh.observe_effects = [&](const json& effects) {
    for (const json& e : effects) {
      if (fired || !is_notify_send(e)) continue;
      fired = true;
      twin = l.submit(lead_body(), h);  // while the first one's messages are on their way
    }
  };
  l.mesh.fail_effect = is_notify_send;  // and then they fail
  auto first = l.submit(lead_body(), h);
  l.mesh.observe_effects = nullptr;
  l.mesh.fail_effect = nullptr;
  REQUIRE(fired);
  check_error(first, 503, "dependency_unavailable");
  // The twin heard that the key is still being worked on, not a leadId that was never queued.
  check_error(twin, 409, "conflict");
  CHECK(twin.body_json()["error"]["field"] == "Idempotency-Key");
  CHECK(twin.header("retry-after") == "1");
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());
  // Its client retries: taken as a new submission, queued and delivered.
  auto retry = l.submit(lead_body(), h);
  REQUIRE(retry.status == 202);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].size() == 3);
  l.drain_notifications();
  CHECK(l.outbound("hooks.bakery.example").size() == 1);
  // A later repeat is answered the retry's leadId, and queues nothing.
  auto again = l.submit(lead_body(), h);
  REQUIRE(again.status == 202);
  CHECK(again.body_json()["leadId"] == retry.body_json()["leadId"]);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());
}

// A twin that arrives while the first is queued successfully is answered 409 too; once the first
// is queued, a repeat is answered its leadId.
TEST_CASE("storeSubmissions:false: a repeat after the first was queued is answered its leadId") {
  json config = bakery_leads_config();
  config["storeSubmissions"] = false;
  Leads l(config);
  auto h = l.headers();
  h["Idempotency-Key"] = "nostore-twin-2";
  HttpReply twin;
  bool fired = false;
  l.mesh.observe_effects = [&](const json& effects) {
    for (const json& e : effects) {
      if (fired || !is_notify_send(e)) continue;
      fired = true;
      twin = l.submit(lead_body(), h);
    }
  };
  auto first = l.submit(lead_body(), h);
  l.mesh.observe_effects = nullptr;
  REQUIRE(fired);
  REQUIRE(first.status == 202);
  check_error(twin, 409, "conflict");
  auto again = l.submit(lead_body(), h);
  REQUIRE(again.status == 202);
  CHECK(again.body_json()["leadId"] == first.body_json()["leadId"]);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].size() == 3);
  CHECK(l.rows("SELECT * FROM lead_idempotency").size() == 1);
}

namespace {
// The operator flips a platform kill switch on the ledger, which mirrors it into the FLAGS KV.
void kill_switch(Mesh& mesh, const std::string& name, bool on) {
  auto r = mesh.request("events", "PUT", "/admin/kill-switches/" + name,
                        {{"Authorization", std::string("Bearer ") + Mesh::kAdminToken},
                         {"Content-Type", "application/json"}},
                        json{{"enabled", on}}.dump());
  REQUIRE(r.status == 200);
  CHECK(r.body_json()["shared"] == true);
}
json sweep(Leads& l) {
  return l.mesh.message("leads", {{"op", "scheduled"}, {"cron", "*/10 * * * *"}});
}
}  // namespace

TEST_CASE("kill:notifications holds notifications, loses none, and off releases each once") {
  Leads l;
  kill_switch(l.mesh, "kill:notifications", true);
  auto r = l.submit(lead_body());
  REQUIRE(r.status == 202);  // intake is not stopped
  l.drain_notifications();
  CHECK(l.outbound("resend.test").empty());
  CHECK(l.outbound("twilio.test").empty());
  CHECK(l.outbound("hooks.bakery.example").empty());
  CHECK(l.events("lead.delivered").empty());
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'pending' AND attempts = 0 AND "
               "held_at IS NOT NULL")
            .size() == 3);
  // While it is on, the sweeper sends nothing, however old the deliveries.
  l.mesh.now_ms += 11 * 60 * 1000;
  CHECK(sweep(l)["ok"] == true);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());

  kill_switch(l.mesh, "kill:notifications", false);
  CHECK(sweep(l)["ok"] == true);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].size() == 3);
  l.drain_notifications();
  CHECK(l.outbound("resend.test").size() == 1);
  CHECK(l.outbound("twilio.test").size() == 1);
  CHECK(l.outbound("hooks.bakery.example").size() == 1);
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'delivered' AND attempts = 1 AND "
               "held_at IS NULL AND held_message IS NULL")
            .size() == 3);
  CHECK(l.events("lead.delivered").size() == 3);
  // Released once: later sweeps find nothing.
  l.mesh.now_ms += 11 * 60 * 1000;
  sweep(l);
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());
}

TEST_CASE("kill:notifications: a retry in backoff and a storeSubmissions:false lead are held too") {
  json config = bakery_leads_config();
  config["storeSubmissions"] = false;
  Leads l(config);
  l.fail_next["hooks.bakery.example"] = 1;  // the webhook fails once, then would succeed
  REQUIRE(l.submit(lead_body()).status == 202);
  // First round: email and SMS delivered, the webhook failed (attempt 1) and is retried.
  std::vector<json> first = l.mesh.queue_sent["NOTIFY_QUEUE"];
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  json batch = json::array();
  for (std::size_t i = 0; i < first.size(); ++i) {
    batch.push_back({{"id", "m" + std::to_string(i)}, {"body", first[i]}, {"attempts", 1}});
  }
  json out = l.mesh.message(
      "leads", {{"op", "queue"}, {"queue", "siteswarm-leads-notify"}, {"messages", batch}});
  REQUIRE(out["retry"].size() == 1);
  json retried;
  for (const json& m : batch) {
    if (m["id"] == out["retry"][0]["id"]) retried = m;
  }
  // The switch goes on before the retry comes back: it is parked, not sent.
  kill_switch(l.mesh, "kill:notifications", true);
  retried["attempts"] = 2;
  out = l.mesh.message(
      "leads",
      {{"op", "queue"}, {"queue", "siteswarm-leads-notify"}, {"messages", json::array({retried})}});
  CHECK(out["ack"].size() == 1);
  CHECK(l.outbound("hooks.bakery.example").size() == 1);  // only the failed first attempt
  json held = l.rows("SELECT * FROM lead_deliveries WHERE held_at IS NOT NULL");
  REQUIRE(held.size() == 1);
  CHECK(held[0]["attempts"] == 1);
  CHECK(l.rows("SELECT * FROM leads").empty());  // nothing stored but the parked message

  kill_switch(l.mesh, "kill:notifications", false);
  sweep(l);
  l.drain_notifications();
  auto hooks = l.outbound("hooks.bakery.example");
  REQUIRE(hooks.size() == 2);
  json sent = json::parse(hooks[1]["body"].get<std::string>());
  CHECK(sent["lead"]["email"] == "ada@example.com");  // the lead travelled with the held message
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'delivered'").size() == 3);
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE held_message IS NOT NULL").empty());
}

TEST_CASE("a copy of a notification that arrives while the first copy is sending does not send") {
  Leads l;
  REQUIRE(l.submit(lead_body()).status == 202);
  json hook_body = l.queued_for("webhook");
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  int hook_calls = 0;
  json copy_out;
  l.mesh.fetch_stub = [&](const json& req) {
    std::string url = req["url"];
    if (url.find("hooks.bakery.example") != std::string::npos && ++hook_calls == 1) {
      // At-least-once delivery (or the sweeper) put a second copy on the queue; another consumer
      // invocation takes it while the receiver is still answering the first.
      copy_out = l.deliver(hook_body, "b", 1);
    }
    return l.answer(req);
  };
  json out = l.deliver(hook_body, "a", 1);
  CHECK(out["ack"] == json::array({"a"}));
  CHECK(hook_calls == 1);  // one webhook, not two
  json d = l.rows("SELECT status, attempts FROM lead_deliveries WHERE channel = 'webhook'");
  REQUIRE(d.size() == 1);
  CHECK(d[0]["status"] == "delivered");
  CHECK(d[0]["attempts"] == 1);
  CHECK(l.events("lead.delivered").size() == 1);
  // The copy is not lost either: it comes back later and finds the delivery finished.
  for (const json& r : copy_out["retry"]) {
    json again = l.deliver(hook_body, r["id"], 2);
    CHECK(again["ack"].size() == 1);
  }
  CHECK(hook_calls == 1);
}

// A second copy of a notification message (at-least-once delivery) that arrives right after the
// first copy's attempt failed: the next attempt waits out its backoff as the first copy's retry
// does, rather than going at once (five attempts spent in seconds on a provider that is down).
TEST_CASE("a copy of a notification that arrives after a failed attempt waits out the backoff") {
  Leads l;
  l.mesh.set_env("leads", "NOTIFY_BACKOFF_SECONDS", "30");
  REQUIRE(l.submit(lead_body()).status == 202);
  json hook_body = l.queued_for("webhook");
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  l.fail_next["hooks.bakery.example"] = 1;
  json first = l.deliver(hook_body, "a", 1);
  REQUIRE(first["retry"].size() == 1);
  CHECK(first["retry"][0]["delaySeconds"] == 30);
  REQUIRE(l.outbound("hooks.bakery.example").size() == 1);
  // The copy, five seconds later: not sent now, asked back when the backoff is over.
  l.mesh.now_ms += 5000;
  json copy = l.deliver(hook_body, "b", 1);
  CHECK(l.outbound("hooks.bakery.example").size() == 1);
  REQUIRE(copy["retry"].size() == 1);
  CHECK(copy["retry"][0]["delaySeconds"] == 25);
  json d = l.rows("SELECT status, attempts FROM lead_deliveries WHERE channel = 'webhook'");
  REQUIRE(d.size() == 1);
  CHECK(d[0]["attempts"] == 1);
  // When the backoff is over, one of the two copies sends the second attempt; the other finds
  // nothing left to do.
  l.mesh.now_ms += 25000;
  l.deliver(hook_body, "a", 2);
  l.deliver(hook_body, "b", 2);
  CHECK(l.outbound("hooks.bakery.example").size() == 2);
  d = l.rows("SELECT status, attempts FROM lead_deliveries WHERE channel = 'webhook'");
  CHECK(d[0]["status"] == "delivered");
  CHECK(d[0]["attempts"] == 2);
}

TEST_CASE("an instance that dies mid-send: the redelivered message sends once the claim is stale") {
  Leads l;
  REQUIRE(l.submit(lead_body()).status == 202);
  json hook_body = l.queued_for("webhook");
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  auto deliver = [&](int queue_attempt) { return l.deliver(hook_body, "a", queue_attempt); };
  l.mesh.trap_effect = [](const json& e) {
    return e.value("kind", "") == "fetch" &&
           e.dump().find("hooks.bakery.example") != std::string::npos;
  };
  deliver(1);  // claimed attempt 1, died before the request left
  l.mesh.trap_effect = nullptr;
  CHECK(l.outbound("hooks.bakery.example").empty());
  // Redelivered at once: the claim is still fresh, so it waits rather than risk a second send.
  json soon = deliver(2);
  CHECK(soon["retry"].size() == 1);
  CHECK(l.outbound("hooks.bakery.example").empty());
  // After the lease it is sent, once, and not lost.
  l.mesh.now_ms += 61 * 1000;
  json later = deliver(3);
  CHECK(later["ack"].size() == 1);
  CHECK(l.outbound("hooks.bakery.example").size() == 1);
  json d = l.rows("SELECT status, attempts FROM lead_deliveries WHERE channel = 'webhook'");
  REQUIRE(d.size() == 1);
  CHECK(d[0]["status"] == "delivered");
  CHECK(d[0]["attempts"] == 2);
}

TEST_CASE("a retry whose queue message ran out of queue retries is not left pending forever") {
  Leads l;
  l.fail_next["hooks.bakery.example"] = 4;  // the receiver is down for a while
  REQUIRE(l.submit(lead_body()).status == 202);
  json hook_body = l.queued_for("webhook");
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  // Cloudflare Queues as wrangler/leads.jsonc sets it up: max_retries 5, so a message is handed
  // to the consumer at most 6 times, then goes to siteswarm-leads-notify-dlq (which nobody reads).
  auto deliver = [&](int queue_attempt) { return l.deliver(hook_body, "a", queue_attempt); };
  auto d1_down = [](const json& e) { return ss::string_or(e, "kind", "").rfind("d1.", 0) == 0; };
  int queue_attempt = 0;
  for (int i = 0; i < 6; ++i) {
    // Two of the six deliveries meet a D1 blip (the retries stay within the queue's budget).
    l.mesh.fail_effect = (i == 2 || i == 3) ? std::function<bool(const json&)>(d1_down) : nullptr;
    json out = deliver(++queue_attempt);
    REQUIRE(out["retry"].size() == 1);
    l.mesh.now_ms += (out["retry"][0].value("delaySeconds", 0) + 1) * 1000;
  }
  l.mesh.fail_effect = nullptr;
  // The message is in the dead-letter queue now; the delivery was tried 4 times of 5.
  json d = l.rows("SELECT status, attempts FROM lead_deliveries WHERE channel = 'webhook'");
  REQUIRE(d.size() == 1);
  CHECK(d[0]["attempts"] == 4);
  // The receiver is back. The sweeper runs every 10 minutes for the next few hours.
  for (int i = 0; i < 30; ++i) {
    l.mesh.now_ms += 10 * 60 * 1000;
    CHECK(sweep(l)["ok"] == true);
    l.drain_notifications();
  }
  d = l.rows("SELECT status, attempts FROM lead_deliveries WHERE channel = 'webhook'");
  REQUIRE(d.size() == 1);
  CHECK(d[0]["status"] == "delivered");
  CHECK(d[0]["attempts"] == 5);
  CHECK(l.outbound("hooks.bakery.example").size() == 5);
  CHECK(l.events("lead.delivered").size() == 3);
}

TEST_CASE("storeSubmissions:false: a message parked while its delivery finishes keeps no copy") {
  json config = bakery_leads_config();
  config["storeSubmissions"] = false;
  Leads l(config);
  REQUIRE(l.submit(lead_body()).status == 202);
  json hook_body = l.queued_for("webhook");
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  int hook_calls = 0;
  l.mesh.fetch_stub = [&](const json& req) {
    std::string url = req["url"];
    if (url.find("hooks.bakery.example") != std::string::npos && ++hook_calls == 1) {
      // The operator turns kill:notifications on while this webhook is being sent, and a second
      // copy of its message reaches a new batch, which parks it on the delivery.
      kill_switch(l.mesh, "kill:notifications", true);
      l.deliver(hook_body, "b", 1);
    }
    return l.answer(req);
  };
  l.deliver(hook_body, "a", 1);
  CHECK(hook_calls == 1);
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE channel = 'webhook' AND status = 'delivered'")
            .size() == 1);
  CHECK(l.rows("SELECT * FROM leads").empty());
  // The delivery is finished: no copy of the lead may stay behind in a parked message.
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE held_message IS NOT NULL").empty());
  kill_switch(l.mesh, "kill:notifications", false);
  sweep(l);
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE held_message IS NOT NULL").empty());
}

TEST_CASE("a dead letter whose recording committed but whose D1 answer was lost still emits") {
  Leads l;
  l.fail_next["hooks.bakery.example"] = -1;
  REQUIRE(l.submit(lead_body()).status == 202);
  bool lost_once = false;
  l.mesh.fail_effect = [&](const json& e) {
    if (lost_once || ss::string_or(e, "kind", "") != "d1.batch") return false;
    std::string all = e["statements"].dump();
    if (all.find("delivery_attempts") == std::string::npos ||
        all.find("\"dead\"") == std::string::npos) {
      return false;
    }
    // D1 commits the batch, then the answer is lost on the way back.
    lost_once = true;
    l.mesh.db("LEADS_DB").batch(e["statements"]);
    return true;
  };
  l.drain_notifications();
  CHECK(lost_once);
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'dead'").size() == 1);
  CHECK(l.outbound("hooks.bakery.example").size() == 5);
  CHECK(l.events("lead.delivery_failed").size() == 1);
}

TEST_CASE("the sweeper leaves a retry in its backoff alone, and takes one whose message was lost") {
  Leads l;
  l.fail_next["hooks.bakery.example"] = -1;  // the receiver is down
  REQUIRE(l.submit(lead_body()).status == 202);
  json hook_body = l.queued_for("webhook");
  auto webhook_messages = [&] {
    int n = 0;
    for (const json& body : l.mesh.queue_sent["NOTIFY_QUEUE"]) n += body["channel"] == "webhook";
    return n;
  };
  json out = l.deliver(hook_body, "a", 1);
  REQUIRE(out["retry"].size() == 1);  // attempt 1 failed: its message waits in the queue's backoff
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  // Within the longest backoff (1 h) and 10 minutes more, the queue still holds the retry: the
  // sweeper must not add a second copy.
  l.mesh.now_ms += 11 * 60 * 1000;
  CHECK(sweep(l)["ok"] == true);
  CHECK(webhook_messages() == 0);
  l.mesh.now_ms += 58 * 60 * 1000;  // 69 minutes after the attempt
  CHECK(sweep(l)["ok"] == true);
  CHECK(webhook_messages() == 0);
  // Past that, the message is taken for lost (dead-lettered): queued again, once.
  l.mesh.now_ms += 2 * 60 * 1000;
  CHECK(sweep(l)["ok"] == true);
  CHECK(webhook_messages() == 1);
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  l.mesh.now_ms += 11 * 60 * 1000;
  CHECK(sweep(l)["ok"] == true);
  CHECK(webhook_messages() == 0);  // its clock moved: not again at the next sweep
  json d = l.rows("SELECT status, attempts FROM lead_deliveries WHERE channel = 'webhook'");
  REQUIRE(d.size() == 1);
  CHECK(d[0]["status"] == "pending");
  CHECK(d[0]["attempts"] == 1);
}

TEST_CASE("storeSubmissions:false: a delivery whose only message was lost ends dead, not pending") {
  json config = bakery_leads_config();
  config["storeSubmissions"] = false;
  Leads l(config);
  l.fail_next["hooks.bakery.example"] = -1;  // the receiver is down
  REQUIRE(l.submit(lead_body()).status == 202);
  json hook_body = l.queued_for("webhook");
  json out = l.deliver(hook_body, "a", 1);
  REQUIRE(out["retry"].size() == 1);
  // The retry message is lost (it ran out of queue retries and went to the dead-letter queue); the
  // other channels' messages were never delivered either. Nothing to rebuild them from.
  l.mesh.queue_sent["NOTIFY_QUEUE"].clear();
  auto webhook = [&] {
    return l.rows(
        "SELECT status, attempts, last_error FROM lead_deliveries WHERE channel = "
        "'webhook'")[0];
  };
  // While a copy of the message may still be in the queue (a backlog, a paused consumer: up to the
  // queue's retention of 4 days), the delivery is left alone: a late notification beats none.
  constexpr std::int64_t kHour = 60 * 60 * 1000;
  for (std::int64_t step : {2, 22, 71}) {  // 2 h, 24 h, 95 h after the attempt
    l.mesh.now_ms += step * kHour;
    CHECK(sweep(l)["ok"] == true);
    CHECK(webhook()["status"] == "pending");
  }
  CHECK(l.events("lead.delivery_failed").empty());
  // Past it (97 h): given up, visibly.
  l.mesh.now_ms += 2 * kHour;
  CHECK(sweep(l)["ok"] == true);
  CHECK(webhook()["status"] == "dead");
  CHECK(webhook()["attempts"] == 1);
  CHECK(webhook()["last_error"].get<std::string>().starts_with("message_lost"));
  CHECK(l.rows("SELECT * FROM lead_deliveries WHERE status = 'pending'").empty());
  auto failed = l.events("lead.delivery_failed");
  REQUIRE(failed.size() == 3);  // the webhook, and the email and SMS never attempted
  for (const json& e : failed) {
    CHECK(e["payload"]["error"].get<std::string>().starts_with("message_lost"));
  }
  CHECK(l.mesh.queue_sent["NOTIFY_QUEUE"].empty());  // nothing re-sent: there is nothing to send
  // Once: the next sweep finds nothing.
  l.mesh.now_ms += 11 * 60 * 1000;
  CHECK(sweep(l)["ok"] == true);
  CHECK(l.events("lead.delivery_failed").size() == 3);
}
