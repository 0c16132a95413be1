import type { PlannedInsert } from "../../core/append";

/**
 * How the log keeps a long text (migrations/shard/0038): apart from its row, in `log_texts`, so the
 * row stays within its b-tree's cell, and how every read puts it back before anyone parses a body.
 */

/**
 * A text kept apart from its log row (migrations/shard/0038): the row `alias` (none: the only
 * table) spells its body's `text` as the number 0, and `log_texts` keeps the text, at the row's
 * `(conversation key << 32) | seq`, as the JSON string the body spelled.
 */
const aliased = (alias: string | undefined, c: string): string => (alias === undefined ? c : `${alias}.${c}`);
const APART = (alias?: string): string => `json_type(${aliased(alias, "body")}, '$.text') = 'integer'`;
const KEPT_TEXT = (alias?: string): string => `(SELECT t.text FROM log_texts t WHERE t.id = (${aliased(alias, "conversation_key")} << 32) | ${aliased(alias, "seq")})`;

/** The body of the log's row `alias` with its text in place, wherever the row keeps it. */
export const bodyColumn = (alias?: string): string => `CASE WHEN ${APART(alias)} THEN json_set(${aliased(alias, "body")}, '$.text', json(${KEPT_TEXT(alias)})) ELSE ${aliased(alias, "body")} END AS body`;

/** SQL: the text of the log's row `alias` (its body's `text`), wherever the row keeps it. */
export const logText = (alias: string): string => `CASE WHEN ${APART(alias)} THEN json_extract(${KEPT_TEXT(alias)}, '$') ELSE json_extract(${alias}.body, '$.text') END`;

/** A text longer than this many UTF-8 bytes is kept apart from its row once the release allows (0038): shorter, the row stays well within its b-tree's cell. */
const TEXT_APART_BYTES = 512;

/** Whether texts are kept apart from their rows (migrations/shard/0038: once no Worker from before it runs). */
export const TEXTS_APART = "COALESCE((SELECT apart FROM log_texts_mode WHERE id = 1), 0) = 1";

/** The first sequence whose `(conversation key << 32) | seq` would name the next conversation's place: a row from it on keeps its text. */
const APART_SEQ_LIMIT = 2 ** 32;

/** A long text as the body spells it (its JSON string), to keep apart from its row; null for any other. */
export function apartText({ input, seq }: Pick<PlannedInsert, "input" | "seq">): string | null {
  const text = "text" in input.body && typeof input.body.text === "string" ? input.body.text : undefined;
  return text !== undefined && seq < APART_SEQ_LIMIT && new TextEncoder().encode(text).length > TEXT_APART_BYTES ? JSON.stringify(text) : null;
}
