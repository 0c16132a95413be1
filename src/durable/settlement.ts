import { compactionBackoffBaseSeconds } from "../config";
import { opsText } from "../core/ops-text";
import type { OpsText } from "../core/ops-text";
import { recordIncident } from "../incidents";
import { closeConditions, countFailedAttempts } from "../storage/shard/incidents";
import { MAX_PLAN_ATTEMPTS } from "../core/jobs";
import { logger } from "../logger";
import type { Boundary, ModelEvidence } from "../core/boundary";
import { buildBoundary } from "../core/boundary";
import { compactorRunEvent, failedAttemptEvent } from "../core/compactor-runs";
import type { Result } from "../core/errors";
import { ok } from "../core/errors";
import { hashCanonical } from "../core/hash";
import { describeThrown } from "../core/thrown";
import type { CompactionContent, Packet } from "../core/packet";
import type { SettleError, SettleRefusal } from "../core/settle-checks";
import { checkAnchor, checkPlanCurrent, checkPlanEpoch, checkPlanExists, settleError } from "../core/settle-checks";
import { replanWake, wakeKey } from "../core/wakeups";
import type { StoredBoundary } from "../storage/shard/boundaries";
import { insertBoundaryStatement, readBoundaryByRun, storedBoundary } from "../storage/shard/boundaries";
import type { StoredDeclaration } from "../storage/control/declarations";
import type { PlanRecord } from "../storage/shard/plans";
import { countAbandonedPlans, planAbandoned, readPlan } from "../storage/shard/plans";
import { readChainAnchor } from "../storage/shard/context-reads";
import { packetOf } from "../storage/r2/documents";
import type { ChainBook } from "./chain-book";
import type { EngineDeps } from "./engine-deps";
import type { ExtractionWatch } from "./extraction-watch";
import type { HotChain } from "./hot-chain";
import { advanceHead, latestSource } from "./hot-chain";
import type { Planner } from "./planner";
import type { Watchdogs } from "./watchdogs";
import { catchUpSoon } from "./wakeups";
import { BEHIND } from "./behind";


type Settled = Result<Boundary, { code: SettleError; message: string }>;

/**
 * Whether a planned run can still settle. One that cannot — it completed, it was abandoned, or it is
 * no longer its chain's current plan — is worth no model call: a copy of its job is acked unrun.
 * `attempts_exhausted`: its plan failed as often as one job's deliveries may try it (copies the
 * watchdog sent each retry on their own): the caller abandons it instead of paying for another.
 */
export type RunState = { readonly open: true } | { readonly open: false; readonly reason: "completed" | "abandoned" | "attempts_exhausted" | SettleError };


const refuse = (refusal: SettleRefusal): { ok: false; error: { code: SettleError; message: string } } => ({ ok: false, error: settleError(refusal) });

/**
 * Settlement and backoff: a compactor's validated output becomes the chain's next boundary only
 * for the current plan of the current epoch whose previous boundary is still the head; failed
 * attempts are private evidence; a plan whose retries are exhausted is closed and the chain backs
 * off exponentially before it plans again. Every boundary settles with the extraction it owes kept
 * by the object (`extraction-watch`) until the extraction is seen.
 */
export class Settlement {
  constructor(
    private readonly deps: EngineDeps,
    private readonly book: ChainBook,
    private readonly planner: Planner,
    private readonly watchdogs: Watchdogs,
    private readonly extractions: ExtractionWatch,
  ) {}

  /** `packetText`: the run's packet as the step read it; it must hash to what the plan recorded. */
  async settle(runId: string, content: CompactionContent, model: ModelEvidence, packetText: string, now: Date): Promise<Settled> {
    const { shard } = this.deps;
    const existing = await readBoundaryByRun(shard, runId);
    if (existing !== undefined) {
      // Settled before, perhaps by an attempt whose answer was lost: a chain held here that is
      // still behind it is read from D1 again, so the same boundary is what it serves too.
      this.book.forgetBehind(existing);
      return ok({ body: existing.body, hash: existing.hash });
    }
    const current = await this.#currentPlan(runId, now);
    if (!current.ok) return current;
    const { plan, declaration, chain } = current.value;
    const read = packetOf(packetText, plan.packetHash);
    if (!read.ok) return refuse({ reason: "packet_unreadable", detail: read.reason });
    const { packet } = read;
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
    // Before the boundary, as a plan's watchdog is before the plan: the consumer's one send of the
    // extraction job can fail, and nothing else would ever send it.
    await this.extractions.arm(declaration, runId, boundary.body.id, now);
    const stored = await this.#store(declaration, plan, packet, boundary, content, model);
    // The boundary is durable: from here on the run is settled, whatever else fails.
    try {
      await this.#advance(chain, stored, plan.agentId, now);
    } catch (error) {
      // The chain is read from D1 again (the system of record); the next source's preflight, or
      // the catch-up, plans what this did not get to.
      logger.error("step.failed", { step: "settle_bookkeeping", conversationId: this.deps.conversationId, agentId: plan.agentId, runId, code: describeThrown(error).code });
      this.book.forget();
      await catchUpSoon(this.deps.wakes, this.deps.conversationId, now.getTime());
    }
    return ok({ body: stored.body, hash: stored.hash });
  }

