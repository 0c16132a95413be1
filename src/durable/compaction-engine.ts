import { compactionBackoffBaseSeconds, planStalledSeconds, planWatchdogSeconds } from "../config";
import { recordIncident } from "../incidents";
import type { Boundary } from "../core/boundary";
import { buildBoundary } from "../core/boundary";
import type { ModelEvidence } from "../core/boundary";
import type { Group, PlanFailure } from "../core/compaction-plan";
import { cutTail, frontierStartSeq, groupTurns, preflight, turnChars } from "../core/compaction-plan";
import { amendmentEnvelope, amendmentsHash, deriveAmendments } from "../core/amendments";
import { renderBoundaryBody } from "../core/compactor-output";
import { scopesAllow } from "../core/conversation-id";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import type { ChainAnchor, EventInput, StoredEvent } from "../core/events";
import { canonicalJson, hashCanonical } from "../core/hash";
import type { Amendment, CompactionContent, Packet } from "../core/packet";
import { PACKET_FORMAT, packetSchema, pageBudget, sliceConversationType } from "../core/packet";
import { reconstruct } from "../core/reconstruction";
import type { NativeMessage } from "../core/render";
import { renderEnvelope, renderSliceLine } from "../core/render";
import type { ResolverFailure } from "../core/resolver";
import { verifyAnchor, verifyHead } from "../core/resolver";
import { capPressure, groupsAsOf, selectContext, tailBounds } from "../core/selection";
import { groupsAfter, TailLedger, tailEvents } from "../core/tail-ledger";
import type { LivenessPolicy, Wake } from "../core/wakeups";
import { armWatchdog, replanWake, wakeKey, watchdogStep } from "../core/wakeups";
import type { Activation, PlanRecord, StoredBoundary, StoredDeclaration } from "../storage/compaction-store";
import {
  countAbandonedPlans,
  currentDeclaration,
  insertActivation,
  insertBoundaryStatement,
  insertPlanStatement,
  planAbandoned,
  readActivation,
  readBoundaryByRun,
  readHeadBoundary,
  readOpenPlan,
  readPlan,
  servingDeclarations,
} from "../storage/compaction-store";
import { frontierDocumentKey, packetDocumentKey } from "../storage/document-keys";
import { putDocument, readDocument, readTrustedDocuments } from "../storage/document-store";
import { listEvents, listEventsBefore, readAllEvents } from "../storage/event-store";
import { readChainAnchor, readHeadRows, readRelatedEvents } from "../storage/context-store";
import { recallPages } from "../storage/memory-store";
import type { CompactionJob } from "../core/jobs";
import type { Wakeups } from "./wakeups";

/**
 * The compaction side of a conversation's Durable Object: activation, preflight, planning and
 * settlement for every agent whose declaration serves this conversation. Business rules live in
 * the pure modules it calls (`compaction-plan`, `boundary`, `packet`); this file orders the I/O.
 *
 * Hot state per chain (agent × epoch) is a cache: the head boundary, the open plan, and the log
 * events after the head's coverage (the only events preflight and planning read, so their cost
 * does not grow with the conversation). All of it is rebuilt from D1 when the object wakes.
 */

/** Log kinds that shape turns; runs never do. */
const TURN_KINDS: ReadonlySet<StoredEvent["kind"]> = new Set(["source", "proposal", "delivery", "correction"]);
const MAX_RECALLED_PAGES = 8;
/** Log events per page when reading covered history back for an agent that is never served a boundary. */
const HISTORY_PAGE = 500;
/** At most this many skipped-run events per write (the API's own batch bound). */
const MAX_SKIPS_PER_WRITE = 100;

interface Chain {
  readonly declaration: StoredDeclaration;
  readonly activation: Activation;
  head: StoredBoundary | undefined;
  /** Turn-shaping events with seq > `windowStart`, in order. */
  window: StoredEvent[];
  windowStart: number;
  lastSeenSeq: number;
  openPlan: PlanRecord | undefined;
  backoffUntil: number;
  /**
   * Before the epoch's first eligible source turn nothing is activated: reads are served from a
   * frontier computed but never stored, and nothing plans, settles or wakes for the chain.
   */
  readonly provisional: boolean;
  /** Amendments against the head, recomputed only when the head moved or an event about covered history arrived (`ledger.refVersion`). */
  amendments: { key: string; value: Amendment[] } | undefined;
  /** Turn hashes of the window's folds, so each fold of an overlapping window re-hashes nothing (cleared with the window). */
  turnHashes: Map<string, string>;
  /** Running totals of the window (rebuilt with it), so preflight after an append does not re-fold the window. */
  ledger: TailLedger;
  /** The head's boundary envelope length, by head id. */
  boundaryChars: { headId: string; chars: number } | undefined;
  /**
   * For an agent that is never served a boundary: the turn-shaping events from `after` through
   * `windowStart`, read once per window start (they are immutable; what later speaks about them is
   * in the window).
   */
  history: { windowStart: number; after: number; events: StoredEvent[] } | undefined;
  /** The head packet last verified against R2, by object etag, so selection re-reads it only when it changed. */
  verifiedPacket: { key: string; etag: string; packet: Packet } | undefined;
}

export interface ContextSelection {
  readonly messages: NativeMessage[];
  readonly manifest: ContextManifest;
}

/** Provenance of a served context: private to the caller, never inside the summary text. */
export interface ContextManifest {
  readonly conversationId: string;
  readonly agentId: string;
  readonly epochId: string;
  readonly boundary: {
    readonly id: string;
    readonly hash: string;
    readonly position: number;
    readonly coveredThroughSeq: number;
    readonly coveredThroughTurnId: string;
    readonly runId: string;
    readonly model: { readonly provider: string; readonly model: string };
    readonly envelopeChars: number;
  } | null;
  readonly amendment: {
    readonly hash: string;
    readonly envelopeChars: number;
    readonly items: readonly { readonly turnId: string; readonly group: number; readonly kind: Amendment["kind"]; readonly hashBefore: string | null; readonly hashAfter: string | null }[];
    readonly content: string;
  } | null;
  readonly withheld: string | null;
  readonly tail: { readonly turns: number; readonly chars: number; readonly firstTurnId: string | null; readonly lastTurnId: string | null; readonly turnIdsHash: string };
  readonly omitted: { readonly groups: number; readonly chars: number; readonly throughGroup: number | null };
  readonly reserved: { readonly chars: number; readonly messages: number };
  readonly totals: { readonly chars: number; readonly messages: number };
  readonly policy: { readonly maxChars: number; readonly maxMessages: number; readonly maxAmendmentChars: number };
}

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
}

