import { searchForm } from "../../src/core/search-text";
import { conversationKey } from "../../src/storage/shard/keys";
import { placedTurns } from "./placed-turns";

/** The key of the conversation bound as ?1. */
const KEY = conversationKey("?1");

/**
 * What the contentless word indexes hold, read back through their fts5vocab views
 * (migrations/shard/0023, control/0019): each row's terms, column by column, in position order.
 * The tests compare them with what core/search-text computes for the text they index.
 */

export type RowTerms = Record<string, string[]>;

interface Instance {
  doc: number;
  col: string;
  term: string;
  offset: number;
}

/**
 * The terms of each row of `vocab` (an fts5vocab 'instance' view of `<table>_vocab`) whose rowid
 * `rowids` (SQL over ?1) selects, by rowid; a row that holds no term (an empty text) is there, empty.
 */
export async function termsByRow(db: D1Database, vocab: string, rowids: string, param: string): Promise<Map<number, RowTerms>> {
  const table = vocab.replace(/_vocab$/, "");
  const [held, instances] = await db.batch<{ rowid: number } | Instance>([
    db.prepare(`SELECT rowid FROM ${table} WHERE rowid IN (${rowids})`).bind(param),
    db.prepare(`SELECT doc, col, term, "offset" FROM ${vocab} WHERE doc IN (${rowids}) ORDER BY doc, col, "offset"`).bind(param),
  ]);
  const rows = new Map<number, RowTerms>(((held?.results ?? []) as { rowid: number }[]).map((r) => [r.rowid, {}]));
  const results = (instances?.results ?? []) as Instance[];
  for (const r of results) {
    const row = rows.get(r.doc) ?? {};
    (row[r.col] ??= []).push(r.term);
    rows.set(r.doc, row);
  }
  return rows;
}

let references = 0;

/**
 * The terms of these columns' values as the index's own tokenizer makes them (FTS5's, not a copy of
 * its rules): the values are written to a scratch FTS5 table of the same tokenizer and read back.
 */
export async function expectedTerms(db: D1Database, columns: Record<string, string>): Promise<RowTerms> {
  const names = Object.keys(columns);
  const table = `reference_terms_${++references}_${Date.now().toString(36)}`;
  await db.batch([
    db.prepare(`CREATE VIRTUAL TABLE ${table} USING fts5(${names.join(", ")}, tokenize = 'porter unicode61 remove_diacritics 2')`),
    db.prepare(`CREATE VIRTUAL TABLE ${table}_vocab USING fts5vocab(${table}, 'instance')`),
    db.prepare(`INSERT INTO ${table} (rowid, ${names.join(", ")}) VALUES (1, ${names.map(() => "?").join(", ")})`).bind(...Object.values(columns)),
  ]);
  const terms = (await termsByRow(db, `${table}_vocab`, "SELECT CAST(?1 AS INTEGER)", "1")).get(1) ?? {};
  await db.batch([db.prepare(`DROP TABLE ${table}_vocab`), db.prepare(`DROP TABLE ${table}`)]);
  return terms;
}

/** A text's indexed columns: its folded words and its grams. */
export function textColumns(text: string): { text: string; grams: string } {
  return searchForm(text);
}

/** The agent's live pages in the control database's index: path → the terms of its row. */
export async function agentPageTerms(db: D1Database, agentId: string): Promise<Map<string, RowTerms>> {
  const byId = await termsByRow(db, "memory_terms_vocab", "SELECT id FROM memory_pages WHERE agent_id = ?1", agentId);
  const { results } = await db.prepare("SELECT id, path FROM memory_pages WHERE agent_id = ?").bind(agentId).all<{ id: number; path: string }>();
  return new Map(results.flatMap((p) => (byId.has(p.id) ? [[p.path, byId.get(p.id) ?? {}] as const] : [])));
}

/** A live turn of a conversation as the turn index serves it: its current text, and whether the index holds that text's row. */
export interface IndexedTurn {
  message_id: string;
  role: string;
  text: string;
}

/**
 * The conversation's live turns whose current text has its row in `turn_terms`, by message id,
 * each row's terms checked against core/search-text (a mismatch throws, naming the turn).
 */
export async function indexedTurns(db: D1Database, conversationId: string): Promise<IndexedTurn[]> {
  const { results } = await db
    .prepare(
      `SELECT t.message_id AS message_id, t.role AS role, json_extract(e.body, '$.text') AS text, COALESCE(t.edit_seq, t.seq) AS text_seq,
              COALESCE(t.author_name, t.author_id, '') AS author, t.edit_seq IS NOT NULL AND t.edit_seq < t.seq AS early
       FROM (${placedTurns(KEY)}) t JOIN log e ON e.conversation_key = ${KEY} AND e.seq = COALESCE(t.edit_seq, t.seq)
       WHERE t.seq IS NOT NULL AND t.deleted = 0 AND (t.role = 'user' OR t.delivered = 1)
       ORDER BY t.message_id`,
    )
    .bind(conversationId)
    .all<IndexedTurn & { text_seq: number; author: string; early: number }>();
  const terms = await termsByRow(db, "turn_terms_vocab", `SELECT (${KEY} << 32) + COALESCE(edit_seq, seq) FROM (${placedTurns(KEY)}) WHERE seq IS NOT NULL`, conversationId);
  const { results: keys } = await db.prepare("SELECT id FROM conversation_keys WHERE conversation_id = ?").bind(conversationId).all<{ id: number }>();
  const base = (keys[0]?.id ?? 0) * 2 ** 32;
  const indexed: IndexedTurn[] = [];
  for (const turn of results) {
    const row = terms.get(base + turn.text_seq);
    if (row === undefined) continue;
    const { text, grams } = searchForm(turn.text);
    // An edit written before its message knew no author.
    const expected = await expectedTerms(db, { author: turn.early === 1 ? "" : searchForm(turn.author).text, text, grams });
    const held = row;
    if (JSON.stringify(held) !== JSON.stringify(expected)) throw new Error(`turn ${turn.message_id}: the index holds ${JSON.stringify(held)}, search-text computes ${JSON.stringify(expected)}`);
    indexed.push({ message_id: turn.message_id, role: turn.role, text: turn.text });
  }
  return indexed;
}
