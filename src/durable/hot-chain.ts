import type { Group } from "../core/compaction-plan";
import { groupTurns } from "../core/compaction-plan";
import { renderBoundaryBody } from "../core/compactor-output";
import type { StoredEvent } from "../core/events";
import type { Amendment, Packet } from "../core/packet";
import type { ReconstructionPolicy } from "../core/reconstruction";
import { reconstruct } from "../core/reconstruction";
import { renderEnvelope } from "../core/render";
import { partitionPoint } from "../core/sorted";
import { tailEvents } from "../core/tail-fold";
import { TailLedger } from "../core/tail-ledger";
import type { Activation } from "../storage/shard/activations";
import type { StoredDeclaration } from "../storage/control/declarations";
import type { PlanRecord } from "../storage/shard/plans";
import type { StoredBoundary } from "../storage/shard/boundaries";

/**
 * The hot state of one chain (agent × epoch) as its conversation's object holds it: the head
 * boundary, the open plan, and the log events after the head's coverage (the only events
 * preflight and planning read, so their cost does not grow with the conversation), with the
 * running totals and caches kept over them. It is a cache: every field is rebuilt from D1 when the
 * object wakes (`chain-book`). The operations here do no I/O.
 */

/** Log kinds that shape turns; runs never do. */
export const TURN_KINDS: ReadonlySet<StoredEvent["kind"]> = new Set(["source", "proposal", "delivery", "correction"]);

export interface HotChain {
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
  history: { windowStart: number; after: number; events: StoredEvent[]; unreadThroughSeq: number | undefined } | undefined;
  /** The head packet last verified against R2, by object etag, so selection re-reads it only when it changed. */
  verifiedPacket: { key: string; etag: string; packet: Packet } | undefined;
}

export interface LoadedChain {
  readonly declaration: StoredDeclaration;
  readonly activation: Activation;
  readonly head: StoredBoundary | undefined;
  readonly openPlan: PlanRecord | undefined;
  readonly windowStart: number;
  /** The turn-shaping events after `windowStart`, in order. */
  readonly window: StoredEvent[];
  readonly backoffUntil: number;
  readonly provisional: boolean;
}

/** The hot state of a chain just read from D1: its caches empty, its ledger folded over the window. */
export function hotChain(loaded: LoadedChain): HotChain {
  const turnHashes = new Map<string, string>();
  return {
    ...loaded,
    lastSeenSeq: Math.max(loaded.windowStart, loaded.window.at(-1)?.seq ?? 0),
    amendments: undefined,
    history: undefined,
    verifiedPacket: undefined,
    turnHashes,
    ledger: ledgerOf(loaded.declaration, loaded.windowStart, loaded.window, turnHashes),
    boundaryChars: undefined,
  };
}

/** Which turns the agent's history holds: its admitted agents' delivered replies, sensitive turns if it admits them. */
export function foldPolicy(declaration: StoredDeclaration): ReconstructionPolicy {
  const { agent } = declaration.registration;
  return { admittedAgents: new Set(agent.historyAgents), includeSensitive: agent.admitSensitive };
}

/** Takes in events the log committed (in order; each at most once, whoever appended it). */
export function observe(chain: HotChain, appended: readonly StoredEvent[]): void {
  for (const event of appended) {
    if (event.seq <= chain.lastSeenSeq) continue;
    chain.lastSeenSeq = event.seq;
    if (!TURN_KINDS.has(event.kind)) continue;
    chain.window.push(event);
    chain.ledger.add(event);
  }
}

/**
 * `observe` for events not yet known to be stored (the one-round-trip source append decides its
 * preflight before its write): returns what undoes it exactly, for when the write does not commit.
 * Undoing restores the window and the high-water mark and rebuilds the totals over the window as it
 * was; the turn-hash cache is cleared, since an unwritten turn's id is reused by the next event.
 */
