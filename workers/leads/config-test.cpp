#include "workers/leads/config.h"

#include <doctest/doctest.h>

using ss::json;
using ss::leads::parse_config;

TEST_CASE("leads config: rateLimit keys left out keep their defaults (5 per 60 s)") {
  auto period_only = parse_config(json{{"rateLimit", {{"periodSeconds", 30}}}}, false);
  REQUIRE(period_only.ok());
  CHECK(period_only->rate_limit == 5);
  CHECK(period_only->rate_period_seconds == 30);
  auto limit_only = parse_config(json{{"rateLimit", {{"limit", 2}}}}, false);
  REQUIRE(limit_only.ok());
  CHECK(limit_only->rate_limit == 2);
  CHECK(limit_only->rate_period_seconds == 60);
  for (const json& bad :
       {json{{"rateLimit", 5}}, json{{"rateLimit", {{"limit", 0}}}},
        json{{"rateLimit", {{"limit", "5"}}}}, json{{"rateLimit", {{"periodSeconds", 0}}}},
        json{{"rateLimit", {{"periodSeconds", "30"}}}},
        json{{"rateLimit", {{"periodSeconds", nullptr}}}}}) {
    CHECK_FALSE(parse_config(bad, false).ok());
  }
}

TEST_CASE("leads config: any non-empty webhook secret is taken") {
  json hook{{"notify", {{"webhook", {{"url", "https://hooks.example/lead"}, {"secret", "s3"}}}}}};
  REQUIRE(parse_config(hook, false).ok());
  hook["notify"]["webhook"]["secret"] = "";
  CHECK_FALSE(parse_config(hook, false).ok());
}

TEST_CASE(
    "leads config: a refused webhook URL is told what is wanted, without contradicting itself") {
  auto message_for = [](const std::string& url) {
    json hook{{"notify", {{"webhook", {{"url", url}, {"secret", "s3"}}}}}};
    auto parsed = parse_config(hook, false);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().extra["field"] == "config.notify.webhook.url");
    return parsed.error().extra["fields"]["config.notify.webhook.url"].get<std::string>();
  };
  CHECK(message_for("ftp://hooks.example/lead") == "must be a public https:// URL");
  CHECK(message_for("http://hooks.example/lead").rfind("must be a public https:// URL: ", 0) == 0);
  CHECK(message_for("https://10.0.0.7/lead").find("private") != std::string::npos);
}

TEST_CASE("leads config: the honeypot cannot be a field people fill in") {
  // A honeypot named like a real field would take every genuine lead for spam: 202, nothing kept.
  for (const char* taken : {"email", "phone", "name", "message", "turnstileToken",
                            "cf-turnstile-response", "order_date"}) {
    json c{{"honeypotField", taken}, {"fields", {"order_date"}}};
    // Refused when written; a config stored before the rule still reads (intake, notifications
    // and retention keep working for it).
    auto parsed = parse_config(c, false);
    REQUIRE(parsed.ok());
    ss::Status written = ss::leads::check_config_for_write(*parsed);
    CHECK_MESSAGE(!written.ok(), taken);
    if (!written.ok()) CHECK(written.error().extra["field"] == "config.honeypotField");
  }
  auto fine =
      parse_config(json{{"honeypotField", "website_url"}, {"fields", {"order_date"}}}, false);
  REQUIRE(fine.ok());
  CHECK(ss::leads::check_config_for_write(*fine).ok());
}

TEST_CASE("leads config: extra fields are new names, each listed once") {
  // A standard or Turnstile field, or a name listed twice, would only add a column to the CSV
  // export (a duplicate, or one always empty): refused when written, still read when stored.
  for (const json& fields :
       {json::array({"email"}), json::array({"order_date", "message"}),
        json::array({"turnstileToken"}), json::array({"cf-turnstile-response"}),
        json::array({"order_date", "order_date"}), json::array({"id"}),
        json::array({"turnstile_verified"}), json::array({"created_at"})}) {
    auto parsed = parse_config(json{{"fields", fields}}, false);
    REQUIRE(parsed.ok());
    ss::Status written = ss::leads::check_config_for_write(*parsed);
    CHECK_MESSAGE(!written.ok(), fields.dump());
    if (!written.ok()) CHECK(written.error().extra["field"] == "config.fields");
  }
  auto fine = parse_config(json{{"fields", json::array({"order_date", "vehicle"})}}, false);
  REQUIRE(fine.ok());
  CHECK(ss::leads::check_config_for_write(*fine).ok());
}

TEST_CASE("leads config: storeSubmissions false is taken as written, with or without a channel") {
  // The contract takes the key as the tenant writes it: "delivered but not stored", never refused.
  for (const json& c :
       {json{{"storeSubmissions", false}},
        json{{"storeSubmissions", false}, {"notify", json::object()}},
        json{{"storeSubmissions", false}, {"notify", {{"sms", {{"to", {"+15550102000"}}}}}}}}) {
    auto parsed = parse_config(c, false);
    REQUIRE(parsed.ok());
    CHECK_FALSE(parsed->store_submissions);
    CHECK_MESSAGE(ss::leads::check_config_for_write(*parsed).ok(), c.dump());
  }
}

