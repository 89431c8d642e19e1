#include "workers/leads/config.h"

#include "shared/field_error.h"
#include "shared/http.h"
#include "shared/json_util.h"
#include "shared/text.h"
#include "shared/url_guard.h"

#include <algorithm>

namespace ss::leads {

namespace {

Error bad(const std::string& field, const std::string& message) {
  return invalid_field("config." + field, message);
}

bool is_field_name(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool is_e164(std::string_view s) {
  if (s.size() < 9 || s.size() > 16 || s[0] != '+' || s[1] == '0') return false;
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

Result<std::vector<std::string>> string_list(const json& obj, const char* key,
                                             const std::string& field,
                                             bool (*valid)(std::string_view), const char* what) {
  const json* list = find_field(obj, key);
  if (list == nullptr || !list->is_array() || list->empty() || list->size() > kMaxRecipients) {
    return bad(field,
               std::string("must be a list of 1–") + std::to_string(kMaxRecipients) + " " + what);
  }
  std::vector<std::string> out;
  for (const json& v : *list) {
    if (!v.is_string() || !valid(v.get<std::string>()))
      return bad(field, std::string("not ") + what);
    out.push_back(v.get<std::string>());
  }
  return out;
}

bool email_ok(std::string_view s) { return is_email(s); }

bool is_sender(std::string_view s) { return split_sender(s).has_value(); }

// A redirect's bytes: printable ASCII, other characters percent-encoded. Browsers drop tabs and
// line breaks from a URL ("/\t/evil.example/" is "//evil.example/", another site), and a Location
// header cannot carry a character past U+00FF at all (the host would answer 500 after the store).
constexpr CharClass kRedirectChars = CharClass().range('!', '~');

}  // namespace

bool is_redirect_safe(std::string_view url) { return kRedirectChars.all_of(url); }

namespace {

// A path on the client's own site ("/thanks.html"), resolved by the browser against the form's
// page.
bool is_site_path(std::string_view s) {
  return !s.empty() && s.size() <= 512 && s[0] == '/' && (s.size() == 1 || s[1] != '/') &&
         s.find('\\') == std::string_view::npos;
}

}  // namespace

bool is_email(std::string_view s) {
  static constexpr std::size_t kMaxEmail = 254;
  static constexpr std::size_t kMaxLocal = 64;
  if (s.empty() || s.size() > kMaxEmail) return false;
  auto at = s.rfind('@');
  if (at == std::string_view::npos || at == 0 || at > kMaxLocal || at + 1 >= s.size()) return false;
  std::string_view domain = s.substr(at + 1);
  auto dot = domain.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 2 > domain.size()) return false;
  // A domain is labels joined by dots: none empty, none starting with '-' (so not ".b.com").
  if (domain.find("..") != std::string_view::npos || domain.front() == '-' ||
      domain.front() == '.' || domain.find(".-") != std::string_view::npos) {
    return false;
  }
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || c == '<' || c == '>' || c == '(' || c == ')' || c == ',' || c == ';' ||
        c == '\\' || c == '"' || c == '[' || c == ']') {
      return false;
    }
  }
  return s.substr(0, at).find('@') == std::string_view::npos;
}

bool is_strict_email(std::string_view s) {
  if (!is_email(s)) return false;
  // The local part as a dot-atom: no leading or trailing dot, no two in a row (".a@", "a..b@"); the
  // domain's labels not ending in '-'; no control character of any kind (DEL and the C1 range too).
  const std::size_t at = s.rfind('@');
  std::string_view local = s.substr(0, at);
  std::string_view domain = s.substr(at + 1);
  return local.front() != '.' && local.back() != '.' &&
         local.find("..") == std::string_view::npos &&
         domain.find("-.") == std::string_view::npos && domain.back() != '-' &&
         !has_control_chars(s, false);
}

