// Queue producers: queue.send.
import { binding } from "./errors.js";

export default {
  async "queue.send"(effect, env) {
    const queue = binding(env, effect.binding, "queue", "send");
    const options = effect.delaySeconds > 0 ? { delaySeconds: effect.delaySeconds } : undefined;
    await queue.send(effect.body, options);
    return {};
  },
};