/** Appends through the object's serialized path; `together` commits in the same D1 transaction. */
export type Append = (events: readonly EventInput[], together?: readonly D1PreparedStatement[]) => Promise<StoredEvent[]>;

export type SettleError = "fabricated_run" | "stale_plan" | "packet_unreadable" | "chain_invalid";

export class CompactionEngine {
  readonly #chains = new Map<string, Chain>();

  constructor(
    private readonly env: Env,
    private readonly conversationId: string,
    private readonly append: Append,
    private readonly wakes: Wakeups,
  ) {}

  /**
   * Runs after every durable append: preflight for each admitted new source, per compactor.
   * Returns the declarations serving this conversation (read once per source append), so the
   * reply hand-off does not read them again.
   */
  async afterAppend(appended: readonly StoredEvent[], now: Date): Promise<StoredDeclaration[]> {
    if (!appended.some((event) => event.kind === "source")) {
      for (const chain of this.#chains.values()) this.#observe(chain, appended);
      return [];
    }
    const serving = await this.#servingDeclarations();
    const skips: EventInput[] = [];
    for (const declaration of serving) {
      // Only a source the agent admits is an eligible turn: it activates the epoch, and preflights.
      const eligible = appended.filter((event) => event.kind === "source" && (!event.sensitive || declaration.registration.agent.admitSensitive));
      const first = eligible[0];
      const chain = first === undefined ? this.#cached(declaration) : await this.#activeChain(declaration, first.seq, now);
      if (chain === undefined) continue;
      // Each source is preflighted as it would have been appended alone: the batch is observed up
      // to it, so the ledger's running totals are its active size and a batch of n costs n single
      // preflights, not n folds of the whole window.
      const due = new Set(eligible.map((event) => event.seq));
      for (const event of appended) {
        this.#observe(chain, [event]);
        if (!due.has(event.seq) || chain.provisional || event.seq < chain.activation.activatingSeq) continue;
        await this.#preflight(chain, event.seq, now, skips);
      }
    }
    await this.#flushSkips(skips);
    return serving;
  }

  /**
   * The skipped-run events of one append are written together, in order: a batch of n sources
   * costs one write for its skips, not n. A plan flushes them first, so the log keeps each
   * source's outcome in source order.
   */
  async #flushSkips(skips: EventInput[]): Promise<void> {
    while (skips.length > 0) await this.append(skips.splice(0, MAX_SKIPS_PER_WRITE));
  }

  /**
   * A due deadline (`core/wakeups`), for the chain it names and no other: nothing here activates an
   * epoch, so an agent that never saw an eligible turn in this conversation is never woken in it.
   * The handler leaves the wake deleted or re-armed later, never due.
   */
  async onWake(key: string, wake: Wake, now: Date): Promise<void> {
    const serving = await this.#servingDeclarations();
    if (wake.kind === "catch_up") {
      await this.wakes.delete(key);
      for (const declaration of serving) {
        const chain = await this.#chain(declaration, now);
        if (chain !== undefined) await this.#resume(chain, now);
      }
      return;
    }
    const declaration = serving.find((d) => d.agentId === wake.agentId && d.epoch.id === wake.epochId);
    const chain = declaration === undefined ? undefined : await this.#chain(declaration, now);
    if (chain === undefined) {
      // A retired epoch, a disabled agent, or one no longer serving here: nothing is pending for it.
      await this.wakes.delete(key);
      return;
    }
    if (wake.kind === "replan") {
      await this.wakes.delete(key);
      chain.backoffUntil = 0;
      await this.#resume(chain, now);
      return;
    }
    const plan = chain.openPlan;
    const step = watchdogStep(wake, plan?.runId, now.getTime(), this.#liveness());
    if (step.action === "drop" || plan === undefined) {
      await this.wakes.delete(key);
      await this.#ensureWatchdog(chain, now);
      return;
    }
    if (step.stalled) {
      await recordIncident(this.env, {
        conversationId: this.conversationId,
        agentId: plan.agentId,
        runId: plan.runId,
        kind: "compaction_stalled",
        code: "plan_stalled",
        message: `plan open ${Math.round((now.getTime() - wake.planCreatedAt) / 1000)} s with no boundary; its job was sent ${wake.dispatches} time(s) and is being sent again`,
        createdAt: now.toISOString(),
      });
    }
    await this.wakes.put(key, step.next);
    await this.#send(chain, plan);
  }

  /**
   * An alarm with no deadline behind it was set by a version that kept none: every chain already
   * active here gets the watchdog its open plan lacks (it activates nothing, plans nothing).
   */
  async adoptLegacyAlarm(now: Date): Promise<void> {
    for (const declaration of await this.#servingDeclarations()) {
      const chain = await this.#chain(declaration, now);
      if (chain !== undefined) await this.#ensureWatchdog(chain, now);
    }
  }

  /** What the chain was waiting for, resumed: plan from the newest source if the trigger is reached. */
  async #resume(chain: Chain, now: Date): Promise<void> {
    const latest = chain.window.findLast((event) => event.kind === "source");
    if (latest !== undefined) await this.#planIfDue(chain, latest.seq, now);
  }

