// Service bindings: one HTTP request to another worker of the mesh. With `timeoutMs` (a monitor
// probing a platform worker's /health) the call gives up after that long; `elapsedMs` is measured
// around it either way, as for fetch.
import { binding, EffectError } from "./errors.js";
import { headersObject, readReplyText, timeoutSignal, toRequest } from "./http.js";

export default {
  async service(effect, env) {
    const service = binding(env, effect.binding, "service", "fetch");
    const started = Date.now();
    // With a timeout, the call is aborted when it runs out (the body's read included): a call left
    // running would keep its connection (one of the invocation's six) and its unread body until the
    // invocation ends. One Request, its signal the timer's; the timer freed once the call is done.
    const timeoutMs = Math.max(Number(effect.timeoutMs) || 0, 0);
    const timer = timeoutMs ? timeoutSignal(timeoutMs) : null;
    try {
      const request = toRequest(effect.request ?? {}, timer?.signal);
      const response = await service.fetch(request);
      const { text, tooLarge, incomplete } = await readReplyText(response, effect.request?.bodyOptional === true);
      return {
        status: response.status,
        headers: headersObject(response.headers),
        body: text,
        ...(tooLarge && { bodyTooLarge: true }),
        ...(incomplete && { bodyIncomplete: true }),
        elapsedMs: Date.now() - started,
      };
    } catch (err) {
      if (timeoutMs && (err?.name === "TimeoutError" || err?.name === "AbortError")) {
        throw new EffectError("timeout", `service(): no answer within ${timeoutMs} ms`, {
          elapsedMs: Date.now() - started,
        });
      }
      throw err;
    } finally {
      timer?.clear();
    }
  },
};
