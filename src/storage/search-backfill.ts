import { pageTermsText } from "../core/fact-merge";
import { bytesOfHex } from "../core/hex";
import { searchForm } from "../core/search-text";
import { eventTerms } from "../core/turn-terms";
import type { Statement } from "./shard/turn-terms";
import { authorTermsRow, folded, termsRow } from "./shard/turn-terms";
import type { EventRow } from "./shard/events";
import { eventColumns, IN_LOG, toStoredEvent } from "./shard/events";
import { PAGE_TERMS_RULE, versionText } from "./shard/extracted-keys";
import type { PageTermsStore } from "./page-terms";
import type { TableMove } from "./shard/table-moves";
import { EXTRACTED_PAGES_MOVE, EXTRACTED_SOURCES_MOVE, EXTRACTED_VERSIONS_MOVE, LOG_COPY, LOG_RELEASE, SOURCES_MOVE, TURNS_MOVE } from "./shard/table-moves";

/**
 * The word indexes of data stored before they existed (migrations/shard/0023, control/0019),
 * written by npm run migrate (scripts/lib/search-backfill.mjs) a batch at a time, each batch one
 * transaction that records how far it got: the events of each conversation `search_backfill` lists
 * (those it held when the migration ran; later events were indexed as they were appended), the
 * pages whose heads the index does not hold yet (`terms_version` NULL). On a shard it first moves
 * the rows of the tables migrations replaced to the ones that keep them now (storage/shard/table-moves:
 * the turn index, 0028, whose old rows also held texts no longer read, and the sources of extracted
 * memory, 0027). Every statement here is a read, or a write guarded by the progress it
 * continues from, so a batch that runs twice, or beside another run, writes nothing twice.
 *
 * Statements are SQL with numbered parameters (`Statement`): the script writes them as literals
 * for `wrangler d1 execute`, a test binds them. Texts are never literals: each row's text is read
 * from its own row by the statement (and folded there by `folded`), so a statement stays small.
 */

/** Events read per batch, and pages per batch. */
export const EVENTS_PER_BATCH = 500;
export const PAGES_PER_BATCH = 100;

/** The next conversation with events left to index. */
export const NEXT_CONVERSATION: Statement = {
  sql: "SELECT conversation_id, through_seq, done_seq FROM search_backfill WHERE done_seq < through_seq ORDER BY conversation_id LIMIT 1",
  params: [],
};

export interface BackfillConversation {
  readonly conversation_id: string;
  readonly through_seq: number;
  readonly done_seq: number;
}

/** The conversation's next events that may carry a text, after `done_seq`. */
export const eventsPage = (c: BackfillConversation): Statement => ({
  sql: `SELECT ${eventColumns()} FROM log
        WHERE ${IN_LOG} AND seq > ?2 AND seq <= ?3 AND kind IN ('source', 'proposal', 'correction') ORDER BY seq LIMIT ?4`,
  params: [c.conversation_id, c.done_seq, c.through_seq, EVENTS_PER_BATCH],
});

/**
 * One batch of a conversation's events: their rows of terms, the count the conversation's bm25
 * reads, and the progress, each only if the progress is still `done_seq` (?5).
 */
export function eventsStep(c: BackfillConversation, rows: readonly EventRow[]): Statement[] {
  const guard = "EXISTS (SELECT 1 FROM search_backfill b WHERE b.conversation_id = ?1 AND b.done_seq = ?5)";
  const statements: Statement[] = [];
  let texts = 0;
  for (const row of rows) {
    const event = toStoredEvent(row);
    const terms = eventTerms(event);
    if (terms === undefined) continue;
    texts += 1;
    const insert = termsRow(c.conversation_id, row.seq, terms, guard);
    statements.push({ sql: insert.sql, params: [...insert.params, c.done_seq] });
    const author = authorTermsRow(c.conversation_id, row.seq, terms);
    if (author !== undefined) statements.push(author);
  }
  const done = rows.length < EVENTS_PER_BATCH ? c.through_seq : (rows.at(-1)?.seq ?? c.through_seq);
  statements.push(
    { sql: "UPDATE conversations SET texts = texts + ?2 WHERE id = ?1 AND EXISTS (SELECT 1 FROM search_backfill b WHERE b.conversation_id = ?1 AND b.done_seq = ?3)", params: [c.conversation_id, texts, c.done_seq] },
    { sql: "UPDATE search_backfill SET done_seq = ?3 WHERE conversation_id = ?1 AND done_seq = ?2", params: [c.conversation_id, c.done_seq, done] },
  );
  return statements;
}

