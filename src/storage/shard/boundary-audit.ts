import type { AuditBoundary } from "../../core/chain-audit";

/**
 * The chain audit's reads of boundary rows: every column as stored, bodies parsed but not
 * validated, so the audit reports a malformed or forged row instead of failing to read it.
 */

/**
 * A boundary row for the chain audit and listing (`AuditBoundary`): every column the audit
 * compares, with the body parsed as JSON but not validated, so a malformed or hand-forced row is
 * reported, never thrown.
 */
export type BoundaryAuditRow = AuditBoundary;

function parseJsonColumn(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const BOUNDARY_AUDIT_COLUMNS = "id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, hash, created_at, body";

interface BoundaryAuditSqlRow {
  id: string;
  epoch_id: string;
  position: number;
  previous_id: string;
  previous_hash: string | null;
  covered_through_seq: number;
  run_id: string;
  hash: string;
  created_at: string;
  body: string;
}

function boundaryAuditRow(r: BoundaryAuditSqlRow): BoundaryAuditRow {
  return {
    id: r.id,
    epochId: r.epoch_id,
    position: r.position,
    previousId: r.previous_id,
    previousHash: r.previous_hash,
    coveredThroughSeq: r.covered_through_seq,
    runId: r.run_id,
    hash: r.hash,
    createdAt: r.created_at,
    body: parseJsonColumn(r.body),
  };
}

/** Every boundary of one agent in one conversation, every epoch, oldest first. */
export async function readBoundaryAuditRows(db: D1Database, conversationId: string, agentId: string): Promise<BoundaryAuditRow[]> {
  const { results } = await db
    .prepare(
      `SELECT ${BOUNDARY_AUDIT_COLUMNS} FROM boundaries
       WHERE conversation_id = ? AND agent_id = ?
       ORDER BY created_at, position, id`,
    )
    .bind(conversationId, agentId)
    .all<BoundaryAuditSqlRow>();
  return results.map(boundaryAuditRow);
}

/**
 * A page of one agent's boundaries in one conversation, every epoch, oldest first (by creation,
 * then position and id), after the boundary `after` (absent: from the oldest; one this chain does
 * not hold: nothing). Reads `limit + 1` rows from the `boundaries_by_time` index, so that the caller
 * knows whether a next page exists, whatever the chain's length.
 */
export async function readBoundaryListPage(db: D1Database, conversationId: string, agentId: string, after: string | undefined, limit: number): Promise<BoundaryAuditRow[]> {
  const statement =
    after === undefined
      ? db.prepare(`SELECT ${BOUNDARY_AUDIT_COLUMNS} FROM boundaries WHERE conversation_id = ?1 AND agent_id = ?2 ORDER BY created_at, position, id LIMIT ?3`).bind(conversationId, agentId, limit + 1)
      : db
          .prepare(
            // The cursor's row first, then a range of the index from it: a row value compared with
            // a row of a table the loop already holds is served from the index.
            `SELECT ${BOUNDARY_AUDIT_COLUMNS.split(", ").map((column) => `b.${column}`).join(", ")}
             FROM (SELECT created_at, position, id FROM boundaries WHERE id = ?3 AND conversation_id = ?1 AND agent_id = ?2) AS cursor
             JOIN boundaries AS b ON b.conversation_id = ?1 AND b.agent_id = ?2 AND (b.created_at, b.position, b.id) > (cursor.created_at, cursor.position, cursor.id)
             ORDER BY b.created_at, b.position, b.id
             LIMIT ?4`,
          )
          .bind(conversationId, agentId, after, limit + 1);
  const { results } = await statement.all<BoundaryAuditSqlRow>();
  return results.map(boundaryAuditRow);
}

/** Whether the agent has any boundary in the conversation (its chain there, of any epoch). */
export async function hasChainIn(db: D1Database, conversationId: string, agentId: string): Promise<boolean> {
  const row = await db.prepare("SELECT 1 AS held FROM boundaries WHERE conversation_id = ? AND agent_id = ? LIMIT 1").bind(conversationId, agentId).first<{ held: number }>();
  return row !== null;
}

/**
 * How long a chain and its log are: the log's high-water mark, and the agent's boundary rows (every
 * epoch) counted up to `countUpTo`, so that telling a chain is too long costs the bound, not the chain.
 */
export async function readChainSize(db: D1Database, conversationId: string, agentId: string, countUpTo: number): Promise<{ events: number; boundaries: number }> {
  const row = await db
    .prepare(
      `SELECT (SELECT last_seq FROM conversations WHERE id = ?1) AS events,
              (SELECT count(*) FROM (SELECT 1 FROM boundaries WHERE conversation_id = ?1 AND agent_id = ?2 LIMIT ?3)) AS boundaries`,
    )
    .bind(conversationId, agentId, countUpTo)
    .first<{ events: number | null; boundaries: number }>();
  return { events: row?.events ?? 0, boundaries: row?.boundaries ?? 0 };
}

/**
 * A page of one epoch's links for the audit: the rows at the first `limit` positions after
 * `after`, with every row of the epoch that can bear on their checks: their predecessors (by id),
 * and any row naming the same predecessor or holding the same position (the UNIQUE constraints
 * say there are none; the audit does not take the constraints on trust); and the epoch's newest
 * row, which the log's anchor is checked against on every page.
 */
export async function readBoundaryAuditPage(
  db: D1Database,
  conversationId: string,
  agentId: string,
  epochId: string,
  after: number,
  limit: number,
): Promise<{ rows: BoundaryAuditRow[]; through: number; nextAfter: number | null }> {
  const { results: positions } = await db
    .prepare("SELECT DISTINCT position FROM boundaries WHERE conversation_id = ? AND agent_id = ? AND epoch_id = ? AND position > ? ORDER BY position LIMIT ?")
    .bind(conversationId, agentId, epochId, after, limit + 1)
    .all<{ position: number }>();
  // An empty page (past the last link, or an epoch with none) still reads the newest row.
  const first = positions[0]?.position ?? after + 1;
  const through = positions[Math.min(limit, positions.length) - 1]?.position ?? after;
  // Four selections, each served by one of the epoch's unique indexes (position, predecessor) or
  // the primary key (`+` keeps the epoch's columns from steering the predecessors' lookup onto the
  // position index), in one round trip. Asked for in one statement, with OR or as a UNION ordered
  // by position, SQLite walked the position index over every row of the epoch.
  const epoch = "conversation_id = ?1 AND agent_id = ?2 AND epoch_id = ?3";
  const inPage = `SELECT previous_id FROM boundaries WHERE ${epoch} AND position BETWEEN ?4 AND ?5`;
  const select = (where: string, params: readonly unknown[]) => db.prepare(`SELECT ${BOUNDARY_AUDIT_COLUMNS} FROM boundaries WHERE ${where}`).bind(...params);
  const page = [conversationId, agentId, epochId, first, through];
  const parts = await db.batch<BoundaryAuditSqlRow>([
    select(`${epoch} AND position BETWEEN ?4 AND ?5`, page),
    select(`${epoch} AND previous_id IN (${inPage})`, page),
    select(`id IN (${inPage}) AND +conversation_id = ?1 AND +agent_id = ?2 AND +epoch_id = ?3`, page),
    select(`${epoch} AND position = (SELECT position FROM boundaries WHERE ${epoch} ORDER BY position DESC LIMIT 1)`, [conversationId, agentId, epochId]),
  ]);
  const byId = new Map(parts.flatMap((part) => part.results).map((row) => [row.id, row]));
  const order = (a: BoundaryAuditSqlRow, b: BoundaryAuditSqlRow) => a.position - b.position || compareText(a.created_at, b.created_at) || compareText(a.id, b.id);
  const results = [...byId.values()].sort(order);
  return { rows: results.map(boundaryAuditRow), through, nextAfter: positions.length > limit ? through : null };
}

/** SQLite's BINARY order for the ASCII of ids and instants. */
const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A boundary row as stored, with its agent, and its body both as text and parsed. */
export interface InspectedBoundary extends BoundaryAuditRow {
  readonly conversationId: string;
  readonly agentId: string;
  /** The stored canonical JSON text, whose SHA-256 is the row's `hash`. */
  readonly bodyText: string;
}

/** The boundary `boundaryId` if it belongs to `conversationId`; undefined for any other conversation's. */
export async function readBoundaryInConversation(db: D1Database, conversationId: string, boundaryId: string): Promise<InspectedBoundary | undefined> {
  const row = await db
    .prepare(`SELECT ${BOUNDARY_AUDIT_COLUMNS}, agent_id FROM boundaries WHERE id = ? AND conversation_id = ?`)
    .bind(boundaryId, conversationId)
    .first<BoundaryAuditSqlRow & { agent_id: string }>();
  if (row === null) return undefined;
  return { ...boundaryAuditRow(row), conversationId, agentId: row.agent_id, bodyText: row.body };
}
