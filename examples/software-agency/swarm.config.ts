// The manifest of client-software-agency, typed with the SDK's SwarmConfig. Project inquiries go to
// the agency's CRM as a signed webhook (X-SiteSwarm-Signature, HMAC-SHA256). `${NAME:-default}` strings
// are filled in by scripts/provision from its --var flags and the environment: the signing secret is
// never in this file (scripts/dev generates one and hands the same one to the local CRM stub).
import type { SwarmConfig } from "@siteswarm/sdk";

const manifest = {
  appId: "software-agency",
  name: "Brightline Software Studio",
  capabilities: {
    "lead-capture": { version: "1.2.0" },
    cms: { version: "1.0.0" },
    analytics: { version: "1.0.0" },
    "event-ledger": { version: "1.0.0" },
  },
  config: {
    leads: {
      storeSubmissions: true,
      honeypotField: "homepage",
      turnstile: "required",
      rateLimit: { limit: 10, periodSeconds: 60 },
      redirectUrl: "/thanks.html",
      fields: ["company", "project_type", "budget", "timeline"],
      notify: {
        webhook: {
          url: "${CRM_WEBHOOK_URL:-https://crm.brightline.example/hooks/siteswarm}",
          secret: "${CRM_WEBHOOK_SECRET}",
        },
      },
    },
    cms: { timezone: "Europe/Berlin" },
    analytics: { hosts: ["brightline.example", "localhost", "127.0.0.1"] },
    events: {},
  },
  fallback: {
    hours: {
      timezone: "Europe/Berlin",
      weekly: {
        mon: [{ open: "09:00", close: "18:00" }],
        tue: [{ open: "09:00", close: "18:00" }],
        wed: [{ open: "09:00", close: "18:00" }],
        thu: [{ open: "09:00", close: "18:00" }],
        fri: [{ open: "09:00", close: "16:00" }],
        sat: [],
        sun: [],
      },
    },
    overrides: [],
    announcements: [{ text: "Now booking new projects from February.", level: "info" }],
  },
} satisfies SwarmConfig;

export default manifest;
