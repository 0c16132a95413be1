import type { Group, PlanFailure, TailCut } from "./compaction-plan";
import { cutTail, turnChars } from "./compaction-plan";
import { renderBoundaryBody } from "./compactor-output";
import type { CompactionPolicy, Epoch, Registration } from "./declarations";
import type { BoundaryBody } from "./boundary";
import type { Result } from "./errors";
import type { StoredEvent } from "./events";
import { hashCanonical } from "./hash";
import type { Amendment, Packet, TrustedDocument } from "./packet";
import { PACKET_FORMAT, sliceConversationType } from "./packet";
import type { Turn } from "./reconstruction";
import { renderSliceLine } from "./render";
import { tailBounds } from "./selection";

/**
 * Packet building, as data: which uncovered groups a run freezes (`freezeSlice`) and the packet
 * that freezes them (`buildPacket`). The engine reads what these need (the chain's window, the
 * trusted documents, the memory pages recalled for the slice), calls them, and writes the result.
 */

/** What one run freezes (`cutTail`'s oldest whole groups within the bounds), with the frozen turns in order. */
export interface FrozenSlice extends TailCut {
  readonly turns: readonly Turn[];
}

/** The log events a group stands for: its turns' origins and the corrections or deliveries that shaped them. */
export function groupEvents(group: Group): number {
  return new Set(group.turns.flatMap((t) => [t.originSeq, t.effectiveSeq])).size;
}

/**
 * The slice a run planned now would freeze, under the compactor's policy and the agent's own caps
 * on the tail it retains (`tailBounds`), or why there is none (`cutTail`'s tagged failures;
 * `nothing_to_freeze` is not a failure of the chain, only a reason to wait).
 */
export function freezeSlice(
  groups: readonly Group[],
  policy: CompactionPolicy,
  caps: Registration["agent"]["context"],
): Result<FrozenSlice, PlanFailure> {
  const cut = cutTail(groups, policy, groupEvents, tailBounds(caps));
  if (!cut.ok) return cut;
  const turns = cut.value.frozen.flatMap((g) => g.turns);
  if (turns.length === 0) return { ok: false, error: { code: "nothing_to_freeze", message: "the slice holds no turn" } };
  return { ok: true, value: { ...cut.value, turns } };
}

/** What recall searches the agent's memory pages with: the slice's exact text. */
export const sliceRecallText = (slice: FrozenSlice): string => slice.turns.map((t) => t.text).join("\n");

export interface PacketInput {
  readonly conversationId: string;
  readonly declaration: { readonly registration: Registration; readonly epoch: Epoch; readonly prompt: string; readonly promptHash: string };
  readonly runId: string;
  /** The source whose preflight (or re-plan) called for the run. */
  readonly triggerSeq: number;
  readonly frontier: { readonly id: string; readonly hash: string; readonly startSeq: number };
  /** The chain's head, which this run's boundary will follow. */
  readonly head: { readonly body: BoundaryBody; readonly hash: string; readonly coveredThroughSeq: number } | undefined;
  readonly amendments: readonly Amendment[];
  readonly slice: FrozenSlice;
  /** The chain's uncovered log events, at least through the frozen groups: the frozen sources' own conversation type is read from them. */
  readonly window: readonly StoredEvent[];
  readonly memoryPages: readonly { readonly path: string; readonly version: number; readonly contentHash: string; readonly content: string }[];
  readonly documents: readonly TrustedDocument[];
  /** The agent's active characters at the trigger, and the part of them its envelopes take. */
  readonly activeChars: number;
  readonly envelopeChars: number;
  readonly now: Date;
}

/** The packet of a planned run: everything its compactor may read, and every input hash its boundary binds. */
export function buildPacket(input: PacketInput): Packet {
  const { declaration, slice, head } = input;
  const { agent, compactor } = declaration.registration;
  const turns = slice.turns;
  const frozenTurns = turns.map((t) => ({
    id: t.id,
    messageId: t.messageId,
    group: t.group,
    role: t.role,
    author: t.author,
    text: t.text,
    hash: t.hash,
    rendered: renderSliceLine(t),
    nativeChars: turnChars(t),
  }));
  // The chat's type as its platform said it on the frozen sources, never guessed from who spoke.
  const frozenGroups = new Set(slice.frozen.map((g) => g.seq));
  const conversationType = sliceConversationType(input.window.flatMap((e) => (e.kind === "source" && frozenGroups.has(e.seq) ? [e.body.conversationType] : [])));
  return {
    format: PACKET_FORMAT,
    conversationId: input.conversationId,
    conversationType,
    agentId: agent.id,
    compactorId: compactor.id,
    historyAgents: [...agent.historyAgents].sort(),
    admitSensitive: agent.admitSensitive,
    epoch: declaration.epoch,
    runId: input.runId,
    triggerSeq: input.triggerSeq,
    frontier: { id: input.frontier.id, hash: input.frontier.hash, startSeq: input.frontier.startSeq },
    policy: compactor.policy,
    outputMode: compactor.outputMode,
    prompt: declaration.prompt,
    promptHash: declaration.promptHash,
    previousBoundary: head === undefined ? null : { id: head.body.id, hash: head.hash, coveredThroughSeq: head.coveredThroughSeq, body: renderBoundaryBody(head.body.content) },
    amendments: [...input.amendments],
    frozen: {
      turns: frozenTurns,
      fromSeq: slice.frozen[0]?.seq ?? 0,
      throughSeq: slice.frozen.at(-1)?.seq ?? 0,
      throughTurnId: turns.at(-1)?.id ?? "",
      sourceCount: slice.frozen.length,
      eventCount: slice.frozenEvents,
      chars: slice.frozenChars,
      turnIdsHash: hashCanonical(turns.map((t) => t.id)),
      renderedHash: hashCanonical(frozenTurns.map((t) => t.rendered)),
    },
    memoryPages: input.memoryPages.map((p) => ({ path: p.path, version: p.version, contentHash: p.contentHash, content: p.content })),
    documents: input.documents.map((d) => ({ name: d.name, hash: d.hash, content: d.content })),
    sizes: { preCompactionChars: input.activeChars, retainedTailChars: slice.tailChars, replacedChars: input.envelopeChars + slice.frozenChars },
    createdAt: input.now.toISOString(),
  };
}
