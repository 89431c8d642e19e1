// The manifest of client-auto-repair, typed with the SDK's SwarmConfig (checked by `tsc`, bundled
// into the worker by wrangler's esbuild, read by scripts/provision). `${NAME:-default}` strings are
// filled in by scripts/provision from its --var flags and the environment: SITE_URL is where this
// site runs (scripts/dev: http://127.0.0.1:8794), so its monitor probes the real page.
import type { SwarmConfig } from "@siteswarm/sdk";

const manifest = {
  appId: "auto-repair",
  name: "Northside Auto Repair",
  capabilities: {
    "lead-capture": { version: "1.2.0" },
    cms: { version: "1.0.0" },
    monitoring: { version: "1.0.0" },
    analytics: { version: "1.0.0" },
    "event-ledger": { version: "1.0.0" },
  },
  config: {
    leads: {
      // The honeypot field and the rate limit are the contract's defaults (company_website, 5 per
      // 60 s), as for the bakery: a client that follows the contract meets both demo tenants alike.
      storeSubmissions: true,
      turnstile: "required",
      redirectUrl: "/thanks.html",
      fields: ["vehicle", "service", "preferred_date"],
      notify: {
        // The shop's phone gets a text, the service desk an email.
        sms: { to: ["+15555550100"] },
        email: {
          provider: "sendgrid",
          to: ["service@northside-auto.example"],
          from: "Northside Auto <bookings@northside-auto.example>",
        },
      },
    },
    cms: { timezone: "America/Chicago" },
    monitoring: {
      monitors: [
        {
          id: "home",
          url: "${SITE_URL:-https://northside-auto.example}/",
          method: "GET",
          expectStatus: [200],
          maxLatencyMs: 2000,
          mustContain: ["form#booking"],
          enabled: true,
        },
      ],
    },
    analytics: { hosts: ["northside-auto.example", "localhost", "127.0.0.1"] },
    events: {},
  },
  fallback: {
    hours: {
      timezone: "America/Chicago",
      weekly: {
        mon: [{ open: "08:00", close: "17:30" }],
        tue: [{ open: "08:00", close: "17:30" }],
        wed: [{ open: "08:00", close: "17:30" }],
        thu: [{ open: "08:00", close: "17:30" }],
        fri: [{ open: "08:00", close: "17:30" }],
        sat: [{ open: "09:00", close: "13:00" }],
        sun: [],
      },
    },
    overrides: [],
    announcements: [{ text: "Winter tire changeovers: book a slot this week.", level: "info" }],
  },
} satisfies SwarmConfig;

export default manifest;
