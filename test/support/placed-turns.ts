import { isPlace, overlay, placeAuthorId, placeAuthorName, placeMessageId, placeRole } from "../../src/storage/shard/turn-places";

/** The columns of a turn's fold, as `turns` named them (0028). */
export const FOLD_COLUMNS = "role, message_id, seq, author_id, author_name, origin_sensitive, edit_seq, edit_ms, edit_sensitive, deleted, delivered";

/**
 * Every turn a shard's readers see (src/storage/shard/turn-places), of the conversation whose key
 * `key` is (SQL; every conversation's when undefined): each placed one, from its origin's row in the
 * log and what came after it in `turns`, then each whose origin is not stored yet (an edit, a
 * deletion or a delivery about it): the fold `turns` held whole before migrations/shard/0034,
 * however much of it the table holds now. Ordered by role and message id.
 */
export const placedTurns = (key?: string): string => `SELECT ${FOLD_COLUMNS} FROM (
  SELECT ${placeRole("l")} AS role, ${placeMessageId("l")} AS message_id, l.seq AS seq, ${placeAuthorId("l")} AS author_id,
    ${placeAuthorName("l")} AS author_name, l.sensitive AS origin_sensitive, o.edit_seq AS edit_seq, o.edit_ms AS edit_ms,
    COALESCE(o.edit_sensitive, 0) AS edit_sensitive, COALESCE(o.deleted, 0) AS deleted, COALESCE(o.delivered, 0) AS delivered
  FROM log l ${overlay("l", "o")} WHERE ${key === undefined ? "" : `l.conversation_key = ${key} AND `}${isPlace("l", "o")}
  UNION ALL
  SELECT ${FOLD_COLUMNS} FROM turns WHERE ${key === undefined ? "" : `conversation_key = ${key} AND `}seq IS NULL
) ORDER BY role, message_id`;

/** Every conversation's turns, as `placedTurns` reads them. */
export const PLACED_TURNS = placedTurns();
