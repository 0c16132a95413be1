import { sha256Hex } from "./hash";

/**
 * Which shard a conversation goes to when it is first seen: a stable hash of its id over the open
 * shards' names, taken in shard-number order. The choice depends only on the id and the open set,
 * so every isolate picks the same one; it is recorded once and never recomputed for that
 * conversation, so a later change of the open set moves nothing.
 */

const SHARD_NAME = /^DB_SHARD_(0|[1-9][0-9]{0,3})$/;

/** The shard number of a binding name `DB_SHARD_<n>`, or undefined for any other name. */
export function shardNumber(name: string): number | undefined {
  const match = SHARD_NAME.exec(name);
  return match === null ? undefined : Number(match[1]);
}

/** The shard binding names among `names`, in shard-number order. */
export function shardNames(names: Iterable<string>): string[] {
  return [...names].flatMap((name) => {
    const n = shardNumber(name);
    return n === undefined ? [] : [{ name, n }];
  }).sort((a, b) => a.n - b.n).map((s) => s.name);
}

/** The names a `SHARDS_CLOSED` setting lists (comma-separated, spaces ignored). */
export function closedShards(setting: string): Set<string> {
  return new Set(setting.split(",").map((name) => name.trim()).filter((name) => name !== ""));
}

/** The open shard a new conversation is placed on, or undefined when none is open. */
export function pickShard(conversationId: string, open: readonly string[]): string | undefined {
  // 48 bits of the id's SHA-256: uniform, and exact in a double. With nothing open the index is
  // NaN (x % 0), which names no element: undefined.
  return open[Number.parseInt(sha256Hex(conversationId).slice(0, 12), 16) % open.length];
}

/**
 * Why this deployment's shards cannot serve a conversation, until an operator changes its bindings
 * or `SHARDS_CLOSED`: its placement names a shard the Worker does not bind, no shard takes new
 * conversations, or a conversation with no placement row has rows on more than one shard (`shard`
 * names them), which only an operator can reconcile.
 */
export type ShardProblem =
  | { readonly reason: "shard_unbound"; readonly shard: string }
  | { readonly reason: "no_open_shard" }
  | { readonly reason: "split"; readonly shard: string };

/** The name every `ShardConfigurationError` carries, also across a Durable Object's RPC (which keeps an error's own fields, not its class). */
export const SHARD_CONFIGURATION_ERROR = "ShardConfigurationError";

/** A conversation whose placement names a shard this Worker does not bind, or a deployment with no open shard. */
export class ShardConfigurationError extends Error {
  override readonly name = SHARD_CONFIGURATION_ERROR;
  readonly reason: ShardProblem["reason"] | undefined;
  readonly shard: string | undefined;

  constructor(message: string, problem?: ShardProblem) {
    super(message);
    this.reason = problem?.reason;
    this.shard = problem !== undefined && "shard" in problem ? problem.shard : undefined;
  }
}
