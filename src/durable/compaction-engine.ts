import { raiseIncident, recordIncident } from "../incidents";
import type { OpsText } from "../core/ops-text";
import { opsText } from "../core/ops-text";
import type { Boundary, ModelEvidence } from "../core/boundary";
import type { ContextSelection } from "../core/context-manifest";
import type { Result } from "../core/errors";
import type { EventInput, StoredEvent } from "../core/events";
import type { CompactionContent } from "../core/packet";
import type { ReplyHandoffWake, Wake } from "../core/wakeups";
import { wakeKey, watchdogStep } from "../core/wakeups";
import { mayPlan } from "../core/preflight-decider";
import type { StoredDeclaration } from "../storage/control/declarations";
import { ActiveReader } from "./active-history";
import { ChainBook } from "./chain-book";
import type { Append, EngineDeps } from "./engine-deps";
import type { HotChain } from "./hot-chain";
import type { WindowBound } from "./hot-chain";
import { holdPrefix, observe, observeProvisionally, overBound } from "./hot-chain";
import { behindIncident } from "./behind";
import { Planner } from "./planner";
import { ContextServer } from "./context-server";
import { ExtractionWatch } from "./extraction-watch";
import type { SettleError } from "../core/settle-checks";
import type { RunState } from "./settlement";
import { Settlement } from "./settlement";
import { Watchdogs } from "./watchdogs";
import type { Wakeups } from "./wakeups";

/**
 * The compaction side of a conversation's Durable Object: activation, preflight, planning and
 * settlement for every agent whose declaration serves this conversation, and the context served
 * from them. It only loads, decides and writes: the rules are pure (`core/preflight-decider`,
 * `core/packet-builder`, `core/context-manifest`, `core/compaction-plan`, `core/boundary`), the
 * hot state of each chain is `hot-chain`, and each reason to change has its part: loading and
 * activation (`chain-book`), planning (`planner`), settlement and backoff (`settlement`), serving
 * (`context-server`), plan watchdogs (`watchdogs`), owed extractions (`extraction-watch`).
 */

/** A chain as its conversation's object holds it: position, what is in flight, and its next deadlines. */
export interface ChainState {
  readonly epochId: string;
  /** False until the epoch's first eligible source turn (nothing is stored for it before). */
  readonly activated: boolean;
  readonly headId: string | null;
  readonly coveredThroughSeq: number;
  readonly activeChars: number;
  readonly openRunId: string | null;
  readonly openPlan: { readonly runId: string; readonly createdAt: string; readonly dispatches: number; readonly nextWakeAt: number | null } | null;
  /** When a backed-off chain plans again (epoch ms), if it is backing off. */
  readonly replanAt: number | null;
  readonly frontierStartSeq: number;
  readonly backoffUntil: number;
  /** Log events this object holds for the chain (its window), at most its bound (`windowBound`). */
  readonly heldEvents: number;
  /** Set while the chain is behind its log: the last sequence number it holds (`hot-chain` `behind`). */
  readonly behindThroughSeq: number | null;
}

/** A source's preflight decided before its write (`preflightAhead`): kept once the source is stored, or dropped. */
export interface Lookahead {
  readonly revision: number;
  readonly serving: StoredDeclaration[];
  /** A chain is due to plan: the caller writes the source alone, then `afterAppend` plans (and writes the skips). */
  readonly planDue: boolean;
  /** The source's skipped runs, in the order `afterAppend` writes them; written with the source only when no plan is due. */
  readonly skips: EventInput[];
  /** Undoes the chains' provisional observation of the source: it was not written. */
  readonly drop: () => void;
}

export class CompactionEngine {
  readonly #deps: EngineDeps;
  readonly #book: ChainBook;
  readonly #reader: ActiveReader;
  readonly #watchdogs: Watchdogs;
  readonly #extractions: ExtractionWatch;
  readonly #planner: Planner;
  readonly #settlement: Settlement;
  readonly #server: ContextServer;

