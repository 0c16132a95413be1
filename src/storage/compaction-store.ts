import type { Boundary } from "../core/boundary";
import type { AuditBoundary, AuditPlan } from "../core/chain-audit";
import { boundaryBodySchema } from "../core/boundary";
import type { Epoch, Registration } from "../core/declarations";
import { registrationSchema } from "../core/declarations";
import { canonicalJson } from "../core/hash";

/**
 * Every D1 statement of the compaction engine: declarations, activations, plans, boundaries and
 * incidents. Rows are inserted, never updated; "current" always means the newest row.
 */

export interface StoredDeclaration {
  readonly agentId: string;
  readonly revision: number;
  readonly registration: Registration;
  readonly epoch: Epoch;
  readonly prompt: string;
  readonly promptHash: string;
  readonly createdAt: string;
}

interface DeclarationRow {
  agent_id: string;
  revision: number;
  compactor_version: string;
  fingerprint: string;
  epoch_id: string;
  registration: string;
  prompt: string;
  prompt_hash: string;
  created_at: string;
}

function toDeclaration(row: DeclarationRow): StoredDeclaration {
  return {
    agentId: row.agent_id,
    revision: row.revision,
    registration: registrationSchema.parse(JSON.parse(row.registration) as unknown),
    epoch: { compactorVersion: row.compactor_version, fingerprint: row.fingerprint, id: row.epoch_id },
    prompt: row.prompt,
    promptHash: row.prompt_hash,
    createdAt: row.created_at,
  };
}

const CURRENT_DECLARATIONS = `
  SELECT d.* FROM declarations d
  WHERE d.revision = (SELECT MAX(revision) FROM declarations WHERE agent_id = d.agent_id)`;

export async function currentDeclaration(db: D1Database, agentId: string): Promise<StoredDeclaration | undefined> {
  const row = await db
    .prepare("SELECT * FROM declarations WHERE agent_id = ? ORDER BY revision DESC LIMIT 1")
    .bind(agentId)
    .first<DeclarationRow>();
  return row === null ? undefined : toDeclaration(row);
}

/**
 * The current declarations whose sources match `conversationId` (migration 0007): one index probe
 * per prefix length of the id instead of reading and parsing every agent's declaration, so the
 * cost follows the agents that serve this conversation, not the deployment's. Exact per
 * `scopeAllows`; callers still check, since serving the wrong agent is not a query's risk to take.
 */
export async function servingDeclarations(db: D1Database, conversationId: string): Promise<StoredDeclaration[]> {
  const prefixes = Array.from({ length: conversationId.length + 1 }, (_, i) => conversationId.slice(0, i));
  const { results } = await db
    .prepare(
      `SELECT DISTINCT d.* FROM declaration_sources s
       JOIN declarations d ON d.agent_id = s.agent_id AND d.revision = s.revision
       WHERE ((s.prefix = ?1 AND s.is_prefix = 0) OR (s.is_prefix = 1 AND s.prefix IN (SELECT value FROM json_each(?2))))
         AND s.revision = (SELECT MAX(revision) FROM declarations WHERE agent_id = s.agent_id)
       ORDER BY d.agent_id`,
    )
    .bind(conversationId, JSON.stringify(prefixes))
    .all<DeclarationRow>();
  return results.map(toDeclaration);
}

/** Who already uses an id as agent or compactor (another agent's current pair), for uniqueness. */
export async function idHolders(db: D1Database, ids: readonly string[]): Promise<{ agentId: string; compactorId: string }[]> {
  const { results } = await db
    .prepare(
      `SELECT agent_id, compactor_id FROM (${CURRENT_DECLARATIONS})
       WHERE agent_id IN (SELECT value FROM json_each(?1)) OR compactor_id IN (SELECT value FROM json_each(?1))`,
    )
    .bind(JSON.stringify(ids))
    .all<{ agent_id: string; compactor_id: string }>();
  return results.map((r) => ({ agentId: r.agent_id, compactorId: r.compactor_id }));
}

/**
 * A new revision, unless the newest one already has this fingerprint (registration is idempotent).
 *
 * Concurrent requests race for the same next revision; the primary key lets one row win and the
 * others insert nothing (no exception). A loser then reads the winner: the same epoch is the same
 * registration (`unchanged`), another one is a `conflict` the caller reports, since this request
 * was decided against a declaration that is no longer current. Source rows are written only beside
 * a row of this request's own epoch, so a loser never attaches its sources to the winner.
 */
export type DeclarationWrite =
  | { readonly kind: "created" | "unchanged"; readonly declaration: StoredDeclaration }
  | { readonly kind: "conflict"; readonly current: StoredDeclaration | undefined };

