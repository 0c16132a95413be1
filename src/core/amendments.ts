import type { StoredEvent } from "./events";
import { hashCanonical } from "./hash";
import type { Amendment } from "./packet";
import type { ReconstructionPolicy, Turn } from "./reconstruction";
import { reconstruct } from "./reconstruction";
import { indentContinuation, renderEnvelope } from "./render";
import type { NativeMessage } from "./render";

/**
 * Covered-history amendments. Every boundary absorbs the log as it stood when its run was planned
 * (its frozen turns, plus the amendments pending then). Evidence that arrives later about a turn
 * the chain already covers — an edit, a deletion, a reply delivered late — is not folded into the
 * frozen boundary: it is compared with what was absorbed and becomes a bounded, typed amendment.
 */

export interface AmendmentScope {
  /** The log position the head boundary absorbed: its run's trigger sequence. */
  readonly absorbedThroughSeq: number;
  /** Groups in [frontierStartSeq, coveredThroughSeq] are covered by the chain. */
  readonly frontierStartSeq: number;
  readonly coveredThroughSeq: number;
  readonly policy: ReconstructionPolicy;
}

/**
 * `related` holds every event about the affected turns (their sources or proposals, and all
 * corrections and deliveries of them); it need not be the whole log.
 */
export function deriveAmendments(related: readonly StoredEvent[], scope: AmendmentScope): Amendment[] {
  const covered = (turn: Turn): boolean => turn.group >= scope.frontierStartSeq && turn.group <= scope.coveredThroughSeq && turn.group > 0;
  const byId = (turns: Turn[]) => new Map(turns.filter(covered).map((t) => [t.id, t]));
  const before = byId(reconstruct(related.filter((e) => e.seq <= scope.absorbedThroughSeq), scope.policy));
  const after = reconstruct(related, scope.policy).filter(covered);

  const amendments: Amendment[] = [];
  for (const turn of after) {
    const prior = before.get(turn.id);
    if (prior !== undefined && prior.hash === turn.hash) continue;
    amendments.push({
      turnId: turn.id,
      group: turn.group,
      role: turn.role,
      kind: prior === undefined ? "added" : "edited",
      hashBefore: prior?.hash ?? null,
      hashAfter: turn.hash,
      text: turn.text,
    });
  }
  const present = new Set(after.map((t) => t.id));
  for (const prior of before.values()) {
    if (present.has(prior.id)) continue;
    amendments.push({ turnId: prior.id, group: prior.group, role: prior.role, kind: "deleted", hashBefore: prior.hash, hashAfter: null, text: null });
  }
  const order = (id: string): number => Number.parseInt(id.slice(1), 10);
  return amendments.sort((a, b) => a.group - b.group || (a.role === b.role ? order(a.turnId) - order(b.turnId) : a.role === "user" ? -1 : 1));
}

export const amendmentsHash = (amendments: readonly Amendment[]): string => hashCanonical(amendments);

/** The amendment envelope's body: one line per changed turn, oldest first. */
export function renderAmendmentBody(amendments: readonly Amendment[]): string {
  const lines = amendments.map((a) => {
    switch (a.kind) {
      case "edited":
        return `- [${a.turnId}] (${a.role}) now reads: ${indentContinuation(a.text ?? "")}`;
      case "added":
        return `- [${a.turnId}] (${a.role}) was added: ${indentContinuation(a.text ?? "")}`;
      case "deleted":
        return `- [${a.turnId}] (${a.role}) was deleted.`;
    }
  });
  return ["Newer evidence about turns the summary above covers; it supersedes the summary where they differ:", ...lines].join("\n");
}

export function amendmentEnvelope(amendments: readonly Amendment[]): NativeMessage | undefined {
  return amendments.length === 0 ? undefined : renderEnvelope("amendment", renderAmendmentBody(amendments));
}

