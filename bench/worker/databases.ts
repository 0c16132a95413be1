import { shardsOf } from "../../src/storage/shards";

/**
 * `env` with every D1 binding (the control database and each shard) passed through `wrap`: how the
 * instruments (the meters, the D1 simulation) and the tests' fault injection put themselves between
 * the code and its databases. Not the product's: nothing in src/ wraps its own bindings.
 */
export function mapDatabases(env: Env, wrap: (db: D1Database, name: string) => D1Database): Env {
  const wrapped: Record<string, unknown> = { ...env, DB: wrap(env.DB, "DB") };
  for (const shard of shardsOf(env)) wrapped[shard.name] = wrap(shard.db, shard.name);
  return wrapped as unknown as Env;
}
