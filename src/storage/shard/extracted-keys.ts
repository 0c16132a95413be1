import { sha256Hex } from "../../core/hash";
import { hexOf } from "../../core/hex";
import { PackedPageError, packPage, unpackPage } from "../../core/page-packing";
import { agentKey, conversationKey } from "./keys";

/**
 * How statements reach a conversation's extracted memory on its shard: the heads and versions
 * (`extracted_pages`, `extracted_versions`, migrations/shard/0035) are keyed by the conversation's
 * and the agent's integer keys, and each source of a fact (`extracted_sources`, 0036) by its
 * page's id; a version's text is packed since 0037 (`versionText` reads it back). The moves of the
 * rows stored before them are storage/shard/table-moves'.
 */

/** The conversation's and the agent's keys, for statements that bind the conversation id as ?1 and the agent id as ?2. */
export const PAGE_KEYS = `${conversationKey("?1")}, ${agentKey("?2")}`;

/** A head or version row `alias` of the conversation bound as `conversation` and the agent bound as `agent` (their integer keys). */
export const pageOf = (alias: string, conversation = "?1", agent = "?2"): string =>
  `${alias}.conversation_key = ${conversationKey(conversation)} AND ${alias}.agent_key = ${agentKey(agent)}`;

/** A page's head `p` joined to its newest version row `v` (live or tombstone). */
export const HEAD_VERSION = "JOIN extracted_versions v ON v.conversation_key = p.conversation_key AND v.agent_key = p.agent_key AND v.path = p.path AND v.version = p.version";

/** The event a source row `m` cites, as `l`: by the conversation key `conversation` (an SQL expression) and the source's sequence. */
export const cited = (conversation: string): string => `JOIN log l ON l.conversation_key = ${conversation} AND l.seq = m.seq`;

/**
 * A version row `v`'s text as it is kept, as text or packed (migrations/shard/0037), for
 * `versionText`: a statement that reads a page's text selects these and its hash as `content_hash`.
 */
export const VERSION_TEXT = "v.content AS content, v.packed AS packed";

/** A version row `v`'s length in UTF-16 code units, however its text is kept. */
export const VERSION_CHARS = "COALESCE(v.packed_chars, v.chars)";

/** A version's text as a statement selecting VERSION_TEXT and its hash read it (a blob as D1 or SQLite gives it). */
export interface StoredText {
  readonly content: string;
  readonly packed: Uint8Array | ArrayBuffer | readonly number[] | null;
  readonly content_hash: string;
}

/**
 * The text of a version row: its `content`, or its packed bytes unpacked and checked against the
 * hash it was written with. A packed row that unpacks to any other text throws (PackedPageError):
 * its bytes were damaged or written by something else, and no reader is served them.
 */
export function versionText(row: StoredText): string {
  if (row.packed === null) return row.content;
  const bytes = row.packed instanceof ArrayBuffer ? new Uint8Array(row.packed) : Uint8Array.from(row.packed);
  const text = unpackPage(bytes);
  if (sha256Hex(text) !== row.content_hash) throw new PackedPageError("a packed page does not match its hash");
  return text;
}

/** A version's text packed for the writer's JSON: its bytes in hex, read back with `unhex`. */
export const packedHex = (text: string): string => hexOf(packPage(text));

/** SQL: the rule a page's terms are written by now (migrations/shard/0039: 2 once no Worker from before it runs, else 1). */
export const PAGE_TERMS_RULE = "COALESCE((SELECT rule FROM page_terms_mode WHERE id = 1), 1)";
