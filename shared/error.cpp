#include "shared/error.h"
#include "shared/field_error.h"
#include "shared/json_util.h"

namespace ss {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
#define SS_X(name, status) \
  case ErrorCode::name:    \
    return #name;
    SS_ERROR_CODES(SS_X)
#undef SS_X
  }
  return "internal";
}

int error_code_status(ErrorCode code) {
  switch (code) {
#define SS_X(name, status) \
  case ErrorCode::name:    \
    return status;
    SS_ERROR_CODES(SS_X)
#undef SS_X
  }
  return 500;
}

json Error::body() const {
  json err = json::object();
  err["code"] = std::string(error_code_name(code));
  err["message"] = message;
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      if (it.key() != "code" && it.key() != "message") err[it.key()] = it.value();
    }
  }
  json out = json::object();
  out["error"] = std::move(err);
  return out;
}

Error& name_field(Error& e, const std::string& field, const std::string& problem) {
  e.with("field", field);
  return e.with("fields", json_object({{field, problem}}));
}

Error invalid_field(const std::string& field, const std::string& problem, ErrorCode code) {
  Error e{code, field + ": " + problem};
  return std::move(name_field(e, field, problem));
}

Status check_known_keys(const json& object, std::span<const std::string_view> known,
                        const std::string& prefix, std::span<const std::string_view> passing) {
  if (!object.is_object()) return Unit{};
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool found = false;
    for (std::string_view k : known) found = found || it.key() == k;
    for (std::string_view k : passing) found = found || it.key() == k;
    if (!found) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return invalid_field(prefix + it.key(), "is not a known field (" + list + ")");
    }
  }
  return Unit{};
}

}  // namespace ss