/**
 * Where a store keeps its pages: the heads, the versions, the index, a page's key columns and its
 * scope tokens (over the key columns of `p`); and, over a version `v`, its packed text in hex and its
 * hash as lowercase hex (the shard's versions may be packed, migrations/shard/0037; the control
 * database's never are).
 */
export interface PageStore {
  readonly heads: string;
  readonly versions: string;
  readonly terms: string;
  readonly keys: readonly string[];
  readonly scope: string;
  readonly packed: string;
  readonly hash: string;
  /** Where a head says the rule its terms were written by, and the rule now (migrations/shard/0039); absent: the whole text's terms. */
  readonly rules?: PageTermsStore["rules"];
}

export const CONTROL_PAGES: PageStore = {
  heads: "memory_pages",
  versions: "memory_page_versions",
  terms: "memory_terms",
  keys: ["agent_id"],
  scope: "('a' || (SELECT id FROM agent_keys WHERE agent_id = p.agent_id))",
  packed: "NULL",
  hash: "v.content_hash",
};

export const SHARD_PAGES: PageStore = {
  heads: "extracted_pages",
  versions: "extracted_versions",
  terms: "conversation_memory_terms",
  keys: ["conversation_key", "agent_key"],
  scope: "('k' || p.conversation_key || ' a' || p.agent_key)",
  packed: "CASE WHEN v.packed IS NOT NULL THEN hex(v.packed) END",
  hash: "lower(hex(v.content_hash))",
  rules: { column: "terms_rule", now: PAGE_TERMS_RULE, termsText: pageTermsText },
};

const joinVersion = (store: PageStore): string => `JOIN ${store.versions} v ON ${store.keys.map((c) => `v.${c} = p.${c}`).join(" AND ")} AND v.path = p.path AND v.version = p.version`;

/** The next live heads after `afterId` whose terms the index does not hold. */
export const pagesAfter = (store: PageStore, afterId: number): Statement => ({
  sql: `SELECT p.id AS id, p.version AS version, v.content AS content, ${store.packed} AS packed, ${store.hash} AS content_hash FROM ${store.heads} p ${joinVersion(store)}
        WHERE p.id > ?1 AND p.terms_version IS NULL AND v.deleted = 0 ORDER BY p.id LIMIT ?2`,
  params: [afterId, PAGES_PER_BATCH],
});

export interface PageRow {
  id: number;
  version: number;
  content: string;
  /** The version's packed text in hex, or null: its text is `content`. */
  packed: string | null;
  content_hash: string;
}

/** A page row's text: its content, or its packed text (read as hex) unpacked and checked against its hash. */
const pageRowText = (row: PageRow): string => (row.packed === null ? row.content : versionText({ content: "", packed: bytesOfHex(row.packed), content_hash: row.content_hash }));

/** Each page's terms and `terms_version`, if its head is still the version read and still unindexed. */
export function pagesStep(store: PageStore, rows: readonly PageRow[]): Statement[] {
  return rows.flatMap((row) => {
    const current = "p.id = ?1 AND p.version = ?2 AND p.terms_version IS NULL";
    // A packed text is not readable in SQL: its folded form is bound, where a text's is folded by the statement.
    const text = pageRowText(row);
    const terms = searchForm(text);
    const params: (string | number)[] = [row.id, row.version, terms.grams];
    const whole = row.packed === null ? folded(`(SELECT v.content FROM ${store.heads} p ${joinVersion(store)} WHERE p.id = ?1)`, row.content) : `?${params.push(terms.text)}`;
    // By the store's rule now: the whole text's terms (1), or its facts' words' (2, bound).
    const { rules } = store;
    const facts = rules === undefined ? undefined : searchForm(rules.termsText(text));
    const [content, grams] =
      rules === undefined || facts === undefined
        ? [whole, "?3"]
        : [`CASE WHEN (${rules.now}) = 2 THEN ?${params.push(facts.text)} ELSE ${whole} END`, `CASE WHEN (${rules.now}) = 2 THEN ?${params.push(facts.grams)} ELSE ?3 END`];
    const ruled = rules === undefined ? "" : `, ${rules.column} = (${rules.now})`;
    return [
      { sql: `INSERT INTO ${store.terms} (rowid, scope, path, content, grams) SELECT p.id, ${store.scope}, p.path, ${content}, ${grams} FROM ${store.heads} p WHERE ${current}`, params },
      { sql: `UPDATE ${store.heads} AS p SET terms_version = ?2${ruled} WHERE ${current}`, params: [row.id, row.version] },
    ];
  });
}

/**
 * The next live heads after `afterId` still indexed by their whole text (`terms_rule` 1) once pages
 * are indexed by their facts' words (rule 2, from 0039's release): the heads a shard held before the
 * release, which kept those terms until their page was written again.
 */
