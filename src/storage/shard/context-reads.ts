import type { AuditRun } from "../../core/chain-audit-link";
import { auditRunOf } from "../../core/chain-audit-link";
import type { ChainAnchor, StoredEvent } from "../../core/events";
import { chainAnchorSchema, runBodySchema } from "../../core/events";
import type { BoundaryRow, StoredBoundary } from "./boundaries";
import { BOUNDARY_COLUMNS, toBoundary } from "./boundaries";
import type { PlanRecord, PlanRow } from "./plans";
import { toPlan } from "./plans";
import type { SliceRange } from "../../core/turn-pages";
import { groupCandidates, nextGroupAfter, sliceIds, sliceWindowEnds } from "../../core/turn-pages";
import { eventColumns, IN_LOG, readEventRange, toStoredEvent } from "./events";
import { conversationKey } from "./keys";

/**
 * The reads of context selection: the evidence about a chain's head, and the few older events an
 * amendment needs. Every query here is bounded by an index, not by the length of the history, so
 * selecting context costs the same on a young and on a long conversation.
 */

/** A boundary row with the columns the resolver checks against its hashed body. */
export interface HeadRow extends StoredBoundary {
  readonly id: string;
  readonly previousHash: string | null;
}

export interface HeadRows {
  readonly head: HeadRow | undefined;
  readonly previous: HeadRow | undefined;
  /** The epoch's other rows that share the head's predecessor or its position: any one is a fork. */
  readonly rivals: readonly { readonly id: string; readonly previousId: string; readonly position: number }[];
  readonly plan: PlanRecord | undefined;
  /** The head run's completed receipt, when the log holds it. */
  readonly receipts: readonly AuditRun[];
  /** The epoch's newest anchor in the log: which boundary must be the head (undefined: none anchored yet). */
  readonly anchor: ChainAnchor | undefined;
}

/**
 * The body of an epoch's newest anchored completed run (?1 conversation, ?3 epoch), through
 * migration 0011's index, which also orders it by position: one indexed row, however long the log.
 */
const NEWEST_ANCHOR = `SELECT body FROM log INDEXED BY log_chain_anchor
  WHERE ${IN_LOG} AND kind = 'run' AND json_extract(body, '$.anchor.epochId') = ?3
  ORDER BY json_extract(body, '$.anchor.position') DESC LIMIT 1`;

const HEAD_COLUMNS = `${BOUNDARY_COLUMNS}, previous_hash`;

const toHeadRow = (row: BoundaryRow & { previous_hash: string | null }): HeadRow => ({ ...toBoundary(row), id: row.id, previousHash: row.previous_hash });

/** A stored run body. The log is written only through the event schema, so a body that does not parse is corruption, and is thrown. */
function runOf(body: string): AuditRun {
  const parsed = runBodySchema.safeParse(JSON.parse(body) as unknown);
  if (!parsed.success) throw new Error("events: a stored run body does not parse");
  return auditRunOf(parsed.data);
}

/** A stored run body's anchor. The log is written only through the event schema, so a body that does not parse is corruption, and is thrown. */
function anchorOf(body: string): ChainAnchor {
  const parsed = chainAnchorSchema.safeParse((JSON.parse(body) as { anchor?: unknown }).anchor);
  if (!parsed.success) throw new Error("events: a stored anchored run body has no valid anchor");
  return parsed.data;
}

/** The epoch's newest anchor in the log, or undefined when no run of the epoch anchored a boundary yet. */
export async function readChainAnchor(db: D1Database, conversationId: string, epochId: string): Promise<ChainAnchor | undefined> {
  const row = await db.prepare(NEWEST_ANCHOR).bind(conversationId, null, epochId).first<{ body: string }>();
  return row === null ? undefined : anchorOf(row.body);
}

