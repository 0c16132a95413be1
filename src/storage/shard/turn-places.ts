/**
 * A conversation's turns as the log places them (migrations/shard/0034): a turn is the first source
 * or proposal with its message id, read from its own row in the log (its role, message id, author,
 * sensitivity, either spelling of a source, 0033), and what events about it added later (the
 * winning edit, a deletion, a reply's delivery, its author's folded name) from `turns`, which holds
 * a row only for a message such an event came back to (and, on a shard stored before 0034's
 * release, for every message: the same fold, read the same way).
 *
 * Each fragment is SQL over a row of `log` named by its alias; every lookup is one probe of an
 * index, so reading a turn costs the same at any length of the conversation.
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

/** Whether row `l` places a turn: a source or a proposal that no earlier one of its kind has the message id of. */
export const isPlace = (l: string): string => `${l}.kind IN ('source', 'proposal') AND CASE ${l}.kind
    WHEN 'source' THEN NOT EXISTS (SELECT 1 FROM log d INDEXED BY log_source_by_message
      WHERE d.conversation_key = ${l}.conversation_key AND d.kind = 'source' AND json_extract(d.body, '$.messageId') = json_extract(${l}.body, '$.messageId') AND d.seq < ${l}.seq)
    ELSE NOT EXISTS (SELECT 1 FROM log d INDEXED BY log_by_proposal
      WHERE d.conversation_key = ${l}.conversation_key AND d.kind IN ('proposal', 'delivery') AND json_extract(d.body, '$.proposalId') = json_extract(${l}.body, '$.proposalId') AND d.kind = 'proposal' AND d.seq < ${l}.seq)
  END`;

/** What came after the turn at row `l`, as `o` (all NULL when nothing did): `turns`' row for its message. */
export const overlay = (l: string, o: string): string =>
  `LEFT JOIN turns ${o} ON ${o}.conversation_key = ${l}.conversation_key AND ${o}.role = ${placeRole(l)} AND ${o}.message_id = ${placeMessageId(l)}`;
