import type { HashedInput, PlannedInsert } from "../core/append";
import { decideAppend } from "../core/append";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import type { EventInput, StoredEvent } from "../core/events";
import { eventHash } from "../core/events";
import { readEventsByKeys, readHead } from "../storage/shard/events";
import { insertEvents } from "../storage/shard/log-writer";
import type { ObjectPlacement } from "./placement";
import type { Wakeups } from "./wakeups";
import { catchUpSoon } from "./wakeups";

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

/** Runs a single new source's preflight decided before its write, under the declarations' `revision`. */
export interface DecidedRuns {
  readonly runs: readonly EventInput[];
  readonly revision: number;
}

export interface AppendOptions {
  /** Statements that must commit with the new events or not at all (a boundary with its receipt). */
  readonly together?: readonly D1PreparedStatement[] | undefined;
  /** When the new events are recorded (default: when they are written). */
  readonly recordedAt?: string;
  /**
   * What must be kept before the new events are written: it hears the planned rows and their
   * recorded time (a throw writes nothing). For a single new source it may answer the runs its
   * preflight decided, written with it and only if it is (`storage/shard/log-writer` `insertEvents`).
   */
  readonly beforeWrite?: (planned: readonly PlannedInsert[], recordedAt: string) => Promise<DecidedRuns | undefined>;
}

/** An append as the log wrote it: the answer, and what became of the runs written with it. */
export interface LogWrite extends AppendResponse {
  /** How many of the decided runs were written, and the declarations' revision the write saw. */
  readonly followers?: { readonly written: number; readonly revision: number };
}

/**
 * The conversation's log as its object writes it: the high-water mark it holds (read from D1 when
 * it does not, `forget` after any write whose outcome is unknown) and the keys it wrote lately.
 * Every write is decided by `core/append` against what D1 returned, so a stale mark can only make
 * a write fail (the gap-free trigger refuses it), never misplace one.
 */
export class EventLog {
  #lastSeq: number | undefined;
  /** The placement's moves when the mark was read: a mark read from another shard is not this one's. */
  #markMoves = 0;
  readonly #recentKeys = new Set<string>();

  /** Used only once the object is bound (`placement`); a write whose outcome is unknown schedules a catch-up on `wakes`. */
  constructor(
    private readonly placement: ObjectPlacement,
    private readonly wakes: Wakeups,
  ) {}

  /** The mark is read again on the next write: a write's outcome is unknown, or the shard changed. */
  forget(): void {
    this.#lastSeq = undefined;
  }

  /** Whether this object wrote `key` lately: a source under it is most likely a retry. */
  wroteLately(key: string): boolean {
    return this.#recentKeys.has(key);
  }

  async head(): Promise<number> {
    if (this.#lastSeq === undefined || this.#markMoves !== this.placement.moves) {
      this.#markMoves = this.placement.moves;
      this.#lastSeq = await readHead(this.placement.db(), this.placement.conversationId ?? "");
    }
    return this.#lastSeq;
  }

  /** Events this object wrote, through `lastSeq`. */
  #wrote(lastSeq: number, keys: readonly string[]): void {
    this.#lastSeq = lastSeq;
    this.#remember(keys);
  }

  /**
   * Appends in order, all or nothing. A single append is written optimistically (one D1 round
   * trip); a batch, or an append whose expectation failed, first reads which keys exist. A write
   * whose outcome is unknown (its answer may be lost after the commit) makes the mark be read
   * again and bookkeeping catch up, in case the retry finds a replay; then it is thrown.
   */
  async append(request: AppendRequest, options: AppendOptions = {}): Promise<Result<LogWrite>> {
    try {
      return await this.#append(request, options);
    } catch (error) {
      this.forget();
      await catchUpSoon(this.wakes, request.conversationId, Date.now());
      throw error;
    }
  }

  /**
   * The compaction engine's bookkeeping writes (`engine-deps` `Append`): runs, plans, boundaries.
   * A conversation only read so far is placed first; its engine read the shard reads looked in,
   * which is the one placement picks unless the open shards changed, and then nothing is written.
   */
  async bookkeeping(conversationId: string, events: readonly EventInput[], together?: readonly D1PreparedStatement[]): Promise<StoredEvent[]> {
    const moves = this.placement.moves;
    await this.placement.bindOrThrow(conversationId, "write");
    if (this.placement.moves !== moves) throw new Error("the conversation was placed on another shard than it was read from; its state is read again");
    const appended = await this.append({ conversationId, events }, { together });
    if (!appended.ok) throw new Error(`compaction bookkeeping append failed: ${appended.error.code} ${appended.error.message}`);
    return appended.value.results.map((r) => r.event);
  }

  async #append({ conversationId, events, expectedSeq }: AppendRequest, { together = [], recordedAt, beforeWrite }: AppendOptions): Promise<Result<LogWrite>> {
    const db = this.placement.db();
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
    let followers: LogWrite["followers"];
    const { inserts, lastSeq: newLastSeq } = decision.value;
    if (inserts.length > 0) {
      const at = recordedAt ?? new Date().toISOString();
      const decided = await beforeWrite?.(inserts, at);
      const runs = (decided?.runs ?? []).map((input, i) => ({ input, hash: eventHash(conversationId, input), seq: newLastSeq + 1 + i }));
      const written = await insertEvents(db, conversationId, inserts, at, { together, followers: decided === undefined ? undefined : { runs, revision: decided.revision } });
      rows = new Map([...existing, ...written.rows]);
      if (decided !== undefined) followers = { written: written.applied.slice(inserts.length).filter(Boolean).length, revision: written.revision ?? decided.revision };
      if (written.applied.slice(0, inserts.length).some((applied) => !applied)) {
        // Only a single optimistic append can meet an existing key here: nothing was written, and
        // the row D1 returned decides between a replay and a conflict.
        const replay = decideAppend(items, rows, lastSeq, expectedSeq);
        if (!replay.ok) return replay;
        if (replay.value.inserts.length > 0) return fail("internal", "the log changed under a serialized append");
        decision = replay;
      }
    }
    this.#wrote(decision.value.lastSeq + (followers?.written ?? 0), decision.value.inserts.map((insert) => insert.input.idempotencyKey));

    const results: AppendedEvent[] = [];
    for (const [index, outcome] of decision.value.outcomes.entries()) {
      const event = rows.get(keys[index] ?? "");
      if (event === undefined || event.seq !== outcome.seq) return fail("internal", "appended event not found in the log");
      results.push({ event, duplicate: outcome.duplicate });
    }
    return ok({ results, lastSeq: decision.value.lastSeq, ...(followers === undefined ? {} : { followers }) });
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
