import { DurableObject } from "cloudflare:workers";
import type { OpsText } from "../core/ops-text";
import type { PlannedInsert } from "../core/append";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import type { StoredEvent } from "../core/events";
import type { AppendPath } from "../core/log-line";
import { describeThrown } from "../core/thrown";
import { logger, attachMetrics } from "../logger";
import type { Boundary, ModelEvidence } from "../core/boundary";
import type { CompactionContent } from "../core/packet";
import { storedForm } from "../storage/shard/log-writer";
import type { StoredDeclaration } from "../storage/control/declarations";
import { raiseRevisionStatement } from "../storage/declaration-revision";
import type { ContextSelection } from "../core/context-manifest";
import type { SettleError } from "../core/settle-checks";
import type { Lookahead } from "./compaction-engine";
import { CompactionEngine } from "./compaction-engine";
import type { AppendOptions, AppendRequest, AppendResponse, DecidedRuns, LogWrite } from "./event-log";
import { EventLog } from "./event-log";
import { ReplyHandoff } from "./reply-handoff";
import { dueWakes } from "../core/wakeups";
import { wakeRetryBaseMs } from "../core/wake-retries";
import { ObjectPlacement } from "./placement";
import { WakeupBook, catchUpSoon, wakeFailed, wakeSucceeded } from "./wakeups";

/**
 * One instance per conversation. It serializes that conversation's writes, so sequence numbers
 * are assigned without gaps or races, and answers only after D1 has committed.
 *
 * Its state is a cache: the head sequence is read from D1 when the object wakes (after an
 * eviction or a failed write), never kept only here. D1 keeps the invariants too (unique keys,
 * gap-free sequences), so a stale cache can only make a write fail, never corrupt the log. A call
 * that fails leaves nothing half-set: the next one binds, reads or writes afresh.
 */
