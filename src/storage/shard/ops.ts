import type { ShardContinuation } from "../../core/ops";
import type { IncidentKind, IncidentRecord, IncidentRow } from "./incidents";
import { incidentOf } from "./incidents";
import { nextPair } from "./skip-scan";

/**
 * The operator's statements: what one database says of its own state (its newest migration, its
 * oldest open plan, its failing chains, its recent incidents) and one shard's page of incidents in
 * the fleet's order (`core/ops`). Each reads one database; the api layer asks every one at once.
 */

/** The newest migration applied to the database (`d1_migrations`, wrangler's own table), or null for none. */
export async function newestMigration(db: D1Database): Promise<string | null> {
  const row = await db.prepare("SELECT name FROM d1_migrations ORDER BY id DESC LIMIT 1").first<{ name: string }>();
  return row?.name ?? null;
}

export interface OpenPlanRecord {
  readonly conversationId: string;
  readonly agentId: string;
  readonly runId: string;
  readonly plannedAt: string;
}

/**
 * The shard's oldest plan still waiting for its boundary: not settled, not abandoned, and the
 * newest plan of its chain (a plan a later one replaced, as an epoch change does, waits for nothing).
 * The shard's chains are walked one seek or two at a time (the next agent of the conversation, else
 * the first of the next conversation), each one's newest plan taken by migration 0029's index, so
 * the probe costs the shard's chains, not every plan they ever made.
 */
export async function oldestOpenPlan(db: D1Database): Promise<OpenPlanRecord | undefined> {
  // The shard's chains in the plans' chain index: the next agent of the conversation, else the first of the next conversation.
  const chains = { table: "compaction_plans", scope: "1", outer: "conversation_id", inner: "agent_id" };
  const row = await db
    .prepare(
      `WITH RECURSIVE chains (conversation_id, agent_id) AS (
         SELECT ${nextPair(chains, "''", "''")}
         UNION ALL
         SELECT ${nextPair(chains, "c.conversation_id", "c.agent_id")} FROM chains c WHERE c.conversation_id IS NOT NULL
       ), newest (run_id) AS (
         SELECT (SELECT n.run_id FROM compaction_plans n WHERE n.conversation_id = c.conversation_id AND n.agent_id = c.agent_id ORDER BY n.created_at DESC LIMIT 1)
         FROM chains c WHERE c.conversation_id IS NOT NULL
       )
       SELECT p.conversation_id, p.agent_id, p.run_id, p.created_at FROM newest w CROSS JOIN compaction_plans p ON p.run_id = w.run_id
       WHERE NOT EXISTS (SELECT 1 FROM boundaries b WHERE b.run_id = p.run_id)
         AND NOT EXISTS (SELECT 1 FROM incidents i WHERE i.run_id = p.run_id AND i.kind = 'compactor_abandoned')
       ORDER BY p.created_at LIMIT 1`,
    )
    .first<{ conversation_id: string; agent_id: string; run_id: string; created_at: string }>();
  return row === null ? undefined : { conversationId: row.conversation_id, agentId: row.agent_id, runId: row.run_id, plannedAt: row.created_at };
}

/** How many chains of the shard the resolver refuses now (each one open `resolver_failure` incident), and how many incidents were seen since `since`. */
export async function shardTrouble(db: D1Database, since: string): Promise<{ failingChains: number; incidentsSince: number }> {
  const row = await db
    .prepare(
      `SELECT (SELECT COUNT(*) FROM incidents WHERE open = 1 AND kind = 'resolver_failure') AS failing,
              (SELECT COUNT(*) FROM incidents WHERE last_seen_at >= ?) AS recent`,
    )
    .bind(since)
    .first<{ failing: number; recent: number }>();
  return { failingChains: row?.failing ?? 0, incidentsSince: row?.recent ?? 0 };
}

export interface IncidentFilter {
  /** Only incidents last seen at or after this time. */
  readonly since?: string | undefined;
  readonly agentId?: string | undefined;
  readonly kind?: IncidentKind | undefined;
  /** Only incidents still open (a condition that holds). */
  readonly open?: boolean | undefined;
}

/** A fleet incident: the shard's row and the conversation it is about. */
export type FleetIncidentRecord = IncidentRecord & { readonly conversationId: string };

/**
 * The shard's first `limit` incidents in the fleet's order (newest `last_seen_at`, then newest id)
 * that pass the filter, after `from` (`core/ops` `continuation`; undefined: from the newest).
 */
export async function readFleetIncidents(db: D1Database, filter: IncidentFilter, from: ShardContinuation | undefined, limit: number): Promise<FleetIncidentRecord[]> {
  // D1 refuses a binding the statement does not use, so each continuation binds exactly its own.
  const after: { sql: string; binds: (string | number)[] } =
    from === undefined
      ? { sql: "", binds: [] }
      : "atOrBefore" in from
        ? { sql: "AND last_seen_at <= ?6", binds: [from.atOrBefore] }
        : "orAtWithIdBelow" in from
          ? { sql: "AND (last_seen_at < ?6 OR (last_seen_at = ?6 AND id < ?7))", binds: [from.before, from.orAtWithIdBelow] }
          : { sql: "AND last_seen_at < ?6", binds: [from.before] };
  const { results } = await db
    .prepare(
      `SELECT id, conversation_id, agent_id, run_id, kind, code, message, created_at, count, last_seen_at, open FROM incidents
       WHERE (?1 IS NULL OR last_seen_at >= ?1) AND (?2 IS NULL OR agent_id = ?2) AND (?3 IS NULL OR kind = ?3) AND (?5 = 0 OR open = 1) ${after.sql}
       ORDER BY last_seen_at DESC, id DESC LIMIT ?4`,
    )
    .bind(filter.since ?? null, filter.agentId ?? null, filter.kind ?? null, limit, filter.open === true ? 1 : 0, ...after.binds)
    .all<IncidentRow & { conversation_id: string }>();
  return results.map((row) => ({ ...incidentOf(row), conversationId: row.conversation_id }));
}
