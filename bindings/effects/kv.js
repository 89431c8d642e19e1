// Workers KV: kv.get / kv.put / kv.delete (text values).
import { binding } from "./errors.js";

const KV_MIN_TTL_SECONDS = 60; // KV refuses a shorter expirationTtl

const namespace = (env, effect) => binding(env, effect.binding, "KV", "get", "put", "delete");

export default {
  async "kv.get"(effect, env) {
    return { value: await namespace(env, effect).get(effect.key) };
  },
  async "kv.put"(effect, env) {
    const value = typeof effect.value === "string" ? effect.value : JSON.stringify(effect.value);
    const options =
      effect.ttlSeconds > 0 ? { expirationTtl: Math.max(KV_MIN_TTL_SECONDS, Math.ceil(effect.ttlSeconds)) } : undefined;
    await namespace(env, effect).put(effect.key, value, options);
    return {};
  },
  async "kv.delete"(effect, env) {
    await namespace(env, effect).delete(effect.key);
    return {};
  },
};
