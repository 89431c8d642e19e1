// client-auto-repair: Northside Auto Repair. Its pages (examples/auto-repair/public), its typed
// manifest (swarm.config.ts) and the shared client-site worker (examples/common/site.js): the home
// page shows the open-now line, today's hours and an emergency closure as a banner (cms); booking
// requests go to leads (a text through Twilio, an email through SendGrid); the monitors the manifest
// declares watch this page, and /status is its public status page (monitoring).
import { createSite } from "../common/site.js";
import manifest from "./swarm.config.ts";

export default createSite({
  manifest,
  service: "client-auto-repair",
  labels: {
    name: "Name",
    phone: "Mobile phone",
    email: "Email",
    vehicle: "Vehicle",
    service: "Service",
    preferred_date: "Preferred day",
    message: "What is wrong",
  },
});
