// client-software-agency: Brightline Software Studio. Its pages (examples/software-agency/public),
// its typed manifest (swarm.config.ts) and the shared client-site worker (examples/common/site.js):
// announcements from cms on the home page; project inquiries (with company, project type, budget and
// timeline) go to leads, which signs and posts each one to the agency's CRM webhook; analytics counts
// the pageviews.
import { createSite } from "../common/site.js";
import manifest from "./swarm.config.ts";

export default createSite({
  manifest,
  service: "client-software-agency",
  labels: {
    name: "Your name",
    email: "Work email",
    company: "Company",
    project_type: "Project type",
    budget: "Budget",
    timeline: "Timeline",
    message: "About the project",
  },
});
