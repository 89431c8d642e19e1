// Service bindings: one HTTP request to another worker of the mesh. With `timeoutMs` (a monitor
// probing a platform worker's /health) the call gives up after that long; `elapsedMs` is measured
// around it either way, as for fetch.
import { binding, EffectError } from "./errors.js";
import { headersObject, readText, toRequest } from "./http.js";

export default {
  async service(effect, env) {
    const service = binding(env, effect.binding, "service", "fetch");
    const started = Date.now();
    const call = async () => {
      const response = await service.fetch(toRequest(effect.request ?? {}));
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
      timer = setTimeout(
        () =>
          reject(
            new EffectError("timeout", `service(): no answer within ${effect.timeoutMs} ms`, {
              elapsedMs: Date.now() - started,
            }),
          ),
        effect.timeoutMs,
      );
    });
    try {
      return await Promise.race([call(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  },
};
