import type { RecalledPageHit } from "../core/recall-rank";
import { searchForm } from "../core/search-text";
import { SEARCH_SNIPPET, snippetOf } from "../core/snippet";

/**
 * The word index of a store of memory pages, as both stores keep it: the agent's pages in the
 * control database (`memory_terms`, migrations/control/0019) and a conversation's extracted pages on
 * its shard (`conversation_memory_terms`, migrations/shard/0023). Each is a contentless FTS5 table
 * holding the terms of each live page's head (rowid: the page's id in its heads table), written in
 * the batch that writes the version: core/search-text computes the terms once, here.
 *
 * A contentless table forgets what it indexed, so replacing a head's terms deletes the old ones by
 * value: the writer passes the previous head's content (the one it read, whose hash the statement
 * checks), and its terms are computed again by the same rules. The heads table's `terms_version`
 * says which version's terms the index holds, and every statement here moves the index only from
 * the version the writer read to the one it wrote: a writer whose version insert lost a race finds
 * `terms_version` already moved and changes nothing, and a delete never names terms that were not
 * written (a page stored before the index existed has none until npm run migrate indexes it).
 */
export interface PageTermsStore {
  /** The FTS5 table. */
  readonly terms: string;
  /** The heads table (`id`, `path`, `version`, `terms_version`) and the key columns of a page in it and in its versions. */
  readonly heads: string;
  readonly versions: string;
  readonly keys: readonly string[];
  /** SQL for the page's scope tokens, over the key parameters (?1…). */
  readonly scope: string;
}

/** The page this store's statements address: its key values (bound ?1…) and path (bound last of them). */
export interface PageAt {
  readonly key: readonly string[];
  readonly path: string;
}

/** The version the write inserts: its number and content hash. */
export interface WrittenVersion {
  readonly version: number;
  readonly contentHash: string;
}

/** The head the new version follows: its number, its content (undefined: a tombstone, which has no terms) and hash. */
export interface PreviousHead {
  readonly version: number;
  readonly content: string | undefined;
  readonly contentHash: string;
}

/**
 * The statements that move the page's terms to `written`, to run after the version insert in its
 * batch: the previous head's terms deleted (when the index holds them), the new content's inserted
 * (`content` undefined: a tombstone, which has none), `terms_version` moved. Each runs only if the
 * batch wrote `written` and the index still holds `previous`'s terms (`previous` undefined: the
 * page's first version).
 */
export function pageTermStatements(db: D1Database, store: PageTermsStore, page: PageAt, written: WrittenVersion, content: string | undefined, previous: PreviousHead | undefined): D1PreparedStatement[] {
  const n = page.key.length;
  const keyed = store.keys.map((column, i) => `p.${column} = ?${i + 1}`).join(" AND ");
  const at = `${keyed} AND p.path = ?${n + 1}`;
  const ours = `EXISTS (SELECT 1 FROM ${store.versions} v WHERE ${store.keys.map((c, i) => `v.${c} = ?${i + 1}`).join(" AND ")} AND v.path = ?${n + 1} AND v.version = ?${n + 2} AND v.content_hash = ?${n + 3})`;
  const bind = [...page.key, page.path, written.version, written.contentHash];
  const statements: D1PreparedStatement[] = [];
  if (previous?.content !== undefined) {
    const form = searchForm(previous.content);
    statements.push(
      db
        .prepare(
          `INSERT INTO ${store.terms} (${store.terms}, rowid, scope, path, content, grams)
           SELECT 'delete', p.id, ${store.scope}, p.path, ?${n + 5}, ?${n + 6} FROM ${store.heads} p
           WHERE ${at} AND p.terms_version = ?${n + 4} AND ${ours}
             AND EXISTS (SELECT 1 FROM ${store.versions} o WHERE ${store.keys.map((c, i) => `o.${c} = ?${i + 1}`).join(" AND ")} AND o.path = ?${n + 1} AND o.version = ?${n + 4} AND o.content_hash = ?${n + 7})`,
        )
        .bind(...bind, previous.version, form.text, form.grams, previous.contentHash),
    );
  }
  // The terms are the new head's once the index holds no other version's (the previous one's were just deleted).
  const replaceable = `(p.terms_version IS NULL OR p.terms_version = ?${n + 4})`;
  if (content !== undefined) {
    const form = searchForm(content);
    statements.push(
      db
        .prepare(
          `INSERT INTO ${store.terms} (rowid, scope, path, content, grams)
           SELECT p.id, ${store.scope}, p.path, ?${n + 5}, ?${n + 6} FROM ${store.heads} p
           WHERE ${at} AND p.version = ?${n + 2} AND ${replaceable} AND ${ours}`,
        )
        .bind(...bind, previous?.version ?? 0, form.text, form.grams),
    );
  }
  statements.push(
    db
      .prepare(`UPDATE ${store.heads} AS p SET terms_version = ?${n + 2} WHERE ${at} AND p.version = ?${n + 2} AND ${replaceable} AND ${ours}`)
      .bind(...bind, previous?.version ?? 0),
  );
  return statements;
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
