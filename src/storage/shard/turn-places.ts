/**
 * A conversation's turns as the log places them (migrations/shard/0034): a turn is the first source
 * or proposal with its message id, read from its own row in the log (its role, message id, author,
 * sensitivity, either spelling of a source, 0033), and what events about it added later (the
 * winning edit, a deletion, a reply's delivery, its author's folded name) from `turns`, which holds
 * a row only for a message such an event came back to (and, on a shard stored before 0034's
 * release, for every message: the same fold, read the same way).
 *
 * Each fragment is SQL over a row of `log` named by its alias; the one lookup is a probe of the
 * primary key of `turns`, so reading a turn costs the same at any length of the conversation.
 */

/** The turn's role, as `turns` spells it. */
export const placeRole = (l: string): string => `CASE ${l}.kind WHEN 'source' THEN 'user' ELSE 'assistant' END`;

/** The platform message id of a source, or the proposal id of a reply. */
export const placeMessageId = (l: string): string =>
  `CASE ${l}.kind WHEN 'source' THEN json_extract(${l}.body, '$.messageId') ELSE json_extract(${l}.body, '$.proposalId') END`;

/** A source's author id (a reply's: its agent id), from either spelling of the body. */
export const placeAuthorId = (l: string): string =>
  `CASE ${l}.kind WHEN 'source' THEN COALESCE(json_extract(${l}.body, '$.author.id'), json_extract(${l}.body, '$.a[0]')) ELSE json_extract(${l}.body, '$.agentId') END`;

/** The name a reader would search a source's author by (its name, else username); a reply has none. */
export const placeAuthorName = (l: string): string =>
  `CASE ${l}.kind WHEN 'source' THEN COALESCE(json_extract(${l}.body, '$.author.name'), json_extract(${l}.body, '$.author.username'), json_extract(${l}.body, '$.a[1]'), json_extract(${l}.body, '$.a[2]')) END`;

/**
 * Whether row `l`, with what came after it `o` (`overlay`), places a turn: a source or a proposal
 * whose message's row in `turns`, if any, names no other origin. A source whose message id an
 * earlier source had writes that row naming the first (migrations/shard/0034), so the first is
 * told from its repeats without reading the log again.
 */
export const isPlace = (l: string, o: string): string => `${l}.kind IN ('source', 'proposal') AND (${o}.seq IS NULL OR ${o}.seq = ${l}.seq)`;

/** What came after the turn at row `l`, as `o` (all NULL when nothing did): `turns`' row for its message. */
export const overlay = (l: string, o: string): string =>
  `LEFT JOIN turns ${o} ON ${o}.conversation_key = ${l}.conversation_key AND ${o}.role = ${placeRole(l)} AND ${o}.message_id = ${placeMessageId(l)}`;
