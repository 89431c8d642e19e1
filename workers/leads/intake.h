#pragma once
// Lead intake: POST /api/leads/submit and POST /api/leads.

#include "shared/app.h"

namespace ss::leads {

void add_intake_routes(App& app);

// Whether an Accept header asks for HTML rather than JSON (RFC 9110 §12.5.1): `text/html` listed
// with a weight above 0 and not below `application/json`'s, media types compared without case. A
// browser's form post (`text/html,application/xhtml+xml,…,*/*;q=0.8`) does; curl's `*/*`,
// `text/html;q=0` and `application/json, text/html;q=0.5` do not.
bool prefers_html(std::string_view accept);

}  // namespace ss::leads