export const wholeTermsAfter = (afterId: number): Statement => ({
  sql: `SELECT p.id AS id, p.version AS version, v.content AS content, ${SHARD_PAGES.packed} AS packed, ${SHARD_PAGES.hash} AS content_hash
        FROM extracted_pages p ${joinVersion(SHARD_PAGES)}
        WHERE p.id > ?1 AND p.terms_rule = 1 AND p.terms_version = p.version AND v.deleted = 0 AND (${PAGE_TERMS_RULE}) = 2 ORDER BY p.id LIMIT ?2`,
  params: [afterId, PAGES_PER_BATCH],
});

/**
 * Each head's terms moved from its whole text's to its facts' words', if it is still the version
 * read and still indexed by its whole text: a page written again since the read (its terms deleted
 * and written by the writer, by their rule) is left as the writer left it.
 */
export function wholeTermsStep(rows: readonly PageRow[]): Statement[] {
  return rows.flatMap((row) => {
    const current = "p.id = ?1 AND p.version = ?2 AND p.terms_version = ?2 AND p.terms_rule = 1";
    const text = pageRowText(row);
    const whole = searchForm(text);
    const facts = searchForm(pageTermsText(text));
    const { terms, heads, scope } = SHARD_PAGES;
    return [
      // A contentless index deletes a row by the terms it was written with: the whole text's, as every writer of rule 1 wrote them.
      { sql: `INSERT INTO ${terms} (${terms}, rowid, scope, path, content, grams) SELECT 'delete', p.id, ${scope}, p.path, ?3, ?4 FROM ${heads} p WHERE ${current}`, params: [row.id, row.version, whole.text, whole.grams] },
      { sql: `INSERT INTO ${terms} (rowid, scope, path, content, grams) SELECT p.id, ${scope}, p.path, ?3, ?4 FROM ${heads} p WHERE ${current}`, params: [row.id, row.version, facts.text, facts.grams] },
      { sql: `UPDATE ${heads} AS p SET terms_rule = 2 WHERE ${current}`, params: [row.id, row.version] },
    ];
  });
}

/** How a backfill reaches one database: a read of rows, and a write of statements in one transaction. */
export interface BackfillDatabase {
  rows<T>(statement: Statement): Promise<T[]>;
  write(statements: readonly Statement[]): Promise<void>;
}

export interface BackfillProgress {
  /** Rows of `events` copied to `log` (migrations/shard/0031), through this rowid (0: none). */
  readonly logThroughId: number;
  /** Events read (those that may carry a text). */
  readonly events: number;
  /** Rows of `turn_index_v1` moved to `turns` (migrations/shard/0028), through this rowid (0: none). */
  readonly turnsThroughId: number;
  /** Pages indexed. */
  readonly pages: number;
  /** Rows of `conversation_memory_provenance_v1` moved to `conversation_memory_sources` (migrations/shard/0027), through this rowid (0: none). */
  readonly sourcesThroughId: number;
  /** Rows of `conversation_memory_pages_v1` and `conversation_memory_versions_v1` moved to `extracted_pages` and `extracted_versions` (migrations/shard/0035), through these rowids (0: none). */
  readonly extractedPagesThroughId: number;
  readonly extractedVersionsThroughId: number;
  /** Batches of `conversation_memory_sources_v1` moved to `extracted_sources` (migrations/shard/0036; a keyed table, moved in key order). */
  readonly extractedSourcesBatches: number;
}

/**
 * Moves what a shard's replaced tables still hold and indexes everything it held before
 * migrations/shard/0023 (`"shard"`), or the pages the control database held before control/0019
 * (`"control"`), a batch at a time; returns what it wrote. The log is copied first (the events'
 * backfill reads it), then the turn index moves (the events' backfill writes to it).
 * Safe to stop at any point and run again: each batch continues from the progress the last one
 * recorded. `onBatch` hears of each batch (a script prints it).
 */
