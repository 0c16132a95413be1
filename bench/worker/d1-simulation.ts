import { mapDatabases } from "./databases";

/**
 * A D1 stand-in for the benchmark's shard section: local D1 (`wrangler dev`) runs inside the same
 * workerd process as the Worker, so more shards there add no capacity to measure. Cloudflare
 * describes a D1 database as a single writer whose throughput is set by how long each query takes
 * (about 1,000 queries a second at 1 ms each). With `D1_SIMULATED_STATEMENT_MS` above 0, every D1
 * binding (the control database and each shard) becomes such a writer: each call to D1 (`run`,
 * `all`, `first`, `raw` of a statement, or one `batch`) occupies its database's writer for its
 * statements × the service time, calls queue first come first served per database, and once its
 * turn is over the real call runs. Two databases never wait for each other.
 *
 * The writers are this module's state, keyed by binding name, so a writer is shared by everything
 * in one isolate. In local workerd the Worker, its queue consumer and every conversation object run
 * in one isolate (the benchmark checks it), so one database has one writer there. The schedule is
 * kept as the time each writer is next free, so a timer that fires late delays only its own call,
 * never the writer's later turns. Off (`"0"`, wrangler.toml's default) the bindings are untouched.
 */

/** When each database's writer is next free (ms since the epoch), by binding name. */
const writers = new Map<string, number>();

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The service time per statement in ms; 0 is off. Anything but a non-negative number is a configuration error. */
export function simulatedStatementMs(env: Pick<Env, "D1_SIMULATED_STATEMENT_MS">): number {
  // Typed by wrangler.toml's default ("0"); a deployment's var may say otherwise.
  const setting: string = env.D1_SIMULATED_STATEMENT_MS;
  const ms = Number(setting);
  if (setting.trim() === "" || !Number.isFinite(ms) || ms < 0) throw new Error(`D1_SIMULATED_STATEMENT_MS must be a number of milliseconds ≥ 0 (0 is off), not ${JSON.stringify(setting)}`);
  return ms;
}

/** Waits for `database`'s writer to have served `statements` statements of this call, in arrival order. */
function turn(database: string, statements: number, msPerStatement: number): Promise<void> {
  const now = Date.now();
  const done = Math.max(now, writers.get(database) ?? 0) + statements * msPerStatement;
  writers.set(database, done);
  return sleep(done - now);
}

/** `db` as a single writer of `msPerStatement` per statement, shared by every wrapper of the same `database` name. */
export function simulatedD1(db: D1Database, database: string, msPerStatement: number): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, property) {
        if (property === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        if (property === "all" || property === "run" || property === "first" || property === "raw") {
          return async (...args: unknown[]) => {
            await turn(database, 1, msPerStatement);
            return Reflect.apply(Reflect.get(target, property, target) as (...a: unknown[]) => unknown, target, args) as unknown;
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    real.set(proxy, statement);
    return proxy;
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === "prepare") return (query: string) => wrap(target.prepare(query));
      if (property === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          await turn(database, statements.length, msPerStatement);
          // D1 accepts only its own statements in a batch.
          return target.batch(statements.map((s) => real.get(s) ?? s));
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** `env` with every D1 binding a simulated single writer when `D1_SIMULATED_STATEMENT_MS` is above 0; otherwise `env` itself. */
export function simulatedD1Env(env: Env): Env {
  const ms = simulatedStatementMs(env);
  if (ms === 0) return env;
  return mapDatabases(env, (db, name) => simulatedD1(db, name, ms));
}
