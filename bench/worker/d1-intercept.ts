/**
 * A D1 binding whose every call that waits on D1 passes through `around` first: a statement's
 * `run`/`all`/`first`/`raw`, one `batch` (with the SQL of each statement), one `exec`; and whose
 * every statement is shown to `inspect` as it is prepared and as it is bound. The platform limits
 * (bench/worker/limits.ts) and the fault tests (test/integration/seams-faults.ts,
 * test/faults/faulty-bindings.ts) build on it; the code under test runs unchanged over it.
 * Statements are proxies of the real ones, which `batch` hands back to D1 (it takes no others).
 */

export interface D1Call {
  readonly method: "run" | "all" | "first" | "raw" | "batch" | "exec";
  readonly sql: readonly string[];
}

export function interceptD1(db: D1Database, around: <T>(call: D1Call, run: () => Promise<T>) => Promise<T>, inspect?: (sql: string, values: readonly unknown[]) => void): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();
  const sqlOf = new WeakMap<object, string>();
  const wrap = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, property) {
        if (property === "bind") {
          return (...values: unknown[]) => {
            inspect?.(sql, values);
            return wrap(target.bind(...values), sql);
          };
        }
        if (property === "run" || property === "all" || property === "first" || property === "raw") {
          const method = Reflect.get(target, property, target) as (...args: unknown[]) => Promise<unknown>;
          return (...args: unknown[]) => around({ method: property, sql: [sql] }, () => Reflect.apply(method, target, args) as Promise<unknown>);
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    real.set(proxy, statement);
    sqlOf.set(proxy, sql);
    return proxy;
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === "prepare") {
        return (sql: string) => {
          inspect?.(sql, []);
          return wrap(target.prepare(sql), sql);
        };
      }
      if (property === "batch") {
        return (statements: D1PreparedStatement[]) =>
          around({ method: "batch", sql: statements.map((s) => sqlOf.get(s) ?? "") }, () => target.batch(statements.map((s) => real.get(s) ?? s)));
      }
      if (property === "exec") return (sql: string) => around({ method: "exec", sql: [sql] }, () => target.exec(sql));
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
