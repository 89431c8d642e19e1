#pragma once
// Streamed HTTP responses: a fetch handler whose body is too large to hold (a CSV export of every
// lead) sends its status and headers with response_open(), then the body chunk by chunk with
// response_write(), and returns Response::streamed(). The host starts answering the client at
// response_open and completes each write once the client can take more (backpressure), so the
// core holds one chunk at a time whatever the body's size. docs/abi.md "Streamed responses".
//
// Once the stream is open the status is sent: a handler that fails afterwards returns its Error as
// usual and the host aborts the body (the client sees a truncated transfer, never a complete-
// looking file). A write fails (code stream_closed) when the client went away; stop then.

#include "shared/effects.h"
#include "shared/http.h"

#include <string>
#include <utility>
#include <vector>

namespace ss {

EffectOf<Unit> response_open(int status,
                             const std::vector<std::pair<std::string, std::string>>& headers);
EffectOf<Unit> response_write(std::string chunk);

}  // namespace ss
