// The step of `npm run migrate` (and `npm start`) that no migration file can take: moving the rows
// of the tables migrations/shard/0027 and 0028 replaced, and writing the word indexes of data
// stored before migrations/shard/0023 and control/0019, whose terms only src/core/search-text.ts
// computes. The backfill itself is src/storage/search-backfill.ts (bundled
// here with esbuild, so this script runs the very code the tests run); this module runs its
// statements through wrangler on one binding, a batch per transaction, each batch recording its
// progress, so it can stop anywhere and start again. A database with nothing to index costs one query.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { d1Rows, d1Run, sqlLiteral } from "./d1-query.mjs";
import { ROOT } from "./local-state.mjs";

/** Whether a database has anything left to index (one row, `n` > 0 when it has). */
const PENDING = {
  shard: `SELECT (SELECT count(*) FROM search_backfill WHERE done_seq < through_seq)
            + EXISTS (SELECT 1 FROM events WHERE rowid > (SELECT through_rowid FROM log_copy WHERE id = 1))
            + EXISTS (SELECT 1 FROM turn_index_v1)
            + EXISTS (SELECT 1 FROM conversation_memory_pages p JOIN conversation_memory_versions v ON v.conversation_id = p.conversation_id AND v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version WHERE p.terms_version IS NULL AND v.deleted = 0)
            + EXISTS (SELECT 1 FROM conversation_memory_provenance_v1) AS n`,
  control: `SELECT EXISTS (SELECT 1 FROM memory_pages p JOIN memory_page_versions v ON v.agent_id = p.agent_id AND v.path = p.path AND v.version = p.version WHERE p.terms_version IS NULL AND v.deleted = 0) AS n`,
};

/** @type {Promise<typeof import("../../src/storage/search-backfill.ts")> | undefined} */
let loaded;

/** src/storage/search-backfill.ts and what it imports, bundled once per process. */
function backfillModule() {
  loaded ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "foldline-backfill-"));
    try {
      const file = join(dir, "search-backfill.mjs");
      await build({ entryPoints: [join(ROOT, "src", "storage", "search-backfill.ts")], bundle: true, platform: "node", format: "esm", outfile: file, logLevel: "silent" });
      return await import(pathToFileURL(file).href);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  })();
  return loaded;
}

/**
 * `statement` with its numbered parameters written as literals (`wrangler d1 execute` binds none).
 * The project's own SQL holds `?` only as parameters; one inside a string literal is refused.
 * @param {{ sql: string, params: readonly (string | number | null)[] }} statement
 */
export function inline({ sql, params }) {
  let out = "";
  let quoted = false;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'") quoted = !quoted;
    if (c !== "?" || quoted) {
      if (c === "?" && quoted) throw new Error(`a ? inside a string literal of ${sql.slice(0, 80)}…`);
      out += c;
      continue;
    }
    const digits = /^\d+/.exec(sql.slice(i + 1))?.[0];
    if (digits === undefined) throw new Error(`an unnumbered parameter in ${sql.slice(0, 80)}…`);
    const index = Number(digits) - 1;
    if (index < 0 || index >= params.length) throw new Error(`parameter ?${digits} has no value in ${sql.slice(0, 80)}…`);
    out += sqlLiteral(params[index]);
    i += digits.length;
  }
  return out;
}

/**
 * Indexes what `binding` (the control database `DB`, or a shard) held before the word indexes.
 * @param {string} binding @param {readonly string[]} where wrangler's flags (`--local`, `--remote`, `--persist-to DIR`…)
 * @param {(line: string) => void} log
 */
export async function backfillSearch(binding, where, log) {
  const kind = binding === "DB" ? "control" : "shard";
  const [pending] = d1Rows(binding, where, PENDING[kind]);
  if (Number(pending?.n ?? 0) === 0) return;
  const { runBackfill } = await backfillModule();
  log(`${binding}: moving and indexing what it held before its current tables and word indexes (a batch at a time; safe to stop and run again)`);
  const done = await runBackfill(
    {
      rows: async (statement) => d1Rows(binding, where, inline(statement)),
      write: async (statements) => d1Run(binding, where, statements.map(inline)),
    },
    kind,
    (/** @type {{ logThroughId: number, events: number, turnsThroughId: number, pages: number, sourcesThroughId: number }} */ p) =>
      log(`  ${binding}: log copied through id ${p.logThroughId}, ${p.events} events, turns moved through id ${p.turnsThroughId}, ${p.pages} pages, memory sources moved through id ${p.sourcesThroughId}`),
  );
  log(
    `${binding}: indexed ${done.events} events and ${done.pages} pages${done.logThroughId > 0 ? `; copied the log through id ${done.logThroughId}` : ""}${done.turnsThroughId > 0 ? `; moved the turn index through id ${done.turnsThroughId}` : ""}${done.sourcesThroughId > 0 ? `; moved memory sources through id ${done.sourcesThroughId}` : ""}`,
  );
}

/**
 * The last step of the log's move (migrations/shard/0031), of its high-water mark's (0032), of its
 * short spelling's (0033), of the turns read from it (0034), of extracted pages packed (0037) and of
 * long texts kept apart (0038) and of pages indexed by their facts' words (0039), for a shard whose
 * Worker reads `log`, writes the mark once an append, reads the log spelled short, reads a turn's
 * origin from the log, unpacks extracted pages, reads a text kept apart and deletes a page's terms
 * by their rule: the rows copied from `events` leave it, the mark is no longer written once a row,
 * sources and skipped runs are spelled short, a source no longer writes its turn's fold, extracted
 * pages' versions are written packed, long texts leave the log's rows, and pages are indexed by
 * their facts' words. A
 * control database, or a shard released already, costs one query.
 * @param {string} binding @param {readonly string[]} where @param {(line: string) => void} log
 */
export async function releaseLog(binding, where, log) {
  if (binding === "DB") return;
  const [pending] = d1Rows(binding, where, "SELECT EXISTS (SELECT 1 FROM events) OR (SELECT per_append FROM high_water_mode WHERE id = 1) = 0 OR (SELECT short FROM log_spelling WHERE id = 1) = 0 OR (SELECT sparse FROM turn_rows WHERE id = 1) = 0 OR (SELECT packed FROM page_packing WHERE id = 1) = 0 OR (SELECT apart FROM log_texts_mode WHERE id = 1) = 0 OR (SELECT rule FROM page_terms_mode WHERE id = 1) = 1 OR EXISTS (SELECT 1 FROM extracted_pages p JOIN extracted_versions v ON v.conversation_key = p.conversation_key AND v.agent_key = p.agent_key AND v.path = p.path AND v.version = p.version WHERE p.terms_rule = 1 AND p.terms_version = p.version AND v.deleted = 0) AS n");
  if (Number(pending?.n ?? 0) === 0) return;
  const { releaseLog: release } = await backfillModule();
  const batches = await release({
    rows: async (statement) => d1Rows(binding, where, inline(statement)),
    write: async (statements) => d1Run(binding, where, statements.map(inline)),
  });
  log(`${binding}: the log's rows stored before migration 0031 left \`events\` (${batches} batch(es)); its high-water mark is written once an append (0032); sources and skipped runs are spelled short (0033); a turn's origin is read from the log (0034); extracted pages are written packed (0037); long texts are kept apart from the log's rows (0038); extracted pages are indexed by their facts' words, those indexed by their whole text before it re-indexed (0039)`);
}
