// Performs one effect against the real env: `{id, kind, ...}` → `{id, ok, value | error}`.
// Never throws: every failure becomes an error value the core can turn into its own answer.
import analyticsEngine from "./analytics-engine.js";
import cryptoEffects from "./crypto.js";
import d1 from "./d1.js";
import { EffectError } from "./errors.js";
import fetchEffect from "./fetch.js";
import kv from "./kv.js";
import queue from "./queue.js";
import ratelimit from "./ratelimit.js";
import service from "./service.js";
import sleep from "./sleep.js";

const executors = {
  ...d1,
  ...kv,
  ...fetchEffect,
  ...service,
  ...queue,
  ...analyticsEngine,
  ...ratelimit,
  ...cryptoEffects,
  ...sleep,
};

export async function perform(effect, env) {
  const execute = Object.hasOwn(executors, effect?.kind) ? executors[effect.kind] : null;
  try {
    if (!execute) throw new EffectError("unsupported_effect", `unknown effect ${effect?.kind}`);
    return { id: effect.id, ok: true, value: await execute(effect, env) };
  } catch (err) {
    return { id: effect.id, ok: false, ...failure(effect.kind, err) };
  }
}

// Only the code and the message cross to the core: never a stack.
function failure(kind, err) {
  if (err instanceof EffectError) {
    return { error: { code: err.code, message: err.message, ...err.extra }, ...err.extra };
  }
  const family = String(kind).split(".")[0];
  return { error: { code: `${family}_error`, message: `${kind}: ${err?.message ?? String(err)}` } };
}
