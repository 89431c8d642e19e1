// Outbound HTTP (siteverify, Resend, SendGrid, Twilio, PagerDuty, Slack, webhooks, probes).
// The host measures elapsedMs around the call, so probes need no clock in the core.
import { EffectError } from "./errors.js";
import { headersObject, readText, toRequest } from "./http.js";

const DEFAULT_TIMEOUT_MS = 10_000;

export default {
  async fetch(effect) {
    const timeoutMs = effect.timeoutMs > 0 ? effect.timeoutMs : DEFAULT_TIMEOUT_MS;
    const started = Date.now();
    const elapsed = () => Date.now() - started;
    try {
      // Redirects are never followed here: a 30x is handed to the core as it is (a webhook that
      // answers 302 has not accepted the delivery). Following it silently would let a public URL
      // that passed the core's outbound-URL guard bounce the call to a private address
      // (docs/security.md).
      const response = await fetch(toRequest(effect), {
        signal: AbortSignal.timeout(timeoutMs),
        redirect: "manual",
      });
      const { text, tooLarge } = await readText(response.body);
      return {
        status: response.status,
        headers: headersObject(response.headers),
        body: text,
        ...(tooLarge && { bodyTooLarge: true }),
        elapsedMs: elapsed(),
      };
    } catch (err) {
      const timedOut = err?.name === "TimeoutError" || err?.name === "AbortError";
      const message = timedOut ? `fetch(): no answer within ${timeoutMs} ms` : `fetch(): ${err?.message ?? "failed"}`;
      const code = timedOut ? "timeout" : "network_error";
      throw new EffectError(code, message, { elapsedMs: elapsed() });
    }
  },
};