export async function insertDeclaration(
  db: D1Database,
  registration: Registration,
  epoch: Epoch,
  prompt: string,
  promptHash: string,
  now: string,
): Promise<DeclarationWrite> {
  const agentId = registration.agent.id;
  const current = await currentDeclaration(db, agentId);
  if (current !== undefined && current.epoch.id === epoch.id) return { kind: "unchanged", declaration: current };
  const revision = (current?.revision ?? 0) + 1;
  // The revision and its source rows in one transaction: a declaration is never served by half its sources.
  const [inserted] = await db.batch([
    db
      .prepare(
        `INSERT INTO declarations (agent_id, revision, compactor_id, compactor_version, fingerprint, epoch_id, registration, prompt, prompt_hash, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, revision) DO NOTHING`,
      )
      .bind(agentId, revision, registration.compactor.id, epoch.compactorVersion, epoch.fingerprint, epoch.id, canonicalJson(registration), prompt, promptHash, now),
    ...[...new Set(registration.agent.sources)].map((pattern) => {
      const isPrefix = pattern.endsWith("*");
      return db
        .prepare(
          `INSERT INTO declaration_sources (agent_id, revision, pattern, prefix, is_prefix)
           SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM declarations WHERE agent_id = ?1 AND revision = ?2 AND epoch_id = ?6)
           ON CONFLICT DO NOTHING`,
        )
        .bind(agentId, revision, pattern, isPrefix ? pattern.slice(0, -1) : pattern, isPrefix ? 1 : 0, epoch.id);
    }),
  ]);
  if ((inserted?.meta.changes ?? 0) === 1) {
    return { kind: "created", declaration: { agentId, revision, registration, epoch, prompt, promptHash, createdAt: now } };
  }
  const winner = await currentDeclaration(db, agentId);
  return winner !== undefined && winner.epoch.id === epoch.id ? { kind: "unchanged", declaration: winner } : { kind: "conflict", current: winner };
}

export async function documentExists(db: D1Database, agentId: string, name: string, hash: string): Promise<boolean> {
  const row = await db
    .prepare("SELECT 1 AS present FROM documents WHERE agent_id = ? AND name = ? AND hash = ?")
    .bind(agentId, name, hash)
    .first<{ present: number }>();
  return row !== null;
}

export async function insertDocument(db: D1Database, agentId: string, name: string, hash: string, r2Key: string, chars: number, now: string): Promise<void> {
  await db
    .prepare("INSERT OR IGNORE INTO documents (agent_id, name, hash, r2_key, chars, created_at) VALUES (?, ?, ?, ?, ?, ?)")
    .bind(agentId, name, hash, r2Key, chars, now)
    .run();
}

export interface Activation {
  readonly frontierId: string;
  readonly frontierHash: string;
  readonly startSeq: number;
  readonly activatingSeq: number;
}

export async function readActivation(db: D1Database, conversationId: string, agentId: string, epochId: string): Promise<Activation | undefined> {
  const row = await db
    .prepare("SELECT frontier_id, frontier_hash, start_seq, activating_seq FROM activations WHERE conversation_id = ? AND agent_id = ? AND epoch_id = ?")
    .bind(conversationId, agentId, epochId)
    .first<{ frontier_id: string; frontier_hash: string; start_seq: number; activating_seq: number }>();
  return row === null
    ? undefined
    : { frontierId: row.frontier_id, frontierHash: row.frontier_hash, startSeq: row.start_seq, activatingSeq: row.activating_seq };
}

