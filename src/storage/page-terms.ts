import type { RecalledPageHit } from "../core/recall-rank";
import { searchForm } from "../core/search-text";
import { SEARCH_SNIPPET, snippetOf } from "../core/snippet";

/**
 * The word index of a store of memory pages, as both stores keep it: the agent's pages in the
 * control database (`memory_terms`, migrations/control/0019) and a conversation's extracted pages on
 * its shard (`conversation_memory_terms`, migrations/shard/0023). Each is a contentless FTS5 table
 * holding the terms of each live page's head (rowid: the page's id in its heads table), written in
 * the batch that writes the versions: core/search-text computes the terms once, here.
 *
 * A contentless table forgets what it indexed, so replacing a head's terms deletes the old ones by
 * value: the writer passes the previous head's content (the one it read, whose hash the statement
 * checks), and its terms are computed again by the same rules (for a store whose heads say which
 * rule their terms were written by, migrations/shard/0039, by that one). The heads table's `terms_version`
 * says which version's terms the index holds, and every statement here moves the index only from
 * the version the writer read to the one it wrote: a writer whose version insert lost a race finds
 * `terms_version` already moved and changes nothing, and a delete never names terms that were not
 * written (a page stored before the index existed has none until npm run migrate indexes it).
 *
 * However many pages one write moves, it is three statements (each page a row of one JSON
 * parameter): a write's cost in statements does not grow with its pages.
 */
export interface PageTermsStore {
  /** The FTS5 table. */
  readonly terms: string;
  /** The heads table (`id`, `path`, `version`, `terms_version`) and the versions table, keyed by `keyed` and `path`. */
  readonly heads: string;
  readonly versions: string;
  /** SQL: a head or version row `alias` is the one of the key parameters (?1…). */
  readonly keyed: (alias: string) => string;
  /** SQL: a hex content hash as the versions table stores it. */
  readonly storedHash: (hex: string) => string;
  /** SQL for a page's scope tokens, over the key parameters (?1…). */
  readonly scope: string;
  /**
   * Where a head says which rule its terms were written by (migrations/shard/0039: 1 the whole
   * text, 2 `termsText`'s words), and SQL for the rule a write uses now; absent: every head's
   * terms are the whole text's.
   */
  readonly rules?: { readonly column: string; readonly now: string; readonly termsText: (content: string) => string };
}

/** A text's terms by each rule a store may use: 1 the whole text, 2 `termsText` of it (undefined: no text). */
function termsByRule(store: PageTermsStore, content: string | undefined) {
  if (content === undefined) return { 1: undefined, 2: undefined };
  return { 1: searchForm(content), 2: store.rules === undefined ? undefined : searchForm(store.rules.termsText(content)) };
}

/** The head a new version follows: its number, its content (undefined: a tombstone, which has no terms) and hash. */
export interface PreviousHead {
  readonly version: number;
  readonly content: string | undefined;
  readonly contentHash: string;
}

/** One page a write moves: the version it inserts (its number, content hash and content; undefined content: a tombstone) over `previous` (undefined: none). */
export interface PageMove {
  readonly path: string;
  readonly version: number;
  readonly contentHash: string;
  readonly content: string | undefined;
  readonly previous: PreviousHead | undefined;
}

/**
 * The statements that move each page's terms to its new version, to run after the versions'
 * insert in its batch (`key`: the store's key values, bound first): the previous heads' terms
 * deleted (where the index holds them), the new contents' inserted, `terms_version` moved. Each
 * page's rows are written only if the batch wrote its version and the index still holds its
 * `previous` terms (or none).
 */
