import type { Epoch, Registration } from "../../core/declarations";
import { registrationSchema } from "../../core/declarations";
import { canonicalJson } from "../../core/hash";
import { declarationRevisionStatement, raiseRevisionStatement, revisionOf } from "../declaration-revision";

/**
 * Agent declarations (migration 0002, sources 0007): one row per revision, inserted and never
 * updated; "current" is the newest revision of an agent.
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
  const { results } = await servingStatement(db, conversationId).all<DeclarationRow>();
  return results.map(toDeclaration);
}

export async function declarationRevision(db: D1Database): Promise<number> {
  return revisionOf(await declarationRevisionStatement(db).all());
}

/**
 * After a declaration write: every shard's copy of the revision raised to the control database's,
 * before the registration answers, so the next source append of every conversation sees the change
 * (its one-round-trip guard reads the copy on its own shard). Returns the revision published. Every
 * shard is raised even when another fails (a copy only goes up, so raising one is never wrong); the
 * first failure is then thrown, and publishing again (the registration re-sent) finishes the rest.
 */
export async function publishRevision(control: D1Database, shards: readonly D1Database[]): Promise<number> {
  const revision = await declarationRevision(control);
  const raised = await Promise.allSettled(shards.map((shard) => raiseRevisionStatement(shard, revision).run()));
  const failed = raised.find((outcome) => outcome.status === "rejected");
  if (failed !== undefined) throw failed.reason;
  return revision;
}

/** The serving declarations and the revision they are as of, read in one transaction (one round trip). */
export async function servingDeclarationsAt(db: D1Database, conversationId: string): Promise<{ revision: number; declarations: StoredDeclaration[] }> {
  const [revision, serving] = await db.batch([declarationRevisionStatement(db), servingStatement(db, conversationId)]);
  return { revision: revisionOf(revision), declarations: ((serving?.results ?? []) as DeclarationRow[]).map(toDeclaration) };
}

function servingStatement(db: D1Database, conversationId: string): D1PreparedStatement {
  const prefixes = Array.from({ length: conversationId.length + 1 }, (_, i) => conversationId.slice(0, i));
  return db
    .prepare(
      `SELECT DISTINCT d.* FROM declaration_sources s
       JOIN declarations d ON d.agent_id = s.agent_id AND d.revision = s.revision
       WHERE ((s.prefix = ?1 AND s.is_prefix = 0) OR (s.is_prefix = 1 AND s.prefix IN (SELECT value FROM json_each(?2))))
         AND s.revision = (SELECT MAX(revision) FROM declarations WHERE agent_id = s.agent_id)
       ORDER BY d.agent_id`,
    )
    .bind(conversationId, JSON.stringify(prefixes));
}

/**
 * Who already uses an id as agent or compactor (an agent's current pair), for uniqueness, with the
 * holder's sources: whether the caller may be told who holds it depends on them (`core/agent-access`).
 */
export async function idHolders(db: D1Database, ids: readonly string[]): Promise<{ agentId: string; compactorId: string; sources: string[] }[]> {
  const { results } = await db
    .prepare(
      `SELECT agent_id, compactor_id, registration FROM (${CURRENT_DECLARATIONS})
       WHERE agent_id IN (SELECT value FROM json_each(?1)) OR compactor_id IN (SELECT value FROM json_each(?1))`,
    )
    .bind(JSON.stringify(ids))
    .all<{ agent_id: string; compactor_id: string; registration: string }>();
  return results.map((r) => ({
    agentId: r.agent_id,
    compactorId: r.compactor_id,
    sources: registrationSchema.parse(JSON.parse(r.registration) as unknown).agent.sources,
  }));
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
  // D1 counts what the insert's triggers wrote too (the declarations' revision, migration 0014); a
  // revision that lost the race inserted nothing and fired no trigger, so it counts 0.
  if ((inserted?.meta.changes ?? 0) > 0) {
    return { kind: "created", declaration: { agentId, revision, registration, epoch, prompt, promptHash, createdAt: now } };
  }
  const winner = await currentDeclaration(db, agentId);
  return winner !== undefined && winner.epoch.id === epoch.id ? { kind: "unchanged", declaration: winner } : { kind: "conflict", current: winner };
}
