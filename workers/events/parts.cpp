// The ledger as three deployed workers (docs/architecture.md "The ledger's three workers").
#include "shared/app.h"

namespace ss {

App make_events_app();

App make_events_entry_app() { return make_events_app(); }
App make_events_runner_app() { return make_events_app(); }
App make_events_config_app() { return make_events_app(); }

}  // namespace ss
