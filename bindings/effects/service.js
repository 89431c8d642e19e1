// Service bindings: one HTTP request to another worker of the mesh.
import { binding } from "./errors.js";
import { headersObject, readText, toRequest } from "./http.js";

export default {
  async service(effect, env) {
    const service = binding(env, effect.binding, "service", "fetch");
    const response = await service.fetch(toRequest(effect.request ?? {}));
    const { text, tooLarge } = await readText(response.body);
    return {
      status: response.status,
      headers: headersObject(response.headers),
      body: text,
      ...(tooLarge && { bodyTooLarge: true }),
    };
  },
};
