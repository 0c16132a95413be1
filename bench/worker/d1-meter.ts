/**
 * What D1 did while a request is served, for the benchmark's "rows and bytes read per byte
 * returned" and its cost of an append (round trips, statements, rows read and written): D1 reports
 * `meta.rows_read`/`rows_written` for every statement it runs, but only to the Worker that ran it,
 * so the count has to be taken inside. Off unless the deployment sets
 * `D1_METER = "on"` (the benchmark's worker does), and then counted only for a request that asks
 * (`x-foldline-d1-meter: on`), so no other request pays for it.
 *
 * The metered database hands every statement to the real one unchanged; it only adds up what comes
 * back. `bytesRead` is the JSON length of the rows returned, the size of what crossed from D1 into
 * the Worker.
 */

/** What a request cost D1: its reads, and (for the append path's cost) its round trips and writes. */
export interface D1Reads {
  /** Calls that went to D1 and waited for it: one per `all`/`run`/`first`, one per `batch`. */
  readonly roundTrips: number;
  readonly statements: number;
  readonly rowsRead: number;
  readonly rowsWritten: number;
  readonly bytesRead: number;
  /** The D1 bindings the statements went to (`DB`, `DB_SHARD_0`, …), sorted. */
  readonly databases: readonly string[];
}

export const NO_READS: D1Reads = { roundTrips: 0, statements: 0, rowsRead: 0, rowsWritten: 0, bytesRead: 0, databases: [] };

export const D1_METER_HEADER = "x-foldline-d1-meter";
export const D1_READS_HEADER = "x-foldline-d1-reads";

export function d1MeterEnabled(env: Pick<Env, "D1_METER">): boolean {
  // Typed by wrangler.toml's default ("off"); a deployment's var may say otherwise.
  const setting: string = env.D1_METER;
  return setting === "on";
}

export const addReads = (a: D1Reads, b: D1Reads): D1Reads => ({
  roundTrips: a.roundTrips + b.roundTrips,
  statements: a.statements + b.statements,
  rowsRead: a.rowsRead + b.rowsRead,
  rowsWritten: a.rowsWritten + b.rowsWritten,
  bytesRead: a.bytesRead + b.bytesRead,
  databases: [...new Set([...a.databases, ...b.databases])].sort(),
});

/** `round-trips=…; statements=…; rows-read=…; rows-written=…; bytes-read=…`, the header the benchmark reads. */
export const formatReads = (reads: D1Reads): string =>
  `round-trips=${reads.roundTrips}; statements=${reads.statements}; rows-read=${reads.rowsRead}; rows-written=${reads.rowsWritten}; bytes-read=${reads.bytesRead}; databases=${reads.databases.join(",")}`;

/** Counts while armed; a meter that was never armed counts nothing. */
export class D1Meter {
  #armed = false;
  #reads: D1Reads = NO_READS;
  /** Called with every result counted and its statement's SQL (the usage ledger's size and per-statement counts). */
  onResult: ((result: D1Result, query: string, database: string) => void) | undefined;

  arm(): void {
    this.#armed = true;
    this.#reads = NO_READS;
  }

  /** What was read since `arm`, still counting. */
  peek(): D1Reads {
    return this.#reads;
  }

  /** What was read since `arm`, and disarms. */
  take(): D1Reads {
    const reads = this.#reads;
    this.#armed = false;
    this.#reads = NO_READS;
    return reads;
  }

  /** One statement's result; `trip` when it is the first (or only) result of a call to D1. */
  record(result: D1Result, trip: boolean, query = "", database = "DB"): void {
    if (!this.#armed) return;
    this.onResult?.(result, query, database);
    this.#reads = addReads(this.#reads, {
      roundTrips: trip ? 1 : 0,
      statements: 1,
      rowsRead: result.meta.rows_read ?? 0,
      rowsWritten: result.meta.rows_written ?? 0,
      bytesRead: result.results.length === 0 ? 0 : JSON.stringify(result.results).length,
      databases: [database],
    });
  }
}

/**
 * `db` with every statement's result recorded on `meter`. Statements are proxies of the real ones:
 * `bind` wraps again, `all`/`run`/`first` record, and `batch` hands D1 the real statements (it
 * accepts no others). `first` runs as `all`, so that its result carries the statement's meta.
 */
export function meteredD1(db: D1Database, meter: D1Meter, database = "DB"): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();
  const queries = new WeakMap<object, string>();
  const wrap = (statement: D1PreparedStatement, query: string): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, property) {
        if (property === "bind") return (...values: unknown[]) => wrap(target.bind(...values), query);
        if (property === "all" || property === "run") {
          return async () => {
            const result = property === "all" ? await target.all() : await target.run();
            meter.record(result, true, query, database);
            return result;
          };
        }
        if (property === "first") {
          return async (column?: string) => {
            if (column !== undefined) return target.first(column);
            const result = await target.all();
            meter.record(result, true, query, database);
            return result.results[0] ?? null;
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    real.set(proxy, statement);
    queries.set(proxy, query);
    return proxy;
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === "prepare") return (query: string) => wrap(target.prepare(query), query);
      if (property === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          const results = await target.batch(statements.map((s) => real.get(s) ?? s));
          for (const [index, result] of results.entries()) meter.record(result, index === 0, queries.get(statements[index] ?? {}) ?? "", database);
          return results;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