std::vector<std::string> each_once(const std::vector<std::string>& list, bool fold_case,
                                   std::string* repeated) {
  std::vector<std::string> out;
  std::vector<std::string> seen;
  for (const std::string& item : list) {
    std::string key = fold_case ? ascii_lower(item) : item;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      if (repeated != nullptr && repeated->empty()) *repeated = item;
      continue;
    }
    seen.push_back(std::move(key));
    out.push_back(item);
  }
  return out;
}

bool is_reserved_field(std::string_view name) {
  bool reserved = false;
  for (std::string_view b : kStandardFields) reserved = reserved || name == b;
  for (std::string_view b : kTurnstileFields) reserved = reserved || name == b;
  for (std::string_view b : kExportColumns) reserved = reserved || name == b;
  return reserved;
}

std::optional<Sender> split_sender(std::string_view from) {
  if (is_email(from)) return Sender{"", std::string(from)};
  auto open = from.rfind('<');
  if (open == std::string_view::npos || from.empty() || from.back() != '>' || open == 0) {
    return std::nullopt;
  }
  std::string_view raw = from.substr(0, open);
  std::string address(from.substr(open + 1, from.size() - open - 2));
  if (raw.size() > 100 || raw.find_first_of("<>\r\n") != std::string_view::npos ||
      !is_email(address)) {
    return std::nullopt;
  }
  auto first = raw.find_first_not_of(" \t");
  if (first == std::string_view::npos) return std::nullopt;
  raw = raw.substr(first, raw.find_last_not_of(" \t") - first + 1);
  std::string name;
  if (raw.front() != '"') {
    // Unquoted, a name is one phrase: a quote or a comma (a list of addresses to a mail system)
    // needs the quoted form.
    if (raw.find_first_of("\",;") != std::string_view::npos) return std::nullopt;
    name = raw;
  } else {
    if (raw.size() < 2 || raw.back() != '"') return std::nullopt;
    for (std::size_t i = 1; i + 1 < raw.size(); ++i) {
      char c = raw[i];
      if (c == '"') return std::nullopt;  // a quote inside must be escaped
      if (c == '\\') {
        if (i + 2 >= raw.size()) return std::nullopt;
        c = raw[++i];
      }
      name += c;
    }
  }
  return Sender{std::move(name), std::move(address)};
}

Status check_config_for_write(const LeadsConfig& c) {
  // A honeypot named like a field people fill in would absorb every genuine lead as spam.
  for (std::string_view f : kStandardFields) {
    if (c.honeypot_field == f) return bad("honeypotField", "must not be a field people fill in");
  }
  for (std::string_view f : kTurnstileFields) {
    if (c.honeypot_field == f) return bad("honeypotField", "must not be a field people fill in");
  }
  for (std::size_t i = 0; i < c.extra_fields.size(); ++i) {
    const std::string& f = c.extra_fields[i];
    if (c.honeypot_field == f) return bad("honeypotField", "must not be one of the form's fields");
    // The standard and Turnstile fields are read as such, never as extras: declared again, each
    // would only add a column to the CSV export (a duplicate, or one always empty).
    if (is_reserved_field(f)) {
      return bad("fields", "\"" + f + "\" is a standard field or export column, not an extra one");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (c.extra_fields[j] == f) return bad("fields", "\"" + f + "\" is listed twice");
    }
  }
  if (!is_redirect_safe(c.redirect_url)) {
    return bad("redirectUrl", "must be printable ASCII (percent-encode other characters)");
  }
  // Addresses are held to what a visitor's email is held to on a write; a stored config is read as it
  // was taken (is_email), so a rule added later never takes a working form down.
  if (c.email) {
    for (const std::string& to : c.email->to) {
      if (!is_strict_email(to))
        return bad("notify.email.to", "\"" + to + "\" is not an email address");
    }
    std::string repeated;
    each_once(c.email->to, /*fold_case=*/true, &repeated);
    if (!repeated.empty()) return bad("notify.email.to", "\"" + repeated + "\" is listed twice");
    auto sender = split_sender(c.email->from);
    if (sender && !is_strict_email(sender->address)) {
      return bad("notify.email.from", "is not an email address");
    }
  }
  // Each number once: a repeated one would be texted twice for every lead (and billed twice).
  if (c.sms) {
    std::string repeated;
    each_once(c.sms->to, /*fold_case=*/false, &repeated);
    if (!repeated.empty()) return bad("notify.sms.to", "\"" + repeated + "\" is listed twice");
  }
  // A config read back from GET and written again would sign every webhook with the placeholder.
  if (c.webhook && c.webhook->secret == kRedactedSecret) {
    return bad("notify.webhook.secret",
               "is the placeholder GET shows in place of the secret: send the secret itself");
  }
  return Unit{};
}

