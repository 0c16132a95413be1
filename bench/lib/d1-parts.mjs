// Where a local D1's bytes are, by what keeps them: read with SQLite's `dbstat` from the files
// `wrangler dev --persist-to` leaves (every database but miniflare's own metadata), after the
// Worker stopped. Pages are counted whole (a page's unused room is its table's), so the parts add
// up to the databases' pages in use.

import { readdirSync } from "node:fs";
import { join } from "node:path";

/** The part each table belongs to; an index or an FTS5 shadow table counts with its table. */
const PARTS = /** @type {const} */ ([
  ["log", /^(log|log_copy|events)$/],
  ["turn index", /^(turn_index|turn_index_v1|turns|turn_terms)$/],
  ["memory", /^(conversation_memory_\w+|extracted_\w+|extraction_runs|memory_\w+)$/],
  ["chain", /^(boundaries|compaction_plans|activations)$/],
]);

/** The table an FTS5 shadow table belongs to (any other table is its own). @param {string} table */
const baseOf = (table) => table.replace(/_(data|idx|docsize|config|content|vocab)$/, "");

/** @param {string} table */
function partOf(table) {
  const base = baseOf(table);
  return PARTS.find(([, pattern]) => pattern.test(base))?.[0] ?? "other";
}

/** The files of every local D1 database under `persistDir` (miniflare's own metadata left out). @param {string} persistDir */
export function localD1Files(persistDir) {
  const dir = join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")
    .map((f) => join(dir, f));
}

/** Whether database `db` has a table `name`. @param {import("node:sqlite").DatabaseSync} db @param {string} name */
export const hasTable = (db, name) => db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(name) !== undefined;

/**
 * Bytes of every database under `persistDir` by part and by table (an index and an FTS5 shadow table
 * counted with their table), and the UTF-8 bytes of the text the log holds (sources', edits' and
 * replies' `text`): the floor any store of this conversation has to keep.
 * @param {string} persistDir
 * @returns {Promise<{ parts: Record<string, number>, tables: Record<string, number>, total: number, textBytes: number }>}
 */
export async function d1BytesByPart(persistDir) {
  const { DatabaseSync } = await import("node:sqlite");
  /** @type {Record<string, number>} */
  const parts = { log: 0, "turn index": 0, memory: 0, chain: 0, other: 0 };
  /** @type {Record<string, number>} */
  const tables = {};
  let textBytes = 0;
  for (const file of localD1Files(persistDir)) {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const rows = /** @type {{ table: string, bytes: number }[]} */ (
        db.prepare("SELECT COALESCE(s.tbl_name, d.name) AS \"table\", SUM(d.pgsize) AS bytes FROM dbstat d LEFT JOIN sqlite_schema s ON s.name = d.name GROUP BY 1").all()
      );
      for (const { table, bytes } of rows) {
        parts[partOf(table)] = (parts[partOf(table)] ?? 0) + bytes;
        const base = baseOf(table);
        tables[base] = (tables[base] ?? 0) + bytes;
      }
      // The log is `log` (migrations/shard/0031); before it, `events`.
      const logTable = ["log", "events"].find((name) => hasTable(db, name));
      if (logTable !== undefined) {
        const text = /** @type {{ bytes: number | null }} */ (
          db.prepare(`SELECT SUM(length(CAST(json_extract(body, '$.text') AS BLOB))) AS bytes FROM ${logTable} WHERE kind IN ('source', 'proposal', 'correction') AND json_type(body, '$.text') = 'text'`).get()
        );
        textBytes += text.bytes ?? 0;
        // A long text kept beside its row (migrations/shard/0038; its row's text is the number 0).
        if (hasTable(db, "log_texts")) {
          const apart = /** @type {{ bytes: number | null }} */ (db.prepare("SELECT SUM(length(CAST(json_extract(text, '$') AS BLOB))) AS bytes FROM log_texts").get());
          textBytes += apart.bytes ?? 0;
        }
      }
    } finally {
      db.close();
    }
  }
  return { parts, tables, total: Object.values(parts).reduce((a, b) => a + b, 0), textBytes };
}
