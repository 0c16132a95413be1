import type { StoredEvent } from "../../core/events";
import { eventInputSchema } from "../../core/events";
import type { LogGap, LogRange } from "../../core/log-audit";
import { LOG_FINDINGS_LISTED } from "../../core/log-audit";
import { eventBody, SHORT_FIELDS, SKIPPED_FIELDS, skippedNames } from "../../core/stored-body";
import { conversationKey } from "./keys";
import { bodyColumn } from "./log-texts";

/**
 * Every read of the event log (`log`, migrations/shard/0031), and how a row reads as its event;
 * its one writer is storage/shard/log-writer. Rows are only ever inserted (the schema's triggers
 * refuse UPDATE and DELETE, and refuse a sequence gap); reads map rows back through the event
 * schemas. The log is keyed by the conversation's `conversation_keys` id and
 * keeps the time in epoch milliseconds; a read names the conversation by its id (?1) and gets it
 * back as `conversation_id`, so a row reads as the event it stores.
 */

export interface EventRow {
  conversation_id: string;
  seq: number;
  kind: string;
  idempotency_key: string;
  sensitive: number;
  body: string;
  hash: string;
  /** Epoch milliseconds. */
  recorded_at: number;
}

/** The log's rows of conversation ?1: `FROM log WHERE ${IN_LOG}`, its primary key's range. */
export const IN_LOG = `conversation_key = ${conversationKey("?1")}`;

/**
 * A skipped run's key as a row spells it since migrations/shard/0033 (`<compactor key> <source seq>`,
 * `core/stored-body`), over the stored key `key`: whether it is spelled so (a space is in no other
 * key), the compactor's key, and the source's number.
 */
const shortKeyed = (key: string): string => `instr(${key}, ' ') > 0`;
export const shortCompactor = (key: string): string => `CAST(substr(${key}, 1, instr(${key}, ' ') - 1) AS INTEGER)`;
export const shortSource = (key: string): string => `substr(${key}, instr(${key}, ' ') + 1)`;

/** The event's key from the stored key `key`: as stored, or a skipped run's spelled back from its short form. */
const keyColumn = (key: string) =>
  `CASE WHEN ${shortKeyed(key)} THEN 'run:pf_' || (SELECT compactor_id FROM compactor_keys WHERE id = ${shortCompactor(key)}) || '_' || ${shortSource(key)} || ':skipped' ELSE ${key} END AS idempotency_key`;

/** The columns of an `EventRow` from the log's row `alias` (none: the only table) of conversation ?1. */
export const eventColumns = (alias?: string): string => {
  const column = (c: string) => (alias === undefined ? c : `${alias}.${c}`);
  return [
    "?1 AS conversation_id",
    ...["seq", "kind"].map(column),
    keyColumn(column("idempotency_key")),
    column("sensitive"),
    bodyColumn(alias),
    `lower(hex(${column("hash")})) AS hash`,
    column("recorded_at"),
  ].join(", ");
};

const EVENT_COLUMNS = eventColumns();

/**
 * SQL over a run's row: whether its `body` is a skipped run's stored array (`core/stored-body`; every
 * other body is a JSON object), and the JSON path of one of the array's values.
 */
export const STORED_SKIPPED = "substr(body, 1, 1) = '['";
export const skippedPath = (field: (typeof SKIPPED_FIELDS)[number]): string => `'$[${SKIPPED_FIELDS.indexOf(field)}]'`;
/** Whether a run's row is a skipped run spelled short (0033), whose key names its compactor and source; the JSON path of one of its body's values. */
export const SPELLED_SHORT_ROW = shortKeyed("idempotency_key");
export const shortPath = (field: (typeof SHORT_FIELDS)[number]): string => `'$[${SHORT_FIELDS.indexOf(field)}]'`;

export function toStoredEvent(row: EventRow): StoredEvent {
  const input = eventInputSchema.parse({
    kind: row.kind,
    idempotencyKey: row.idempotency_key,
    sensitive: row.sensitive === 1,
    body: eventBody(row.kind, row.idempotency_key, row.body),
  });
  return { ...input, conversationId: row.conversation_id, seq: row.seq, hash: row.hash, recordedAt: new Date(row.recorded_at).toISOString() };
}

/** The newest event conversation ?1's log holds (0: none), a seek on its primary key. */
const NEWEST_HELD = `COALESCE((SELECT MAX(seq) FROM log WHERE ${IN_LOG}), 0)`;

/**
 * The conversation's high-water mark: the sequence number of the newest event ever stored, which
 * the next event must follow (migrations/shard/0020, 0032). Not only the largest stored one: a
 * number is never handed out twice, even when its event is gone. `last_seq` holds it between
 * appends; the log's own newest row is read beside it, so a row written behind the service's back
 * is followed too, not collided with.
 */
