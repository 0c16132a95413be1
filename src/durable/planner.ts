import { recordIncident } from "../incidents";
import { opsText } from "../core/ops-text";
import { logger } from "../logger";
import type { PlanFailure } from "../core/compaction-plan";
import { compactorRunEvent } from "../core/compactor-runs";
import type { EventInput } from "../core/events";
import { canonicalJson } from "../core/hash";
import type { Packet } from "../core/packet";
import { buildPacket, freezeSlice, sliceRecallText } from "../core/packet-builder";
import type { PreflightDecision } from "../core/preflight-decider";
import { compactionDue, decidePreflight, mayPlan, skippedRun } from "../core/preflight-decider";
import { wakeKey } from "../core/wakeups";
import type { PlanRecord } from "../storage/shard/plans";
import { insertPlanStatement, readPlan } from "../storage/shard/plans";
import { putDocument, readTrustedDocuments } from "../storage/r2/documents";
import { packetDocumentKey } from "../storage/r2/keys";
import type { CompactionJob } from "../core/jobs";
import { packetPages } from "../storage/served-memory";
import { compactionReader } from "../core/memory-privacy";
import type { ActiveReader } from "./active-history";
import type { EngineDeps } from "./engine-deps";
import type { HotChain } from "./hot-chain";
import { latestSource, windowThrough } from "./hot-chain";
import type { Watchdogs } from "./watchdogs";

const MAX_RECALLED_PAGES = 8;
/** At most this many skipped-run events per write (the API's own batch bound). */
const MAX_SKIPS_PER_WRITE = 100;

type PlanOutcome = "planned" | "failed" | "nothing_to_freeze";
type PlanFailureRecord = PlanFailure | { readonly code: "document_budget_exceeded" | "unknown_document"; readonly message: string };

/**
 * Preflight and planning: each admitted source is decided (`core/preflight-decider`); at the
 * trigger the slice is frozen and its packet built (`core/packet-builder`), written to R2, recorded
 * with its planned run, and its job queued. One compaction in flight per chain.
 */
export class Planner {
  constructor(
    private readonly deps: EngineDeps,
    private readonly reader: ActiveReader,
    private readonly watchdogs: Watchdogs,
  ) {}

  /**
   * The skipped-run events of one append are written together, in order: a batch of n sources
   * costs one write for its skips, not n. A plan flushes them first, so the log keeps each
   * source's outcome in source order.
   */
  async flushSkips(skips: EventInput[]): Promise<void> {
    while (skips.length > 0) await this.deps.append(skips.splice(0, MAX_SKIPS_PER_WRITE));
  }

  /** One admitted source: its skip is queued in `skips`, or the chain plans now. */
  async preflight(chain: HotChain, sourceSeq: number, now: Date, skips: EventInput[]): Promise<void> {
    const { decision, input } = await this.#decide(chain, sourceSeq, now);
    if (decision.action === "skip") {
      skips.push(decision.event);
      return;
    }
    await this.flushSkips(skips);
    if ((await this.plan(chain, sourceSeq, now)) === "nothing_to_freeze") skips.push(skippedRun(input, "nothing_to_freeze"));
  }

  /**
   * What preflight decides for the source at `sourceSeq` (which the chain has observed), writing
   * nothing: a skip to record, or a plan. The one-round-trip append decides with it before its write.
   */
  async decide(chain: HotChain, sourceSeq: number, now: Date): Promise<PreflightDecision> {
    return (await this.#decide(chain, sourceSeq, now)).decision;
  }

  async #decide(chain: HotChain, sourceSeq: number, now: Date) {
    const { compactor, agent } = chain.declaration.registration;
    const active = await this.reader.size(chain, sourceSeq);
    const input = { compactorId: compactor.id, sourceSeq, active, policy: compactor.policy, caps: agent.context };
    const decision = decidePreflight({ ...input, planOpen: chain.openPlan !== undefined, backoffUntil: chain.backoffUntil, now: now.getTime() });
    const reason = decision.action === "skip" ? decision.reason : undefined;
    logger.debug("preflight", { conversationId: this.deps.conversationId, agentId: agent.id, seq: sourceSeq, action: decision.action, reason, activeChars: active.chars });
    return { decision, input };
  }

  async planIfDue(chain: HotChain, sourceSeq: number, now: Date): Promise<void> {
    if (!mayPlan(chain.openPlan !== undefined, chain.backoffUntil, now.getTime())) return;
    const { compactor, agent } = chain.declaration.registration;
    // Nothing to freeze is not recorded here: no source arrived, and the next one's preflight says so.
    if (compactionDue(await this.reader.size(chain, sourceSeq), compactor.policy, agent.context)) await this.plan(chain, sourceSeq, now);
  }

  /** What the chain was waiting for, resumed: plan from the newest source if the trigger is reached. */
  async resume(chain: HotChain, now: Date): Promise<void> {
    const latest = latestSource(chain);
    if (latest !== undefined) await this.planIfDue(chain, latest.seq, now);
  }

