import { compactionBackoffBaseSeconds } from "../config";
import { recordIncident } from "../incidents";
import type { Boundary, ModelEvidence } from "../core/boundary";
import { buildBoundary } from "../core/boundary";
import { compactorRunEvent, failedAttemptEvent } from "../core/compactor-runs";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import { hashCanonical } from "../core/hash";
import type { CompactionContent, Packet } from "../core/packet";
import { packetSchema } from "../core/packet";
import type { SettleError, SettleRefusal } from "../core/settle-checks";
import { checkAnchor, checkPlanCurrent, checkPlanEpoch, checkPlanExists, settleError } from "../core/settle-checks";
import { replanWake, wakeKey } from "../core/wakeups";
import { insertBoundaryStatement, readBoundaryByRun } from "../storage/compaction-store-boundaries";
import type { StoredDeclaration } from "../storage/compaction-store-declarations";
import type { PlanRecord } from "../storage/compaction-store-plans";
import { countAbandonedPlans, planAbandoned, readPlan } from "../storage/compaction-store-plans";
import { readChainAnchor } from "../storage/context-store";
import { readDocument } from "../storage/document-store";
import type { ChainBook } from "./chain-book";
import type { EngineDeps } from "./engine-deps";
import type { HotChain } from "./hot-chain";
import { advanceHead, latestSource } from "./hot-chain";
import type { Planner } from "./planner";
import type { Watchdogs } from "./watchdogs";

type Settled = Result<Boundary, { code: SettleError; message: string }>;

const refuse = (refusal: SettleRefusal): { ok: false; error: { code: SettleError; message: string } } => ({ ok: false, error: settleError(refusal) });

/**
 * Settlement and backoff: a compactor's validated output becomes the chain's next boundary only
 * for the current plan of the current epoch whose previous boundary is still the head; failed
 * attempts are private evidence; a plan whose retries are exhausted is closed and the chain backs
 * off exponentially before it plans again.
 */
export class Settlement {
  constructor(
    private readonly deps: EngineDeps,
    private readonly book: ChainBook,
    private readonly planner: Planner,
    private readonly watchdogs: Watchdogs,
  ) {}

  async settle(runId: string, content: CompactionContent, model: ModelEvidence, now: Date): Promise<Settled> {
    const { env, shard } = this.deps;
    const existing = await readBoundaryByRun(shard, runId);
    if (existing !== undefined) return ok({ body: existing.body, hash: existing.hash });
    const current = await this.#currentPlan(runId, now);
    if (!current.ok) return current;
    const { plan, declaration, chain } = current.value;
    const read = await readDocument(env.DOCUMENTS, plan.packetKey, plan.packetHash);
    if (!read.ok) return refuse({ reason: "packet_unreadable", detail: read.reason });
    const packet = packetSchema.parse(JSON.parse(read.text) as unknown);
    const boundary = buildBoundary({
      id: `bnd_${runId.replace(/^cmp_/, "")}`,
      position: (chain.head?.position ?? 0) + 1,
      packet,
      packetKey: plan.packetKey,
      packetHash: plan.packetHash,
      content,
      model,
      createdAt: now.toISOString(),
    });
    await this.#store(declaration, plan, packet, boundary, content, model);
    advanceHead(chain, await readBoundaryByRun(shard, runId), boundary.body.coveredThrough.seq);
    await this.watchdogs.drop(plan.agentId, runId);
    // Messages that arrived while this run was in flight may already call for the next one.
    const latest = latestSource(chain);
    if (latest !== undefined) await this.planner.planIfDue(chain, latest.seq, now);
    return ok(boundary);
  }

