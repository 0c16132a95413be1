import { frontierStartSeq, groupTurns } from "../core/compaction-plan";
import { scopesAllow } from "../core/conversation-id";
import type { StoredEvent } from "../core/events";
import { hotWindowEvents } from "../config";
import { raiseIncident } from "../incidents";
import { canonicalJson, hashCanonical } from "../core/hash";
import { reconstruct } from "../core/reconstruction";
import { wakeKey } from "../core/wakeups";
import type { Activation } from "../storage/shard/activations";
import { insertActivation, readActivation } from "../storage/shard/activations";
import { readHeadBoundary } from "../storage/shard/boundaries";
import type { StoredDeclaration } from "../storage/control/declarations";
import { declarationRevision, servingDeclarationsAt } from "../storage/control/declarations";
import { readOpenPlan } from "../storage/shard/plans";
import { putDocument } from "../storage/r2/documents";
import { frontierDocumentKey } from "../storage/r2/keys";
import { listEvents, readHead } from "../storage/shard/events";
import { readSliceLog } from "../storage/shard/context-reads";
import type { EngineDeps } from "./engine-deps";
import type { HotChain } from "./hot-chain";
import type { WindowBound } from "./hot-chain";
import { caughtUp, eventTextChars, foldPolicy, hotChain, prefixWithin, readOn, windowBound, withinBound } from "./hot-chain";
import type { Watchdogs } from "./watchdogs";
import { behindIncident } from "./behind";

/** Turn-shaping log events per read when a chain's window is loaded (runs are not read). */
const WINDOW_PAGE = 1_000;
/**
 * The first range an activation frontier is looked for in, before it doubles, in events per
 * character of the trigger: a chat message is rarely shorter than this many characters.
 */
const FRONTIER_CHARS_PER_EVENT = 50;

/**
 * The longest range, in events, an activation frontier is looked for in (or eight times the first
 * range, for a trigger so large that is longer): where the newest admitted turns are too sparse to
 * reach the trigger within it (an agent that does not admit sensitive content in a chat where
 * nearly everything is), the epoch starts at the range's oldest group, or just past the range when
 * it holds none. Activation reads, holds and windows at most this much, whatever the history.
 */
const FRONTIER_MAX_EVENTS = 4_096;

/** The declarations serving the conversation, as of a declarations revision. */
export interface HeldServing {
  readonly revision: number;
  readonly declarations: StoredDeclaration[];
  /** When the revision was last confirmed against the control database (epoch ms). */
  readonly confirmedAt: number;
}

/**
 * How long the one-round-trip append trusts the declarations it holds without asking the control
 * database. Within it, the shard's copy of the revision (migrations/shard/0014) is what the append
 * checks, and a registration raises that copy before it answers; past it, the next source append
 * confirms against the control database itself, so a change is seen within this bound even if a
 * registration failed between writing the declaration and raising the shards' copies.
 */
export const SERVING_CONFIRM_MS = 30_000;

/**
 * Activation and loading: which declarations serve this conversation, and each one's chain, from
 * this object's memory or else from D1. An epoch is activated on its first eligible source turn
 * (its frontier document and activation row written once); reads before that get a provisional
 * chain that stores nothing. A name that starts with `held` answers from this object's memory and
 * does no I/O; the others may read D1 (the table in docs/ARCHITECTURE.md).
 */
export class ChainBook {
  readonly #chains = new Map<string, HotChain>();
  #serving: HeldServing | undefined;

  constructor(
    private readonly deps: EngineDeps,
    private readonly watchdogs: Watchdogs,
  ) {}

  /** Every chain this object holds now. */
  heldChains(): IterableIterator<HotChain> {
    return this.#chains.values();
  }

  /**
   * The enabled declarations serving this conversation. Held with the declarations' revision they
   * were read at (migration 0014) and revalidated by reading that revision alone: they are read
   * again only when it moved, so a declaration change is seen by the next call.
   */
  async servingDeclarations(): Promise<StoredDeclaration[]> {
    const { env, conversationId } = this.deps;
    const held = this.#serving;
    if (held !== undefined && (await declarationRevision(env.DB)) === held.revision) {
      this.#serving = { ...held, confirmedAt: Date.now() };
      return held.declarations;
    }
    const read = await servingDeclarationsAt(env.DB, conversationId);
    const declarations = read.declarations.filter((d) => d.registration.agent.enabled && scopesAllow(d.registration.agent.sources, conversationId));
    this.#serving = { revision: read.revision, declarations, confirmedAt: Date.now() };
    return declarations;
  }

