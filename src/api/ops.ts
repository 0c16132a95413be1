import { z } from "zod";
import { DEADLINE_PASSED, withinDeadline } from "../core/deadline";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { agentIdSchema } from "../core/events";
import type { FleetPosition } from "../core/ops";
import { EXPECTED_MIGRATIONS, ageSeconds, continuation, decodeCursor, encodeCursor, mergeFleetPage, migrationCurrent, opsAllowed, opsHealthAllowed } from "../core/ops";
import { classifyThrown } from "../core/transient";
import { INCIDENT_KINDS } from "../storage/shard/incidents";
import { newestMigration, oldestOpenPlan, readFleetIncidents, shardTrouble } from "../storage/shard/ops";
import type { ApiPrincipal } from "../storage/control/tokens";
import { openShards, shardsOf } from "../storage/shards";
import type { fleetIncidentPageSchema, opsHealthSchema, Wire } from "./responses";
import { validate } from "./validation";

/**
 * What an operator reads of the whole deployment (`/v1/ops/*`, scope `ops` or `*`): whether every
 * binding answers and is at the migration this code expects, what is waiting, and the incidents of
 * every shard in one newest-first list. Every database is asked at once, each call under a
 * deadline: a binding that hangs is reported as such instead of holding the answer.
 */

/** How long one binding may take to answer a health probe before it is reported unreachable. */
const PROBE_MS = 5_000;

/** `forbidden` for a token that is not an operator's; conversation scopes alone never are. */
export function opsRefusal(principal: ApiPrincipal): Result<void> {
  return opsAllowed(principal.scopes) ? ok(undefined) : fail("forbidden", "this needs a token with the ops scope (or *)");
}

/** `opsRefusal` for the fleet's health, which the health monitor's credential may read too. */
export function opsHealthRefusal(principal: ApiPrincipal): Result<void> {
  return opsHealthAllowed(principal.scopes) ? ok(undefined) : fail("forbidden", "this needs a token with the ops scope (or *), or the health monitor's token");
}

type Probe<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: "timeout" | "unavailable" | "failed" };

/** `work` under the probe deadline: its value, or why there is none (a hang, a transient failure, anything else). */
async function probe<T>(work: () => Promise<T>, ms: number): Promise<Probe<T>> {
  try {
    const settled = await withinDeadline(work(), ms);
    return settled === DEADLINE_PASSED ? { ok: false, error: "timeout" } : { ok: true, value: settled };
  } catch (error) {
    return { ok: false, error: classifyThrown(error).kind === "transient" ? "unavailable" : "failed" };
  }
}

const HOUR_MS = 3_600_000;

/** Every database's reachability and migration, R2's reachability, the open shards, and what is waiting or failing. */
export async function fleetHealth(env: Env, now: Date, probeMs = PROBE_MS): Promise<Wire<typeof opsHealthSchema>> {
  const hourAgo = new Date(now.getTime() - HOUR_MS).toISOString();
  const shards = shardsOf(env);
  const open = new Set(openShards(env).map((shard) => shard.name));
  const [control, perShard, bucket] = await Promise.all([
    probe(() => newestMigration(env.DB), probeMs),
    Promise.all(
      shards.map(async (shard) => {
        const [migration, plan, trouble] = await Promise.all([
          probe(() => newestMigration(shard.db), probeMs),
          probe(() => oldestOpenPlan(shard.db), probeMs),
          probe(() => shardTrouble(shard.db, hourAgo), probeMs),
        ]);
        return { shard, migration, plan, trouble };
      }),
    ),
    probe(() => env.DOCUMENTS.head("ops/health-probe"), probeMs),
  ]);
  const database = (binding: string, role: "control" | "shard", migration: Probe<string | null>) => {
    const expected = EXPECTED_MIGRATIONS[role];
    const applied = migration.ok ? migration.value : null;
    return {
      binding,
      role,
      reachable: migration.ok,
      ...(migration.ok ? {} : { error: migration.error }),
      migration: applied,
      expectedMigration: expected,
      current: migration.ok && migrationCurrent(applied, expected),
      ...(role === "shard" ? { open: open.has(binding) } : {}),
    };
  };
  const databases = [database("DB", "control", control), ...perShard.map(({ shard, migration }) => database(shard.name, "shard", migration))];
  const plans = perShard.flatMap(({ shard, plan }) => (plan.ok && plan.value !== undefined ? [{ ...plan.value, shard: shard.name }] : []));
  const oldest = plans.sort((a, b) => a.plannedAt.localeCompare(b.plannedAt))[0];
  const troubles = perShard.flatMap(({ trouble }) => (trouble.ok ? [trouble.value] : []));
  const storage = { binding: "DOCUMENTS", reachable: bucket.ok, ...(bucket.ok ? {} : { error: bucket.error }) };
  return {
    ok: databases.every((d) => d.reachable && d.current) && storage.reachable && open.size > 0,
    checkedAt: now.toISOString(),
    databases,
    storage,
    openShards: shards.filter((shard) => open.has(shard.name)).map((shard) => shard.name),
    oldestOpenPlan: oldest === undefined ? null : { ...oldest, ageSeconds: ageSeconds(oldest.plannedAt, now) },
    failingChains: troubles.reduce((n, t) => n + t.failingChains, 0),
    incidentsLastHour: troubles.reduce((n, t) => n + t.incidentsSince, 0),
    // A shard that did not answer is not counted above: say how many did.
    shardsCounted: troubles.length,
  };
}

export const MAX_FLEET_INCIDENTS = 200;

export const fleetIncidentQuery = z.strictObject({
  since: z.iso.datetime().optional(),
  agent: agentIdSchema.optional(),
  cause: z.enum(INCIDENT_KINDS).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_FLEET_INCIDENTS).default(50),
  cursor: z.string().max(400).optional(),
});

/** One page of every shard's incidents, newest seen first (`core/ops` `compareFleet`), filtered, after `cursor`. */
export async function fleetIncidents(env: Env, query: unknown): Promise<Result<Wire<typeof fleetIncidentPageSchema>>> {
  const parsed = validate(fleetIncidentQuery, query);
  if (!parsed.ok) return parsed;
  const { since, agent, cause, limit } = parsed.value;
  let cursor: FleetPosition | undefined;
  if (parsed.value.cursor !== undefined) {
    cursor = decodeCursor(parsed.value.cursor);
    if (cursor === undefined) return fail("validation_failed", "cursor: not a cursor this service returned");
  }
  const from = cursor;
  const lists = await Promise.all(
    shardsOf(env).map(async (shard, index) => {
      const rows = await readFleetIncidents(shard.db, { since, agentId: agent, kind: cause }, from === undefined ? undefined : continuation(index, from), limit + 1);
      return rows.map((row) => ({ row, shard: shard.name, position: { at: row.lastSeenAt, shard: index, id: row.id } }));
    }),
  );
  const { page, next } = mergeFleetPage(lists, limit);
  return ok({
    incidents: page.map(({ row, shard }) => ({ ...row, shard })),
    nextCursor: next === undefined ? null : encodeCursor(next),
  });
}
