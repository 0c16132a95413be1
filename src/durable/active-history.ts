import { amendmentEnvelope, deriveAmendments } from "../core/amendments";
import type { Group } from "../core/compaction-plan";
import type { Amendment } from "../core/packet";
import type { ActiveSize } from "../core/preflight-decider";
import { readRelatedEvents } from "../storage/shard/context-reads";
import type { EngineDeps } from "./engine-deps";
import type { HotChain } from "./hot-chain";
import { boundaryEnvelopeChars, foldPolicy, tail } from "./hot-chain";

/** A chain's active history now: boundary and amendment envelopes plus the exact uncovered turns. */
export interface ActiveHistory {
  readonly groups: Group[];
  readonly amendments: Amendment[];
  readonly envelopeChars: number;
  readonly activeChars: number;
}

/**
 * What the agent's context holds for a chain, read from its hot state: the only I/O is the
 * amendment derivation, which reads the events about affected covered turns when (and only when)
 * the head moved or an event about covered history arrived.
 */
export class ActiveReader {
  constructor(private readonly deps: EngineDeps) {}

  /**
   * Amendments against the head: later evidence about covered turns, compared with what the chain
   * absorbed (the log as of the head run's trigger). Reads only the events about affected turns.
   */
  async amendments(chain: HotChain): Promise<Amendment[]> {
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
        : deriveAmendments(await readRelatedEvents(this.deps.shard, this.deps.conversationId, messageIds, proposalIds), {
            absorbedThroughSeq: absorbed,
            frontierStartSeq: chain.activation.startSeq,
            coveredThroughSeq: head.coveredThroughSeq,
            policy: foldPolicy(chain.declaration),
          });
    chain.amendments = { key, value };
    return value;
  }

  /** The agent's active history as of `throughSeq`. */
  async active(chain: HotChain, throughSeq = Number.POSITIVE_INFINITY): Promise<ActiveHistory> {
    const groups = tail(chain, throughSeq);
    const { amendments, envelopeChars } = await this.#envelopes(chain);
    return { groups, amendments, envelopeChars, activeChars: envelopeChars + groups.reduce((n, g) => n + g.chars, 0) };
  }

  /**
   * The active characters and messages as of `throughSeq`, for preflight: from the ledger's running
   * totals when `throughSeq` is the window's newest event (every single append), so the cost does
   * not grow with the window; by folding the window otherwise (an earlier source of a batch). Both
   * give the same numbers (the ledger's property tests).
   */
  async size(chain: HotChain, throughSeq: number): Promise<ActiveSize> {
    const envelopeMessages = (chain.head === undefined ? 0 : 1) + ((await this.amendments(chain)).length === 0 ? 0 : 1);
    if (throughSeq < (chain.window.at(-1)?.seq ?? chain.windowStart)) {
      const active = await this.active(chain, throughSeq);
      return { chars: active.activeChars, messages: envelopeMessages + active.groups.reduce((n, g) => n + g.turns.length, 0) };
    }
    return { chars: (await this.#envelopes(chain)).envelopeChars + chain.ledger.tailChars, messages: envelopeMessages + chain.ledger.tailMessages };
  }

  /** The boundary and amendment envelopes' characters, which every active count starts from. */
  async #envelopes(chain: HotChain): Promise<{ amendments: Amendment[]; envelopeChars: number }> {
    const amendments = await this.amendments(chain);
    return { amendments, envelopeChars: boundaryEnvelopeChars(chain) + (amendmentEnvelope(amendments)?.content.length ?? 0) };
  }
}
