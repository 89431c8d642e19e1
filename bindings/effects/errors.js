// Failures an executor reports to the core as `{ok:false, error:{code, message}}`.

export class EffectError extends Error {
  constructor(code, message, extra = {}) {
    super(message);
    this.code = code;
    this.extra = extra; // e.g. fetch's elapsedMs
  }
}

/** env[name] when it is an object with every listed method; otherwise `binding_missing`. */
export function binding(env, name, kind, ...methods) {
  const value = env?.[name];
  if (value == null || methods.some((m) => typeof value[m] !== "function")) {
    const message = `${kind} binding ${name} is missing or is not a ${kind}`;
    throw new EffectError("binding_missing", message);
  }
  return value;
}
