#pragma once
// A fast, strict JSON reader into nlohmann's DOM, in front of nlohmann's own parser.
//
// Every message the host sends (the request, each batch of effect results with its D1 rows) and
// every body is parsed once per run; nlohmann's lexer copies each character through a token buffer
// and tracks positions, which made the parse the largest single part of a core's own time
// (docs/performance.md "A cheaper boundary"). This reader builds the same DOM straight from the
// bytes. It is deliberately strict: whatever it is not certain nlohmann would accept identically
// (malformed text, invalid UTF-8, lone surrogates, nesting deeper than kFastReaderDepth) makes it
// give up, and the caller falls back to nlohmann, so the result is always exactly nlohmann's.

#include "shared/error.h"

#include <string_view>

namespace ss {

// Nesting the reader follows by recursion; deeper texts go to nlohmann (iterative).
inline constexpr int kFastReaderDepth = 48;

// Parses `text` into `out`; false (and `out` unspecified) when the text must be left to nlohmann.
bool read_json_fast(std::string_view text, json& out);
// The same checks without building anything: true only for text nlohmann accepts; false when the
// text is not JSON or must be left to nlohmann (json::accept) to decide.
bool accept_json_fast(std::string_view text);

}  // namespace ss