Status check_config_keys(const json& config) {
  static const json kNone;
  auto child = [](const json& parent, const char* key) -> const json& {
    const json* v = find_field(parent, key);
    return v ? *v : kNone;
  };
  const json& notify = child(config, "notify");
  Status known =
      check_known_keys(config,
                       {"storeSubmissions", "honeypotField", "turnstile", "rateLimit",
                        "redirectUrl", "fields", "defaultCountryCode", "retentionDays", "notify"},
                       "config.");
  if (known) {
    known = check_known_keys(child(config, "rateLimit"), {"limit", "periodSeconds"},
                             "config.rateLimit.");
  }
  if (known) known = check_known_keys(notify, {"email", "sms", "webhook"}, "config.notify.");
  if (known) {
    known = check_known_keys(child(notify, "email"), {"provider", "to", "from"},
                             "config.notify.email.");
  }
  if (known) known = check_known_keys(child(notify, "sms"), {"to", "from"}, "config.notify.sms.");
  if (known) {
    known = check_known_keys(child(notify, "webhook"), {"url", "secret"}, "config.notify.webhook.");
  }
  return known;
}

Result<LeadsConfig> parse_config(const json& config, bool allow_local) {
  LeadsConfig c;
  if (!config.is_object()) return bad("", "must be an object");
  if (const json* v = find_field(config, "storeSubmissions")) {
    if (!v->is_boolean()) return bad("storeSubmissions", "must be true or false");
    c.store_submissions = v->get<bool>();
  }
  if (const json* v = find_field(config, "honeypotField")) {
    if (!v->is_string() || !is_field_name(v->get<std::string>())) {
      return bad("honeypotField", "must be a field name");
    }
    c.honeypot_field = v->get<std::string>();
  }
  if (const json* v = find_field(config, "turnstile")) {
    std::string mode = v->is_string() ? v->get<std::string>() : "";
    if (mode != "required" && mode != "off")
      return bad("turnstile", R"(must be "required" or "off")");
    c.turnstile_required = mode == "required";
  }
  if (const json* v = find_field(config, "rateLimit")) {
    if (!v->is_object()) return bad("rateLimit", R"(must be an object {"limit","periodSeconds"})");
    // Either key may be left out: its default stands (5 per 60 s).
    auto limit =
        v->contains("limit") ? get_int(*v, "limit") : std::optional<std::int64_t>{c.rate_limit};
    auto period = get_int(*v, "periodSeconds");
    if (v->contains("periodSeconds") && !period)
      return bad("rateLimit.periodSeconds", "must be an integer 1–86400");
    if (!limit || *limit < 1 || *limit > 10000) {
      return bad("rateLimit.limit", "must be 1–10000");
    }
    if (period && (*period < 1 || *period > 86400))
      return bad("rateLimit.periodSeconds", "must be 1–86400");
    c.rate_limit = static_cast<int>(*limit);
    c.rate_period_seconds = period ? static_cast<int>(*period) : kDefaultRatePeriodSeconds;
  }
  if (const json* v = find_field(config, "redirectUrl"); v && !v->is_null()) {
    // A browser redirect, not a call the platform makes; it goes through the same guard all the
    // same (no visitor is sent to a private address), and keeps its fragment.
    if (!v->is_string() || (!check_outbound_url(v->get<std::string>(), allow_local).ok() &&
                            !is_site_path(v->get<std::string>()))) {
      return bad("redirectUrl", "must be an https:// URL or a path such as /thanks.html");
    }
    c.redirect_url = v->get<std::string>();
  }
  if (const json* v = find_field(config, "fields")) {
    if (!v->is_array() || v->size() > kMaxExtraFields) {
      return bad("fields",
                 "must be a list of at most " + std::to_string(kMaxExtraFields) + " names");
    }
    for (const json& f : *v) {
      if (!f.is_string() || !is_field_name(f.get<std::string>()))
        return bad("fields", "not a field name");
      c.extra_fields.push_back(f.get<std::string>());
    }
  }
  if (const json* v = find_field(config, "defaultCountryCode")) {
    std::string cc = v->is_string() ? v->get<std::string>() : "";
    if (cc.empty() || cc.size() > 3 || !kDigits.all_of(cc)) {
      return bad("defaultCountryCode", "must be 1–3 digits, e.g. \"1\"");
    }
    c.default_country_code = cc;
  }
  if (const json* v = find_field(config, "retentionDays"); v && !v->is_null()) {
    auto days = get_int(config, "retentionDays");
    if (!days || *days < 1 || *days > 3650) return bad("retentionDays", "must be 1–3650");
    c.retention_days = static_cast<int>(*days);
  }
  const json* notify = find_field(config, "notify");
  if (notify != nullptr && !notify->is_object()) return bad("notify", "must be an object");
  if (const json* e = notify ? find_field(*notify, "email") : nullptr) {
    EmailChannel ch;
    // Sent, it must be one of the two names: a number or an object was read as the default.
    const json* provider = find_field(*e, "provider");
    ch.provider = provider == nullptr     ? "resend"
                  : provider->is_string() ? provider->get<std::string>()
                                          : "";
    if (ch.provider != "resend" && ch.provider != "sendgrid") {
      return bad("notify.email.provider", R"(must be "resend" or "sendgrid")");
    }
    auto to = string_list(*e, "to", "notify.email.to", email_ok, "email addresses");
    if (!to) return std::move(to).error();
    ch.to = std::move(to).value();
    ch.from = string_or(*e, "from", "");
    if (!is_sender(ch.from)) {
      return bad("notify.email.from", "must be an email address, optionally as Name <address>");
    }
    c.email = std::move(ch);
  }
  if (const json* s = notify ? find_field(*notify, "sms") : nullptr) {
    SmsChannel ch;
    auto to = string_list(*s, "to", "notify.sms.to", is_e164, "E.164 numbers");
    if (!to) return std::move(to).error();
    ch.to = std::move(to).value();
    const json* from = find_field(*s, "from");
    if (from != nullptr && from->is_string()) ch.from = from->get<std::string>();
    if ((from != nullptr && !from->is_string()) || (!ch.from.empty() && !is_e164(ch.from)))
      return bad("notify.sms.from", "must be an E.164 number");
    c.sms = std::move(ch);
  }
  if (const json* w = notify ? find_field(*notify, "webhook") : nullptr) {
    WebhookChannel ch;
    ch.secret = string_or(*w, "secret", "");
    auto url = check_outbound_url(string_or(*w, "url", ""), allow_local);
    if (!url) return bad("notify.webhook.url", webhook_url_problem(url.error()));
    ch.url = url->href;  // normalised: the host judged here is the host called
    if (ch.secret.size() < kMinWebhookSecret || ch.secret.size() > 256) {
      return bad("notify.webhook.secret", "must be a string of 1–256 characters");
    }
    c.webhook = std::move(ch);
  }
  return c;
}

json redact_config(json config) {
  if (config.is_object() && config.contains("notify") && config["notify"].is_object()) {
    json& notify = config["notify"];
    if (notify.contains("webhook") && notify["webhook"].is_object() &&
        notify["webhook"].contains("secret")) {
      notify["webhook"]["secret"] = kRedactedSecret;
    }
  }
  return config;
}

}  // namespace ss::leads
