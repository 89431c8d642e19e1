#include "workers/leads/lead.h"

#include "shared/field_error.h"
#include "shared/json_util.h"
#include "shared/text.h"

#include <algorithm>
#include <set>

namespace ss::leads {

namespace {

// The one message for a form over the field cap, whichever way it was posted.
std::string too_many_fields() {
  return "too many form fields (at most " + std::to_string(kMaxFormFields) + ")";
}

std::string trim(std::string_view s) {
  auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return "";
  auto end = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(begin, end - begin + 1));
}

bool is_turnstile_field(const std::string& name) {
  return name == kTurnstileFields[0] || name == kTurnstileFields[1];
}

// 415 naming the header (docs/contract.md "Common rules": an error about one header names it).
Error wrong_submission_type() {
  return invalid_field(
      "Content-Type",
      "must be application/json, application/x-www-form-urlencoded or multipart/form-data",
      ErrorCode::unsupported_media_type);
}

}  // namespace

Status require_submission_type(const Request& req) {
  std::string media = media_type_of(req);
  if (media != "application/json" && media != "application/x-www-form-urlencoded" &&
      media != "multipart/form-data") {
    return wrong_submission_type();
  }
  return require_identity_coding(req);  // a compressed body is not a malformed form
}

Result<SentFields> read_submission(const Request& req) {
  auto type = parse_content_type(req.header("content-type"));
  std::string media = type ? type->media_type : "";
  SentFields sent;
  if (media == "application/json") {
    // Numbers as sent (`1.50` stays "1.50", not "1.5"): a field is text to keep, not a value.
    auto parsed = parse_json_object_keeping_numbers(req.body);
    if (!parsed) return std::move(parsed).error();
    for (auto it = parsed->begin(); it != parsed->end(); ++it) {
      const json& v = it.value();
      if (v.is_string()) {
        sent.text.emplace_back(it.key(), v.get<std::string>());
      } else if (v.is_number() || v.is_boolean()) {
        sent.text.emplace_back(it.key(), dump_json(v));
      } else if (!v.is_null()) {
        sent.not_text.push_back(it.key());
      }
    }
    return sent;
  }
  if (media == "application/x-www-form-urlencoded") {
    auto fields = parse_urlencoded(req.body);
    // A urlencoded body cannot be malformed: its one refusal is the field count.
    if (!fields) return Error{ErrorCode::invalid_request, too_many_fields()};
    sent.text = std::move(*fields);
    return sent;
  }
  if (media == "multipart/form-data") {
    auto boundary = type->params.find("boundary");
    if (boundary == type->params.end()) {
      return invalid_field("Content-Type", "multipart/form-data without a boundary");
    }
    std::string why;
    auto fields = parse_multipart(req.body, boundary->second, &why, &sent.files);
    if (!fields) {
      return Error{ErrorCode::invalid_request,
                   why == "too many form fields" ? too_many_fields() : "multipart body: " + why};
    }
    sent.text = std::move(*fields);
    return sent;
  }
  return wrong_submission_type();
}

std::optional<std::string> normalize_phone(std::string_view raw, std::string_view country_code) {
  static constexpr std::size_t kMinDigits = 7;
  static constexpr std::size_t kMaxDigits = 15;  // E.164
  std::string digits;
  bool plus = false;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (c == '+' && digits.empty() && !plus) {
      plus = true;
    } else if (c != ' ' && c != '-' && c != '.' && c != '(' && c != ')') {
      return std::nullopt;
    }
  }
  bool international = plus;
  if (!plus) {
    if (digits.rfind("00", 0) == 0) {
      digits.erase(0, 2);  // international prefix 00
      international = true;
    } else if (country_code == "1" && digits.size() == 11 && digits[0] == '1') {
      // NANP with trunk prefix 1
    } else {
      if (!digits.empty() && digits[0] == '0') digits.erase(0, 1);  // national trunk prefix
      digits = std::string(country_code) + digits;
    }
  }
  if (digits.size() < kMinDigits + 1 || digits.size() > kMaxDigits || digits[0] == '0')
    return std::nullopt;
  if (country_code == "1" && !international && digits.size() != 11) return std::nullopt;
  return "+" + digits;
}

Result<Submission> validate_submission(const SentFields& sent, const LeadsConfig& config) {
  Submission out;
  json problems = json::object();
  std::set<std::string> seen;
  std::set<std::string> extras(config.extra_fields.begin(), config.extra_fields.end());

  for (const std::string& name : sent.files) {
    if (name == config.honeypot_field) {
      out.honeypot = true;  // a file in the trap fills it too
    } else {
      problems[name] = "file uploads are not accepted";  // text fields only
    }
  }
  for (const std::string& name : sent.not_text) {
    if (name == config.honeypot_field) {
      out.honeypot = true;  // an object or a list in the trap fills it as well as text does
    } else {
      problems[name] = "must be text";
    }
  }
  for (const auto& [name, raw] : sent.text) {
    if (name == config.honeypot_field) {
      if (!trim(raw).empty()) out.honeypot = true;
      continue;
    }
    if (is_turnstile_field(name)) {
      if (raw.size() > kMaxTurnstileToken) problems[name] = "is too long";
      if (out.turnstile_token.empty()) out.turnstile_token = raw;
      continue;
    }
    if (!seen.insert(name).second) {
      problems[name] = "is sent more than once";
      continue;
    }
    std::string value = trim(raw);
    if (!is_utf8(value)) {
      problems[name] = "must be UTF-8 text";
    } else if (name == "name") {
      if (code_points(value) > kMaxNameLength || has_control_chars(value, false)) {
        problems["name"] = "must be at most 200 characters, without control characters";
      } else if (!value.empty()) {
        out.lead["name"] = value;
      }
    } else if (name == "email") {
      if (!value.empty() && !is_strict_email(value)) {
        problems["email"] = "is not an email address";
      } else if (!value.empty()) {
        out.lead["email"] = value;
      }
    } else if (name == "phone") {
      if (!value.empty()) {
        auto e164 = normalize_phone(value, config.default_country_code);
        if (!e164) {
          problems["phone"] = "is not a phone number (use international format, e.g. +15550109999)";
        } else {
          out.lead["phone"] = *e164;
        }
      }
    } else if (name == "message") {
      if (code_points(value) > kMaxMessageLength || has_control_chars(value, true)) {
        problems["message"] = "must be at most 5000 characters, without control characters";
      } else if (!value.empty()) {
        out.lead["message"] = value;
      }
    } else if (extras.count(name)) {
      if (code_points(value) > kMaxExtraValueLength || has_control_chars(value, true)) {
        problems[name] = "must be at most 1000 characters, without control characters";
      } else if (!value.empty()) {
        out.lead[name] = value;
      }
    } else {
      problems[name] = "is not a field this form accepts";
    }
  }
  if (out.honeypot) return out;  // bots get a success, whatever else they sent
  if (!out.lead.contains("email") && !out.lead.contains("phone") && !problems.contains("email") &&
      !problems.contains("phone")) {
    problems["email"] = "an email address or a phone number is required";
    problems["phone"] = "an email address or a phone number is required";
  }
  if (!problems.empty()) {
    Error e{ErrorCode::invalid_lead, "the lead has invalid fields"};
    // One named input: "field" names it beside "fields" (docs/contract.md "Common rules").
    if (problems.size() == 1) e.with("field", problems.begin().key());
    e.with("fields", problems);
    return e;
  }
  return out;
}

}  // namespace ss::leads
