import { failedAttemptEvent } from "./compactor-runs";
import type { EventInput } from "./events";
import type { ExtractedFact, SliceTurn } from "./fact-extraction";
import type { FrozenTurn } from "./packet";

/**
 * What an extraction job derives from the boundary it follows, as pure functions: its run id, the
 * slice's turns with the log events they stand for, the provenance rows of the facts a merge
 * made current, and the content-dark run event of a failed attempt.
 */

/** An extraction's run id: its compaction run's, so a redelivered job is the same run. */
export function extractionRunId(compactionRunId: string): string {
  return compactionRunId.replace(/^cmp_/, "ext_");
}

/** The event sequence a frozen turn stands for: `s<seq>` is the source, `p<seq>` the delivered proposal. */
export function turnSeq(turnId: string): number | undefined {
  const match = /^[sp]([1-9]\d*)$/.exec(turnId);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

export type SliceFailure = { readonly reason: "unknown_turn"; readonly turnId: string } | { readonly reason: "missing_event"; readonly seq: number };

/**
 * The frozen turns as extraction reads them, each bound to its log event's hash. A turn whose
 * event is missing fails the slice: a fact must never cite a message the log cannot show.
 */
export function sliceTurns(turns: readonly FrozenTurn[], eventHashes: ReadonlyMap<number, string>): { ok: true; value: SliceTurn[] } | { ok: false; error: SliceFailure } {
  const slice: SliceTurn[] = [];
  for (const turn of turns) {
    const seq = turnSeq(turn.id);
    if (seq === undefined) return { ok: false, error: { reason: "unknown_turn", turnId: turn.id } };
    const eventHash = eventHashes.get(seq);
    if (eventHash === undefined) return { ok: false, error: { reason: "missing_event", seq } };
    slice.push({
      messageId: turn.messageId ?? turn.id,
      seq,
      eventHash,
      role: turn.role,
      author: { handle: turn.author.username ?? turn.author.id, name: turn.author.name ?? "" },
      text: turn.text,
    });
  }
  return { ok: true, value: slice };
}

/**
 * The provenance rows of a merged version: per key whose current statement the merge set
 * (`MergeResult.current`), the sources of that fact. A key's sources name the messages that state
 * the value the page holds, not every message the slice said about it; a fact that only went
 * under "previously" names none (the key's sources stay those of the version that set its value).
 */
export function provenanceRows(current: ReadonlyMap<string, ExtractedFact>, conversationId: string, runId: string) {
  return [...current].flatMap(([factKey, fact]) => fact.sources.map((source) => ({ factKey, conversationId, messageId: source.messageId, seq: source.seq, eventHash: source.eventHash, runId })));
}

/** One failed extraction attempt: private evidence under the compactor's id, keyed by attempt. */
export function failedExtractionEvent(compactorId: string, runId: string, boundaryId: string, attempt: number, code: string, message: string): EventInput {
  return failedAttemptEvent(compactorId, runId, attempt, code, message, { process: "extraction", boundaryId: boundaryId.slice(0, 256) });
}
