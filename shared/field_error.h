#pragma once
// The contract's validation error names what was wrong: "field" (the one to point at) and
// "fields" ({"<field>": "<problem>"}), beside the code and message every error has.

#include "shared/error.h"
#include "shared/json_util.h"

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace ss {

// Sets "field" and "fields" ({field: problem}) on `e` and returns it.
Error& name_field(Error& e, const std::string& field, const std::string& problem);

// The error about one input: `code` with the message "<field>: <problem>", naming `field`.
Error invalid_field(const std::string& field, const std::string& problem,
                    ErrorCode code = ErrorCode::invalid_request);

// Refuses a key of the JSON object `object` that is none of `known` (400 naming "<prefix><key>"):
// a misspelt setting ("storeSubmission") must not pass as the default it meant to change. Anything
// that is not an object passes (its own check says what it must be).
// Keys in `passing` are let through unread (the fields a view adds, so a read item can be sent
// back).
Status check_known_keys(const json& object, std::span<const std::string_view> known,
                        const std::string& prefix, std::span<const std::string_view> passing = {});
inline Status check_known_keys(const json& object, std::initializer_list<std::string_view> known,
                               const std::string& prefix) {
  return check_known_keys(object, std::span(known.begin(), known.size()), prefix);
}

}  // namespace ss
