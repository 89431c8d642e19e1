// Rate limiting binding: ratelimit.
import { binding } from "./errors.js";

export default {
  async ratelimit(effect, env) {
    const limiter = binding(env, effect.binding, "rate limiter", "limit");
    const { success } = await limiter.limit({ key: effect.key });
    return { success: Boolean(success) };
  },
};
