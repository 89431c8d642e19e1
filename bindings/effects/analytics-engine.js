// Workers Analytics Engine: ae.write (fire and forget, like the binding itself).
import { binding } from "./errors.js";

export default {
  async "ae.write"(effect, env) {
    const dataset = binding(env, effect.binding, "Analytics Engine", "writeDataPoint");
    const { blobs = [], doubles = [], indexes = [] } = effect;
    dataset.writeDataPoint({ blobs, doubles, indexes });
    return {};
  },
};