export function pageTermStatements(db: D1Database, store: PageTermsStore, key: readonly string[], moves: readonly PageMove[]): D1PreparedStatement[] {
  if (moves.length === 0) return [];
  const n = key.length;
  const { keyed } = store;
  const rows = JSON.stringify(
    moves.map((m) => {
      const next = termsByRule(store, m.content);
      const old = termsByRule(store, m.previous?.content);
      return {
        path: m.path,
        version: m.version,
        hash: m.contentHash,
        prev: m.previous?.version ?? 0,
        prevHash: m.previous?.contentHash ?? null,
        text: next[1]?.text ?? null,
        grams: next[1]?.grams ?? null,
        oldText: old[1]?.text ?? null,
        oldGrams: old[1]?.grams ?? null,
        ...(store.rules === undefined ? {} : { text2: next[2]?.text ?? null, grams2: next[2]?.grams ?? null, oldText2: old[2]?.text ?? null, oldGrams2: old[2]?.grams ?? null }),
      };
    }),
  );
  const field = (name: string) => `json_extract(j.value, '$.${name}')`;
  // The terms a head holds (by its rule) and the ones a write gives it (by the store's rule now).
  const { rules } = store;
  const held = (name: "oldText" | "oldGrams") => (rules === undefined ? field(name) : `CASE WHEN p.${rules.column} = 2 THEN ${field(`${name}2`)} ELSE ${field(name)} END`);
  const given = (name: "text" | "grams") => (rules === undefined ? field(name) : `CASE WHEN (${rules.now}) = 2 THEN ${field(`${name}2`)} ELSE ${field(name)} END`);
  const ruled = rules === undefined ? "" : `, ${rules.column} = (${rules.now})`;
  const head = `${store.heads} p ON ${keyed("p")} AND p.path = ${field("path")}`;
  const version = (alias: string, number: string, hash: string) =>
    `EXISTS (SELECT 1 FROM ${store.versions} ${alias} WHERE ${keyed(alias)} AND ${alias}.path = ${field("path")} AND ${alias}.version = ${number} AND ${alias}.content_hash = ${store.storedHash(hash)})`;
  const ours = version("v", field("version"), field("hash"));
  const replaceable = `(p.terms_version IS NULL OR p.terms_version = ${field("prev")})`;
  const bind = (statement: string) => db.prepare(statement).bind(...key, rows);
  const json = `json_each(?${n + 1}) j`;
  return [
    bind(
      `INSERT INTO ${store.terms} (${store.terms}, rowid, scope, path, content, grams)
       SELECT 'delete', p.id, ${store.scope}, p.path, ${held("oldText")}, ${held("oldGrams")} FROM ${json} JOIN ${head}
       WHERE ${field("oldText")} IS NOT NULL AND p.terms_version = ${field("prev")} AND ${ours} AND ${version("o", field("prev"), field("prevHash"))}`,
    ),
    bind(
      `INSERT INTO ${store.terms} (rowid, scope, path, content, grams)
       SELECT p.id, ${store.scope}, p.path, ${given("text")}, ${given("grams")} FROM ${json} JOIN ${head}
       WHERE ${field("text")} IS NOT NULL AND p.version = ${field("version")} AND ${replaceable} AND ${ours}`,
    ),
    bind(
      `UPDATE ${store.heads} AS p SET terms_version = ${field("version")}${ruled} FROM ${json}
       WHERE ${keyed("p")} AND p.path = ${field("path")} AND p.version = ${field("version")} AND ${replaceable} AND ${ours}`,
    ),
  ];
}

/** A page row a search read (its bm25 `rank` from the index). */
export interface PageHitRow {
  readonly path: string;
  readonly version: number;
  readonly content_hash: string;
  readonly content: string;
  readonly rank: number;
}

/** A search's hit for `row`, its snippet cut from the content for the search's `terms` (the index holds no text to cut it from). */
export const pageHit = (row: PageHitRow, terms: readonly string[]): RecalledPageHit => ({
  type: "page" as const,
  path: row.path,
  version: row.version,
  contentHash: row.content_hash,
  content: row.content,
  snippet: snippetOf(row.content, terms, SEARCH_SNIPPET),
  rank: row.rank,
});
