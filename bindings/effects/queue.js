// Queue producers: queue.send, queue.sendBatch (up to 100 messages in one call).
import { binding } from "./errors.js";

export default {
  async "queue.send"(effect, env) {
    const queue = binding(env, effect.binding, "queue", "send");
    const options = effect.delaySeconds > 0 ? { delaySeconds: effect.delaySeconds } : undefined;
    await queue.send(effect.body, options);
    return {};
  },
  async "queue.sendBatch"(effect, env) {
    const queue = binding(env, effect.binding, "queue", "sendBatch");
    const messages = Array.isArray(effect.messages) ? effect.messages : [];
    if (messages.length) await queue.sendBatch(messages.map((m) => ({ body: m.body })));
    return {};
  },
};