export async function readHead(db: D1Database, conversationId: string): Promise<number> {
  const row = await db
    .prepare(`SELECT MAX(COALESCE((SELECT last_seq FROM conversations WHERE id = ?1), 0), ${NEWEST_HELD}) AS head`)
    .bind(conversationId)
    .first<{ head: number }>();
  return row?.head ?? 0;
}

/**
 * The runs of missing sequence numbers in `[fromSeq, throughSeq]` (the first `LOG_FINDINGS_LISTED`
 * of them), for one page of the paged audit: one statement, which counts the range from the
 * primary key and looks for gaps only when the count falls short, and returns a row per gap, never
 * a row per event. The conversation's key is read once (`conv`), not once per event the gaps' walk visits.
 */
export async function readLogGaps(db: D1Database, conversationId: string, range: LogRange): Promise<LogGap[]> {
  if (range.fromSeq > range.throughSeq) return [];
  const { results } = await db
    .prepare(
      `WITH conv (id) AS MATERIALIZED (SELECT id FROM conversation_keys WHERE conversation_id = ?1),
       short (yes) AS MATERIALIZED (SELECT COUNT(*) < ?3 - ?2 + 1 FROM log WHERE conversation_key = (SELECT id FROM conv) AND seq BETWEEN ?2 AND ?3),
       gap (start) AS (
         SELECT ?2 WHERE (SELECT yes FROM short) AND NOT EXISTS (SELECT 1 FROM log WHERE conversation_key = (SELECT id FROM conv) AND seq = ?2)
         UNION ALL
         SELECT e.seq + 1 FROM log e
         WHERE (SELECT yes FROM short) AND e.conversation_key = (SELECT id FROM conv) AND e.seq >= ?2 AND e.seq < ?3
           AND NOT EXISTS (SELECT 1 FROM log f WHERE f.conversation_key = (SELECT id FROM conv) AND f.seq = e.seq + 1)
       )
       SELECT start, COALESCE((SELECT MIN(n.seq) FROM log n WHERE n.conversation_key = (SELECT id FROM conv) AND n.seq > gap.start AND n.seq <= ?3), ?3 + 1) AS next
       FROM gap
       ORDER BY start
       LIMIT ?4`,
    )
    .bind(conversationId, range.fromSeq, range.throughSeq, LOG_FINDINGS_LISTED)
    .all<LogGap>();
  return results;
}

/** The rows of these keys, each sought in the key's index as it is spelled, and a skipped run's in its short spelling too (0033). */
export function selectByKeys(db: D1Database, conversationId: string, keys: readonly string[]): D1PreparedStatement {
  const skipped = keys.flatMap((key) => {
    const names = skippedNames(key);
    return names === undefined ? [] : [[names.compactor, names.sourceSeq]];
  });
  return db
    .prepare(
      `SELECT ${EVENT_COLUMNS} FROM log INDEXED BY log_by_key
       WHERE ${IN_LOG} AND idempotency_key IN (
         SELECT value FROM json_each(?2)
         UNION ALL SELECT c.id || ' ' || json_extract(s.value, '$[1]') FROM json_each(?3) s JOIN compactor_keys c ON c.compactor_id = json_extract(s.value, '$[0]'))`,
    )
    .bind(conversationId, JSON.stringify(keys), JSON.stringify(skipped));
}

/**
 * The events after `afterSeq`, at most `limit`, in order. `runs: false` leaves out the run events:
 * a chain's window reads the turn-shaping events only, so a page of it is `limit` of them however
 * many compactors' runs lie between them.
 */
export async function listEvents(
  db: D1Database,
  conversationId: string,
  afterSeq: number,
  limit: number,
  { runs = true }: { readonly runs?: boolean } = {},
): Promise<StoredEvent[]> {
  const { results } = await db
    .prepare(`SELECT ${EVENT_COLUMNS} FROM log WHERE ${IN_LOG} AND seq > ?2${runs ? "" : " AND kind <> 'run'"} ORDER BY seq LIMIT ?3`)
    .bind(conversationId, afterSeq, limit)
    .all<EventRow>();
  return results.map(toStoredEvent);
}

/** The events with `after < seq <= through`, read in pages so no single result grows without bound. */
export async function readEventRange(db: D1Database, conversationId: string, after: number, through: number): Promise<StoredEvent[]> {
  const page = 1_000;
  const all: StoredEvent[] = [];
  for (let cursor = after; cursor < through; ) {
    const { results } = await db
      .prepare(`SELECT ${EVENT_COLUMNS} FROM log WHERE ${IN_LOG} AND seq > ?2 AND seq <= ?3 ORDER BY seq LIMIT ?4`)
      .bind(conversationId, cursor, through, page)
      .all<EventRow>();
    all.push(...results.map(toStoredEvent));
    const last = results.at(-1);
    if (results.length < page || last === undefined) break;
    cursor = last.seq;
  }
  return all;
}

