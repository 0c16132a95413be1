import type { AppError } from "./errors";
import type { ShardProblem } from "./placement";
import { SHARD_CONFIGURATION_ERROR } from "./placement";

/**
 * What a thrown failure means to the client that caused it. The platform's bindings reject with
 * plain `Error`s whose wording is the only contract (D1 documents its retryable messages, Durable
 * Objects mark infrastructure errors `retryable` or `overloaded`, R2 ends its messages with a
 * numeric code), and an error thrown inside a conversation's object reaches the Worker through RPC
 * as a plain `Error` too, keeping its message and own fields but not its class. So the question is
 * answered here, once, from that shape alone:
 *
 * - `transient`: a storage or platform call failed or timed out; nothing about the request is wrong
 *   and the same request will succeed later. Appends and placements are keyed, so their retry is
 *   safe even when the failed call had committed.
 * - `shard_configuration`: this deployment's shards cannot serve the conversation until an operator
 *   binds the shard its placement names or opens one (`core/placement`).
 * - `defect`: anything else, a programming error included. It is never softened into a retryable
 *   answer: it stays a logged `500 internal`.
 */
export type ThrownFailure =
  | { readonly kind: "transient"; readonly source: TransientSource }
  | { readonly kind: "shard_configuration"; readonly reason: ShardProblem["reason"] | undefined; readonly shard: string | undefined; readonly message: string }
  | { readonly kind: "defect" };

export type TransientSource = "d1" | "r2" | "queue" | "durable_object" | "network";

/** Seconds a client waits before retrying a transient failure: the platform's resets and overloads clear within a few. */
export const TRANSIENT_RETRY_AFTER_SECONDS = 2;
/** Seconds before retrying a shard misconfiguration: it lasts until a deploy, so retrying sooner only adds load. */
export const CONFIGURATION_RETRY_AFTER_SECONDS = 30;

/**
 * Failures of the statement itself (a constraint, a missing table, a type): the same request fails
 * the same way, so none is transient whatever else its message says. SQLITE_BUSY is no such
 * failure: another writer held the database, and the same statement passes once it lets go.
 */
const DEFECT_MESSAGES = [/SQLITE_(?!BUSY\b)[A-Z]/, /constraint failed/i, /no such (?:table|column)/i, /syntax error/i, /D1_(?:TYPE_ERROR|COLUMN_NOTFOUND|EXEC_ERROR)/];

/**
 * The messages a retry clears. D1: its list of retryable `D1_ERROR`s (resets, overloads, lost
 * connections, transient routing). Durable Objects: overloads and resets. R2: 10001 (internal
 * error), 10043 (unavailable), 10058 (too many requests; also its timeouts). Queues: a failed send.
 */
const TRANSIENT_MESSAGES: readonly { readonly pattern: RegExp; readonly source: TransientSource }[] = [
  { pattern: /Network connection lost/i, source: "network" },
  { pattern: /Durable Object is overloaded|Durable Object reset|Durable Object storage operation exceeded timeout/i, source: "durable_object" },
  { pattern: /D1 DB is overloaded|Too many requests queued|Requests queued for too long/i, source: "d1" },
  { pattern: /storage caused object to be reset|storage operation exceeded timeout/i, source: "d1" },
  { pattern: /D1 DB reset because its code was updated|transient issue on remote node/i, source: "d1" },
  { pattern: /D1_ERROR:.*\b(?:timed out|timeout)\b/i, source: "d1" },
  // Another writer holds the database (seen from wrangler dev while a process held the file locked).
  { pattern: /D1_ERROR:.*\b(?:database is locked|SQLITE_BUSY)\b/i, source: "d1" },
  { pattern: /\((?:10001|10043|10058)\)/, source: "r2" },
  { pattern: /Queue send failed/i, source: "queue" },
  // The runtime's own internal errors, bare or behind a D1 prefix ("D1_ERROR: Failed to get session
  // commit token: internal error; reference = …", seen while a shard's file was locked from outside).
  { pattern: /\binternal error; reference = [a-z0-9]+/, source: "network" },
];

/** How deep `cause` chains are followed: the platform wraps once; anything deeper is ours. */
const MAX_CAUSES = 3;

function own(error: unknown, key: string): unknown {
  return typeof error === "object" && error !== null ? (error as Record<string, unknown>)[key] : undefined;
}

function messageOf(error: unknown): string {
  if (typeof error === "string") return error;
  const message = own(error, "message");
  return typeof message === "string" ? message : "";
}

function transientSource(error: unknown): TransientSource | undefined {
  let current = error;
  for (let depth = 0; depth < MAX_CAUSES && current !== undefined && current !== null; depth++) {
    const message = messageOf(current);
    if (DEFECT_MESSAGES.some((pattern) => pattern.test(message))) return undefined;
    // The platform's own mark on a Durable Object's infrastructure errors (never on ones its code threw).
    if (own(current, "retryable") === true || own(current, "overloaded") === true) return "durable_object";
    const known = TRANSIENT_MESSAGES.find(({ pattern }) => pattern.test(message));
    if (known !== undefined) return known.source;
    current = own(current, "cause");
  }
  return undefined;
}

const stringOrUndefined = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const shardReason = (value: unknown): ShardProblem["reason"] | undefined => (value === "shard_unbound" || value === "no_open_shard" || value === "split" ? value : undefined);

/** What `error` means to the client (see `ThrownFailure`); anything unrecognized is a `defect`. */
export function classifyThrown(error: unknown): ThrownFailure {
  if (own(error, "name") === SHARD_CONFIGURATION_ERROR) {
    return { kind: "shard_configuration", reason: shardReason(own(error, "reason")), shard: stringOrUndefined(own(error, "shard")), message: messageOf(error) };
  }
  const source = transientSource(error);
  return source === undefined ? { kind: "defect" } : { kind: "transient", source };
}

/**
 * The client's answer to a thrown failure a retry can fix: `unavailable` with the seconds to wait
 * (`http/errors` sends them as `Retry-After`), naming the shard for a misconfiguration. Undefined
 * for a defect, which the caller logs and answers `internal`.
 */
export function unavailableError(error: unknown): AppError | undefined {
  const failure = classifyThrown(error);
  switch (failure.kind) {
    case "defect":
      return undefined;
    case "transient":
      return {
        code: "unavailable",
        message: "a storage call failed or timed out; nothing is wrong with the request: retry it (an append that was kept answers its retry as a replay)",
        details: { reason: "storage", source: failure.source, retryAfterSeconds: TRANSIENT_RETRY_AFTER_SECONDS },
      };
    case "shard_configuration":
      return {
        code: "unavailable",
        message: `this deployment cannot serve the conversation until an operator changes its shards: ${failure.message}`,
        details: {
          reason: failure.reason ?? "shard_configuration",
          ...(failure.shard === undefined ? {} : { shard: failure.shard }),
          retryAfterSeconds: CONFIGURATION_RETRY_AFTER_SECONDS,
        },
      };
  }
}
