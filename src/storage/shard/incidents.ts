import type { OpsText } from "../../core/ops-text";

/**
 * Incidents: private operational evidence, never summarized into the chat they concern. An event (a
 * failed attempt, a refused delivery) is one row; a condition that holds across calls (a chain the
 * resolver refuses, a deadline that keeps failing) is one row while it is open, counting its
 * occurrences (migration 0017).
 */

/** Every kind an incident row may have (the table's CHECK constraint, migration 0017). */
export const INCIDENT_KINDS = [
  "compactor_failure",
  "compactor_abandoned",
  "compaction_stalled",
  "plan_failure",
  "resolver_failure",
  "agent_failure",
  "delivery_failure",
  "extraction_failure",
  "wake_failure",
] as const;
export type IncidentKind = (typeof INCIDENT_KINDS)[number];

/** What the operator sees of a chain's troubles: its newest failure of any kind, and the failed attempts of one run. */
export async function readChainTrouble(
  db: D1Database,
  conversationId: string,
  agentId: string,
  runId: string | null,
): Promise<{ lastFailure: { kind: IncidentKind; code: string; message: string; runId: string | null; createdAt: string } | null; failedAttempts: number }> {
  const last = await db
    .prepare(
      `SELECT kind, code, message, run_id, created_at FROM incidents
       WHERE conversation_id = ? AND agent_id = ? AND kind IN ('compactor_failure', 'compactor_abandoned', 'compaction_stalled', 'plan_failure', 'resolver_failure')
       ORDER BY id DESC LIMIT 1`,
    )
    .bind(conversationId, agentId)
    .first<{ kind: IncidentKind; code: string; message: string; run_id: string | null; created_at: string }>();
  return {
    lastFailure: last === null ? null : { kind: last.kind, code: last.code, message: last.message, runId: last.run_id, createdAt: last.created_at },
    failedAttempts: runId === null ? 0 : await countFailedAttempts(db, runId),
  };
}

/** How many attempts of a planned run failed (its `compactor_failure` rows, by `incidents_by_run`). */
export async function countFailedAttempts(db: D1Database, runId: string): Promise<number> {
  const row = await db.prepare("SELECT COALESCE(SUM(count), 0) AS n FROM incidents WHERE run_id = ? AND kind = 'compactor_failure'").bind(runId).first<{ n: number }>();
  return row?.n ?? 0;
}

/** What an incident says, as the engine records it; storage adds its id, count and times. */
export interface IncidentInput {
  readonly conversationId: string;
  /** Null: the conversation's own bookkeeping (a catch-up deadline), not one agent's chain. */
  readonly agentId: string | null;
  readonly runId: string | null;
  readonly kind: IncidentKind;
  readonly code: string;
  /** What the operator reads, across tenants: codes, ids and counts only (core/ops-text.ts). */
  readonly message: OpsText;
  /** What a counterpart said (a bot's or a provider's error text), kept for the conversation's own readers only. */
  readonly detail?: string | undefined;
  readonly createdAt: string;
}

/** The most of a counterpart's text an incident keeps. */
export const MAX_DETAIL_CHARS = 1_000;
const detailColumn = (detail: string | undefined): string | null => (detail === undefined || detail === "" ? null : detail.slice(0, MAX_DETAIL_CHARS));

/**
 * `agent_id` is NOT NULL so that it can be part of the open-incident key (migration 0017: NULLs are
 * distinct in a unique index, so a NULL agent would never be found open); '' is stored for none.
 */
const NO_AGENT = "";
const agentColumn = (agentId: string | null): string => agentId ?? NO_AGENT;
const agentOf = (column: string): string | null => (column === NO_AGENT ? null : column);

/** An incident that is one event (a failed attempt, a refused delivery): one closed row, seen once. */
export function insertIncidentStatement(db: D1Database, incident: IncidentInput): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO incidents (conversation_id, agent_id, run_id, kind, code, message, created_at, count, last_seen_at, open, detail)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?7, 0, ?8)`,
    )
    .bind(incident.conversationId, agentColumn(incident.agentId), incident.runId, incident.kind, incident.code, incident.message, incident.createdAt, detailColumn(incident.detail));
}

/** The row a raised incident landed in: new (`count` equals what was raised) or an open one seen again. */
export interface RaisedRow {
  readonly id: number;
  readonly count: number;
  /** Whether the operator was already sent this incident's notice. */
  readonly notified: boolean;
}

/**
 * A condition seen `occurrences` times (1 unless the caller counted repeats before raising it): a new
 * open row, or, while one is open for the same (conversation, agent, kind, code), that row with its
 * count raised and `last_seen_at` moved (migration 0017's unique partial index `incidents_open` is
 * the conflict target, so two open rows for one key cannot be stored). The first occurrence's run,
 * message and time stay: the row says when the condition began and when it was last seen.
 */
function raiseIncidentStatement(db: D1Database, incident: IncidentInput, occurrences = 1): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO incidents (conversation_id, agent_id, run_id, kind, code, message, created_at, count, last_seen_at, open, detail)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?7, 1, ?9)
       ON CONFLICT (conversation_id, agent_id, kind, code) WHERE open = 1
       DO UPDATE SET count = count + excluded.count, last_seen_at = MAX(last_seen_at, excluded.last_seen_at)
       RETURNING id, count, notified_at`,
    )
    .bind(incident.conversationId, agentColumn(incident.agentId), incident.runId, incident.kind, incident.code, incident.message, incident.createdAt, occurrences, detailColumn(incident.detail));
}

