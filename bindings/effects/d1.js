// D1: d1.all / d1.first / d1.run / d1.batch. Params are `?1`-style, bound in order.
import { binding } from "./errors.js";

const database = (env, effect) => binding(env, effect.binding, "D1", "prepare", "batch");

// D1 binds null, numbers, strings and booleans; anything structured goes in as its JSON text.
const param = (v) => (v !== null && typeof v === "object" ? JSON.stringify(v) : v);
const statement = (db, { sql, params = [] }) => db.prepare(sql).bind(...params.map(param));

export default {
  async "d1.all"(effect, env) {
    const { results, meta } = await statement(database(env, effect), effect).all();
    return { results, meta };
  },
  async "d1.first"(effect, env) {
    return { row: (await statement(database(env, effect), effect).first()) ?? null };
  },
  async "d1.run"(effect, env) {
    return { meta: (await statement(database(env, effect), effect).run()).meta };
  },
  async "d1.batch"(effect, env) {
    const db = database(env, effect);
    const results = await db.batch(effect.statements.map((s) => statement(db, s)));
    return results.map(({ results, meta }) => ({ results: results ?? [], meta }));
  },
};