export async function insertActivation(db: D1Database, conversationId: string, agentId: string, epochId: string, activation: Activation, now: string): Promise<void> {
  await db
    .prepare(
      `INSERT INTO activations (conversation_id, agent_id, epoch_id, frontier_id, frontier_hash, start_seq, activating_seq, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    )
    .bind(conversationId, agentId, epochId, activation.frontierId, activation.frontierHash, activation.startSeq, activation.activatingSeq, now)
    .run();
}

/** A `compaction_plans` row as the engine uses it: the audit's plan shape plus when it was made. */
export interface PlanRecord extends AuditPlan {
  readonly createdAt: string;
}

export interface PlanRow {
  run_id: string;
  conversation_id: string;
  agent_id: string;
  epoch_id: string;
  previous_boundary_id: string;
  packet_key: string;
  packet_hash: string;
  trigger_seq: number;
  through_seq: number;
  created_at: string;
}

export const toPlan = (row: PlanRow): PlanRecord => ({
  runId: row.run_id,
  conversationId: row.conversation_id,
  agentId: row.agent_id,
  epochId: row.epoch_id,
  previousBoundaryId: row.previous_boundary_id,
  packetKey: row.packet_key,
  packetHash: row.packet_hash,
  triggerSeq: row.trigger_seq,
  throughSeq: row.through_seq,
  createdAt: row.created_at,
});

export function insertPlanStatement(db: D1Database, plan: PlanRecord): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO compaction_plans (run_id, conversation_id, agent_id, epoch_id, previous_boundary_id, packet_key, packet_hash, trigger_seq, through_seq, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(plan.runId, plan.conversationId, plan.agentId, plan.epochId, plan.previousBoundaryId, plan.packetKey, plan.packetHash, plan.triggerSeq, plan.throughSeq, plan.createdAt);
}

export async function readPlan(db: D1Database, runId: string): Promise<PlanRecord | undefined> {
  const row = await db.prepare("SELECT * FROM compaction_plans WHERE run_id = ?").bind(runId).first<PlanRow>();
  return row === null ? undefined : toPlan(row);
}

/** Whether a plan was closed after its retries were exhausted (a `compactor_abandoned` incident names it). */
export async function planAbandoned(db: D1Database, runId: string): Promise<boolean> {
  const row = await db.prepare("SELECT 1 AS present FROM incidents WHERE run_id = ? AND kind = 'compactor_abandoned' LIMIT 1").bind(runId).first<{ present: number }>();
  return row !== null;
}

/** The newest plan of a chain that has no boundary yet: the compaction in flight, if any. */
export async function readOpenPlan(db: D1Database, conversationId: string, agentId: string, epochId: string): Promise<PlanRecord | undefined> {
  const row = await db
    .prepare(
      `SELECT p.* FROM compaction_plans p
       WHERE p.conversation_id = ? AND p.agent_id = ? AND p.epoch_id = ?
         AND NOT EXISTS (SELECT 1 FROM boundaries b WHERE b.run_id = p.run_id)
         AND NOT EXISTS (SELECT 1 FROM incidents i WHERE i.run_id = p.run_id AND i.kind = 'compactor_abandoned')
       ORDER BY p.created_at DESC, p.rowid DESC LIMIT 1`,
    )
    .bind(conversationId, agentId, epochId)
    .first<PlanRow>();
  return row === null ? undefined : toPlan(row);
}

export interface StoredBoundary extends Boundary {
  readonly runId: string;
  readonly epochId: string;
  readonly position: number;
  readonly previousId: string;
  readonly coveredThroughSeq: number;
}

export interface BoundaryRow {
  id: string;
  epoch_id: string;
  position: number;
  previous_id: string;
  covered_through_seq: number;
  run_id: string;
  body: string;
  hash: string;
}

export function toBoundary(row: BoundaryRow): StoredBoundary {
  return {
    body: boundaryBodySchema.parse(JSON.parse(row.body) as unknown),
    hash: row.hash,
    runId: row.run_id,
    epochId: row.epoch_id,
    position: row.position,
    previousId: row.previous_id,
    coveredThroughSeq: row.covered_through_seq,
  };
}

export const BOUNDARY_COLUMNS = "id, epoch_id, position, previous_id, covered_through_seq, run_id, body, hash";

export function insertBoundaryStatement(db: D1Database, conversationId: string, agentId: string, epochId: string, boundary: Boundary): D1PreparedStatement {
  const { body } = boundary;
  return db
    .prepare(
      `INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      body.id,
      conversationId,
      agentId,
      epochId,
      body.position,
      body.previous?.id ?? "",
      body.previous?.hash ?? null,
      body.coveredThrough.seq,
      body.run.id,
      canonicalJson(body),
      boundary.hash,
      body.createdAt,
    );
}

export async function readBoundaryByRun(db: D1Database, runId: string): Promise<StoredBoundary | undefined> {
  const row = await db.prepare(`SELECT ${BOUNDARY_COLUMNS} FROM boundaries WHERE run_id = ?`).bind(runId).first<BoundaryRow>();
  return row === null ? undefined : toBoundary(row);
}

export async function readHeadBoundary(db: D1Database, conversationId: string, agentId: string, epochId: string): Promise<StoredBoundary | undefined> {
  const row = await db
    .prepare(`SELECT ${BOUNDARY_COLUMNS} FROM boundaries WHERE conversation_id = ? AND agent_id = ? AND epoch_id = ? ORDER BY position DESC LIMIT 1`)
    .bind(conversationId, agentId, epochId)
    .first<BoundaryRow>();
  return row === null ? undefined : toBoundary(row);
}

/** Every kind an incident row may have (the table's CHECK constraint, migration 0010). */
export const INCIDENT_KINDS = ["compactor_failure", "compactor_abandoned", "compaction_stalled", "plan_failure", "resolver_failure", "agent_failure", "delivery_failure"] as const;
export type IncidentKind = (typeof INCIDENT_KINDS)[number];

/**
 * How many plans of a chain were abandoned since its head (`previousBoundaryId`): the chain's
 * consecutive failures, read from the log's evidence so that a backoff survives an eviction.
 */