export function observeProvisionally(chain: HotChain, events: readonly StoredEvent[]): () => void {
  const { lastSeenSeq } = chain;
  const length = chain.window.length;
  observe(chain, events);
  return () => {
    if (chain.lastSeenSeq === lastSeenSeq && chain.window.length === length) return;
    chain.window.length = length;
    chain.lastSeenSeq = lastSeenSeq;
    chain.turnHashes.clear();
    rebuildLedger(chain);
  };
}

/**
 * Drops what a new head covers from the window, at the cost of what it covers: the ledger lets go
 * of those events and folds again only the groups they shaped (`TailLedger.trim`), so a chain
 * catching up after compaction fell behind does not fold its whole backlog once per boundary.
 */
export function trimWindow(chain: HotChain, coveredThroughSeq: number): void {
  const start = Math.max(chain.windowStart, coveredThroughSeq);
  if (start === chain.windowStart) return;
  const cut = firstAfter(chain.window, start);
  const trimmed = chain.window.slice(0, cut);
  chain.window = chain.window.slice(cut);
  chain.windowStart = start;
  // The cache keeps only what later folds can use; the ledger's own groups are already folded.
  chain.turnHashes.clear();
  chain.ledger.trim(start, trimmed);
  chain.amendments = undefined;
}

/** The window's events through `seq`: a prefix, found without reading the rest. */
export const windowThrough = (chain: HotChain, seq: number): StoredEvent[] => chain.window.slice(0, firstAfter(chain.window, seq));

/** The index of the window's first event after `seq` (the window is in sequence order). */
const firstAfter = (window: readonly StoredEvent[], seq: number): number => partitionPoint(window, (event) => event.seq <= seq);

/** A ledger of the window as it stands; the amendments cached against the old one go with it. */
function rebuildLedger(chain: HotChain): void {
  chain.ledger = ledgerOf(chain.declaration, chain.windowStart, chain.window, chain.turnHashes);
  chain.amendments = undefined;
}

function ledgerOf(declaration: StoredDeclaration, windowStart: number, window: readonly StoredEvent[], turnHashes: Map<string, string>): TailLedger {
  const ledger = new TailLedger(foldPolicy(declaration), windowStart, turnHashes);
  for (const event of window) ledger.add(event);
  return ledger;
}

/**
 * The uncovered exact turns in whole groups, as of `throughSeq` (`core/tail-ledger` `tailEvents`):
 * the ledger's groups (every context call), or as they were at `throughSeq` (an earlier source of a
 * batch, a plan as of a source that replies followed); folded from the window only when that is
 * further back than the ledger remembers.
 */
export function tail(chain: HotChain, throughSeq = Number.POSITIVE_INFINITY): Group[] {
  if (throughSeq >= (chain.window.at(-1)?.seq ?? chain.windowStart)) return chain.ledger.groups();
  const remembered = chain.ledger.groupsAsOf(throughSeq);
  if (remembered !== undefined) return remembered;
  const events = tailEvents(chain.window).filter((event) => event.seq <= throughSeq);
  const turns = reconstruct(events, foldPolicy(chain.declaration), chain.turnHashes).filter((turn) => turn.group > chain.windowStart);
  return groupTurns(turns);
}

/** The newest source message the window holds: what a resumed or settled chain plans from. */
export const latestSource = (chain: HotChain): StoredEvent | undefined => chain.window.findLast((event) => event.kind === "source");

/** The head's boundary envelope length (rendered once per head). */
export function boundaryEnvelopeChars(chain: HotChain): number {
  const head = chain.head;
  if (head === undefined) return 0;
  if (chain.boundaryChars?.headId !== head.body.id) {
    chain.boundaryChars = { headId: head.body.id, chars: renderEnvelope("boundary", renderBoundaryBody(head.body.content)).content.length };
  }
  return chain.boundaryChars.chars;
}

/** A boundary settled on the chain: it is the head, nothing is in flight, and the window starts after it. */
export function advanceHead(chain: HotChain, head: StoredBoundary | undefined, coveredThroughSeq: number): void {
  chain.head = head;
  chain.openPlan = undefined;
  chain.backoffUntil = 0;
  trimWindow(chain, coveredThroughSeq);
  chain.amendments = undefined;
}