/** The whole log of one conversation, read in pages so no single result grows without bound. */
export async function readAllEvents(db: D1Database, conversationId: string): Promise<StoredEvent[]> {
  const page = 1_000;
  const all: StoredEvent[] = [];
  for (let after = 0; ; ) {
    const batch = await listEvents(db, conversationId, after, page);
    all.push(...batch);
    const last = batch.at(-1);
    if (batch.length < page || last === undefined) return all;
    after = last.seq;
  }
}

export async function readEventsByKeys(
  db: D1Database,
  conversationId: string,
  keys: readonly string[],
): Promise<Map<string, StoredEvent>> {
  const { results } = await selectByKeys(db, conversationId, keys).all<EventRow>();
  return new Map(results.map((row) => [row.idempotency_key, toStoredEvent(row)]));
}

/** The delivery events of one proposal, oldest first (migration 0005's `events_by_proposal`). */
export async function readDeliveries(db: D1Database, conversationId: string, proposalId: string): Promise<StoredEvent[]> {
  const { results } = await db
    .prepare(
      `SELECT ${EVENT_COLUMNS} FROM log INDEXED BY log_by_proposal
       WHERE ${IN_LOG} AND kind IN ('proposal', 'delivery') AND json_extract(body, '$.proposalId') = ?2
       ORDER BY seq`,
    )
    .bind(conversationId, proposalId)
    .all<EventRow>();
  return results.map(toStoredEvent).filter((event) => event.kind === "delivery");
}

/**
 * The log newest first: at most `limit` events with seq < `beforeSeq`, for reading history
 * backwards a page at a time (the primary key serves the descending range without a sort).
 */
export async function listEventsBefore(db: D1Database, conversationId: string, beforeSeq: number, limit: number): Promise<StoredEvent[]> {
  const { results } = await db
    .prepare(`SELECT ${EVENT_COLUMNS} FROM log WHERE ${IN_LOG} AND seq < ?2 ORDER BY seq DESC LIMIT ?3`)
    .bind(conversationId, beforeSeq, limit)
    .all<EventRow>();
  return results.map(toStoredEvent);
}

/** The `run` events newest first, at most `limit` with seq < `beforeSeq`. */
export async function listRunEventsBefore(db: D1Database, conversationId: string, beforeSeq: number, limit: number): Promise<StoredEvent[]> {
  const { results } = await db
    .prepare(`SELECT ${EVENT_COLUMNS} FROM log WHERE ${IN_LOG} AND kind = 'run' AND seq < ?2 ORDER BY seq DESC LIMIT ?3`)
    .bind(conversationId, beforeSeq, limit)
    .all<EventRow>();
  return results.map(toStoredEvent);
}

/** How many of the newest events the inspector's summaries of a log read (its run counts, its preflight sizes). */
export const INSPECTED_EVENTS = 10_000;

/** The seq after which the newest `?2` events of conversation `?1` lie (0 for a shorter log). */
export const NEWEST_EVENTS_AFTER = "MAX(0, COALESCE((SELECT last_seq FROM conversations WHERE id = ?1), 0) - ?2)";

/**
 * How many `run` events of each status the newest `window` events of the conversation hold, and
 * after which sequence number they start (0: the whole log). A range of the primary key below the
 * high-water mark: an inspection read that costs the window, never the history (no index covers
 * kind or status, and counting every run read every row of the conversation).
 */
export async function countRunsByStatus(
  db: D1Database,
  conversationId: string,
  window = INSPECTED_EVENTS,
): Promise<{ byStatus: Map<string, number>; afterSeq: number }> {
  const [counts, start] = await db.batch<{ status: string; runs: number } | { after_seq: number }>([
    db
      .prepare(
        `SELECT CASE WHEN ${STORED_SKIPPED} THEN 'skipped' ELSE json_extract(body, '$.status') END AS status, COUNT(*) AS runs FROM log
         WHERE ${IN_LOG} AND seq > ${NEWEST_EVENTS_AFTER} AND kind = 'run' GROUP BY status ORDER BY status`,
      )
      .bind(conversationId, window),
    db.prepare(`SELECT ${NEWEST_EVENTS_AFTER} AS after_seq`).bind(conversationId, window),
  ]);
  const byStatus = new Map(((counts?.results ?? []) as { status: string; runs: number }[]).map((r) => [r.status, r.runs]));
  return { byStatus, afterSeq: ((start?.results[0] ?? { after_seq: 0 }) as { after_seq: number }).after_seq };
}

/** The events at these sequence numbers (those the log holds), each sought by its key. */
export async function readEventsAt(db: D1Database, conversationId: string, seqs: readonly number[]): Promise<StoredEvent[]> {
  if (seqs.length === 0) return [];
  const { results } = await db
    .prepare(`SELECT ${eventColumns("e")} FROM json_each(?2) j CROSS JOIN log e ON e.conversation_key = ${conversationKey("?1")} AND e.seq = j.value ORDER BY e.seq`)
    .bind(conversationId, JSON.stringify(seqs))
    .all<EventRow>();
  return results.map(toStoredEvent);
}
