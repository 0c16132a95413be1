import { z } from "zod";
import { bytesOfHex, hexOf } from "./hex";

/**
 * The operator's view of the fleet, pure: which migration each database must have applied, who may
 * look, and the one order the incidents of every shard are listed in.
 */

/**
 * The newest migration of each set this code reads and writes with (`migrations/control`,
 * `migrations/shard`): a database whose newest applied migration is another is behind (or ahead
 * of) this Worker. A test compares these with the migration directories, so a new migration
 * without its name here fails CI.
 */
export const EXPECTED_MIGRATIONS = { control: "0019_memory_terms.sql", shard: "0039_page_terms_rule.sql" } as const;

/** The scope that reads the fleet's health and incidents: an operator's, never a tenant's. */
export const OPS_SCOPE = "ops";

/** Whether a token's scopes let it read the fleet: `ops`, or every conversation (`*`). */
export function opsAllowed(scopes: readonly string[]): boolean {
  return scopes.includes(OPS_SCOPE) || scopes.includes("*");
}

/**
 * The scope of the health monitor's credential (`OPS_MONITOR_TOKEN`), which no stored token can
 * hold (a scope names a conversation, an agent, `ops` or `*`): it reads health, not incidents.
 */
export const OPS_HEALTH_SCOPE = "ops-health";

/** Whether a caller may read the fleet's health: an operator, or the health monitor. */
export function opsHealthAllowed(scopes: readonly string[]): boolean {
  return opsAllowed(scopes) || scopes.includes(OPS_HEALTH_SCOPE);
}

/**
 * Where an incident stands in the fleet's order: newest `lastSeenAt` first (an incident that
 * repeats while open moves up), then by shard in binding order, then newest id first. Every
 * incident has exactly one place, so a page boundary is a position, and the next page starts after it.
 */
export interface FleetPosition {
  readonly at: string;
  readonly shard: number;
  readonly id: number;
}

/** Negative when `a` comes first in the fleet's order. */
export function compareFleet(a: FleetPosition, b: FleetPosition): number {
  if (a.at !== b.at) return a.at > b.at ? -1 : 1;
  if (a.shard !== b.shard) return a.shard - b.shard;
  return b.id - a.id;
}

/**
 * What one shard (number `shard`) must return to continue after `cursor`: rows last seen before
 * the cursor's time; at the same time, a later shard's all, the cursor's own shard's those with a
 * smaller id, an earlier shard's none.
 */
export type ShardContinuation = { readonly before: string } | { readonly atOrBefore: string } | { readonly before: string; readonly orAtWithIdBelow: number };

export function continuation(shard: number, cursor: FleetPosition): ShardContinuation {
  if (shard > cursor.shard) return { atOrBefore: cursor.at };
  if (shard < cursor.shard) return { before: cursor.at };
  return { before: cursor.at, orAtWithIdBelow: cursor.id };
}

/**
 * One page of the fleet's order from each shard's own first `limit + 1` rows after the cursor (each
 * shard's rows already in this order): the `limit` first of their union, and the position to
 * continue after when any row was left. The one row beyond `limit` tells a shard that has more
 * from one that has just enough, however few the other shards return.
 */
export function mergeFleetPage<T extends { readonly position: FleetPosition }>(lists: readonly (readonly T[])[], limit: number): { page: T[]; next: FleetPosition | undefined } {
  const all = lists.flat().sort((a, b) => compareFleet(a.position, b.position));
  const page = all.slice(0, limit);
  const last = page.at(-1);
  return { page, next: all.length > limit && last !== undefined ? last.position : undefined };
}

const positionSchema = z.tuple([z.iso.datetime(), z.number().int().min(0).max(1_000), z.number().int().min(1)]);

/** A position as the client carries it: opaque, the hex of its JSON (nothing in it needs escaping in a URL). */
export function encodeCursor(position: FleetPosition): string {
  return hexOf(new TextEncoder().encode(JSON.stringify([position.at, position.shard, position.id])));
}

/** The position a cursor names, or undefined when the text is not one this service wrote. */
export function decodeCursor(text: string): FleetPosition | undefined {
  if (!/^(?:[0-9a-f]{2}){1,400}$/.test(text)) return undefined;
  try {
    const bytes = bytesOfHex(text);
    const parsed = positionSchema.safeParse(JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes)));
    return parsed.success ? { at: parsed.data[0], shard: parsed.data[1], id: parsed.data[2] } : undefined;
  } catch {
    return undefined;
  }
}

/** A database's migration state: current when its newest applied migration is the one expected. */
export function migrationCurrent(applied: string | null, expected: string): boolean {
  return applied === expected;
}

/** Whole seconds from `since` to `now`, never negative (clocks of two isolates may disagree by a little). */
export function ageSeconds(since: string, now: Date): number {
  return Math.max(0, Math.floor((now.getTime() - Date.parse(since)) / 1000));
}