export async function countAbandonedPlans(db: D1Database, conversationId: string, agentId: string, epochId: string, previousBoundaryId: string): Promise<number> {
  const row = await db
    .prepare(
      `SELECT COUNT(*) AS n FROM compaction_plans p
       WHERE p.conversation_id = ? AND p.agent_id = ? AND p.epoch_id = ? AND p.previous_boundary_id = ?
         AND EXISTS (SELECT 1 FROM incidents i WHERE i.run_id = p.run_id AND i.kind = 'compactor_abandoned')`,
    )
    .bind(conversationId, agentId, epochId, previousBoundaryId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

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
  const attempts =
    runId === null
      ? null
      : await db.prepare("SELECT COUNT(*) AS n FROM incidents WHERE run_id = ? AND kind = 'compactor_failure'").bind(runId).first<{ n: number }>();
  return {
    lastFailure: last === null ? null : { kind: last.kind, code: last.code, message: last.message, runId: last.run_id, createdAt: last.created_at },
    failedAttempts: attempts?.n ?? 0,
  };
}

export function insertIncidentStatement(
  db: D1Database,
  incident: { conversationId: string; agentId: string; runId: string | null; kind: IncidentKind; code: string; message: string; createdAt: string },
): D1PreparedStatement {
  return db
    .prepare("INSERT INTO incidents (conversation_id, agent_id, run_id, kind, code, message, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
    .bind(incident.conversationId, incident.agentId, incident.runId, incident.kind, incident.code, incident.message, incident.createdAt);
}

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
  const { results } = await db
    .prepare(
      `SELECT ${BOUNDARY_AUDIT_COLUMNS} FROM boundaries
       WHERE conversation_id = ?1 AND agent_id = ?2 AND epoch_id = ?3 AND (
         position BETWEEN ?4 AND ?5
         OR previous_id IN (SELECT previous_id FROM boundaries WHERE conversation_id = ?1 AND agent_id = ?2 AND epoch_id = ?3 AND position BETWEEN ?4 AND ?5)
         OR id IN (SELECT previous_id FROM boundaries WHERE conversation_id = ?1 AND agent_id = ?2 AND epoch_id = ?3 AND position BETWEEN ?4 AND ?5)
         OR position = (SELECT MAX(position) FROM boundaries WHERE conversation_id = ?1 AND agent_id = ?2 AND epoch_id = ?3))
       ORDER BY position, created_at, id`,
    )
    .bind(conversationId, agentId, epochId, first, through)
    .all<BoundaryAuditSqlRow>();
  return { rows: results.map(boundaryAuditRow), through, nextAfter: positions.length > limit ? through : null };
}

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

/**
 * The plan rows of the given runs, whatever chain they claim to belong to (the audit reports a
 * plan of another agent or epoch rather than not finding it). One JSON parameter, not one per id:
 * D1 caps bound parameters per statement at 100.
 */
export async function readPlansByRunIds(db: D1Database, runIds: readonly string[]): Promise<Map<string, PlanRecord>> {
  if (runIds.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT * FROM compaction_plans WHERE run_id IN (SELECT value FROM json_each(?))")
    .bind(JSON.stringify(runIds))
    .all<PlanRow>();
  return new Map(results.map((row) => [row.run_id, toPlan(row)]));
}

/** A stored incident as the read API serves it. */
export interface IncidentRecord {
  readonly id: number;
  readonly agentId: string;
  readonly runId: string | null;
  readonly kind: IncidentKind;
  readonly code: string;
  readonly message: string;
  readonly createdAt: string;
}

/**
 * One page of a conversation's incidents, oldest first, after the id `after`, at most `limit`.
 * Ids are AUTOINCREMENT and D1 commits one writer at a time, so an incident recorded while a
 * reader pages always gets an id above every id already read: ascending paging never skips one.
 * One row beyond `limit` is read to tell a full last page from a page with more behind it.
 * `incidents_by_conversation (conversation_id, id)` serves the range without a sort.
 */
export async function readIncidentPage(
  db: D1Database,
  conversationId: string,
  after: number,
  limit: number,
): Promise<{ incidents: IncidentRecord[]; more: boolean }> {
  const { results } = await db
    .prepare("SELECT id, agent_id, run_id, kind, code, message, created_at FROM incidents WHERE conversation_id = ? AND id > ? ORDER BY id LIMIT ?")
    .bind(conversationId, after, limit + 1)
    .all<{ id: number; agent_id: string; run_id: string | null; kind: IncidentKind; code: string; message: string; created_at: string }>();
  return {
    incidents: results.slice(0, limit).map((r) => ({ id: r.id, agentId: r.agent_id, runId: r.run_id, kind: r.kind, code: r.code, message: r.message, createdAt: r.created_at })),
    more: results.length > limit,
  };
}
