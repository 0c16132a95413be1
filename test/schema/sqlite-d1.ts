import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import type { BackfillDatabase } from "../../src/storage/search-backfill";
import type { Statement as BackfillStatement } from "../../src/storage/shard/turn-terms";

/**
 * Just enough of D1 over a node:sqlite database for the storage modules' writers to seed it:
 * `prepare`, `bind`, `first`, `all`, `run` and `batch` (one transaction, as D1 runs a batch). The
 * schema test seeds through the product's own statements, so it names none of the tables a schema
 * rewrite may rename.
 */

/** A D1 bind value as SQLite takes it: D1 stores a boolean as 0 or 1, and refuses anything else. */
function sqliteValue(value: unknown): SQLInputValue {
  if (value === null || typeof value === "string" || typeof value === "number" || typeof value === "bigint" || value instanceof Uint8Array) return value;
  if (typeof value === "boolean") return value ? 1 : 0;
  throw new TypeError(`D1 cannot bind ${typeof value}`);
}

class Statement {
  constructor(
    private readonly db: DatabaseSync,
    private readonly sql: string,
    private readonly values: readonly SQLInputValue[] = [],
  ) {}

  bind(...values: unknown[]): Statement {
    return new Statement(this.db, this.sql, values.map(sqliteValue));
  }

  /** The first row, or null: D1's `first()` without a column name, the only form the writers use. */
  async first<T>(): Promise<T | null> {
    return this.execute<T>().results[0] ?? null;
  }

  async all<T>(): Promise<D1Result<T>> {
    return this.execute<T>();
  }

  async run<T>(): Promise<D1Result<T>> {
    return this.execute<T>();
  }

  /**
   * Runs the statement. `changes` counts the rows its triggers wrote too, as D1's does (the event
   * writer reads it that way), hence the difference of `total_changes()` rather than `changes()`.
   */
  execute<T>(): D1Result<T> {
    const before = this.totalChanges();
    const rows = this.db.prepare(this.sql).all(...this.values);
    const changes = this.totalChanges() - before;
    const meta = { duration: 0, size_after: 0, rows_read: 0, rows_written: changes, last_row_id: 0, changed_db: changes > 0, changes };
    // The writers name the row shape they expect of their own SQL; SQLite's rows are untyped records.
    return { success: true, results: rows as T[], meta };
  }

  private totalChanges(): number {
    return Number(this.db.prepare("SELECT total_changes() AS n").get()?.["n"]);
  }
}

export function d1Over(db: DatabaseSync): D1Database {
  const facade = {
    prepare: (sql: string) => new Statement(db, sql),
    batch: async <T>(statements: readonly unknown[]): Promise<D1Result<T>[]> => {
      db.exec("BEGIN");
      try {
        const results = statements.map((statement) => {
          if (!(statement instanceof Statement)) throw new TypeError("a batch takes statements of this database");
          return statement.execute<T>();
        });
        db.exec("COMMIT");
        return results;
      } catch (error) {
        db.exec("ROLLBACK");
        throw error;
      }
    },
  };
  // Only the part of D1 the seeding writers call; any other method is absent and would throw.
  return facade as unknown as D1Database;
}

/** A backfill's reach into a node:sqlite database, as npm run migrate's is into D1: reads, and writes of one transaction. */
export const backfillOver = (db: DatabaseSync): BackfillDatabase => ({
  rows: async <T>(statement: BackfillStatement) => db.prepare(statement.sql).all(...statement.params) as T[],
  write: async (statements: readonly BackfillStatement[]) => {
    db.exec("BEGIN");
    try {
      for (const statement of statements) db.prepare(statement.sql).run(...statement.params);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
  },
});