  /**
   * The serving declarations as last read and the revision they are as of, without asking D1: the
   * one-round-trip source append revalidates that revision inside its own write.
   */
  heldServingDeclarations(): HeldServing | undefined {
    const held = this.#serving;
    return held !== undefined && Date.now() - held.confirmedAt < SERVING_CONFIRM_MS ? held : undefined;
  }

  /**
   * Lets go of every chain held here, so the next call reads each one from D1 again. For a write
   * whose outcome is unknown, or a step after a kept write that failed: the hot state is a cache of
   * D1, and a cache that may disagree with it is dropped rather than patched.
   */
  forget(): void {
    this.#chains.clear();
  }

  /** Lets go of a held chain whose head is behind `head`, a boundary D1 holds for its epoch (see `forget`). */
  forgetBehind(head: { readonly epochId: string; readonly position: number }): void {
    for (const [agentId, chain] of this.#chains) {
      if (chain.declaration.epoch.id === head.epochId && (chain.head?.position ?? 0) < head.position) this.#chains.delete(agentId);
    }
  }

  /** Lets go of one held chain (see `forget`). */
  release(chain: HotChain): void {
    if (this.#chains.get(chain.declaration.agentId) === chain) this.#chains.delete(chain.declaration.agentId);
  }

  heldChain(declaration: StoredDeclaration): HotChain | undefined {
    const cached = this.#chains.get(declaration.agentId);
    return cached !== undefined && cached.declaration.epoch.id === declaration.epoch.id ? cached : undefined;
  }

  /** The chain of an activated epoch, or undefined when it was never activated here. Never activates. */
  async activatedChain(declaration: StoredDeclaration, now: Date): Promise<HotChain | undefined> {
    const cached = this.heldChain(declaration);
    if (cached !== undefined) return cached.provisional ? undefined : cached;
    const activation = await readActivation(this.deps.shard, this.deps.conversationId, declaration.agentId, declaration.epoch.id);
    return activation === undefined ? undefined : this.#load(declaration, activation, now, false);
  }

  /** The chain for an eligible source turn at `sourceSeq`: the epoch is activated on its first one. */
  async activatingChain(declaration: StoredDeclaration, sourceSeq: number, now: Date): Promise<HotChain> {
    const chain = await this.activatedChain(declaration, now);
    if (chain !== undefined) return chain;
    const activation =
      (await readActivation(this.deps.shard, this.deps.conversationId, declaration.agentId, declaration.epoch.id)) ?? (await this.#activate(declaration, sourceSeq, now));
    return this.#load(declaration, activation, now, false);
  }

  /** The chain for a read: before activation, a provisional one from the frontier activation would write. */
  async servedChain(declaration: StoredDeclaration, now: Date): Promise<HotChain> {
    const chain = this.heldChain(declaration) ?? (await this.activatedChain(declaration, now));
    if (chain !== undefined) return chain;
    const startSeq = await this.#frontierStart(declaration);
    return this.#load(declaration, { frontierId: "", frontierHash: "", startSeq, activatingSeq: 0 }, now, true);
  }

  async #load(declaration: StoredDeclaration, activation: Activation, now: Date, provisional: boolean): Promise<HotChain> {
    const { shard, conversationId, wakes } = this.deps;
    const epochId = declaration.epoch.id;
    const head = provisional ? undefined : await readHeadBoundary(shard, conversationId, declaration.agentId, epochId);
    const openPlan = provisional ? undefined : await readOpenPlan(shard, conversationId, declaration.agentId, epochId);
    const windowStart = Math.max(activation.startSeq - 1, head?.coveredThroughSeq ?? 0);
    const bound = this.bound(declaration);
    const read = await this.#window(windowStart, bound);
    const kept = prefixWithin(read, bound);
    const window = read.slice(0, kept);
    // More than fits: the chain is behind, through the last event it holds.
    const behind = kept < read.length ? window.at(-1)?.seq : undefined;
    // A backoff outlives the object: it is the re-plan deadline in the object's storage.
    const replan = provisional ? undefined : await wakes.get(wakeKey.replan(declaration.agentId));
    const backoffUntil = replan?.kind === "replan" && replan.epochId === epochId ? replan.at : 0;
    const chain = hotChain({ declaration, activation, head, openPlan, windowStart, window, backoffUntil, provisional, behind });
    this.#chains.set(declaration.agentId, chain);
    // Found behind on waking: the chain's open incident counts it (it is raised again if the one
    // that fell behind did not get to be).
    if (behind !== undefined && !provisional) await raiseIncident(this.deps.env, behindIncident(conversationId, chain, bound, now));
    await this.watchdogs.ensure(chain, now);
    return chain;
  }

  /** How much of its uncovered history a chain of `declaration` holds (`windowBound`, `HOT_WINDOW_EVENTS`). */
  bound(declaration: StoredDeclaration): WindowBound {
    return windowBound(declaration, hotWindowEvents(this.deps.env));
  }

  /**
   * The turn-shaping events after `windowStart`, in order: every one, or, when there are more than
   * `bound` holds, the first ones through one past it (the read stops there, whatever the backlog).
   */
  async #window(windowStart: number, bound: WindowBound): Promise<StoredEvent[]> {
    const window: StoredEvent[] = [];
    let chars = 0;
    for (let after = windowStart; ; ) {
      const page = await listEvents(this.deps.shard, this.deps.conversationId, after, WINDOW_PAGE, { runs: false });
      for (const event of page) {
        window.push(event);
        chars += eventTextChars(event);
      }
      const last = page.at(-1);
      if (page.length < WINDOW_PAGE || last === undefined || !withinBound(window.length, chars, bound)) break;
      after = last.seq;
    }
    return window;
  }