TEST_CASE("leads email: a domain is labels joined by dots, none empty, none starting with '-'") {
  using ss::leads::is_email;
  CHECK(is_email("ada@example.com"));
  CHECK(is_email("ada@my-bakery.example"));
  CHECK(is_email("a.b+tag@mail.example.co.uk"));
  CHECK_FALSE(is_email("a@.b.com"));
  CHECK_FALSE(is_email("a@b..com"));
  CHECK_FALSE(is_email("a@-b.com"));
  CHECK_FALSE(is_email("a@b.-c.com"));
  CHECK_FALSE(is_email("a@b"));
  CHECK_FALSE(is_email("a@b."));
}

TEST_CASE("leads email: a dot-atom local part, labels not ending in '-', no control characters") {
  using ss::leads::is_email;
  using ss::leads::is_strict_email;
  // A stored config is read as it was taken: the lenient rule still passes what the strict refuses.
  CHECK(is_email("taro.@ezweb.ne.jp"));
  CHECK_FALSE(is_strict_email("taro.@ezweb.ne.jp"));
  CHECK(is_strict_email("a.b.c@example.com"));
  CHECK(is_strict_email("a-b@ex-ample.com"));
  CHECK(
      is_strict_email("ada@b\xc3\xa4"
                      "ckerei.example"));  // a UTF-8 domain label is text, not a control
  for (const char* bad :
       {".a@example.com", "a.@example.com", "a..b@example.com", "a@ex-.com", "a@example.com-",
        "a\x7f@example.com", "a\xc2\x85@example.com", "a\xc2\x9f@example.com", "a@exa\tmple.com"}) {
    CAPTURE(bad);
    CHECK_FALSE(is_strict_email(bad));
  }
  // A config stored before the stricter rule still reads (its form keeps working); a write of it is
  // refused naming the field.
  json stored{
      {"notify", {{"email", {{"to", {"taro.@ezweb.ne.jp"}}, {"from", "forms@bakery.example"}}}}}};
  auto read = ss::leads::parse_config(stored, true);
  REQUIRE(read.ok());
  auto write = ss::leads::check_config_for_write(*read);
  REQUIRE_FALSE(write.ok());
  CHECK(write.error().message.find("notify.email.to") != std::string::npos);
  stored["notify"]["email"]["to"] = json::array({"owner@bakery.example"});
  stored["notify"]["email"]["from"] = "Bakery <forms..x@bakery.example>";
  auto sender = ss::leads::parse_config(stored, true);
  REQUIRE(sender.ok());
  CHECK_FALSE(ss::leads::check_config_for_write(*sender).ok());
}

TEST_CASE(
    "leads config: a provider or SMS sender that is not a string is refused, not the default") {
  // A number or an object was read as the default ("resend", no sender) and stored as sent.
  json email{
      {"notify",
       {{"email",
         {{"provider", "sendgrid"}, {"to", {"a@example.com"}}, {"from", "b@example.com"}}}}}};
  REQUIRE(parse_config(email, false).ok());
  json sms{{"notify", {{"sms", {{"to", {"+15550100000"}}, {"from", "+15550100001"}}}}}};
  REQUIRE(parse_config(sms, false).ok());
  for (const json& odd :
       {json(1), json::object({{"x", 1}}), json::array({"resend"}), json(nullptr), json(true)}) {
    CAPTURE(odd.dump());
    json e = email;
    e["notify"]["email"]["provider"] = odd;
    auto refused = parse_config(e, false);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().extra["field"] == "config.notify.email.provider");
    json s = sms;
    s["notify"]["sms"]["from"] = odd;
    auto refused_sms = parse_config(s, false);
    REQUIRE_FALSE(refused_sms.ok());
    CHECK(refused_sms.error().extra["field"] == "config.notify.sms.from");
  }
}

TEST_CASE("leads config: each recipient once — refused when written, sent to once when stored") {
  // A number listed twice was texted twice for every lead; SendGrid refuses a repeated address.
  json sms{{"notify", {{"sms", {{"to", {"+15550100111", "+15550100222", "+15550100111"}}}}}}};
  json email{{"notify",
              {{"email",
                {{"provider", "sendgrid"},
                 {"to", {"a@example.com", "b@example.com", "A@Example.com"}},
                 {"from", "forms@example.com"}}}}}};
  for (const auto& [config, named] :
       {std::pair{sms, "config.notify.sms.to"}, std::pair{email, "config.notify.email.to"}}) {
    const std::string field = named;
    CAPTURE(field);
    auto parsed = parse_config(config, false);
    REQUIRE(parsed.ok());  // a stored config is still read
    ss::Status written = ss::leads::check_config_for_write(*parsed);
    REQUIRE_FALSE(written.ok());
    CHECK(written.error().extra["field"] == field);
    CHECK(written.error().message.find("listed twice") != std::string::npos);
  }
  auto fine =
      parse_config(json{{"notify", {{"sms", {{"to", {"+15550100111", "+15550100222"}}}}}}}, false);
  REQUIRE(fine.ok());
  CHECK(ss::leads::check_config_for_write(*fine).ok());
}