export async function raiseIncident(db: D1Database, incident: IncidentInput, occurrences = 1): Promise<RaisedRow> {
  const row = await raiseIncidentStatement(db, incident, occurrences).first<{ id: number; count: number; notified_at: string | null }>();
  if (row === null) throw new Error("incidents: an upsert returned no row");
  return { id: row.id, count: row.count, notified: row.notified_at !== null };
}

/** Records that the operator was sent the notice of incident `id`. */
export async function markIncidentNotified(db: D1Database, id: number, at: string): Promise<void> {
  await db.prepare("UPDATE incidents SET notified_at = ? WHERE id = ? AND notified_at IS NULL").bind(at, id).run();
}

/**
 * Closes the open incidents of one kind for a conversation's agent (or its own bookkeeping, `null`),
 * of one `code` or of every code: what they concern was seen working. Returns how many it closed; the
 * rows stay, with their counts, and the next occurrence opens a new one.
 */
export function closeIncidents(db: D1Database, conversationId: string, agentId: string | null, kind: IncidentKind, code?: string): Promise<number> {
  return closeConditions(db, conversationId, agentId, [code === undefined ? { kind } : { kind, code }]);
}

/**
 * `closeIncidents` for several conditions of one agent at once, in one statement: each a kind, and
 * a code when only that code's row closes.
 */
export async function closeConditions(db: D1Database, conversationId: string, agentId: string | null, conditions: readonly { readonly kind: IncidentKind; readonly code?: string }[]): Promise<number> {
  if (conditions.length === 0) return 0;
  const params: (string | null)[] = [];
  const clauses = conditions.map(({ kind, code }) => {
    // ?1 and ?2 are the conversation and the agent; each condition's kind and code follow.
    const at = params.length + 3;
    params.push(kind, code ?? null);
    return `(kind = ?${at} AND (?${at + 1} IS NULL OR code = ?${at + 1}))`;
  });
  const result = await db
    .prepare(`UPDATE incidents SET open = 0 WHERE conversation_id = ?1 AND agent_id = ?2 AND open = 1 AND (${clauses.join(" OR ")})`)
    .bind(conversationId, agentColumn(agentId), ...params)
    .run();
  return result.meta.changes;
}

/** A stored incident as the read API serves it. */
export interface IncidentRecord {
  readonly id: number;
  /** Null for an incident of the conversation's own bookkeeping. */
  readonly agentId: string | null;
  readonly runId: string | null;
  readonly kind: IncidentKind;
  readonly code: string;
  readonly message: string;
  /** When it was first seen. */
  readonly createdAt: string;
  /** How many times it was seen: 1 for an event; for a condition, every occurrence while it was open. */
  readonly count: number;
  readonly lastSeenAt: string;
  /** A condition still holding: its next occurrence raises `count` here instead of opening a new incident. */
  readonly open: boolean;
}

/** An incident as the conversation's own readers see it: with what a counterpart said, if anything. */
export interface PrivateIncidentRecord extends IncidentRecord {
  readonly detail: string | null;
}

/** An `incidents` row as stored. */
export interface IncidentRow {
  id: number;
  agent_id: string;
  run_id: string | null;
  kind: IncidentKind;
  code: string;
  message: string;
  created_at: string;
  count: number;
  last_seen_at: string;
  open: number;
}

/** A stored row as the read API serves it. */
export const incidentOf = (r: IncidentRow): IncidentRecord => ({
  id: r.id,
  agentId: agentOf(r.agent_id),
  runId: r.run_id,
  kind: r.kind,
  code: r.code,
  message: r.message,
  createdAt: r.created_at,
  count: r.count,
  lastSeenAt: r.last_seen_at,
  open: r.open === 1,
});

/**
 * One page of a conversation's incidents, oldest first, after the id `after`, at most `limit`.
 * Ids are AUTOINCREMENT and D1 commits one writer at a time, so an incident recorded while a
 * reader pages always gets an id above every id already read: ascending paging never skips one.
 * A repeat of an open incident keeps its row (and id): it moves `count` and `lastSeenAt` in place,
 * so a reader sees it by reading that row again, not on a later page.
 * One row beyond `limit` is read to tell a full last page from a page with more behind it.
 * `incidents_by_conversation (conversation_id, id)` serves the range without a sort.
 */
export async function readIncidentPage(
  db: D1Database,
  conversationId: string,
  after: number,
  limit: number,
): Promise<{ incidents: PrivateIncidentRecord[]; more: boolean }> {
  const { results } = await db
    .prepare(
      `SELECT id, agent_id, run_id, kind, code, message, created_at, count, last_seen_at, open, detail FROM incidents
       WHERE conversation_id = ? AND id > ? ORDER BY id LIMIT ?`,
    )
    .bind(conversationId, after, limit + 1)
    .all<IncidentRow & { detail: string | null }>();
  return { incidents: results.slice(0, limit).map((row) => ({ ...incidentOf(row), detail: row.detail })), more: results.length > limit };
}