  /** The plan of `runId` if it is its chain's current one and follows the head the log anchors (`core/settle-checks`). */
  async #currentPlan(runId: string, now: Date): Promise<Result<{ plan: PlanRecord; declaration: StoredDeclaration; chain: HotChain }, { code: SettleError; message: string }>> {
    const { env, shard, conversationId } = this.deps;
    const plan = checkPlanExists(runId, await readPlan(shard, runId), conversationId);
    if (!plan.ok) return refuse(plan.error);
    const declaration = checkPlanEpoch(plan.value, (await this.book.serving()).find((d) => d.agentId === plan.value.agentId));
    if (!declaration.ok) return refuse(declaration.error);
    const chain = checkPlanCurrent(plan.value, await this.book.chain(declaration.value, now));
    if (!chain.ok) return refuse(chain.error);
    const unanchored = checkAnchor(plan.value, await readChainAnchor(shard, conversationId, plan.value.epochId), chain.value.head?.hash);
    if (unanchored !== undefined) {
      const refusal = settleError(unanchored);
      await recordIncident(env, { conversationId, agentId: plan.value.agentId, runId, kind: "resolver_failure", code: "missing_link", message: refusal.message, createdAt: now.toISOString() });
      return { ok: false, error: refusal };
    }
    return ok({ plan: plan.value, declaration: declaration.value, chain: chain.value });
  }

  /**
   * One transaction: the boundary row and its completed-run receipt exist together or not at all.
   * The UNIQUE (chain, epoch, previous_id) constraint refuses a second successor: a fork cannot be stored.
   */
  async #store(declaration: StoredDeclaration, plan: PlanRecord, packet: Packet, boundary: Boundary, content: CompactionContent, model: ModelEvidence): Promise<void> {
    const { shard, conversationId, append } = this.deps;
    const detail = {
      boundaryId: boundary.body.id,
      coveredThroughSeq: boundary.body.coveredThrough.seq,
      inputChars: packet.frozen.chars,
      summaryChars: content.summary.length,
      latencyMs: model.latencyMs,
      provider: model.provider,
    };
    const anchor = { epochId: plan.epochId, position: boundary.body.position, boundaryId: boundary.body.id, boundaryHash: boundary.hash, contentHash: hashCanonical(boundary.body.content) };
    const event = compactorRunEvent(declaration.registration.compactor.id, plan.runId, "completed", {
      detail,
      model: model.model,
      ...(model.usage === null ? {} : { usage: model.usage }),
      anchor,
    });
    await append([event], [insertBoundaryStatement(shard, conversationId, plan.agentId, plan.epochId, boundary)]);
  }

  /** A failed attempt: private evidence (a failed run event and an incident), never a chat message. */
  async recordFailure(runId: string, attempt: number, code: string, message: string, now: Date): Promise<void> {
    const { env, shard, conversationId } = this.deps;
    const plan = await readPlan(shard, runId);
    if (plan === undefined || plan.conversationId !== conversationId) return;
    const declaration = (await this.book.serving()).find((d) => d.agentId === plan.agentId);
    const compactorId = declaration?.registration.compactor.id ?? `${plan.agentId}.compactor`;
    await this.deps.append([failedAttemptEvent(compactorId, runId, attempt, code, message)]);
    await recordIncident(env, {
      conversationId,
      agentId: plan.agentId,
      runId,
      kind: "compactor_failure",
      code: code.slice(0, 64),
      message: `attempt ${attempt}: ${message.slice(0, 900)}`,
      createdAt: now.toISOString(),
    });
  }

  /** Retries are exhausted: close the plan, back off exponentially, and let the alarm re-plan. */
  async abandon(runId: string, reason: string, now: Date): Promise<void> {
    const { env, shard, conversationId, wakes } = this.deps;
    const plan = await readPlan(shard, runId);
    if (plan === undefined || plan.conversationId !== conversationId) return;
    if ((await readBoundaryByRun(shard, runId)) !== undefined) return;
    // A plan whose job the watchdog re-sent can be dead-lettered once per copy: it is closed once.
    if (await planAbandoned(shard, runId)) return;
    await recordIncident(env, {
      conversationId,
      agentId: plan.agentId,
      runId,
      kind: "compactor_abandoned",
      code: "retries_exhausted",
      message: reason.slice(0, 1_000),
      createdAt: now.toISOString(),
    });
    await this.watchdogs.drop(plan.agentId, runId);
    // The chain is read from D1 when this object has not held it since it woke: the re-plan must
    // not depend on the object having stayed in memory since the plan was made.
    const declaration = (await this.book.serving()).find((d) => d.agentId === plan.agentId && d.epoch.id === plan.epochId);
    const chain = declaration === undefined ? undefined : await this.book.chain(declaration, now);
    if (chain === undefined) return;
    if (chain.openPlan?.runId === runId) chain.openPlan = undefined;
    if (chain.openPlan !== undefined) return;
    const failures = await countAbandonedPlans(shard, conversationId, plan.agentId, plan.epochId, chain.head?.body.id ?? "");
    const wake = replanWake(plan.agentId, plan.epochId, Math.max(1, failures), compactionBackoffBaseSeconds(env) * 1_000, now.getTime());
    chain.backoffUntil = wake.at;
    await wakes.put(wakeKey.replan(plan.agentId), wake);
  }
}