/** One D1 round trip: the newest boundary of the epoch and everything needed to judge it. */
export async function readHeadRows(db: D1Database, conversationId: string, agentId: string, epochId: string): Promise<HeadRows> {
  const head = `WITH head AS (
    SELECT * FROM boundaries WHERE conversation_id = ?1 AND agent_id = ?2 AND epoch_id = ?3 ORDER BY position DESC LIMIT 1)`;
  const statements = [
    db.prepare(`${head} SELECT ${HEAD_COLUMNS} FROM head`),
    db.prepare(`${head} SELECT ${HEAD_COLUMNS.split(", ").map((c) => `b.${c}`).join(", ")} FROM boundaries b, head WHERE b.id = head.previous_id`),
    // A fork is named by its first few rows; one is enough to refuse the head.
    db.prepare(
      `${head} SELECT b.id, b.previous_id, b.position FROM boundaries b, head
       WHERE b.conversation_id = ?1 AND b.agent_id = ?2 AND b.epoch_id = ?3 AND b.id <> head.id AND (b.previous_id = head.previous_id OR b.position = head.position)
       LIMIT 8`,
    ),
    db.prepare(`${head} SELECT p.* FROM compaction_plans p, head WHERE p.run_id = head.run_id`),
    // The head's own receipt, and the log's newest anchor of the epoch (which must name the head):
    // one statement, so judging the head against the log costs no extra round trip or statement.
    db.prepare(
      `${head} SELECT 'receipt' AS source, e.body AS body FROM log e INDEXED BY log_by_key, head WHERE e.conversation_key = ${conversationKey("?1")} AND e.idempotency_key = 'run:' || head.run_id || ':completed'
       UNION ALL SELECT 'anchor' AS source, body FROM (${NEWEST_ANCHOR})`,
    ),
  ].map((statement) => statement.bind(conversationId, agentId, epochId));
  const [headRows, previousRows, rivalRows, planRows, runRows] = await db.batch(statements);
  const first = <T>(result: D1Result | undefined): T | undefined => result?.results[0] as T | undefined;
  const headRow = first<BoundaryRow & { previous_hash: string | null }>(headRows);
  const previousRow = first<BoundaryRow & { previous_hash: string | null }>(previousRows);
  const planRow = first<PlanRow>(planRows);
  const rivals = (rivalRows?.results ?? []) as { id: string; previous_id: string; position: number }[];
  const receipts = (runRows?.results ?? []) as { source: "receipt" | "anchor"; body: string | null }[];
  const anchorBody = receipts.find((r) => r.source === "anchor")?.body;
  return {
    head: headRow === undefined ? undefined : toHeadRow(headRow),
    previous: previousRow === undefined ? undefined : toHeadRow(previousRow),
    rivals: rivals.map((r) => ({ id: r.id, previousId: r.previous_id, position: r.position })),
    plan: planRow === undefined ? undefined : toPlan(planRow),
    receipts: receipts.flatMap((r) => (r.source === "receipt" && r.body !== null ? [runOf(r.body)] : [])),
    anchor: anchorBody === null || anchorBody === undefined ? undefined : anchorOf(anchorBody),
  };
}

/**
 * Every event about the given messages and proposals: their sources and the sources of the
 * messages the proposals answer, all corrections of the messages, and every proposal and delivery
 * of the proposals. With `replies`, also the replies to the messages wherever they lie, with
 * their proposals' deliveries (a page of turns needs them; amendments find replies by proposal).
 * Served by the partial indexes of migrations 0005 and 0008 (on `log` since 0031), each named:
 * without statistics SQLite would walk the conversation's primary-key range instead.
 *
 * With `outside`, the read serves a fold as the log stood at `through` of a window
 * `after < seq <= windowEnd` its caller already holds (`LogIndex.slice`): it returns only the
 * events outside the window (`seq <= after`, or `windowEnd < seq <= through`), and finds replies
 * and the messages proposals answer among the events up to `through`. A later event cannot change
 * that fold, and the window's own events need not cross from D1 twice.
 */