export class ConversationObject extends DurableObject<Env> {
  readonly #placement: ObjectPlacement;
  readonly #log: EventLog;
  #queue: Promise<unknown> = Promise.resolve();
  #engine: CompactionEngine | undefined;
  /** The placement's moves when the engine was made: an engine that read another shard is not used again. */
  #engineMoves = 0;
  readonly #wakes: WakeupBook;
  readonly #handoff: ReplyHandoff;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    attachMetrics(env);
    this.#wakes = new WakeupBook(ctx.storage);
    const object = this;
    this.#placement = new ObjectPlacement({
      get env() {
        return object.env;
      },
      storage: ctx.storage,
    });
    this.#log = new EventLog(this.#placement, this.#wakes);
    const placement = this.#placement;
    this.#handoff = new ReplyHandoff({
      get env() {
        return object.env;
      },
      wakes: this.#wakes,
      conversationId: () => placement.conversationId ?? "",
      db: () => placement.db(),
    });
  }

  /**
   * Appends in order; D1 outages reject the promise (nothing acknowledged, nothing half-written).
   * One path whatever is appended: the log decides what to write (`event-log`), and once the events
   * are durable every admitted new source gets its compaction preflight. A single source this
   * object is warm for is preflighted before its write and written with its outcome in the same
   * round trip (`#lookahead`); anything else is written first and preflighted after.
   */
  async append(request: AppendRequest): Promise<Result<AppendResponse>> {
    return this.#exclusive(async () => {
      const bound = await this.#placement.bind(request.conversationId, "write");
      if (!bound.ok) return bound;
      const now = new Date();
      let ahead: Lookahead | undefined;
      let handoff: string | undefined;
      const beforeWrite = async (planned: readonly PlannedInsert[], recordedAt: string): Promise<DecidedRuns | undefined> => {
        ahead = await this.#lookahead(request, planned, recordedAt, now);
        // Whoever replies is known only from a lookahead: without one, a hand-off is armed for any new source.
        const replying = ahead?.serving.some((declaration) => declaration.registration.agent.reply.mode !== "none");
        try {
          handoff = await this.#handoff.arm(planned, replying, now);
        } catch (error) {
          ahead?.drop();
          ahead = undefined;
          throw error;
        }
        return ahead === undefined ? undefined : { runs: ahead.planDue ? [] : ahead.skips, revision: ahead.revision };
      };
      const written = await this.#appendOrReset(request, { recordedAt: now.toISOString(), beforeWrite }, () => ahead !== undefined);
      const path: AppendPath = request.events.length > 1 ? "batch" : ahead === undefined ? "slow" : "fast";
      const fresh = written.ok ? written.value.results.filter((r) => !r.duplicate).map((r) => r.event) : [];
      if (fresh.length === 0) {
        // Nothing new was stored (a replay, a conflict): the chains let go of the source they saw ahead.
        ahead?.drop();
        if (handoff !== undefined) await this.#handoff.disarm(handoff);
      }
      if (!written.ok) return logAppend(request, path, written, now.getTime());
      const decided = fresh.length === 0 || ahead === undefined ? undefined : await this.#decidedWith(ahead, written.value.followers);
      await this.#afterWrite(request.conversationId, fresh, now, decided, handoff);
      return logAppend(request, path, ok({ results: written.value.results, lastSeq: written.value.lastSeq }), now.getTime());
    });
  }

  /**
   * The preflight of a single new source decided before its write, when this object holds the
   * declarations serving the conversation and their chains (`CompactionEngine.preflightAhead`): its
   * skipped runs go in the source's batch, written only if the source is and the declarations'
   * revision is still the one the object holds. Kept once the source is stored, dropped when it is
   * not; a write whose outcome is lost drops the whole engine, since it may have committed.
   */
  async #lookahead(request: AppendRequest, planned: readonly PlannedInsert[], recordedAt: string, now: Date): Promise<Lookahead | undefined> {
    const [input] = request.events;
    const [source] = planned;
    const engine = this.#heldEngine();
    // A key this object wrote lately is most likely a retry: it is written without letting the
    // chains see a source that will not be written.
    if (request.events.length !== 1 || source === undefined || input?.kind !== "source" || engine === undefined || this.#log.wroteLately(input.idempotencyKey)) return undefined;
    return engine.preflightAhead(storedForm(request.conversationId, source, recordedAt), now);
  }

  /**
   * A stored source's lookahead, kept: the serving declarations when every run it decided was
   * written with it under the revision it was decided under (the preflight is done), else
   * undefined (a moved revision, or a plan due: the preflight runs after the write).
   */
  async #decidedWith(ahead: Lookahead, followers: LogWrite["followers"]): Promise<readonly StoredDeclaration[] | undefined> {
    if (followers === undefined) return undefined;
    // The shard's copy of the revision behind the one the object confirmed with the control
    // database: a registration that did not get to raise it. This append's runs were not written,
    // and its preflight runs after the write.
    if (followers.revision < ahead.revision) await this.#raiseRevision(ahead.revision);
    return !ahead.planDue && followers.revision === ahead.revision && followers.written === ahead.skips.length ? ahead.serving : undefined;
  }

  /**
   * Raises the shard's copy of the declarations' revision, so the next source append's guard
   * passes. Best effort: it runs after a write that is kept, and when it fails the next source
   * append finds the copy behind again and raises it then (its runs fall back to the preflight
   * after the write, as this append's do).
   */
  async #raiseRevision(revision: number): Promise<void> {
    try {
      await raiseRevisionStatement(this.#placement.db(), revision).run();
    } catch (error) {
      logger.error("step.failed", { step: "raise_revision", conversationId: this.#placement.conversationId, revision, code: describeThrown(error).code });
    }
  }

  /**
   * After new events are durable: each admitted new source's preflight (unless `decided`, the
   * serving declarations of a source whose preflight was written with it), then the reply jobs the
   * armed `handoff` keeps for the agents serving the conversation (`durable/reply-handoff`: a
   * failure there leaves it for its deadline).
   */
  async #afterWrite(conversationId: string, fresh: readonly StoredEvent[], now: Date, decided?: readonly StoredDeclaration[], handoff?: string): Promise<void> {
    if (fresh.length === 0) return;
    try {
      if (decided === undefined) await this.#compaction(conversationId).afterAppend(fresh, now);
    } catch (error) {
      // The events are durable and acknowledged; compaction bookkeeping catches up from an
      // alarm rather than failing an append that already succeeded (a retry would only
      // replay it and skip the preflight).
      logger.error("step.failed", { step: "preflight", conversationId, code: describeThrown(error).code });
      this.#engine = undefined;
      await catchUpSoon(this.#wakes, conversationId, Date.now());
    }
    if (handoff !== undefined) await this.#handoff.handOff(handoff, async () => decided ?? (await this.#compaction(conversationId).servingAfterAppend()), fresh, now);
  }

  /**
   * The queue consumer's validated output for a planned run: becomes the next boundary, or is
   * refused. `packet`: the run's packet as the consumer read it, checked against the plan's hash.
   */
  async settle(
    conversationId: string,
    runId: string,
    content: CompactionContent,
    model: ModelEvidence,
    packet: string,
  ): Promise<Result<Boundary, { code: SettleError; message: string }>> {
    return this.#exclusive(async () => {
      await this.#placement.bindOrThrow(conversationId, "write");
      return this.#compaction(conversationId).settle(runId, content, model, packet, new Date());
    });
  }

  /** A failed attempt of a planned run; `delivery`: the queue message that made it (attempts are numbered per message). */
  async recordFailure(conversationId: string, runId: string, attempt: number, code: string, message: string, delivery?: string): Promise<void> {
    return this.#exclusive(async () => {
      await this.#placement.bindOrThrow(conversationId, "write");
      await this.#compaction(conversationId).recordFailure(runId, attempt, code, message, new Date(), delivery);
    });
  }

  /** Whether a planned run can still settle: the queue consumer asks before it pays for a model call. A read. */
  async runState(conversationId: string, runId: string) {
    return this.#exclusive(async () => {
      await this.#placement.bindOrThrow(conversationId, "read");
      return this.#compaction(conversationId).runState(runId, new Date());
    });
  }

  /** `reason`: what the operator reads (codes, ids, counts: core/ops-text.ts). */
  async abandon(conversationId: string, runId: string, reason: OpsText): Promise<void> {
    return this.#exclusive(async () => {
      await this.#placement.bindOrThrow(conversationId, "write");
      await this.#compaction(conversationId).abandon(runId, reason, new Date());
    });
  }

  /**
   * Context for an agent, served from this object's hot state (reads are serialized with writes);
   * `scopes`: the caller's, for recalled memory. A read: it places nothing (`#bind`).
   */
  async context(conversationId: string, agentId: string, asOfSeq?: number, query?: string, scopes?: readonly string[]): Promise<Result<ContextSelection>> {
    return this.#exclusive(async () => {
      const bound = await this.#placement.bind(conversationId, "read");
      if (!bound.ok) return bound;
      return this.#compaction(conversationId).selectContext(agentId, new Date(), asOfSeq, query, scopes);
    });
  }

  /** The agent's chain as this object holds it. A read: it places nothing (`#bind`). */
  async describeChain(conversationId: string, agentId: string) {
    return this.#exclusive(async () => {
      await this.#placement.bindOrThrow(conversationId, "read");
      return this.#compaction(conversationId).describe(agentId, new Date());
    });
  }

  /**
   * The one platform alarm serves every deadline in the object's storage (`durable/wakeups`): each
   * due one is handled on its own (one that fails is retried later and does not hold up the rest),
   * then the alarm is re-armed to the earliest that remains.
   */
  override async alarm(): Promise<void> {
    await this.#exclusive(async () => {
      const conversationId = this.#placement.conversationId ?? (await this.ctx.storage.get<string>("conversationId"));
      if (conversationId === undefined) return;
      await this.#placement.bindOrThrow(conversationId, "write");
      const now = new Date();
      const wakes = await this.#wakes.list();
      if (wakes.size === 0) await this.#compaction(conversationId).adoptLegacyAlarm(now);
      for (const [key, wake] of dueWakes(wakes, now.getTime())) {
        try {
          if (wake.kind === "reply_handoff") await this.#handoff.onWake(key, wake, () => this.#compaction(conversationId).serving());
          else await this.#compaction(conversationId).onWake(key, wake, now);
        } catch (error) {
          // Tried again with backoff; a streak of failures is one open `wake_failure` incident.
          logger.error("step.failed", { step: "wake", conversationId, kind: wake.kind, code: describeThrown(error).code });
          this.#engine = undefined;
          await wakeFailed(this.env, this.#wakes, conversationId, key, wake, error, now, wakeRetryBaseMs(wake));
          continue;
        }
        try {
          await wakeSucceeded(this.env, this.#wakes, conversationId, key, wake);
        } catch (error) {
          logger.error("step.failed", { step: "close_wake_streak", conversationId, kind: wake.kind, code: describeThrown(error).code });
        }
      }
      await this.#wakes.rearm();
    });
  }

  #compaction(conversationId: string): CompactionEngine {
    const log = this.#log;
    this.#engine = this.#heldEngine() ?? new CompactionEngine(this.env, this.#placement.db(), conversationId, (events, together) => log.bookkeeping(conversationId, events, together), this.#wakes);
    return this.#engine;
  }

  /**
   * The engine this object holds, unless it read the shard the conversation would have been placed
   * on before a write placed it elsewhere: that one is let go, never used again.
   */
  #heldEngine(): CompactionEngine | undefined {
    if (this.#engineMoves !== this.#placement.moves) {
      this.#engine = undefined;
      this.#engineMoves = this.#placement.moves;
    }
    return this.#engine;
  }

  /** Appends through the log; `sawAhead`: whether the chains observed the write ahead of it, then dropped with it when its outcome is unknown. */
  async #appendOrReset(request: AppendRequest, options: AppendOptions, sawAhead: () => boolean): Promise<Result<LogWrite>> {
    try {
      return await this.#log.append(request, options);
    } catch (error) {
      if (sawAhead()) this.#engine = undefined;
      throw error;
    }
  }

  #exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}

/** An append's log line, once it is answered: its path, how much it wrote, and how long it took. */
function logAppend(request: AppendRequest, path: AppendPath, result: Result<AppendResponse>, startedAt: number): Result<AppendResponse> {
  const fields = { conversationId: request.conversationId, path, events: request.events.length, ms: Date.now() - startedAt };
  if (result.ok) logger.info("append", { ...fields, outcome: "ok", written: result.value.results.filter((r) => !r.duplicate).length, lastSeq: result.value.lastSeq });
  else logger.info("append", { ...fields, outcome: "refused", written: 0, code: result.error.code });
  return result;
}
