import type { HashedInput, PlannedInsert } from "../core/append";
import { decideAppend } from "../core/append";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import type { EventInput, StoredEvent } from "../core/events";
import { eventHash } from "../core/events";
import { insertEvents, readEventsByKeys, readHead } from "../storage/shard/events";

/** Idempotency keys the object remembers writing, so a retry of one is not preflighted ahead. */
const RECENT_KEYS = 256;

export interface AppendRequest {
  readonly conversationId: string;
  readonly events: readonly EventInput[];
  readonly expectedSeq?: number | undefined;
}

export interface AppendedEvent {
  readonly event: StoredEvent;
  readonly duplicate: boolean;
}

export interface AppendResponse {
  readonly results: readonly AppendedEvent[];
  readonly lastSeq: number;
}

/**
 * The conversation's log as its object writes it: the high-water mark it holds (read from D1 when
 * it does not, `forget` after any write whose outcome is unknown) and the keys it wrote lately.
 * Every write is decided by `core/append` against what D1 returned, so a stale mark can only make
 * a write fail (the gap-free trigger refuses it), never misplace one.
 */
export class EventLog {
  #lastSeq: number | undefined;
  readonly #recentKeys = new Set<string>();

  /** `at`: the bound conversation and its shard database (called only once the object is bound). */
  constructor(private readonly at: () => { readonly conversationId: string; readonly db: D1Database }) {}

  /** The mark is read again on the next write: a write's outcome is unknown, or the shard changed. */
  forget(): void {
    this.#lastSeq = undefined;
  }

  /** Whether this object wrote `key` lately: a source under it is most likely a retry. */
  wroteLately(key: string): boolean {
    return this.#recentKeys.has(key);
  }

  async head(): Promise<number> {
    if (this.#lastSeq === undefined) {
      const { conversationId, db } = this.at();
      this.#lastSeq = await readHead(db, conversationId);
    }
    return this.#lastSeq;
  }

  /** Events written by another path (the one-round-trip source append) through `lastSeq`. */
  wrote(lastSeq: number, keys: readonly string[]): void {
    this.#lastSeq = lastSeq;
    this.#remember(keys);
  }

  /**
   * Appends in order, all or nothing. A single append is written optimistically (one D1 round
   * trip); a batch, or an append whose expectation failed, first reads which keys exist.
   * `together`: statements that must commit with these events or not at all. `beforeWrite`: what
   * must be kept before the new events are written (it hears the planned rows; a throw writes nothing).
   */
  async append(
    { conversationId, events, expectedSeq }: AppendRequest,
    together: readonly D1PreparedStatement[] = [],
    beforeWrite?: (planned: readonly PlannedInsert[]) => Promise<void>,
  ): Promise<Result<AppendResponse>> {
    const { db } = this.at();
    const items: HashedInput[] = events.map((input) => ({ input, hash: eventHash(conversationId, input) }));
    const keys = items.map((item) => item.input.idempotencyKey);
    const lastSeq = await this.head();

    let existing = new Map<string, StoredEvent>();
    let decision = decideAppend(items, existing, lastSeq, expectedSeq);
    if (items.length > 1 || !decision.ok) {
      existing = await readEventsByKeys(db, conversationId, keys);
      decision = decideAppend(items, existing, lastSeq, expectedSeq);
    }
    if (!decision.ok) return decision;

    let rows: ReadonlyMap<string, StoredEvent> = existing;
    if (decision.value.inserts.length > 0) {
      await beforeWrite?.(decision.value.inserts);
      const written = await insertEvents(db, conversationId, decision.value.inserts, new Date().toISOString(), together);
      rows = new Map([...existing, ...written.rows]);
      if (written.applied.some((applied) => !applied)) {
        // Only a single optimistic append can meet an existing key here: nothing was written, and
        // the row D1 returned decides between a replay and a conflict.
        const replay = decideAppend(items, rows, lastSeq, expectedSeq);
        if (!replay.ok) return replay;
        if (replay.value.inserts.length > 0) return fail("internal", "the log changed under a serialized append");
        decision = replay;
      }
    }
    this.wrote(decision.value.lastSeq, decision.value.inserts.map((insert) => insert.input.idempotencyKey));

    const results: AppendedEvent[] = [];
    for (const [index, outcome] of decision.value.outcomes.entries()) {
      const event = rows.get(keys[index] ?? "");
      if (event === undefined || event.seq !== outcome.seq) return fail("internal", "appended event not found in the log");
      results.push({ event, duplicate: outcome.duplicate });
    }
    return ok({ results, lastSeq: decision.value.lastSeq });
  }

  /** A single append whose key the log already held: a replay of the same payload, or a conflict. */
  replayed(items: HashedInput[], rows: ReadonlyMap<string, StoredEvent>, lastSeq: number, expectedSeq: number | undefined): Result<AppendResponse> {
    const replay = decideAppend(items, rows, lastSeq, expectedSeq);
    if (!replay.ok) return replay;
    const [outcome] = replay.value.outcomes;
    const event = rows.get(items[0]?.input.idempotencyKey ?? "");
    if (replay.value.inserts.length > 0 || outcome === undefined || event === undefined || event.seq !== outcome.seq) return fail("internal", "the log changed under a serialized append");
    this.#lastSeq = replay.value.lastSeq;
    return ok({ results: [{ event, duplicate: true }], lastSeq: replay.value.lastSeq });
  }

  /** Keeps the newest `RECENT_KEYS` idempotency keys this object wrote. */
  #remember(keys: readonly string[]): void {
    for (const key of keys) {
      this.#recentKeys.delete(key);
      this.#recentKeys.add(key);
    }
    for (const key of this.#recentKeys) {
      if (this.#recentKeys.size <= RECENT_KEYS) break;
      this.#recentKeys.delete(key);
    }
  }
}
