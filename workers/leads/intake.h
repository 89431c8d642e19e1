#pragma once
// Lead intake: POST /api/leads/submit and POST /api/leads.

#include "shared/app.h"

namespace ss::leads {

void add_intake_routes(App& app);

}  // namespace ss::leads
