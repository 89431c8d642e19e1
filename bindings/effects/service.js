// Service bindings: one HTTP request to another worker of the mesh. With `timeoutMs` (a monitor
// probing a platform worker's /health) the call gives up after that long; `elapsedMs` is measured
// around it either way, as for fetch.
import { binding, EffectError } from "./errors.js";
import { headersObject, readText, toRequest } from "./http.js";

export default {
  async service(effect, env) {
    const service = binding(env, effect.binding, "service", "fetch");
    const started = Date.now();
    // With a timeout, the call is aborted when it runs out: a call left running would keep its
    // connection (one of the invocation's six) and its unread body until the invocation ends.
    const controller = effect.timeoutMs > 0 ? new AbortController() : null;
    const call = async () => {
      const request = toRequest(effect.request ?? {});
      const response = await service.fetch(controller ? new Request(request, { signal: controller.signal }) : request);
      const { text, tooLarge } = await readText(response.body);
      return {
        status: response.status,
        headers: headersObject(response.headers),
        body: text,
        ...(tooLarge && { bodyTooLarge: true }),
        elapsedMs: Date.now() - started,
      };
    };
    if (!(effect.timeoutMs > 0)) return call();
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => {
        reject(
          new EffectError("timeout", `service(): no answer within ${effect.timeoutMs} ms`, {
            elapsedMs: Date.now() - started,
          }),
        );
        controller.abort();
      }, effect.timeoutMs);
    });
    const pending = call();
    pending.catch(() => {}); // aborted after its timeout answered: nobody waits for it any more
    try {
      return await Promise.race([pending, timeout]);
    } finally {
      clearTimeout(timer);
    }
  },
};
