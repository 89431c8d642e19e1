#include "workers/events/reflexion_analyzer.h"

#include "shared/json_util.h"

#include <cctype>

namespace ss::events {

namespace {

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A three-digit HTTP status in the text ("answered 503", "status 404"), as http_4xx / http_5xx.
std::string http_class(const std::string& text) {
  for (std::size_t i = 0; i + 3 <= text.size(); ++i) {
    bool digits = std::isdigit(static_cast<unsigned char>(text[i])) &&
                  std::isdigit(static_cast<unsigned char>(text[i + 1])) &&
                  std::isdigit(static_cast<unsigned char>(text[i + 2]));
    bool bounded = (i == 0 || !std::isdigit(static_cast<unsigned char>(text[i - 1]))) &&
                   (i + 3 == text.size() || !std::isdigit(static_cast<unsigned char>(text[i + 3])));
    if (digits && bounded && (text[i] == '4' || text[i] == '5')) {
      return std::string("http_") + text[i] + "xx";
    }
  }
  return "";
}

// The class of a free-text error.
std::string classify(const std::string& error) {
  std::string e = lower(error);
  if (e.empty()) return "unknown";
  if (contains(e, "timeout") || contains(e, "timed out")) return "timeout";
  if (contains(e, "no workflow definition")) return "no_workflow_definition";
  if (contains(e, "url refused")) return "url_refused";
  if (contains(e, "not a json object") || contains(e, "payload")) return "bad_payload";
  if (std::string h = http_class(e); !h.empty()) return h;
  if (contains(e, "network") || contains(e, "connect") || contains(e, "dns")) return "network";
  return "other";
}

struct Failure {
  std::string subject_kind;
  std::string subject;
  std::string error_class;
  std::string error;
};

std::optional<Failure> failure_of(const EventRow& row) {
  auto parsed = parse_json(row.payload_json);
  json payload = parsed && parsed->is_object() ? *parsed : json::object();
  const std::string& type = row.event_type;
  if (type == "workflow.run_failed") {
    std::string error = string_or(payload, "error", "");
    return Failure{"workflow_type", string_or(payload, "workflow_type", "unknown"),
                   error_class_of(type, payload), error};
  }
  if (type == "lead.delivery_failed" || type == "lead.spam_absorbed" || type == "hitl.rejected" ||
      type == "monitor.probe_failed") {
    std::string error = string_or(payload, "error", string_or(payload, "reason", ""));
    return Failure{"event_type", type, error_class_of(type, payload), error};
  }
  return std::nullopt;
}

}  // namespace

std::string error_class_of(const std::string& event_type, const json& payload) {
  if (event_type == "workflow.run_failed") {
    std::string declared = string_or(payload, "error_class", "");
    return declared.empty() ? classify(string_or(payload, "error", "")) : declared;
  }
  if (event_type == "lead.delivery_failed") {
    // Per channel and provider: a failing email provider is a different pattern from failing SMS.
    std::string channel = string_or(payload, "channel", "unknown");
    std::string provider = string_or(payload, "provider", "");
    std::string where = provider.empty() ? channel : channel + "." + provider;
    return where + ":" + classify(string_or(payload, "error", ""));
  }
  if (event_type == "lead.spam_absorbed" || event_type == "hitl.rejected") {
    return string_or(payload, "reason", "unknown");
  }
  if (event_type == "monitor.probe_failed") {
    // {"probe":{"reason":"status_mismatch"|"too_slow"|"selector_missing:<sel>"|...}}
    const json* probe = find_field(payload, "probe");
    std::string reason = probe ? string_or(*probe, "reason", "") : string_or(payload, "reason", "");
    auto colon = reason.find(':');
    if (colon != std::string::npos) reason = reason.substr(0, colon);
    return reason.empty() ? "unknown" : reason;
  }
  return classify(string_or(payload, "error", ""));
}

Task<Status> run_reflexion_batch(Context& ctx, DrainReport& report,
                                 const std::vector<EventRow>& rows) {
  std::vector<D1Statement> statements;
  for (const EventRow& row : rows) {
    auto failure = failure_of(row);
    if (!failure) continue;
    statements.push_back(ReflexionStore::record_statement(
        failure->subject_kind, failure->subject, failure->error_class, failure->error, row.event_id,
        row.tenant_key(), row.recorded_at, row.seq));
    ++report.patterns;
  }
  // A plain function returning the commit's task (the statements move into its frame).
  return commit_with_cursor(ctx, report, rows, std::move(statements));
}

}  // namespace ss::events
