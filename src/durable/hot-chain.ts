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
  /** Turn-shaping events with seq > `windowStart`, in order (through `behind` when it is set). */
  window: StoredEvent[];
  windowStart: number;
  lastSeenSeq: number;
  /**
   * Set while the chain is too far behind the log to hold its whole uncovered history
   * (`windowBound`): the window is then the oldest part of it, through this sequence number, and
   * the chain is exactly the chain the log ended there would give. It plans from that part and
   * observes nothing newer; the rest is read on (`readOn`) as boundaries cover the window.
   */
  behind: number | undefined;
  /** The text the window's events carry, in characters (`eventTextChars`), kept with the window. */
  heldChars: number;
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
  /** The turn-shaping events after `windowStart`, in order: all of them, or the oldest through `behind`. */
  readonly window: StoredEvent[];
  readonly backoffUntil: number;
  readonly provisional: boolean;
  readonly behind?: number | undefined;
}

/** The hot state of a chain just read from D1: its caches empty, its ledger folded over the window. */
export function hotChain(loaded: LoadedChain): HotChain {
  const turnHashes = new Map<string, string>();
  return {
    ...loaded,
    behind: loaded.behind,
    heldChars: textChars(loaded.window),
    lastSeenSeq: loaded.behind ?? Math.max(loaded.windowStart, loaded.window.at(-1)?.seq ?? 0),
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

/**
 * Takes in events the log committed (in order; each at most once, whoever appended it). A chain
 * that is behind takes in nothing: what it has not read yet is read in order (`readOn`).
 */
export function observe(chain: HotChain, appended: readonly StoredEvent[]): void {
  if (chain.behind !== undefined) return;
  for (const event of appended) {
    if (event.seq <= chain.lastSeenSeq) continue;
    take(chain, event);
  }
}

function take(chain: HotChain, event: StoredEvent): void {
  chain.lastSeenSeq = event.seq;
  if (!TURN_KINDS.has(event.kind)) return;
  chain.window.push(event);
  chain.heldChars += eventTextChars(event);
  chain.ledger.add(event);
}

/** How much of its uncovered history a chain holds at most: turn-shaping events, and the characters of text they carry. */
export interface WindowBound {
  readonly events: number;
  readonly chars: number;
}

/** Characters of text a window event carries: a message's or reply's text, an edit's new text. */
export function eventTextChars(event: StoredEvent): number {
  switch (event.kind) {
    case "source":
    case "proposal":
      return event.body.text.length;
    case "correction":
      return event.body.action === "edit" ? event.body.text.length : 0;
    default:
      return 0;
  }
}

const textChars = (events: readonly StoredEvent[]): number => events.reduce((n, event) => n + eventTextChars(event), 0);

/**
 * A chain's window bound: `floor` events (`HOT_WINDOW_EVENTS`) and 256 characters for each, or
 * four times what the agent's own caps and trigger let a chain hold before it is due to compact,
 * whichever is more. A chain that keeps compacting never reaches it; one whose compactions keep
 * failing does, after about four triggers' worth of messages.
 */
export function windowBound(declaration: StoredDeclaration, floor: number): WindowBound {
  const { agent, compactor } = declaration.registration;
  return {
    events: Math.max(floor, 4 * agent.context.maxMessages),
    chars: Math.max(256 * floor, 4 * Math.max(compactor.policy.triggerInputChars, agent.context.maxChars)),
  };
}

/** Whether `events` turn-shaping events carrying `chars` characters of text fit `bound` (one always does, so a chain always reads on). */
export const withinBound = (events: number, chars: number, bound: WindowBound): boolean => events <= 1 || (events <= bound.events && chars <= bound.chars);

/** How many of `events`, oldest first, fit `bound` (`withinBound`). */
export function prefixWithin(events: readonly StoredEvent[], bound: WindowBound): number {
  let chars = 0;
  for (let i = 0; i < events.length; i++) {
    chars += eventTextChars(events[i] as StoredEvent);
    if (!withinBound(i + 1, chars, bound)) return i;
  }
  return events.length;
}

/** Whether the chain holds more than `bound`: it is then to be held as the oldest part that fits (`holdPrefix`). */
export const overBound = (chain: HotChain, bound: WindowBound): boolean => !withinBound(chain.window.length, chain.heldChars, bound);

/**
 * The chain fell too far behind to hold its uncovered history: it keeps the oldest part that fits
 * `bound` and becomes exactly the chain of a log that ended there (`behind`), its totals folded
 * again over that part once.
 */
export function holdPrefix(chain: HotChain, bound: WindowBound): void {
  const kept = prefixWithin(chain.window, bound);
  const last = chain.window[kept - 1];
  if (kept === chain.window.length || last === undefined) return;
  chain.window = chain.window.slice(0, kept);
  chain.heldChars = textChars(chain.window);
  chain.behind = last.seq;
  chain.lastSeenSeq = last.seq;
  chain.turnHashes.clear();
  chain.history = undefined;
  rebuildLedger(chain);
}

/**
 * A chain that is behind reads on: `events` are the log's next events after `lastSeenSeq`, in order.
 * It takes them while its window stays within `bound` (an empty window takes one, whatever its
 * size, so a chain always reads on); at the first turn-shaping event that would not fit, it stops
 * (still behind, through the last one it took). Returns how many it took; the
 * caller, once the log has no more, calls `caughtUp`.
 */
export function readOn(chain: HotChain, events: readonly StoredEvent[], bound: WindowBound): number {
  let taken = 0;
  for (const event of events) {
    if (event.seq <= chain.lastSeenSeq) {
      taken += 1;
      continue;
    }
    if (TURN_KINDS.has(event.kind) && !withinBound(chain.window.length + 1, chain.heldChars + eventTextChars(event), bound)) break;
    take(chain, event);
    taken += 1;
  }
  chain.behind = chain.lastSeenSeq;
  return taken;
}

/** The chain read the log to its end: it holds its whole uncovered history again, and observes what comes next. */
export function caughtUp(chain: HotChain): void {
  chain.behind = undefined;
}

/**
 * `observe` for events not yet known to be stored (the one-round-trip source append decides its
 * preflight before its write): returns what undoes it exactly, for when the write does not commit.
 * Undoing restores the window and the high-water mark and rebuilds the totals over the window as it
 * was; the turn-hash cache is cleared, since an unwritten turn's id is reused by the next event.
 */
export function observeProvisionally(chain: HotChain, events: readonly StoredEvent[]): () => void {
  const { lastSeenSeq, heldChars } = chain;
  const length = chain.window.length;
  observe(chain, events);
  return () => {
    if (chain.lastSeenSeq === lastSeenSeq && chain.window.length === length) return;
    chain.window.length = length;
    chain.lastSeenSeq = lastSeenSeq;
    chain.heldChars = heldChars;
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
  chain.heldChars -= textChars(trimmed);
  chain.windowStart = start;
  // The cache keeps only what later folds can use; the ledger's own groups are already folded.
  chain.turnHashes.clear();
  chain.ledger.trim(start, trimmed);
  chain.amendments = undefined;
  // A chain behind reads on from what the boundary covered, never from before it.
  if (chain.behind !== undefined && chain.behind < start) chain.behind = chain.lastSeenSeq = start;
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