  constructor(env: Env, shard: D1Database, conversationId: string, append: Append, wakes: Wakeups) {
    this.#deps = { env, shard, conversationId, append, wakes };
    this.#watchdogs = new Watchdogs(this.#deps);
    this.#book = new ChainBook(this.#deps, this.#watchdogs);
    this.#reader = new ActiveReader(this.#deps);
    this.#planner = new Planner(this.#deps, this.#reader, this.#watchdogs);
    this.#extractions = new ExtractionWatch(this.#deps);
    this.#settlement = new Settlement(this.#deps, this.#book, this.#planner, this.#watchdogs, this.#extractions);
    this.#server = new ContextServer(this.#deps, this.#book, this.#reader);
  }

  /** The declarations serving this conversation (the chain book's, read when it holds none). */
  async serving(): Promise<StoredDeclaration[]> {
    return this.#book.servingDeclarations();
  }

  /**
   * The declarations an append's preflight was decided for: held while fresh (`afterAppend` has
   * just confirmed them), else read. The reply hand-off right after the write names them.
   */
  async servingAfterAppend(): Promise<StoredDeclaration[]> {
    return this.#book.heldServingDeclarations()?.declarations ?? this.#book.servingDeclarations();
  }

  /** Runs after every durable append: preflight for each admitted new source, per compactor. */
  async afterAppend(appended: readonly StoredEvent[], now: Date): Promise<void> {
    if (!appended.some((event) => event.kind === "source")) {
      for (const chain of this.#book.heldChains()) observe(chain, appended);
      return;
    }
    const serving = await this.#book.servingDeclarations();
    const skips: EventInput[] = [];
    for (const declaration of serving) {
      // Only a source the agent admits is an eligible turn: it activates the epoch, and preflights.
      const eligible = appended.filter((event) => event.kind === "source" && (!event.sensitive || declaration.registration.agent.admitSensitive));
      const first = eligible[0];
      const chain = first === undefined ? this.#book.heldChain(declaration) : await this.#book.activatingChain(declaration, first.seq, now);
      if (chain === undefined) continue;
      // Each source is preflighted as it would have been appended alone: the batch is observed up
      // to it, so the ledger's running totals are its active size and a batch of n costs n single
      // preflights, not n folds of the whole window.
      const due = new Set(eligible.map((event) => event.seq));
      const bound = this.#book.bound(declaration);
      for (const event of appended) {
        if (chain.behind !== undefined) break;
        observe(chain, [event]);
        if (overBound(chain, bound)) {
          await this.#fallBehind(chain, bound, now);
          break;
        }
        if (!due.has(event.seq) || chain.provisional || event.seq < chain.activation.activatingSeq) continue;
        await this.#planner.preflight(chain, event.seq, now, skips);
      }
      // Behind (just now, or found so when it was read): it plans from the part it holds whenever it may.
      if (chain.behind !== undefined && !chain.provisional) {
        await this.#planner.flushSkips(skips);
        await this.#planner.resume(chain, now);
      }
    }
    await this.#planner.flushSkips(skips);
  }

  /**
   * The chain's uncovered history outgrew what its object may hold (`windowBound`): it keeps the
   * oldest part and is behind from here on — no preflight for what it does not hold, its context
   * refused (`ContextServer`) — until boundaries cover enough for it to read the log to its end
   * again (`ChainBook.readOn`). One incident says so for as long as it lasts.
   */
  async #fallBehind(chain: HotChain, bound: WindowBound, now: Date): Promise<void> {
    // A chain not yet activated stores nothing and plans nothing: it is let go of, and the next
    // read computes its frontier again (`ChainBook.servedChain`), a trigger's worth of the newest turns.
    if (chain.provisional) return this.#book.release(chain);
    holdPrefix(chain, bound);
    this.#server.fellBehind(chain.declaration.agentId);
    await raiseIncident(this.#deps.env, behindIncident(this.#deps.conversationId, chain, bound, now));
  }

  /**
   * Preflight of one source before it is written, for the one-round-trip append: from the serving
   * declarations this object holds and each one's hot chain, exactly as `afterAppend` would decide
   * it once the source is durable. Undefined when the object does not hold what that needs (the
   * declarations, and an activated chain for each one the source is eligible for); nothing has
   * changed then. Otherwise a `Lookahead`: every held chain has observed `source` provisionally,
   * and the caller keeps that once the source is written at its sequence number, or calls `drop`,
   * which undoes it exactly (a throw here has already undone it). `skips` are its skipped runs and
   * `planDue` whether a chain is due to plan. `revision` is the declarations' revision they are as of.
   */
  async preflightAhead(source: StoredEvent, now: Date): Promise<Lookahead | undefined> {
    const held = this.#book.heldServingDeclarations();
    if (held === undefined) return undefined;
    const chains: { chain: HotChain; eligible: boolean }[] = [];
    for (const declaration of held.declarations) {
      const eligible = !source.sensitive || declaration.registration.agent.admitSensitive;
      const chain = this.#book.heldChain(declaration);
      if (eligible && (chain === undefined || chain.provisional)) return undefined;
      if (chain !== undefined) chains.push({ chain, eligible });
    }
    const undo: (() => void)[] = [];
    const drop = (): void => {
      for (const step of undo.splice(0).reverse()) step();
    };
    const skips: EventInput[] = [];
    let planDue = false;
    try {
      for (const { chain, eligible } of chains) {
        undo.push(observeProvisionally(chain, [source]));
        // A chain this source would put behind, or one behind that may plan, is decided after the write (`afterAppend`).
        const behindMayPlan = chain.behind !== undefined && !chain.provisional && mayPlan(chain.openPlan !== undefined, chain.backoffUntil, now.getTime());
        if (behindMayPlan || (chain.behind === undefined && overBound(chain, this.#book.bound(chain.declaration)))) {
          drop();
          return undefined;
        }
        if (!eligible || chain.behind !== undefined || source.seq < chain.activation.activatingSeq) continue;
        const decision = await this.#planner.decide(chain, source.seq, now);
        if (decision.action === "skip") skips.push(decision.event);
        else planDue = true;
      }
    } catch (error) {
      drop();
      throw error;
    }
    return { revision: held.revision, serving: held.declarations, planDue, skips, drop };
  }

  /**
   * A due deadline (`core/wakeups`), for the chain it names and no other: nothing here activates an
   * epoch, so an agent that never saw an eligible turn in this conversation is never woken in it.
   * The handler leaves the wake deleted or re-armed later, never due.
   */
  async onWake(key: string, wake: Exclude<Wake, ReplyHandoffWake>, now: Date): Promise<void> {
    // An owed extraction outlives its chain's epoch and declaration: it needs neither.
    if (wake.kind === "extraction") return this.#extractions.onWake(key, wake, now);
    const { wakes } = this.#deps;
    const serving = await this.#book.servingDeclarations();
    if (wake.kind === "catch_up") {
      await wakes.delete(key);
      for (const declaration of serving) {
        const chain = await this.#book.activatedChain(declaration, now);
        if (chain !== undefined) await this.#planner.resume(chain, now);
      }
      return;
    }
    const declaration = serving.find((d) => d.agentId === wake.agentId && d.epoch.id === wake.epochId);
    const chain = declaration === undefined ? undefined : await this.#book.activatedChain(declaration, now);
    if (chain === undefined) {
      // A retired epoch, a disabled agent, or one no longer serving here: nothing is pending for it.
      await wakes.delete(key);
      return;
    }
    if (wake.kind === "replan") {
      await wakes.delete(key);
      chain.backoffUntil = 0;
      await this.#planner.resume(chain, now);
      return;
    }
    const plan = chain.openPlan;
    const step = watchdogStep(wake, plan?.runId, now.getTime(), this.#watchdogs.liveness());
    if (step.action === "drop" || plan === undefined) {
      await wakes.delete(key);
      await this.#watchdogs.ensure(chain, now);
      return;
    }
    if (step.stalled) {
      await recordIncident(this.#deps.env, {
        conversationId: this.#deps.conversationId,
        agentId: plan.agentId,
        runId: plan.runId,
        kind: "compaction_stalled",
        code: "plan_stalled",
        message: opsText`plan open ${Math.round((now.getTime() - wake.planCreatedAt) / 1000)} s with no boundary; its job was sent ${wake.dispatches} time(s) and is being sent again`,
        createdAt: now.toISOString(),
      });
    }
    await wakes.put(key, step.next);
    await this.#planner.send(chain, plan);
  }

  /**
   * An alarm with no deadline behind it was set by a version that kept none: every chain already
   * active here gets the watchdog its open plan lacks (it activates nothing, plans nothing).
   */
  async adoptLegacyAlarm(now: Date): Promise<void> {
    for (const declaration of await this.#book.servingDeclarations()) {
      const chain = await this.#book.activatedChain(declaration, now);
      if (chain !== undefined) await this.#watchdogs.ensure(chain, now);
    }
  }

  settle(runId: string, content: CompactionContent, model: ModelEvidence, packet: string, now: Date): Promise<Result<Boundary, { code: SettleError; message: string }>> {
    return this.#reloadingOnFailure(() => this.#settlement.settle(runId, content, model, packet, now));
  }

  recordFailure(runId: string, attempt: number, code: string, message: string, now: Date, delivery?: string): Promise<void> {
    return this.#settlement.recordFailure(runId, attempt, code, message, now, delivery);
  }

  runState(runId: string, now: Date): Promise<RunState> {
    return this.#settlement.runState(runId, now);
  }

  abandon(runId: string, reason: OpsText, now: Date): Promise<void> {
    return this.#reloadingOnFailure(() => this.#settlement.abandon(runId, reason, now));
  }

  /**
   * A settlement step that failed may have committed (a lost answer) or stopped between a write
   * and the hot state that mirrors it: the chains are read from D1 again on the next call, so a
   * retry meets D1's state, never a half-applied copy of it.
   */
  async #reloadingOnFailure<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      this.#book.forget();
      throw error;
    }
  }

  selectContext(agentId: string, now: Date, asOfSeq?: number, query?: string, scopes?: readonly string[]): Promise<Result<ContextSelection>> {
    return this.#server.select(agentId, now, asOfSeq, query, scopes);
  }

  /** What the chain looks like to this object (for inspection and tests). */
  async describe(agentId: string, now: Date): Promise<ChainState | undefined> {
    const declaration = (await this.#book.servingDeclarations()).find((d) => d.agentId === agentId);
    if (declaration === undefined) return undefined;
    const chain = await this.#book.servedChain(declaration, now);
    const { wakes } = this.#deps;
    const watchdog = chain.openPlan === undefined ? undefined : await wakes.get(wakeKey.watchdog(agentId));
    const replan = await wakes.get(wakeKey.replan(agentId));
    const open = chain.openPlan;
    return {
      activated: !chain.provisional,
      openPlan:
        open === undefined
          ? null
          : {
              runId: open.runId,
              createdAt: open.createdAt,
              dispatches: watchdog?.kind === "plan_watchdog" && watchdog.runId === open.runId ? watchdog.dispatches : 1,
              nextWakeAt: watchdog === undefined ? null : watchdog.at,
            },
      replanAt: replan === undefined ? null : replan.at,
      epochId: declaration.epoch.id,
      headId: chain.head?.body.id ?? null,
      coveredThroughSeq: chain.head?.coveredThroughSeq ?? 0,
      activeChars: (await this.#reader.active(chain)).activeChars,
      openRunId: chain.openPlan?.runId ?? null,
      frontierStartSeq: chain.activation.startSeq,
      backoffUntil: chain.backoffUntil,
      heldEvents: chain.window.length,
      behindThroughSeq: chain.behind ?? null,
    };
  }
}