  /**
   * Plans a compaction of the window as of `triggerSeq`, or records why it failed closed. When
   * every uncovered group already fits the tail — the chain is at the trigger only because of its
   * envelopes (a summary as large as the trigger minus the tail target) — there is nothing to
   * freeze: that is not a failure, and the caller records it as a skip (or nothing); the next run
   * is planned once the exact tail outgrows its target.
   */
  async plan(chain: HotChain, triggerSeq: number, now: Date): Promise<PlanOutcome> {
    const { declaration } = chain;
    const { agent, compactor } = declaration.registration;
    const started = Date.now();
    const { groups, amendments, envelopeChars, activeChars } = await this.reader.active(chain, triggerSeq);
    const slice = freezeSlice(groups, compactor.policy, agent.context);
    const runId = `cmp_${crypto.randomUUID()}`;
    if (!slice.ok) return slice.error.code === "nothing_to_freeze" ? "nothing_to_freeze" : this.#failed(chain, runId, triggerSeq, slice.error, now);
    // The subscribed documents go to the compactor whole, charged to the budget exactly as sent;
    // recalled pages share what is left.
    const documents = await readTrustedDocuments(this.deps.env.DOCUMENTS, agent);
    if (!documents.ok) return this.#failed(chain, runId, triggerSeq, documents.error, now);
    // The conversation's own extracted pages and the pages people wrote for the agent (core/memory-privacy).
    const reader = { ...compactionReader(this.deps.conversationId, agent.sources), agentId: agent.id };
    const memoryPages = await packetPages({ control: this.deps.env.DB, shard: this.deps.shard }, reader, sliceRecallText(slice.value), documents.value.pageChars, MAX_RECALLED_PAGES);
    const { activation, head } = chain;
    const packet = buildPacket({
      conversationId: this.deps.conversationId,
      declaration,
      runId,
      triggerSeq,
      frontier: { id: activation.frontierId, hash: activation.frontierHash, startSeq: activation.startSeq },
      head,
      amendments,
      slice: slice.value,
      window: windowThrough(chain, slice.value.frozen.at(-1)?.seq ?? chain.windowStart),
      memoryPages,
      documents: documents.value.documents,
      activeChars,
      envelopeChars,
      now,
    });
    await this.#commit(chain, packet, now);
    const { frozen } = packet;
    logger.info("plan", { conversationId: this.deps.conversationId, agentId: agent.id, runId, seq: triggerSeq, outcome: "planned", frozenTurns: frozen.turns.length, frozenChars: frozen.chars, ms: Date.now() - started });
    return "planned";
  }

  /** The packet is durable before anything can run from it; retries read the same bytes. */
  async #commit(chain: HotChain, packet: Packet, now: Date): Promise<void> {
    const { env, shard, conversationId, wakes, append } = this.deps;
    const { runId, agentId, triggerSeq, frozen, sizes } = packet;
    const packetKey = packetDocumentKey(conversationId, agentId, runId);
    const packetHash = await putDocument(env.DOCUMENTS, packetKey, canonicalJson(packet));
    const plan: PlanRecord = {
      runId,
      conversationId,
      agentId,
      epochId: packet.epoch.id,
      previousBoundaryId: packet.previousBoundary?.id ?? "",
      packetKey,
      packetHash,
      triggerSeq,
      throughSeq: frozen.throughSeq,
      createdAt: now.toISOString(),
    };
    // The watchdog is durable before the plan is (`Watchdogs.arm`).
    await this.watchdogs.arm(plan, now);
    await wakes.delete(wakeKey.replan(agentId));
    const detail = { triggerSeq, activeChars: sizes.preCompactionChars, frozenChars: frozen.chars, frozenTurns: frozen.turns.length, retainedTailChars: sizes.retainedTailChars, throughSeq: frozen.throughSeq };
    try {
      await append([compactorRunEvent(packet.compactorId, runId, "planned", { detail })], [insertPlanStatement(shard, plan)]);
    } catch (error) {
      // The write's outcome is unknown (its answer may be lost after the commit): D1 says whether
      // the plan is open, by its run id. A plan that committed is this chain's open plan, or the
      // next trigger would open a second one beside it.
      if ((await readPlan(shard, runId)) === undefined) throw error;
    }
    chain.openPlan = plan;
    chain.backoffUntil = 0;
    await this.send(chain, plan);
  }

  /** Queues the job naming the plan's packet (every dispatch of a plan names the same packet). */
  async send(chain: HotChain, plan: PlanRecord): Promise<void> {
    const { compactor } = chain.declaration.registration;
    const job: CompactionJob = {
      type: "compaction",
      conversationId: this.deps.conversationId,
      agentId: plan.agentId,
      runId: plan.runId,
      packetKey: plan.packetKey,
      packetHash: plan.packetHash,
      model: compactor.provider.model,
      profile: compactor.provider.profile,
    };
    await this.deps.env.JOB_QUEUE.send(job);
  }

  /** A plan that failed closed: a failed run event and an incident, never a split or a silent cut. */
  async #failed(chain: HotChain, runId: string, triggerSeq: number, failure: PlanFailureRecord, now: Date): Promise<"failed"> {
    const { declaration } = chain;
    logger.warn("plan", { conversationId: this.deps.conversationId, agentId: declaration.agentId, runId, seq: triggerSeq, outcome: "failed", code: failure.code });
    await this.deps.append([compactorRunEvent(declaration.registration.compactor.id, runId, "failed", { error: { code: failure.code, message: failure.message }, detail: { triggerSeq } })]);
    await recordIncident(this.deps.env, {
      conversationId: this.deps.conversationId,
      agentId: declaration.agentId,
      runId,
      kind: "plan_failure",
      code: failure.code,
      message: opsText`plan ${runId} failed closed at seq ${triggerSeq}: ${failure.code}`,
      detail: failure.message,
      createdAt: now.toISOString(),
    });
    return "failed";
  }
}