export async function readRelatedEvents(
  db: D1Database,
  conversationId: string,
  messageIds: readonly string[],
  proposalIds: readonly string[],
  { replies = false, outside }: { readonly replies?: boolean; readonly outside?: { readonly after: number; readonly windowEnd: number; readonly through: number } } = {},
): Promise<StoredEvent[]> {
  const messages = JSON.stringify(messageIds);
  const proposals = JSON.stringify(proposalIds);
  // ?4, ?5 and ?6 bound to the whole log when no window is given. The bounds are written `+seq` so
  // that SQLite never serves them from the primary key: a range scan of every event before the
  // slice would make the read grow with the history, where the id indexes keep it to the slice's ids.
  const before = outside?.after ?? Number.MAX_SAFE_INTEGER;
  const asOf = outside?.through ?? Number.MAX_SAFE_INTEGER;
  const windowEnd = outside?.windowEnd ?? Number.MAX_SAFE_INTEGER;
  // Outside the caller's window: at or before its start, or after its end up to `through`.
  const outsideWindow = (start: number, end: number, asOfParam: number) => `(+seq <= ?${start} OR (+seq > ?${end} AND +seq <= ?${asOfParam}))`;
  const columns = eventColumns();
  // The ids of the proposals that answer the messages (migration 0008's index).
  const replyIds = replies
    ? ` UNION SELECT json_extract(r.body, '$.proposalId') FROM log r INDEXED BY log_proposal_by_reply
         WHERE r.conversation_key = ${conversationKey("?1")} AND r.kind = 'proposal' AND +r.seq <= ?5 AND json_extract(r.body, '$.replyToMessageId') IN (SELECT value FROM json_each(?2))`
    : "";
  const results = await db.batch<Parameters<typeof toStoredEvent>[0]>([
    db
      // The messages themselves, and the messages the named proposals reply to (their groups).
      .prepare(
        `SELECT ${columns} FROM log INDEXED BY log_source_by_message WHERE ${IN_LOG} AND kind = 'source' AND ${outsideWindow(4, 6, 5)} AND json_extract(body, '$.messageId') IN (
           SELECT value FROM json_each(?2)
           UNION SELECT json_extract(p.body, '$.replyToMessageId') FROM log p INDEXED BY log_by_proposal
           WHERE p.conversation_key = ${conversationKey("?1")} AND p.kind IN ('proposal', 'delivery') AND +p.seq <= ?5 AND json_extract(p.body, '$.proposalId') IN (SELECT value FROM json_each(?3)))`,
      )
      .bind(conversationId, messages, proposals, before, asOf, windowEnd),
    db
      .prepare(
        `SELECT ${columns} FROM log INDEXED BY log_correction_by_target WHERE ${IN_LOG} AND kind = 'correction' AND ${outsideWindow(3, 5, 4)} AND json_extract(body, '$.targetMessageId') IN (SELECT value FROM json_each(?2))`,
      )
      .bind(conversationId, messages, before, asOf, windowEnd),
    db
      .prepare(
        `SELECT ${columns} FROM log INDEXED BY log_by_proposal WHERE ${IN_LOG} AND kind IN ('proposal', 'delivery') AND ${outsideWindow(4, 6, 5)} AND json_extract(body, '$.proposalId') IN (
           SELECT value FROM json_each(?3)${replyIds})`,
      )
      .bind(conversationId, messages, proposals, before, asOf, windowEnd),
  ]);
  const bySeq = new Map<number, StoredEvent>();
  for (const result of results) for (const row of result.results) bySeq.set(row.seq, toStoredEvent(row));
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/**
 * The events each slice's fold needs (`SliceRange`): the log from its start through the first
 * source that opens a group after its groups (a little past it: the last read's rest), and the
 * events related to that window elsewhere up to its trigger. `LogIndex.slice` is the same read over a log in memory; `turnsAsOf` over the
 * result folds each slice's groups as the whole log did at the trigger (the property tests hold it).
 */
export async function readSliceLog(db: D1Database, conversationId: string, ranges: readonly SliceRange[]): Promise<StoredEvent[]> {
  const bySeq = new Map<number, StoredEvent>();
  for (const range of ranges) {
    const { window, end, next } = await readSliceWindow(db, conversationId, range);
    for (const event of window) bySeq.set(event.seq, event);
    const ids = sliceIds(window, next);
    // Nothing lies outside a window that holds the whole log up to the trigger.
    if ((range.after <= 0 && end >= range.through) || (ids.messageIds.length === 0 && ids.proposalIds.length === 0)) continue;
    const related = await readRelatedEvents(db, conversationId, ids.messageIds, ids.proposalIds, { replies: true, outside: { after: range.after, windowEnd: end, through: range.through } });
    for (const event of related) bySeq.set(event.seq, event);
  }
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/**
 * The log from a slice's start, `SLICE_STEP` events past its groups and widened by twice as many
 * each time until it holds the first source that opens a group after them (`next`), or reaches the
 * trigger. Whether a source opens a group is whether any earlier source used its message id: within
 * the window that is in hand, before it one probe by id.
 */
async function readSliceWindow(db: D1Database, conversationId: string, range: SliceRange): Promise<{ window: StoredEvent[]; end: number; next: number | undefined }> {
  const { after, groupsThrough } = range;
  const window: StoredEvent[] = [];
  const usedBefore = new Set<string>();
  const probed = new Set<string>();
  let end = after;
  for (const readTo of sliceWindowEnds(range)) {
    window.push(...(await readEventRange(db, conversationId, end, readTo)));
    end = readTo;
    const unprobed = groupCandidates(window, groupsThrough).filter((id) => !probed.has(id));
    if (after > 0 && unprobed.length > 0) for (const id of await readMessageIdsSaid(db, conversationId, unprobed, after)) usedBefore.add(id);
    for (const id of unprobed) probed.add(id);
    const next = nextGroupAfter(window, groupsThrough, usedBefore);
    if (next !== undefined) return { window, end, next };
  }
  return { window, end, next: undefined };
}

/** Which of these message ids a source at or before `seq` used (migration 0005's index). */
async function readMessageIdsSaid(db: D1Database, conversationId: string, messageIds: readonly string[], seq: number): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT DISTINCT json_extract(body, '$.messageId') AS id FROM log INDEXED BY log_source_by_message
        WHERE ${IN_LOG} AND kind = 'source' AND +seq <= ?3 AND json_extract(body, '$.messageId') IN (SELECT value FROM json_each(?2))`,
    )
    .bind(conversationId, JSON.stringify(messageIds), seq)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}
