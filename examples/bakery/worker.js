// client-bakery: Crumb & Crust Bakery. Its pages (examples/bakery/public), its manifest, and the
// shared client-site worker (examples/common/site.js): the home page shows the live hours, open-now
// line and announcements from cms; the contact form goes to leads (email through Resend); the
// tracker and its beacons go to analytics.
import { createSite } from "../common/site.js";
import json from "./swarm.config.json";

// A JSON import widens literal types ("info" becomes string), so the manifest is asserted to be a
// SwarmConfig; tsc still refuses it if its shape is not comparable.
const manifest = /** @type {import("@siteswarm/sdk").SwarmConfig} */ (json);

export default createSite({
  manifest,
  service: "client-bakery",
  labels: { name: "Name", email: "Email", phone: "Phone", order_date: "Pick-up date", message: "Message" },
});