  /**
   * A chain that is behind reads the log on from where it stopped, a page at a time, until its
   * window is full again (still behind) or the log has no more (caught up: it holds its whole
   * uncovered history and observes appends again). Settlement calls it once a boundary covered
   * part of the window; the reads follow what the boundary freed, not the backlog.
   */
  async readOn(chain: HotChain): Promise<void> {
    const bound = this.bound(chain.declaration);
    while (chain.behind !== undefined) {
      const page = await listEvents(this.deps.shard, this.deps.conversationId, chain.lastSeenSeq, WINDOW_PAGE, { runs: false });
      const taken = readOn(chain, page, bound);
      if (taken < page.length) return;
      if (page.length < WINDOW_PAGE) caughtUp(chain);
    }
  }

  /**
   * Where an activation as of `throughSeq` (the log's head when undefined) starts: the newest whole
   * groups that reach the trigger. An activation is as of its activating source: what a batch
   * appended after that source is new to the epoch, not established history to leave behind the
   * frontier. Read backwards from there, a range at a time, each twice the one before, until its
   * groups reach the trigger (or the log starts): what it costs follows the trigger, not the
   * history. Each range is read with the events related to it that lie before it (`readSliceLog`),
   * so its groups fold as over the whole log; a group whose source lies before the range is left out.
   */
  async #frontierStart(declaration: StoredDeclaration, throughSeq?: number): Promise<number> {
    const { shard, conversationId } = this.deps;
    const { policy } = declaration.registration.compactor;
    const through = throughSeq ?? (await readHead(shard, conversationId));
    const first = Math.max(16, Math.ceil(policy.triggerInputChars / FRONTIER_CHARS_PER_EVENT));
    const longest = Math.max(FRONTIER_MAX_EVENTS, 8 * first);
    for (let span = first; ; span = Math.min(2 * span, longest)) {
      const after = Math.max(0, through - span);
      const turns = reconstruct(await readSliceLog(shard, conversationId, [{ after, groupsThrough: through, through }]), foldPolicy(declaration));
      const groups = groupTurns(turns.filter((t) => t.group > after));
      if (after === 0 || groups.reduce((chars, group) => chars + group.chars, 0) >= policy.triggerInputChars) return frontierStartSeq(groups, policy);
      if (span === longest) return groups.length === 0 ? after + 1 : frontierStartSeq(groups, policy);
    }
  }

  /**
   * The first eligible turn of an epoch writes its activation frontier: the newest whole groups
   * that reach the trigger. This reads the whole history once per epoch; preflight never does.
   */
  async #activate(declaration: StoredDeclaration, activatingSeq: number, now: Date): Promise<Activation> {
    const { env, shard, conversationId } = this.deps;
    const { agent, compactor } = declaration.registration;
    const startSeq = await this.#frontierStart(declaration, activatingSeq);
    const document = {
      format: "foldline.activation-frontier@1",
      conversationId,
      route: conversationId,
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
    const frontierId = `frn_${hashCanonical([conversationId, agent.id, declaration.epoch.id]).slice(0, 32)}`;
    const frontierHash = await putDocument(env.DOCUMENTS, frontierDocumentKey(frontierId), canonicalJson(document));
    const activation = { frontierId, frontierHash, startSeq, activatingSeq };
    await insertActivation(shard, conversationId, agent.id, declaration.epoch.id, activation, now.toISOString());
    return (await readActivation(shard, conversationId, agent.id, declaration.epoch.id)) ?? activation;
  }
}
