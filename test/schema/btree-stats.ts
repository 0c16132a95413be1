import type { DatabaseSync } from "node:sqlite";

/**
 * The b-trees of the tables `tables` names (each table and its indexes), read with SQLite's own page
 * statistics (`dbstat`): their bytes, and the entries they hold, each one a row written. A rowid
 * table's interior cells only separate its leaves; an index's (and a WITHOUT ROWID table's) are
 * entries too.
 */
export function btreeStats(db: DatabaseSync, tables: readonly string[]): { bytes: number; entries: number } {
  const row = db
    .prepare(
      `SELECT COALESCE(SUM(d.pgsize), 0) AS bytes,
         COALESCE(SUM(CASE WHEN d.pagetype = 'leaf' OR s.type = 'index' OR s.sql LIKE '%WITHOUT ROWID%' THEN d.ncell ELSE 0 END), 0) AS entries
       FROM dbstat d JOIN sqlite_schema s ON s.name = d.name
       WHERE s.tbl_name IN (SELECT value FROM json_each(?))`,
    )
    .get(JSON.stringify(tables)) as { bytes: number; entries: number };
  return { bytes: Number(row.bytes), entries: Number(row.entries) };
}
