#include "shared/error.h"

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

}  // namespace ss
