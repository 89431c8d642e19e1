#pragma once
// Reading and validating one submission: JSON, urlencoded or multipart (text fields only) bodies
// become a flat field list; the honeypot is checked; fields are validated and normalised (phone to
// E.164).

#include "shared/form.h"
#include "shared/http.h"
#include "workers/leads/config.h"

#include <optional>
#include <string>

namespace ss::leads {

inline constexpr std::size_t kMaxSubmissionBody = 32 * 1024;
inline constexpr std::size_t kMaxNameLength = 200;
inline constexpr std::size_t kMaxMessageLength = 5000;
inline constexpr std::size_t kMaxExtraValueLength = 1000;
inline constexpr std::size_t kMaxTurnstileToken = 2048;

// 415 unless the body is JSON, urlencoded or multipart/form-data.
Status require_submission_type(const Request& req);
// What a body sent: its fields as text, in order, the names of the JSON fields whose value is an
// object or an array (no form holds those), and of the multipart parts that carried a file;
// validation refuses both, after the honeypot (a bot filling the trap is answered as a person is).
struct SentFields {
  FormFields text;
  std::vector<std::string> not_text;
  std::vector<std::string> files;
};

// 400 for malformed bodies (415 for other types); the size is checked by the caller first.
Result<SentFields> read_submission(const Request& req);

struct Submission {
  json lead = json::object();  // validated fields: name?, email?, phone?, message?, extras
  std::string turnstile_token;
  bool honeypot = false;  // true: answer like a success and do nothing else
};

// 400 invalid_lead with {"fields":{name: problem}} when anything is wrong.
Result<Submission> validate_submission(const SentFields& sent, const LeadsConfig& config);

// "+1 (555) 010-9999" → "+15550109999"; national numbers take the default country code.
std::optional<std::string> normalize_phone(std::string_view raw, std::string_view country_code);

}  // namespace ss::leads