  /** The hot chain follows the boundary the shard holds for the run. */
  async #advance(chain: HotChain, head: StoredBoundary, agentId: string, now: Date): Promise<void> {
    advanceHead(chain, head, head.coveredThroughSeq);
    if (chain.behind !== undefined) {
      // What the boundary covered makes room: the chain reads on, and once it reaches the log's
      // end it holds its whole uncovered history again and its incident is over.
      await this.book.readOn(chain);
      if (chain.behind === undefined) await closeConditions(this.deps.shard, this.deps.conversationId, agentId, [BEHIND]);
    }
    await this.watchdogs.drop(agentId, head.runId);
    // Messages that arrived while this run was in flight may already call for the next one.
    const latest = latestSource(chain);
    if (latest !== undefined) await this.planner.planIfDue(chain, latest.seq, now);
  }

  /**
   * Whether `runId` can still settle, by the checks `settle` applies (`core/settle-checks`); a read
   * that writes nothing. The queue consumer asks before it pays for a model call, and `settle` asks
   * again when the output arrives, so a run that settled in between is still settled once.
   */
  async runState(runId: string, now: Date): Promise<RunState> {
    const settled = await this.#settledAs(runId);
    if (settled !== undefined) return { open: false, reason: settled };
    const current = await this.#plan(runId, now);
    if (!current.ok) return { open: false, reason: settleError(current.error).code };
    return (await countFailedAttempts(this.deps.shard, runId)) >= MAX_PLAN_ATTEMPTS ? { open: false, reason: "attempts_exhausted" } : { open: true };
  }

  /** How the run closed, if it did: a boundary names it, or a `compactor_abandoned` incident does. */
  async #settledAs(runId: string): Promise<"completed" | "abandoned" | undefined> {
    const { shard } = this.deps;
    if ((await readBoundaryByRun(shard, runId)) !== undefined) return "completed";
    return (await planAbandoned(shard, runId)) ? "abandoned" : undefined;
  }

  /** The plan of `runId` if it is its epoch's and its chain's current one. */
  async #plan(runId: string, now: Date): Promise<Result<{ plan: PlanRecord; declaration: StoredDeclaration; chain: HotChain }, SettleRefusal>> {
    const { shard, conversationId } = this.deps;
    const plan = checkPlanExists(runId, await readPlan(shard, runId), conversationId);
    if (!plan.ok) return plan;
    const declaration = checkPlanEpoch(plan.value, (await this.book.servingDeclarations()).find((d) => d.agentId === plan.value.agentId));
    if (!declaration.ok) return declaration;
    const chain = checkPlanCurrent(plan.value, await this.book.activatedChain(declaration.value, now));
    if (!chain.ok) return chain;
    return ok({ plan: plan.value, declaration: declaration.value, chain: chain.value });
  }

  /** The plan of `runId` if it is its chain's current one and follows the head the log anchors (`core/settle-checks`). */
  async #currentPlan(runId: string, now: Date): Promise<Result<{ plan: PlanRecord; declaration: StoredDeclaration; chain: HotChain }, { code: SettleError; message: string }>> {
    const { env, shard, conversationId } = this.deps;
    const current = await this.#plan(runId, now);
    if (!current.ok) return refuse(current.error);
    const { plan, chain } = current.value;
    const unanchored = checkAnchor(plan, await readChainAnchor(shard, conversationId, plan.epochId), chain.head?.hash);
    if (unanchored !== undefined) {
      const refusal = settleError(unanchored);
      await recordIncident(env, {
        conversationId,
        agentId: plan.agentId,
        runId,
        kind: "resolver_failure",
        code: "missing_link",
        message:
          unanchored.reason === "unanchored_head"
            ? opsText`the plan follows ${unanchored.previousBoundaryId || "(none)"}, the log's newest completed run settled ${unanchored.anchoredBoundaryId}`
            : opsText`the plan's head is not the one the log anchors: ${unanchored.reason}`,
        createdAt: now.toISOString(),
      });
      return { ok: false, error: refusal };
    }
    return current;
  }

  /**
   * One transaction: the boundary row and its completed-run receipt exist together or not at all.
   * The UNIQUE (chain, epoch, previous_id) constraint refuses a second successor: a fork cannot be
   * stored. Returns the run's boundary as the shard holds it: this one once its write committed;
   * when the write's outcome is unknown, the one read back (an attempt that interleaved with this
   * one may have stored its own).
   */
  async #store(declaration: StoredDeclaration, plan: PlanRecord, packet: Packet, boundary: Boundary, content: CompactionContent, model: ModelEvidence): Promise<StoredBoundary> {
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
    try {
      await append([event], [insertBoundaryStatement(shard, conversationId, plan.agentId, plan.epochId, boundary)]);
    } catch (error) {
      // The write's outcome is unknown (its answer may be lost after the commit): D1 says whether
      // the boundary is there. If it is not, nothing here changed and a retry settles afresh.
      const stored = await readBoundaryByRun(shard, plan.runId);
      if (stored === undefined) throw error;
      return stored;
    }
    return storedBoundary(boundary, plan.runId, plan.epochId);
  }

  /**
   * A failed attempt: private evidence (a failed run event and an incident), never a chat message.
   * `delivery` names the queue message that made it (its attempts are numbered per message). A
   * failure reported for a run that already settled — a copy of its job that lost the race to the
   * one that completed it, or outlived its abandonment — is no attempt of that run any more and
   * writes nothing: the log never shows `failed` after `completed`.
   */
  async recordFailure(runId: string, attempt: number, code: string, message: string, now: Date, delivery?: string): Promise<void> {
    const { env, shard, conversationId } = this.deps;
    const plan = await readPlan(shard, runId);
    if (plan === undefined || plan.conversationId !== conversationId) return;
    if ((await this.#settledAs(runId)) !== undefined) return;
    const declaration = (await this.book.servingDeclarations()).find((d) => d.agentId === plan.agentId);
    const compactorId = declaration?.registration.compactor.id ?? `${plan.agentId}.compactor`;
    await this.deps.append([failedAttemptEvent(compactorId, runId, attempt, code, message, {}, delivery)]);
    await recordIncident(env, {
      conversationId,
      agentId: plan.agentId,
      runId,
      kind: "compactor_failure",
      code: code.slice(0, 64),
      message: opsText`attempt ${attempt}: ${code.slice(0, 64)}`,
      detail: message,
      createdAt: now.toISOString(),
    });
  }

  /**
   * Retries are exhausted: close the plan, back off exponentially, and let the alarm re-plan. The
   * re-plan is armed before the abandonment is recorded, and armed again by every later call for
   * the plan: the record ends in the operator's notice, a send that can fail after the incident row
   * is written, and the dead letter's retry then finds the plan abandoned already.
   */
  async abandon(runId: string, reason: OpsText, now: Date): Promise<void> {
    const { env, shard, conversationId, wakes } = this.deps;
    const plan = await readPlan(shard, runId);
    if (plan === undefined || plan.conversationId !== conversationId) return;
    if ((await readBoundaryByRun(shard, runId)) !== undefined) return;
    // A plan whose job the watchdog re-sent can be dead-lettered once per copy: it is closed once.
    const recorded = await planAbandoned(shard, runId);
    await this.watchdogs.drop(plan.agentId, runId);
    // The chain is read from D1 when this object has not held it since it woke: the re-plan must
    // not depend on the object having stayed in memory since the plan was made.
    const declaration = (await this.book.servingDeclarations()).find((d) => d.agentId === plan.agentId && d.epoch.id === plan.epochId);
    const chain = declaration === undefined ? undefined : await this.book.activatedChain(declaration, now);
    if (chain?.openPlan?.runId === runId) chain.openPlan = undefined;
    if (chain !== undefined && chain.openPlan === undefined) {
      // This plan counts among the chain's failures once its incident is written; until then, it is one more.
      const failures = (await countAbandonedPlans(shard, conversationId, plan.agentId, plan.epochId, chain.head?.body.id ?? "")) + (recorded ? 0 : 1);
      const wake = replanWake(plan.agentId, plan.epochId, Math.max(1, failures), compactionBackoffBaseSeconds(env) * 1_000, now.getTime());
      chain.backoffUntil = wake.at;
      await wakes.put(wakeKey.replan(plan.agentId), wake);
    }
    if (recorded) return;
    await recordIncident(env, {
      conversationId,
      agentId: plan.agentId,
      runId,
      kind: "compactor_abandoned",
      code: "retries_exhausted",
      message: reason,
      createdAt: now.toISOString(),
    });
  }
}
