#pragma once
// A tenant's leads configuration (docs/contract.md "Tenant provisioning"): parsed from the tenant's
// config with defaults, validated on PUT /admin/tenants/{id}, and redacted (webhook secret) in GET
// views.

#include "shared/error.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss::leads {

inline constexpr const char* kDb = "LEADS_DB";
inline constexpr const char* kNotifyQueue = "NOTIFY_QUEUE";
inline constexpr int kDefaultRateLimit = 5;
inline constexpr int kDefaultRatePeriodSeconds = 60;
inline constexpr std::size_t kMaxExtraFields = 30;
inline constexpr std::size_t kMaxRecipients = 10;
inline constexpr std::size_t kMinWebhookSecret = 1;  // any non-empty secret (the tenant's choice)
// What GET /admin/tenants/{id} shows in place of the webhook secret; refused as a secret.
inline constexpr const char* kRedactedSecret = "[redacted]";

struct EmailChannel {
  std::string provider;  // resend | sendgrid
  std::vector<std::string> to;
  std::string from;
};
struct SmsChannel {
  std::vector<std::string> to;  // E.164
  std::string from;             // E.164; empty: the worker's TWILIO_FROM_NUMBER
};
struct WebhookChannel {
  std::string url;
  std::string secret;
};

struct LeadsConfig {
  bool store_submissions = true;
  std::string honeypot_field = "company_website";
  bool turnstile_required = true;
  int rate_limit = kDefaultRateLimit;
  int rate_period_seconds = kDefaultRatePeriodSeconds;
  std::string redirect_url;
  std::vector<std::string> extra_fields;
  std::string default_country_code = "1";  // for national phone numbers
  std::optional<int> retention_days;
  std::optional<EmailChannel> email;
  std::optional<SmsChannel> sms;
  std::optional<WebhookChannel> webhook;
};

// The form fields the intake reads itself (workers/leads/lead.cpp): the standard four and the two
// names of the Turnstile token.
inline constexpr std::string_view kStandardFields[] = {"name", "email", "phone", "message"};
inline constexpr std::string_view kTurnstileFields[] = {"turnstileToken", "cf-turnstile-response"};
// The CSV export's own columns (workers/leads/admin.cpp): three before the form's fields,
// other_fields after them. No extra field may take one of their names.
inline constexpr std::string_view kExportColumns[] = {"id", "created_at", "turnstile_verified",
                                                      "other_fields"};

// `list` with each recipient once, in its order (compared without case when `fold_case`: email
// addresses); the first one left out goes to `repeated` when given. A config write refuses a repeat;
// a config stored before that rule is sent to each recipient once.
std::vector<std::string> each_once(const std::vector<std::string>& list, bool fold_case,
                                   std::string* repeated = nullptr);

// A standard or Turnstile field, or an export column: never one of a tenant's extra fields.
bool is_reserved_field(std::string_view name);

// A sender as written in a config, "forms@bakery.example" or `Name <address>` (the name may be
// quoted, `"Doe, Jane" <jane@example.com>`, with \" and \\ inside): its display name (unquoted,
// trimmed; empty when there is none) and address, or nullopt when it is neither form.
struct Sender {
  std::string name;
  std::string address;
};
std::optional<Sender> split_sender(std::string_view from);

// allow_local: http://127.0.0.1 URLs are accepted (local development and tests only). What a stored
// config is read with (intake, notifications, retention).
Result<LeadsConfig> parse_config(const json& config, bool allow_local);
// The rules a config must also meet to be stored (PUT /admin/tenants): checked when it is written,
// not when it is read, so a config stored before a rule was added keeps working.
Status check_config_for_write(const LeadsConfig& config);
// Also on write only: every key of the config (and of rateLimit and notify's channels) is one of
// its known fields, so a misspelt setting is refused instead of read as its default.
Status check_config_keys(const json& config);
// A redirect's bytes are printable ASCII (browsers drop a tab from a URL: "/\t/evil.example/" is
// another site; a Location header cannot carry a character past U+00FF).
bool is_redirect_safe(std::string_view url);
json redact_config(json config);
// An address as a stored config is read (lenient: what was taken before the stricter rule).
bool is_email(std::string_view s);
// An address as a visitor's lead and a config write are checked: is_email, a dot-atom local part,
// domain labels not ending in '-', no control character (DEL and U+0080–U+009F too).
bool is_strict_email(std::string_view s);

}  // namespace ss::leads