export async function runBackfill(db: BackfillDatabase, kind: "shard" | "control", onBatch: (progress: BackfillProgress) => void = () => {}): Promise<BackfillProgress> {
  let progress: BackfillProgress = { logThroughId: 0, events: 0, turnsThroughId: 0, pages: 0, sourcesThroughId: 0, extractedPagesThroughId: 0, extractedSourcesBatches: 0, extractedVersionsThroughId: 0 };
  const report = (next: BackfillProgress) => {
    progress = next;
    onBatch(progress);
  };
  if (kind === "shard") {
    await move(db, LOG_COPY, (throughId) => report({ ...progress, logThroughId: throughId }));
    await move(db, TURNS_MOVE, (throughId) => report({ ...progress, turnsThroughId: throughId }));
    // Heads before sources: a source is keyed by its head's id since 0036.
    await move(db, EXTRACTED_PAGES_MOVE, (throughId) => report({ ...progress, extractedPagesThroughId: throughId }));
    await move(db, SOURCES_MOVE, (throughId) => report({ ...progress, sourcesThroughId: throughId }));
    await move(db, EXTRACTED_SOURCES_MOVE, () => report({ ...progress, extractedSourcesBatches: progress.extractedSourcesBatches + 1 }));
    await move(db, EXTRACTED_VERSIONS_MOVE, (throughId) => report({ ...progress, extractedVersionsThroughId: throughId }));
    for (;;) {
      const [conversation] = await db.rows<BackfillConversation>(NEXT_CONVERSATION);
      if (conversation === undefined) break;
      const rows = await db.rows<EventRow>(eventsPage(conversation));
      await db.write(eventsStep(conversation, rows));
      report({ ...progress, events: progress.events + rows.length });
    }
  }
  const store = kind === "shard" ? SHARD_PAGES : CONTROL_PAGES;
  for (let after = 0; ; ) {
    const pages = await db.rows<PageRow>(pagesAfter(store, after));
    if (pages.length === 0) break;
    await db.write(pagesStep(store, pages));
    report({ ...progress, pages: progress.pages + pages.length });
    after = pages.at(-1)?.id ?? after;
  }
  return progress;
}

/** Moves every row the old table of `table` holds, a batch per transaction; `onBatch` hears the rowid each batch reached. */
async function move(db: BackfillDatabase, table: TableMove, onBatch: (throughId: number) => void): Promise<void> {
  for (let oldest = await db.rows<{ id: number }>(table.oldest); oldest[0] !== undefined; oldest = await db.rows<{ id: number }>(table.oldest)) {
    await db.write(table.batch(oldest[0].id));
    onBatch(oldest[0].id + table.perBatch - 1);
  }
}

/** The high-water mark written once an append from now on (migrations/shard/0032), sources and skipped runs spelled short (0033), and a turn's fold written only once an event comes back to it (0034). */
const PER_APPEND = { sql: "UPDATE high_water_mode SET per_append = 1 WHERE id = 1 AND per_append = 0", params: [] } as const;
const SPELLED_SHORT = { sql: "UPDATE log_spelling SET short = 1 WHERE id = 1 AND short = 0", params: [] } as const;
const TURNS_SPARSE = { sql: "UPDATE turn_rows SET sparse = 1 WHERE id = 1 AND sparse = 0", params: [] } as const;
/** Extracted pages' versions written packed from now on (0037). */
const PAGES_PACKED = { sql: "UPDATE page_packing SET packed = 1 WHERE id = 1 AND packed = 0", params: [] } as const;
/** Long texts kept apart from the log's rows from now on (0038). */
const TEXTS_APART = { sql: "UPDATE log_texts_mode SET apart = 1 WHERE id = 1 AND apart = 0", params: [] } as const;
/** Extracted pages indexed by their facts' words from now on (0039). */
const FACT_TERMS = { sql: "UPDATE page_terms_mode SET rule = 2 WHERE id = 1 AND rule = 1", params: [] } as const;

/**
 * The last step of migrations/shard/0031 to 0034 and 0037 to 0039, once the Worker that reads
 * `log`, writes its high-water mark once an append, reads the log spelled short, reads a turn's
 * origin from the log, unpacks extracted pages, reads a text kept apart and deletes a page's terms
 * by their rule is live: copies what a Worker before it appended since the copy ran, lets every
 * copied row leave `events`, a batch per transaction, then has the mark written once an append
 * (`high_water_mode`), sources and skipped runs spelled short (`log_spelling`), a source's fold
 * written only once an event comes back to it (`turn_rows`), extracted pages' versions written
 * packed (`page_packing`), long texts kept apart from the log's rows (`log_texts_mode`) and pages
 * indexed by their facts' words (`page_terms_mode`); last, re-indexes by their facts' words the
 * heads still indexed by their whole text, a batch at a time (`wholeTermsAfter`). Returns how many
 * batches it deleted.
 */
export async function releaseLog(db: BackfillDatabase): Promise<number> {
  await move(db, LOG_COPY, () => {});
  let batches = 0;
  await move(db, LOG_RELEASE, () => (batches += 1));
  await db.write([PER_APPEND, SPELLED_SHORT, TURNS_SPARSE, PAGES_PACKED, TEXTS_APART, FACT_TERMS]);
  for (let after = 0; ; ) {
    const heads = await db.rows<PageRow>(wholeTermsAfter(after));
    if (heads.length === 0) break;
    await db.write(wholeTermsStep(heads));
    after = heads.at(-1)?.id ?? after;
  }
  return batches;
}

