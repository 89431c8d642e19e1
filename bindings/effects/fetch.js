// Outbound HTTP (siteverify, Resend, SendGrid, Twilio, PagerDuty, Slack, webhooks, probes).
// The host measures elapsedMs around the call, so probes need no clock in the core.
import { EffectError } from "./errors.js";
import { headersObject, readReplyText, timeoutSignal, toRequest } from "./http.js";

const DEFAULT_TIMEOUT_MS = 10_000;
// A probe reads at most this much HTML (decoded) looking for its selectors: a compression bomb or
// an endless page would otherwise burn the consumer's CPU until the timeout, with the other probes
// of its invocation (docs/monitoring.md). Selectors not seen by then are missing.
const MAX_PROBE_HTML_BYTES = 8 * 1024 * 1024;

export default {
  async fetch(effect) {
    const timeoutMs = effect.timeoutMs > 0 ? effect.timeoutMs : DEFAULT_TIMEOUT_MS;
    const started = Date.now();
    const elapsed = () => Date.now() - started;
    const timer = timeoutSignal(timeoutMs); // covers the body's read too; freed once the call is done
    try {
      // Redirects are never followed here: a 30x is handed to the core as it is (a webhook that
      // answers 302 has not accepted the delivery). Following it silently would let a public URL
      // that passed the core's outbound-URL guard bounce the call to a private address
      // (docs/security.md).
      const response = await fetch(toRequest(effect), {
        signal: timer.signal,
        redirect: "manual",
      });
      if (Array.isArray(effect.selectors)) {
        // A monitor probe: the body is streamed through HTMLRewriter (lol-html), one element
        // handler per mustContain selector, and only which selectors matched comes back. Nothing
        // is buffered, so a page of any size costs no memory; the timeout covers the body too.
        const selectorsMatched = await matchSelectors(response, effect.selectors, timer.signal);
        return {
          status: response.status,
          headers: headersObject(response.headers),
          body: "",
          selectorsMatched,
          elapsedMs: elapsed(),
        };
      }
      const { text, tooLarge, incomplete } = await readReplyText(response, effect.bodyOptional === true);
      return {
        status: response.status,
        headers: headersObject(response.headers),
        body: text,
        ...(tooLarge && { bodyTooLarge: true }),
        ...(incomplete && { bodyIncomplete: true }),
        elapsedMs: elapsed(),
      };
    } catch (err) {
      const timedOut = err?.name === "TimeoutError" || err?.name === "AbortError";
      const message = timedOut ? `fetch(): no answer within ${timeoutMs} ms` : `fetch(): ${err?.message ?? "failed"}`;
      const code = timedOut ? "timeout" : "network_error";
      throw new EffectError(code, message, { elapsedMs: elapsed() });
    } finally {
      timer.clear();
    }
  },
};

// What a browser builds a DOM from. A response that says it is something else (text/plain, JSON)
// holds no elements, whatever markup its text spells; one that says nothing is read as HTML.
const HTML_TYPES = new Set(["text/html", "application/xhtml+xml"]);
function declaresOtherThanHtml(response) {
  const type = response.headers.get("content-type");
  if (type === null || type.trim() === "") return false;
  return !HTML_TYPES.has(type.split(";")[0].trim().toLowerCase());
}

/** Which of `selectors` match an element of the response's HTML (streamed, never buffered). */
async function matchSelectors(response, selectors, signal) {
  if (!response.body) return [];
  // The page is read to its end (up to the cap) with or without selectors, and after they have all
  // matched: a probe's latency is the whole page's time, whatever the monitor checks of it.
  const matched = new Set();
  let stream = response.body;
  if (selectors.length > 0 && !declaresOtherThanHtml(response)) {
    if (typeof HTMLRewriter !== "function") {
      throw new EffectError("unsupported_effect", "fetch(): selectors need HTMLRewriter (workerd)");
    }
    let rewriter = new HTMLRewriter();
    for (const selector of selectors) {
      rewriter = rewriter.on(selector, {
        element() {
          matched.add(selector);
        },
      });
    }
    stream = rewriter.transform(response).body;
  }
  const reader = stream.getReader();
  try {
    for (let read = 0; ; ) {
      const { done, value } = await reader.read();
      if (done) break;
      read += value.byteLength;
      if (read >= MAX_PROBE_HTML_BYTES) {
        await reader.cancel().catch(() => {}); // too much: stop reading (what matched so far counts)
        break;
      }
    }
  } catch (err) {
    if (signal.aborted) throw err; // the probe's time ran out: a timeout, as before the body
    // The site answered; only its body could not be read to the end (lol-html's memory limit on a
    // deeply nested page, a reset mid-body): what matched so far counts, the rest is missing.
    await reader.cancel().catch(() => {});
  }
  return selectors.filter((s) => matched.has(s));
}
