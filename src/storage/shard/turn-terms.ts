import type { PlannedInsert } from "../../core/append";
import { SEARCH_FOLDS } from "../../core/search-text";
import type { EventTerms } from "../../core/turn-terms";
import { eventTerms } from "../../core/turn-terms";
import { hashBytes } from "./hash-bytes";
import { logText } from "./log-texts";
import { conversationKey } from "./keys";
import { isPlace, overlay, placeAuthorId, placeAuthorName } from "./turn-places";

/**
 * The turn index's writes (`turn_terms`, migrations/shard/0023): each event that carries a text
 * gets its row of terms in the D1 batch that appends it (and npm run migrate's backfill writes the
 * rows of events stored before, storage/search-backfill), so no statement ever walks a text's
 * characters and an append costs what its own text costs. Rows are never updated or deleted.
 *
 * The terms are core/turn-terms' (`eventTerms`). The text column is the event's own text, read
 * from its row and folded by the replacements `SEARCH_FOLDS` lists for exactly the characters the
 * text holds (none, for a text with no Arabic-script letter), so a text travels to D1 once and a
 * statement stays small whatever the text's length; the grams and the author are bound.
 */

/** A statement as SQL with numbered parameters and their values, for a binding or for a script's literals. */
export interface Statement {
  readonly sql: string;
  readonly params: readonly (string | number | null)[];
}

/** `expression` with the folds of every character of `text` that search-text folds (SQLite's replace() is exact on these BMP characters). */
export function folded(expression: string, text: string): string {
  let sql = expression;
  for (const [from, to] of SEARCH_FOLDS) {
    if (text.includes(from)) sql = `replace(${sql}, char(${from.charCodeAt(0)}), ${to === "" ? "''" : `char(${to.charCodeAt(0)})`})`;
  }
  return sql;
}

/**
 * The row of `terms` for the event at `seq` of conversation ?1, when `condition` holds (SQL over the
 * same parameters). An edit's author is its message's, as the fold knows it when the row is written
 * (the author's folded name when folding changes it); an edit that comes before its message has none.
 */
export function termsRow(conversationId: string, seq: number, terms: EventTerms, condition: string): Statement {
  const author =
    terms.author === undefined
      ? `COALESCE((SELECT t.author_terms FROM turns t WHERE t.conversation_key = k.id AND t.role = 'user' AND t.message_id = ?3),
          (SELECT COALESCE(${placeAuthorName("s")}, ${placeAuthorId("s")}) FROM log s INDEXED BY log_source_by_message
            WHERE s.conversation_key = k.id AND s.kind = 'source' AND json_extract(s.body, '$.messageId') = ?3 ORDER BY s.seq LIMIT 1), '')`
      : "?3";
  const text = folded(`(SELECT ${logText("e")} FROM log e WHERE e.conversation_key = k.id AND e.seq = ?2)`, terms.raw);
  return {
    sql: `INSERT INTO turn_terms (rowid, author, text, grams)
          SELECT (k.id << 32) | ?2, ${author}, ${text}, ?4 FROM conversation_keys k WHERE k.conversation_id = ?1 AND ${condition}`,
    params: [conversationId, seq, terms.author ?? terms.messageId ?? "", terms.grams],
  };
}

/**
 * A source's folded author, for an edit of its message to read: only its origin (the first source
 * with its message id, at this place) takes it, in its message's row of `turns`, which this writes
 * when nothing came back to the message yet (migrations/shard/0034): the row names its origin and
 * holds the name; the rest of the turn is read from the log.
 */
export function authorTermsRow(conversationId: string, seq: number, terms: EventTerms): Statement | undefined {
  if (terms.authorTerms === undefined || terms.messageId === undefined) return undefined;
  return {
    sql: `INSERT INTO turns (conversation_key, role, message_id, seq, author_terms)
          SELECT s.conversation_key, 'user', ?4, s.seq, ?3
          FROM log s ${overlay("s", "so")}
          WHERE s.conversation_key = ${conversationKey("?1")} AND s.seq = ?2 AND s.kind = 'source' AND json_extract(s.body, '$.messageId') = ?4 AND ${isPlace("s", "so")}
          ON CONFLICT (conversation_key, role, message_id) DO UPDATE SET author_terms = excluded.author_terms WHERE turns.seq = excluded.seq`,
    params: [conversationId, seq, terms.authorTerms, terms.messageId],
  };
}

/**
 * The statements that index `planned` (rows of one insert batch, written at `recordedAt`). A row is
 * written only if the batch wrote its event: it finds the event at its planned place with this
 * write's hash and time, which a replay (its key already stored, nothing inserted) cannot match.
 */
export function turnTermStatements(db: D1Database, conversationId: string, planned: readonly PlannedInsert[], recordedAt: string): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  for (const { input, seq, hash } of planned) {
    const terms = eventTerms(input);
    if (terms === undefined) continue;
    const row = termsRow(conversationId, seq, terms, "EXISTS (SELECT 1 FROM log WHERE conversation_key = k.id AND seq = ?2 AND hash = ?5 AND recorded_at = ?6)");
    statements.push(db.prepare(row.sql).bind(...row.params, hashBytes(hash), Date.parse(recordedAt)));
    const author = authorTermsRow(conversationId, seq, terms);
    if (author !== undefined) statements.push(db.prepare(author.sql).bind(...author.params));
  }
  return statements;
}