  #liveness(): LivenessPolicy {
    return { watchdogMs: planWatchdogSeconds(this.env) * 1_000, stalledMs: planStalledSeconds(this.env) * 1_000 };
  }

  /** An open plan always has a watchdog (one found open without it, after a crash, gets one now). */
  async #ensureWatchdog(chain: Chain, now: Date): Promise<void> {
    const plan = chain.openPlan;
    if (plan === undefined || chain.provisional) return;
    const key = wakeKey.watchdog(plan.agentId);
    const existing = await this.wakes.get(key);
    if (existing?.kind === "plan_watchdog" && existing.runId === plan.runId) return;
    await this.wakes.put(key, armWatchdog({ ...plan, createdAt: Date.parse(plan.createdAt) }, 1, now.getTime(), this.#liveness()));
  }

  /** Deletes the watchdog of `runId` (and only of it: a newer plan's watchdog stays). */
  async #dropWatchdog(agentId: string, runId: string): Promise<void> {
    const key = wakeKey.watchdog(agentId);
    const existing = await this.wakes.get(key);
    if (existing?.kind === "plan_watchdog" && existing.runId === runId) await this.wakes.delete(key);
  }

  async settle(runId: string, content: CompactionContent, model: ModelEvidence, now: Date): Promise<Result<Boundary, { code: SettleError; message: string }>> {
    const existing = await readBoundaryByRun(this.env.DB, runId);
    if (existing !== undefined) return ok({ body: existing.body, hash: existing.hash });
    const plan = await readPlan(this.env.DB, runId);
    if (plan === undefined || plan.conversationId !== this.conversationId) {
      return { ok: false, error: { code: "fabricated_run", message: `no plan ${runId} in this conversation` } };
    }
    const declaration = (await this.#servingDeclarations()).find((d) => d.agentId === plan.agentId);
    if (declaration === undefined || declaration.epoch.id !== plan.epochId) {
      return { ok: false, error: { code: "stale_plan", message: "the plan belongs to a retired epoch" } };
    }
    const chain = await this.#chain(declaration, now);
    if (chain === undefined || chain.openPlan?.runId !== runId || plan.previousBoundaryId !== (chain.head?.body.id ?? "")) {
      return { ok: false, error: { code: "stale_plan", message: "the plan is not the chain's current plan" } };
    }
    // The plan must follow the head the log anchors, not merely the newest row: after a head row
    // was deleted by hand the chain stays refused rather than settling a successor of an older one.
    const anchor = await readChainAnchor(this.env.DB, this.conversationId, plan.epochId);
    if (anchor !== undefined && (anchor.boundaryId !== plan.previousBoundaryId || anchor.boundaryHash !== chain.head?.hash)) {
      const message = `the plan follows ${plan.previousBoundaryId || "(none)"}, the log's newest completed run settled ${anchor.boundaryId}`;
      await recordIncident(this.env, { conversationId: this.conversationId, agentId: plan.agentId, runId, kind: "resolver_failure", code: "missing_link", message, createdAt: now.toISOString() });
      return { ok: false, error: { code: "chain_invalid", message } };
    }
    const read = await readDocument(this.env.DOCUMENTS, plan.packetKey, plan.packetHash);
    if (!read.ok) return { ok: false, error: { code: "packet_unreadable", message: `packet ${read.reason}` } };
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
    // One transaction: the boundary row and its completed-run receipt exist together or not at all.
    // The UNIQUE (chain, epoch, previous_id) constraint refuses a second successor: a fork cannot be stored.
    await this.append(
      [
        this.#runEvent(declaration, runId, "completed", {
          detail: {
            boundaryId: boundary.body.id,
            coveredThroughSeq: boundary.body.coveredThrough.seq,
            inputChars: packet.frozen.chars,
            summaryChars: content.summary.length,
            latencyMs: model.latencyMs,
            provider: model.provider,
          },
          model: model.model,
          ...(model.usage === null ? {} : { usage: model.usage }),
          anchor: {
            epochId: plan.epochId,
            position: boundary.body.position,
            boundaryId: boundary.body.id,
            boundaryHash: boundary.hash,
            contentHash: hashCanonical(boundary.body.content),
          },
        }),
      ],
      [insertBoundaryStatement(this.env.DB, this.conversationId, plan.agentId, plan.epochId, boundary)],
    );
    const stored = await readBoundaryByRun(this.env.DB, runId);
    chain.head = stored;
    chain.openPlan = undefined;
    chain.backoffUntil = 0;
    await this.#dropWatchdog(plan.agentId, runId);
    this.#trimWindow(chain, boundary.body.coveredThrough.seq);
    chain.amendments = undefined;
    // Messages that arrived while this run was in flight may already call for the next one.
    const latest = chain.window.findLast((event) => event.kind === "source");
    if (latest !== undefined) await this.#planIfDue(chain, latest.seq, now);
    return ok(boundary);
  }

  /** A failed attempt: private evidence (a failed run event and an incident), never a chat message. */
  async recordFailure(runId: string, attempt: number, code: string, message: string, now: Date): Promise<void> {
    const plan = await readPlan(this.env.DB, runId);
    if (plan === undefined || plan.conversationId !== this.conversationId) return;
    const declaration = (await this.#servingDeclarations()).find((d) => d.agentId === plan.agentId);
    const compactorId = declaration?.registration.compactor.id ?? `${plan.agentId}.compactor`;
    await this.append([
      {
        kind: "run",
        idempotencyKey: `run:${runId}:failed:${attempt}`,
        sensitive: false,
        body: {
          runId,
          agentId: compactorId,
          role: "compactor",
          status: "failed",
          error: { code: code.slice(0, 64), message: message.slice(0, 1_000) },
          detail: { attempt },
        },
      },
    ]);
    await recordIncident(this.env, {
      conversationId: this.conversationId,
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
    const plan = await readPlan(this.env.DB, runId);
    if (plan === undefined || plan.conversationId !== this.conversationId) return;
    if ((await readBoundaryByRun(this.env.DB, runId)) !== undefined) return;
    // A plan whose job the watchdog re-sent can be dead-lettered once per copy: it is closed once.
    if (await planAbandoned(this.env.DB, runId)) return;
    await recordIncident(this.env, {
      conversationId: this.conversationId,
      agentId: plan.agentId,
      runId,
      kind: "compactor_abandoned",
      code: "retries_exhausted",
      message: reason.slice(0, 1_000),
      createdAt: now.toISOString(),
    });
    await this.#dropWatchdog(plan.agentId, runId);
    // The chain is read from D1 when this object has not held it since it woke: the re-plan must
    // not depend on the object having stayed in memory since the plan was made.
    const declaration = (await this.#servingDeclarations()).find((d) => d.agentId === plan.agentId && d.epoch.id === plan.epochId);
    const chain = declaration === undefined ? undefined : await this.#chain(declaration, now);
    if (chain === undefined) return;
    if (chain.openPlan?.runId === runId) chain.openPlan = undefined;
    if (chain.openPlan !== undefined) return;
    const failures = await countAbandonedPlans(this.env.DB, this.conversationId, plan.agentId, plan.epochId, chain.head?.body.id ?? "");
    const wake = replanWake(plan.agentId, plan.epochId, Math.max(1, failures), compactionBackoffBaseSeconds(this.env) * 1_000, now.getTime());
    chain.backoffUntil = wake.at;
    await this.wakes.put(wakeKey.replan(plan.agentId), wake);
  }

  /**
   * Context for an agent: the latest valid boundary of the current epoch (verified on every call
   * against its row, predecessor, plan, completed run and packet), any covered-history amendment,
   * and the exact tail under the agent's policy; `asOfSeq` (a reply's source message) ends the tail
   * at that message's group (`core/selection` `groupsAsOf`). Any doubt about the chain fails closed with a
   * typed error and an incident; the agent never gets an unverified summary.
   */
  async selectContext(agentId: string, now: Date, asOfSeq?: number): Promise<Result<ContextSelection>> {
    const declaration = await currentDeclaration(this.env.DB, agentId);
    if (declaration === undefined || !declaration.registration.agent.enabled || !scopesAllow(declaration.registration.agent.sources, this.conversationId)) {
      return fail("not_found", `agent ${agentId} has no enabled declaration serving this conversation`);
    }
    const chain = await this.#readChain(declaration, now);
    const { agent } = declaration.registration;
    const epochId = declaration.epoch.id;

    const rows = await readHeadRows(this.env.DB, this.conversationId, agentId, epochId);
    const anchored = verifyAnchor(
      rows.anchor,
      rows.head === undefined ? undefined : { id: rows.head.body.id, epochId, position: rows.head.position, hash: rows.head.hash, contentHash: hashCanonical(rows.head.body.content) },
    );
    if (rows.head === undefined && !anchored.ok) return this.#refuse(agentId, rows.anchor?.boundaryId ?? "", null, anchored.error, now);
    if (rows.head !== undefined) {
      const verdict = verifyHead({
        conversationId: this.conversationId,
        agentId,
        epoch: declaration.epoch,
        promptHash: declaration.promptHash,
        historyAgents: agent.historyAgents,
        admitSensitive: agent.admitSensitive,
        frontier: { id: chain.activation.frontierId, hash: chain.activation.frontierHash },
        head: { ...rows.head, id: rows.head.body.id },
        previous: rows.previous === undefined ? undefined : { ...rows.previous, id: rows.previous.body.id },
        siblings: rows.siblings,
        plan: rows.plan,
        packet: rows.plan === undefined ? undefined : await this.#verifiedPacket(chain, rows.plan.packetKey, rows.plan.packetHash),
        completedRun: rows.completedRun,
      });
      // The row first (a forged or stale head is named for what it is), then the log's anchor
      // (a self-consistent row that is not the head the log settled), then this object's own memory.
      const checked = verdict.ok ? anchored : verdict;
      if (!checked.ok || chain.head?.body.id !== rows.head.body.id || chain.head.hash !== rows.head.hash) {
        const reason = checked.ok ? { code: "fork" as const, message: `the stored head ${rows.head.body.id} is not the head this chain settled` } : checked.error;
        return this.#refuse(agentId, rows.head.body.id, rows.head.runId, reason, now);
      }
    }

    // Boundaries and amendments are derived from possibly sensitive history and are always
    // sensitive: an agent that does not admit sensitive content gets neither, only exact turns
    // (of the whole admitted history, `#admittedHistory`).
    const withheld = chain.head !== undefined && !agent.admitSensitive;
    const head = withheld ? undefined : chain.head;
    const amendments = head === undefined ? [] : await this.#amendments(chain);
    const boundaryEnvelope = head === undefined ? undefined : renderEnvelope("boundary", renderBoundaryBody(head.body.content));
    const amendment = amendmentEnvelope(amendments);
    if (amendment !== undefined && amendment.content.length > agent.context.maxAmendmentChars) {
      return fail(
        "amendment_too_large",
        `the covered-history amendment needs ${amendment.content.length} characters, more than the agent's ${agent.context.maxAmendmentChars}; it is never cut`,
        { amendmentChars: amendment.content.length, maxAmendmentChars: agent.context.maxAmendmentChars },
      );
    }
    const envelopes = [boundaryEnvelope, amendment].filter((m) => m !== undefined);
    const history = agent.admitSensitive ? { groups: this.#tail(chain), after: chain.windowStart } : await this.#admittedHistory(chain);
    const asOf = asOfSeq === undefined ? ok(history.groups) : groupsAsOf(history.groups, asOfSeq, history.after);
    if (!asOf.ok) return fail("not_found", `no context as of sequence ${asOfSeq ?? 0}: ${asOf.error.reason}`, { ...asOf.error });
    const selected = selectContext({ envelopes, groups: asOf.value, policy: agent.context });
    if (!selected.ok) return fail(selected.error.code, selected.error.message);
    const selection = selected.value;
    const tailTurns = selection.tail.groups.flatMap((g) => g.turns);
    return ok({
      messages: selection.messages,
      manifest: {
        conversationId: this.conversationId,
        agentId,
        epochId,
        boundary:
          head === undefined || boundaryEnvelope === undefined
            ? null
            : {
                id: head.body.id,
                hash: head.hash,
                position: head.position,
                coveredThroughSeq: head.coveredThroughSeq,
                coveredThroughTurnId: head.body.coveredThrough.turnId,
                runId: head.runId,
                model: { provider: head.body.model.provider, model: head.body.model.model },
                envelopeChars: boundaryEnvelope.content.length,
              },
        amendment:
          amendment === undefined
            ? null
            : {
                hash: amendmentsHash(amendments),
                envelopeChars: amendment.content.length,
                items: amendments.map((a) => ({ turnId: a.turnId, group: a.group, kind: a.kind, hashBefore: a.hashBefore, hashAfter: a.hashAfter })),
                content: amendment.content,
              },
        withheld: withheld ? "boundary and amendments withheld: the agent does not admit sensitive content" : null,
        tail: {
          turns: tailTurns.length,
          chars: selection.tail.chars,
          firstTurnId: tailTurns[0]?.id ?? null,
          lastTurnId: tailTurns.at(-1)?.id ?? null,
          turnIdsHash: hashCanonical(tailTurns.map((t) => t.id)),
        },
        omitted: selection.omitted,
        reserved: { chars: selection.reservedChars, messages: selection.reservedMessages },
        totals: { chars: selection.totalChars, messages: selection.messages.length },
        policy: agent.context,
      },
    });
  }

  /**
   * Boundaries are always sensitive, so an agent that does not admit sensitive content is served
   * the exact admitted turns instead — of the whole history, not only those after the withheld
   * boundary's coverage, or the covered part would silently vanish from its context. The log is
   * read back from the window in pages until the older admitted turns alone fill one of the
   * agent's caps (the selector then trims newest-first, reporting the rest in `manifest.omitted`),
   * so the read is bounded by the caps, not by the conversation.
   */
  async #admittedHistory(chain: Chain): Promise<{ groups: Group[]; after: number }> {
    const fold = this.#fold(chain.declaration);
    if (chain.history?.windowStart !== chain.windowStart) {
      const caps = chain.declaration.registration.agent.context;
      const events: StoredEvent[] = [];
      let after = chain.windowStart;
      while (after > 0) {
        const page = await listEventsBefore(this.env.DB, this.conversationId, after + 1, HISTORY_PAGE);
        events.unshift(...page.filter((event) => TURN_KINDS.has(event.kind)).reverse());
        after = page.length < HISTORY_PAGE ? 0 : (page.at(-1)?.seq ?? 1) - 1;
        const older = groupsAfter(events, after, fold);
        if (older.reduce((n, g) => n + g.chars, 0) > caps.maxChars || older.reduce((n, g) => n + g.turns.length, 0) > caps.maxMessages) break;
      }
      chain.history = { windowStart: chain.windowStart, after, events };
    }
    return { groups: groupsAfter([...chain.history.events, ...chain.window], chain.history.after, fold), after: chain.history.after };
  }

  /** The head's packet, read from R2 and hash-checked, unless the same object (by etag) already was. */
  async #verifiedPacket(chain: Chain, key: string, expectedHash: string): Promise<Packet | undefined> {
    const object = await this.env.DOCUMENTS.head(key);
    if (object === null) return undefined;
    const cached = chain.verifiedPacket;
    if (cached !== undefined && cached.key === key && cached.etag === object.etag) return cached.packet;
    const read = await readDocument(this.env.DOCUMENTS, key, expectedHash);
    if (!read.ok) return undefined;
    const packet = packetSchema.safeParse(JSON.parse(read.text) as unknown);
    if (!packet.success) return undefined;
    chain.verifiedPacket = { key, etag: object.etag, packet: packet.data };
    return packet.data;
  }

  /** What the chain looks like to this object (for inspection and tests). */
  async describe(agentId: string, now: Date): Promise<ChainState | undefined> {
    const declaration = (await this.#servingDeclarations()).find((d) => d.agentId === agentId);
    if (declaration === undefined) return undefined;
    const chain = await this.#readChain(declaration, now);
    const watchdog = chain.openPlan === undefined ? undefined : await this.wakes.get(wakeKey.watchdog(agentId));
    const replan = await this.wakes.get(wakeKey.replan(agentId));
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
      activeChars: (await this.#active(chain)).activeChars,
      openRunId: chain.openPlan?.runId ?? null,
      frontierStartSeq: chain.activation.startSeq,
      backoffUntil: chain.backoffUntil,
    };
  }

  async #servingDeclarations(): Promise<StoredDeclaration[]> {
    return (await servingDeclarations(this.env.DB, this.conversationId)).filter(
      (d) => d.registration.agent.enabled && scopesAllow(d.registration.agent.sources, this.conversationId),
    );
  }

  #cached(declaration: StoredDeclaration): Chain | undefined {
    const cached = this.#chains.get(declaration.agentId);
    return cached !== undefined && cached.declaration.epoch.id === declaration.epoch.id ? cached : undefined;
  }

  /** The chain of an activated epoch, or undefined when it was never activated here. Never activates. */
  async #chain(declaration: StoredDeclaration, now: Date): Promise<Chain | undefined> {
    const cached = this.#cached(declaration);
    if (cached !== undefined) return cached.provisional ? undefined : cached;
    const activation = await readActivation(this.env.DB, this.conversationId, declaration.agentId, declaration.epoch.id);
    return activation === undefined ? undefined : this.#load(declaration, activation, now, false);
  }

  /** The chain for an eligible source turn at `sourceSeq`: the epoch is activated on its first one. */
  async #activeChain(declaration: StoredDeclaration, sourceSeq: number, now: Date): Promise<Chain> {
    const chain = await this.#chain(declaration, now);
    if (chain !== undefined) return chain;
    const activation =
      (await readActivation(this.env.DB, this.conversationId, declaration.agentId, declaration.epoch.id)) ?? (await this.#activate(declaration, sourceSeq, now));
    return this.#load(declaration, activation, now, false);
  }

  /** The chain for a read: before activation, a provisional one from the frontier activation would write. */
  async #readChain(declaration: StoredDeclaration, now: Date): Promise<Chain> {
    const chain = this.#cached(declaration) ?? (await this.#chain(declaration, now));
    if (chain !== undefined) return chain;
    const startSeq = await this.#frontierStart(declaration);
    return this.#load(declaration, { frontierId: "", frontierHash: "", startSeq, activatingSeq: 0 }, now, true);
  }

  async #load(declaration: StoredDeclaration, activation: Activation, now: Date, provisional: boolean): Promise<Chain> {
    const { DB } = this.env;
    const epochId = declaration.epoch.id;
    const head = provisional ? undefined : await readHeadBoundary(DB, this.conversationId, declaration.agentId, epochId);
    const openPlan = provisional ? undefined : await readOpenPlan(DB, this.conversationId, declaration.agentId, epochId);
    const windowStart = Math.max(activation.startSeq - 1, head?.coveredThroughSeq ?? 0);
    const window: StoredEvent[] = [];
    for (let after = windowStart; ; ) {
      const page = await listEvents(DB, this.conversationId, after, 1_000);
      window.push(...page.filter((event) => TURN_KINDS.has(event.kind)));
      const last = page.at(-1);
      if (page.length < 1_000 || last === undefined) break;
      after = last.seq;
    }
    const lastSeenSeq = Math.max(windowStart, window.at(-1)?.seq ?? 0);
    const turnHashes = new Map<string, string>();
    // A backoff outlives the object: it is the re-plan deadline in the object's storage.
    const replan = provisional ? undefined : await this.wakes.get(wakeKey.replan(declaration.agentId));
    const chain: Chain = {
      declaration,
      activation,
      head,
      window,
      windowStart,
      lastSeenSeq,
      openPlan,
      backoffUntil: replan?.kind === "replan" && replan.epochId === epochId ? replan.at : 0,
      provisional,
      amendments: undefined,
      history: undefined,
      verifiedPacket: undefined,
      turnHashes,
      ledger: this.#ledgerOf(declaration, windowStart, window, turnHashes),
      boundaryChars: undefined,
    };
    this.#chains.set(declaration.agentId, chain);
    await this.#ensureWatchdog(chain, now);
    return chain;
  }

  /**
   * Where an activation as of `throughSeq` starts: the newest whole groups that reach the trigger.
   * Reads the whole history. An activation is as of its activating source: what a batch appended
   * after that source is new to the epoch, not established history to leave behind the frontier.
   */
  async #frontierStart(declaration: StoredDeclaration, throughSeq = Number.POSITIVE_INFINITY): Promise<number> {
    const events = (await readAllEvents(this.env.DB, this.conversationId)).filter((event) => event.seq <= throughSeq);
    const turns = reconstruct(events, this.#fold(declaration));
    return frontierStartSeq(groupTurns(turns.filter((t) => t.group > 0)), declaration.registration.compactor.policy);
  }

  /**
   * The first eligible turn of an epoch writes its activation frontier: the newest whole groups
   * that reach the trigger. This reads the whole history once per epoch; preflight never does.
   */
  async #activate(declaration: StoredDeclaration, activatingSeq: number, now: Date): Promise<Activation> {
    const { agent, compactor } = declaration.registration;
    const startSeq = await this.#frontierStart(declaration, activatingSeq);
    const document = {
      format: "foldline.activation-frontier@1",
      conversationId: this.conversationId,
      route: this.conversationId,
      agentId: agent.id,
      compactorId: compactor.id,
      epoch: declaration.epoch,
      policy: compactor.policy,
      historyAgents: [...agent.historyAgents].sort(),
      admitSensitive: agent.admitSensitive,
      activatingSeq,
      startSeq,
      createdAt: now.toISOString(),
    };
    const frontierId = `frn_${hashCanonical([this.conversationId, agent.id, declaration.epoch.id]).slice(0, 32)}`;
    const frontierHash = await putDocument(this.env.DOCUMENTS, frontierDocumentKey(frontierId), canonicalJson(document));
    const activation = { frontierId, frontierHash, startSeq, activatingSeq };
    await insertActivation(this.env.DB, this.conversationId, agent.id, declaration.epoch.id, activation, now.toISOString());
    return (await readActivation(this.env.DB, this.conversationId, agent.id, declaration.epoch.id)) ?? activation;
  }

  #fold(declaration: StoredDeclaration) {
    const { agent } = declaration.registration;
    return { admittedAgents: new Set(agent.historyAgents), includeSensitive: agent.admitSensitive };
  }

  #observe(chain: Chain, appended: readonly StoredEvent[]): void {
    for (const event of appended) {
      if (event.seq <= chain.lastSeenSeq) continue;
      chain.lastSeenSeq = event.seq;
      if (!TURN_KINDS.has(event.kind)) continue;
      chain.window.push(event);
      chain.ledger.add(event);
    }
  }

  #trimWindow(chain: Chain, coveredThroughSeq: number): void {
    chain.windowStart = Math.max(chain.windowStart, coveredThroughSeq);
    chain.window = chain.window.filter((event) => event.seq > chain.windowStart);
    chain.turnHashes.clear();
    this.#rebuildLedger(chain);
  }

  /** A ledger of the window as it stands; the amendments cached against the old one go with it. */
  #rebuildLedger(chain: Chain): void {
    chain.ledger = this.#ledgerOf(chain.declaration, chain.windowStart, chain.window, chain.turnHashes);
    chain.amendments = undefined;
  }

  #ledgerOf(declaration: StoredDeclaration, windowStart: number, window: readonly StoredEvent[], turnHashes: Map<string, string>): TailLedger {
    const ledger = new TailLedger(this.#fold(declaration), windowStart, turnHashes);
    for (const event of window) ledger.add(event);
    return ledger;
  }

  /** Window events through `throughSeq` that belong to the exact tail (`core/tail-ledger` `tailEvents`). */
  #tailEvents(chain: Chain, throughSeq: number): StoredEvent[] {
    return tailEvents(chain.window).filter((event) => event.seq <= throughSeq);
  }

  /** The uncovered exact turns in whole groups, as of `throughSeq`. */
  #tail(chain: Chain, throughSeq = Number.POSITIVE_INFINITY): Group[] {
    const turns = reconstruct(this.#tailEvents(chain, throughSeq), this.#fold(chain.declaration), chain.turnHashes).filter((turn) => turn.group > chain.windowStart);
    return groupTurns(turns);
  }

  /**
   * Amendments against the head: later evidence about covered turns, compared with what the chain
   * absorbed (the log as of the head run's trigger). Reads only the events about affected turns.
   */
  async #amendments(chain: Chain): Promise<Amendment[]> {
    const head = chain.head;
    if (head === undefined) return [];
    // The ledger's reference version moves with every event that could change the derivation (its
    // property tests hold it to that), so appends of plain messages reuse the cached amendments.
    const key = `${head.body.id}:${chain.ledger.refVersion}`;
    if (chain.amendments?.key === key) return chain.amendments.value;
    const absorbed = head.body.run.triggerSeq;
    const { messageIds, proposalIds } = chain.ledger.references(absorbed);
    const value =
      messageIds.length === 0 && proposalIds.length === 0
        ? []
        : deriveAmendments(await readRelatedEvents(this.env.DB, this.conversationId, messageIds, proposalIds), {
            absorbedThroughSeq: absorbed,
            frontierStartSeq: chain.activation.startSeq,
            coveredThroughSeq: head.coveredThroughSeq,
            policy: this.#fold(chain.declaration),
          });
    chain.amendments = { key, value };
    return value;
  }

  /** The agent's active history now: boundary and amendment envelopes plus the exact uncovered turns. */
  async #active(chain: Chain, throughSeq = Number.POSITIVE_INFINITY): Promise<{ groups: Group[]; amendments: Amendment[]; envelopeChars: number; activeChars: number }> {
    const groups = this.#tail(chain, throughSeq);
    const { amendments, envelopeChars } = await this.#envelopes(chain);
    return { groups, amendments, envelopeChars, activeChars: envelopeChars + groups.reduce((n, g) => n + g.chars, 0) };
  }

  /** The boundary and amendment envelopes' characters, which every active count starts from. */
  async #envelopes(chain: Chain): Promise<{ amendments: Amendment[]; envelopeChars: number }> {
    const amendments = await this.#amendments(chain);
    const head = chain.head;
    let boundary = 0;
    if (head !== undefined) {
      if (chain.boundaryChars?.headId !== head.body.id) {
        chain.boundaryChars = { headId: head.body.id, chars: renderEnvelope("boundary", renderBoundaryBody(head.body.content)).content.length };
      }
      boundary = chain.boundaryChars.chars;
    }
    return { amendments, envelopeChars: boundary + (amendmentEnvelope(amendments)?.content.length ?? 0) };
  }

  /**
   * The active characters and messages as of `throughSeq`, for preflight: from the ledger's running
   * totals when `throughSeq` is the window's newest event (every single append), so the cost does
   * not grow with the window; by folding the window otherwise (an earlier source of a batch). Both
   * give the same numbers (the ledger's property tests).
   */
  async #activeSize(chain: Chain, throughSeq: number): Promise<{ chars: number; messages: number }> {
    const envelopeMessages = (chain.head === undefined ? 0 : 1) + ((await this.#amendments(chain)).length === 0 ? 0 : 1);
    if (throughSeq < (chain.window.at(-1)?.seq ?? chain.windowStart)) {
      const active = await this.#active(chain, throughSeq);
      return { chars: active.activeChars, messages: envelopeMessages + active.groups.reduce((n, g) => n + g.turns.length, 0) };
    }
    return { chars: (await this.#envelopes(chain)).envelopeChars + chain.ledger.tailChars, messages: envelopeMessages + chain.ledger.tailMessages };
  }

  /** At the compactor's trigger, or near enough to one of the agent's own caps that it would soon bite. */
  #due(chain: Chain, active: { chars: number; messages: number }): boolean {
    const { agent, compactor } = chain.declaration.registration;
    return preflight(active.chars, compactor.policy).action === "plan" || capPressure(active, agent.context);
  }

  async #preflight(chain: Chain, sourceSeq: number, now: Date, skips: EventInput[]): Promise<void> {
    const { compactor } = chain.declaration.registration;
    const active = await this.#activeSize(chain, sourceSeq);
    const activeChars = active.chars;
    const reason =
      !this.#due(chain, active)
        ? "below_trigger"
        : chain.openPlan !== undefined
          ? "compaction_in_flight"
          : now.getTime() < chain.backoffUntil
            ? "backoff"
            : undefined;
    if (reason === undefined) await this.#flushSkips(skips);
    const skipped = reason ?? ((await this.#plan(chain, sourceSeq, now)) === "nothing_to_freeze" ? "nothing_to_freeze" : undefined);
    if (skipped !== undefined) {
      // Content-dark: counts only. Nothing is reserved and no model is called.
      skips.push(
        this.#runEvent(chain.declaration, `pf_${compactor.id}_${sourceSeq}`, "skipped", {
          detail: { sourceSeq, activeChars, activeMessages: active.messages, triggerInputChars: compactor.policy.triggerInputChars, reason: skipped },
        }),
      );
    }
  }

  async #planIfDue(chain: Chain, sourceSeq: number, now: Date): Promise<void> {
    if (chain.openPlan !== undefined || now.getTime() < chain.backoffUntil) return;
    // Nothing to freeze is not recorded here: no source arrived, and the next one's preflight says so.
    if (this.#due(chain, await this.#activeSize(chain, sourceSeq))) await this.#plan(chain, sourceSeq, now);
  }

  /**
   * Plans a compaction of the window as of `triggerSeq`, or records why it failed closed. When
   * every uncovered group already fits the tail — the chain is at the trigger only because of its
   * envelopes (a summary as large as the trigger minus the tail target) — there is nothing to
   * freeze: that is not a failure, and the caller records it as a skip (or nothing); the next run
   * is planned once the exact tail outgrows its target.
   */
  async #plan(chain: Chain, triggerSeq: number, now: Date): Promise<"planned" | "failed" | "nothing_to_freeze"> {
    const { declaration } = chain;
    const { agent, compactor } = declaration.registration;
    const { groups, amendments, envelopeChars, activeChars } = await this.#active(chain, triggerSeq);
    const eventsOf = (group: Group): number => {
      const ids = new Set(group.turns.flatMap((t) => [t.originSeq, t.effectiveSeq]));
      return ids.size;
    };
    const cut = cutTail(groups, compactor.policy, eventsOf, tailBounds(agent.context));
    const runId = `cmp_${crypto.randomUUID()}`;
    if (!cut.ok) {
      if (cut.error.code === "nothing_to_freeze") return "nothing_to_freeze";
      await this.#planFailed(chain, runId, triggerSeq, cut.error, now);
      return "failed";
    }
    const { frozen, tailChars, frozenChars, frozenEvents } = cut.value;
    const frozenTurns = frozen.flatMap((g) => g.turns);
    const first = frozen[0];
    const lastGroup = frozen.at(-1);
    const lastTurn = frozenTurns.at(-1);
    if (first === undefined || lastGroup === undefined || lastTurn === undefined) return "nothing_to_freeze";

    // The subscribed documents go to the compactor whole, charged to the budget exactly as sent;
    // recalled pages share what is left.
    const documents = await readTrustedDocuments(this.env.DOCUMENTS, agent.id, agent.documents);
    const budget = documents.ok ? pageBudget(documents.value, agent.documentBudgetChars) : documents;
    if (!budget.ok) {
      await this.#planFailed(chain, runId, triggerSeq, budget.error, now);
      return "failed";
    }
    const sliceText = frozenTurns.map((t) => t.text).join("\n");
    const memoryPages = await recallPages(this.env.DB, agent.id, sliceText, budget.value, MAX_RECALLED_PAGES);
    const rendered = frozenTurns.map(renderSliceLine);
    // The chat's type as its platform said it on the frozen sources, never guessed from who spoke.
    const frozenGroups = new Set(frozen.map((g) => g.seq));
    const conversationType = sliceConversationType(chain.window.flatMap((e) => (e.kind === "source" && frozenGroups.has(e.seq) ? [e.body.conversationType] : [])));
    const head = chain.head;
    const packet: Packet = {
      format: PACKET_FORMAT,
      conversationId: this.conversationId,
      conversationType,
      agentId: agent.id,
      compactorId: compactor.id,
      historyAgents: [...agent.historyAgents].sort(),
      admitSensitive: agent.admitSensitive,
      epoch: declaration.epoch,
      runId,
      triggerSeq,
      frontier: { id: chain.activation.frontierId, hash: chain.activation.frontierHash, startSeq: chain.activation.startSeq },
      policy: compactor.policy,
      outputMode: compactor.outputMode,
      prompt: declaration.prompt,
      promptHash: declaration.promptHash,
      previousBoundary:
        head === undefined
          ? null
          : { id: head.body.id, hash: head.hash, coveredThroughSeq: head.coveredThroughSeq, body: renderBoundaryBody(head.body.content) },
      amendments,
      frozen: {
        turns: frozenTurns.map((t, i) => ({
          id: t.id,
          messageId: t.messageId,
          group: t.group,
          role: t.role,
          author: t.author,
          text: t.text,
          hash: t.hash,
          rendered: rendered[i] ?? "",
          nativeChars: turnChars(t),
        })),
        fromSeq: first.seq,
        throughSeq: lastGroup.seq,
        throughTurnId: lastTurn.id,
        sourceCount: frozen.length,
        eventCount: frozenEvents,
        chars: frozenChars,
        turnIdsHash: hashCanonical(frozenTurns.map((t) => t.id)),
        renderedHash: hashCanonical(rendered),
      },
      memoryPages: memoryPages.map((p) => ({ path: p.path, version: p.version, contentHash: p.contentHash, content: p.content })),
      documents: documents.ok ? documents.value.map((d) => ({ name: d.name, hash: d.hash, content: d.content })) : [],
      sizes: { preCompactionChars: activeChars, retainedTailChars: tailChars, replacedChars: envelopeChars + frozenChars },
      createdAt: now.toISOString(),
    };
    // The packet is durable before anything can run from it; retries read the same bytes.
    const packetKey = packetDocumentKey(this.conversationId, agent.id, runId);
    const packetHash = await putDocument(this.env.DOCUMENTS, packetKey, canonicalJson(packet));
    const plan: PlanRecord = {
      runId,
      conversationId: this.conversationId,
      agentId: agent.id,
      epochId: declaration.epoch.id,
      previousBoundaryId: head?.body.id ?? "",
      packetKey,
      packetHash,
      triggerSeq,
      throughSeq: lastGroup.seq,
      createdAt: now.toISOString(),
    };
    // The watchdog is durable before the plan is: a crash between the plan's commit and its job's
    // send leaves a deadline that re-sends it (one left for a plan that never committed is dropped).
    await this.wakes.put(wakeKey.watchdog(agent.id), armWatchdog({ agentId: agent.id, epochId: declaration.epoch.id, runId, createdAt: now.getTime() }, 1, now.getTime(), this.#liveness()));
    await this.wakes.delete(wakeKey.replan(agent.id));
    await this.append(
      [
        this.#runEvent(declaration, runId, "planned", {
          detail: { triggerSeq, activeChars, frozenChars, frozenTurns: frozenTurns.length, retainedTailChars: tailChars, throughSeq: lastGroup.seq },
        }),
      ],
      [insertPlanStatement(this.env.DB, plan)],
    );
    chain.openPlan = plan;
    chain.backoffUntil = 0;
    await this.#send(chain, plan);
    return "planned";
  }

  /** Queues the job naming the plan's packet (every dispatch of a plan names the same packet). */
  async #send(chain: Chain, plan: PlanRecord): Promise<void> {
    const { compactor } = chain.declaration.registration;
    const job: CompactionJob = {
      type: "compaction",
      conversationId: this.conversationId,
      agentId: plan.agentId,
      runId: plan.runId,
      packetKey: plan.packetKey,
      packetHash: plan.packetHash,
      model: compactor.provider.model,
      profile: compactor.provider.profile,
    };
    await this.env.JOB_QUEUE.send(job);
  }

  async #planFailed(chain: Chain, runId: string, triggerSeq: number, failure: PlanFailure | { readonly code: "document_budget_exceeded" | "unknown_document"; readonly message: string }, now: Date): Promise<void> {
    const { declaration } = chain;
    await this.append([
      this.#runEvent(declaration, runId, "failed", { error: { code: failure.code, message: failure.message }, detail: { triggerSeq } }),
    ]);
    await recordIncident(this.env, {
      conversationId: this.conversationId,
      agentId: declaration.agentId,
      runId,
      kind: "plan_failure",
      code: failure.code,
      message: failure.message,
      createdAt: now.toISOString(),
    });
  }

  /** An unverifiable head: an incident for the operator, and `chain_invalid` instead of any summary. */
  async #refuse(agentId: string, boundaryId: string, runId: string | null, reason: ResolverFailure, now: Date): Promise<Result<never>> {
    await recordIncident(this.env, { conversationId: this.conversationId, agentId, runId, kind: "resolver_failure", code: reason.code, message: reason.message, createdAt: now.toISOString() });
    return fail("chain_invalid", `no valid summary can be served: ${reason.message}`, { reason: reason.code, boundaryId });
  }

  #runEvent(
    declaration: StoredDeclaration,
    runId: string,
    status: "skipped" | "planned" | "completed" | "failed",
    extra: {
      detail?: Record<string, string | number | boolean | null>;
      error?: { code: string; message: string };
      model?: string;
      usage?: { inputTokens: number; outputTokens: number };
      anchor?: ChainAnchor;
    },
  ): EventInput {
    return {
      kind: "run",
      idempotencyKey: `run:${runId}:${status}`,
      sensitive: false,
      body: { runId, agentId: declaration.registration.compactor.id, role: "compactor", status, ...extra },
    };
  }
}
