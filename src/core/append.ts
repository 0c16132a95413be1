import type { EventInput } from "./events";
import type { AppError, Result } from "./errors";
import { fail, ok } from "./errors";

/**
 * The append decider: given what the log already holds for the incoming idempotency keys and its
 * current head, decide which events are new (and their sequence numbers) and which are replays.
 * Pure: the Durable Object feeds it what D1 said and writes what it decided.
 *
 * - same key, same payload hash → the original event, nothing written;
 * - same key, another payload → `idempotency_conflict`, nothing written (for the whole batch);
 * - `expectedSeq` set and the head moved → `sequence_conflict` with the current head, unless every
 *   event is a replay (a retry of a request that already succeeded gets its original answer).
 */

export interface HashedInput {
  readonly input: EventInput;
  readonly hash: string;
}

export interface ExistingEvent {
  readonly seq: number;
  readonly hash: string;
}

export interface PlannedInsert extends HashedInput {
  readonly seq: number;
}

export type AppendOutcome = { readonly seq: number; readonly duplicate: boolean };

export interface AppendDecision {
  /** One per input, in input order. */
  readonly outcomes: readonly AppendOutcome[];
  readonly inserts: readonly PlannedInsert[];
  readonly lastSeq: number;
}

export function decideAppend(
  items: readonly HashedInput[],
  existing: ReadonlyMap<string, ExistingEvent>,
  lastSeq: number,
  expectedSeq: number | undefined,
): Result<AppendDecision> {
  const known = new Map(existing);
  const outcomes: AppendOutcome[] = [];
  const inserts: PlannedInsert[] = [];
  let next = lastSeq;
  for (const [index, item] of items.entries()) {
    const key = item.input.idempotencyKey;
    const prior = known.get(key);
    if (prior !== undefined) {
      if (prior.hash !== item.hash) return conflict(key, index, prior);
      outcomes.push({ seq: prior.seq, duplicate: true });
      continue;
    }
    next += 1;
    const planned = { ...item, seq: next };
    known.set(key, planned);
    inserts.push(planned);
    outcomes.push({ seq: next, duplicate: false });
  }
  if (inserts.length > 0 && expectedSeq !== undefined && expectedSeq !== lastSeq) {
    return fail("sequence_conflict", `expected the conversation at sequence ${expectedSeq}, it is at ${lastSeq}`, {
      expectedSeq,
      currentSeq: lastSeq,
    });
  }
  return ok({ outcomes, inserts, lastSeq: next });
}

function conflict(key: string, index: number, prior: ExistingEvent): { ok: false; error: AppError } {
  return fail("idempotency_conflict", `idempotency key ${JSON.stringify(key)} was already used for a different event`, {
    idempotencyKey: key,
    index,
    existingSeq: prior.seq,
  });
}
