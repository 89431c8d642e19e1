#pragma once
// The contract's validation error names what was wrong: "field" (the one to point at) and
// "fields" ({"<field>": "<problem>"}), beside the code and message every error has.

#include "shared/error.h"

#include <string>

namespace ss {

// Sets "field" and "fields" ({field: problem}) on `e` and returns it.
Error& name_field(Error& e, const std::string& field, const std::string& problem);

// The error about one input: `code` with the message "<field>: <problem>", naming `field`.
Error invalid_field(const std::string& field, const std::string& problem,
                    ErrorCode code = ErrorCode::invalid_request);

}  // namespace ss
