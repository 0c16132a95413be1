import { raiseIncident } from "../incidents";
import { NOT_SERVING_MESSAGE } from "../core/agent-access";
import { opsText } from "../core/ops-text";
import { amendmentEnvelope } from "../core/amendments";
import type { Group } from "../core/compaction-plan";
import { renderBoundaryBody } from "../core/compactor-output";
import type { ContextSelection } from "../core/context-manifest";
import { buildContextManifest } from "../core/context-manifest";
import { scopesAllow } from "../core/conversation-id";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import type { StoredEvent } from "../core/events";
import type { Packet } from "../core/packet";
import { renderEnvelope } from "../core/render";
import type { ResolverFailure } from "../core/resolver";
import { verifyAnchor, verifyHeadAgainstLog, verifySettledHead } from "../core/resolver";
import { groupsAsOf } from "../core/selection";
import { groupsAfter } from "../core/tail-fold";
import type { StoredDeclaration } from "../storage/control/declarations";
import { currentDeclaration } from "../storage/control/declarations";
import { closeConditions } from "../storage/shard/incidents";
import { frozenSliceRange } from "../core/chain-audit";
import { readHeadRows, readSliceLog } from "../storage/shard/context-reads";
import { readPacket } from "../storage/r2/documents";
import { listEventsBefore } from "../storage/shard/events";
import type { ActiveReader } from "./active-history";
import type { ChainBook } from "./chain-book";
import type { EngineDeps } from "./engine-deps";
import type { HotChain } from "./hot-chain";
import { selectWithMemory } from "./memory-serving";
import { BEHIND, behindIncident } from "./behind";
import { shardsOf } from "../storage/shards";
import { TURN_KINDS, foldPolicy, tail } from "./hot-chain";

/** Log events per page when reading covered history back for an agent that is never served a boundary. */
const HISTORY_PAGE = 500;
/**
 * At most this many pages of the log are read back for an agent's admitted history (4,000
 * events): however sparse its admitted turns, a context call's reads stay bounded, and the
 * manifest says where the reading stopped (`unread`).
 */
const HISTORY_MAX_PAGES = 8;

/**
 * Serving: an agent's context from its chain's hot state, the head verified on every call against
 * its row, predecessor, plan, completed run, packet, the log's anchor and the log's slice the packet
 * froze (`core/resolver`), the
 * selection and its manifest pure (`core/selection`, `core/context-manifest`).
 */
export class ContextServer {
  /**
   * Agents with no open `resolver_failure` incident here, as far as this server knows: it closed
   * them, or found none to close, since it was made. A refused head opens (or counts) one; the next
   * head that verifies closes it, with one statement the first time per agent and none after.
   */
  readonly #clear = new Set<string>();

  constructor(
    private readonly deps: EngineDeps,
    private readonly book: ChainBook,
    private readonly reader: ActiveReader,
  ) {}

  /**
   * Context for an agent: the latest valid boundary of the current epoch, any covered-history
   * amendment, and the exact tail under the agent's policy; `asOfSeq` (a reply's source message)
   * ends the tail at that message's group (`core/selection` `groupsAsOf`). With a `query`, recalled
   * memory follows the boundary and amendment (`selectWithMemory`); without one nothing changes, so
   * plain calls keep their prefix. Any doubt about the chain fails closed with a typed error and an
   * incident; the agent never gets an unverified summary.
   */
  async select(agentId: string, now: Date, asOfSeq?: number, query?: string, scopes?: readonly string[]): Promise<Result<ContextSelection>> {
    const { conversationId } = this.deps;
    const declaration = await currentDeclaration(this.deps.env.DB, agentId);
    if (declaration === undefined || !declaration.registration.agent.enabled || !scopesAllow(declaration.registration.agent.sources, conversationId)) {
      return fail("not_found", NOT_SERVING_MESSAGE);
    }
    const chain = await this.book.servedChain(declaration, now);
    if (chain.behind !== undefined) return this.#behind(chain, now);
    const verified = await this.#verify(declaration, chain, now);
    if (!verified.ok) return verified;
    const { agent } = declaration.registration;
    // Boundaries and amendments are derived from possibly sensitive history and are always
    // sensitive: an agent that does not admit sensitive content gets neither, only exact turns
    // (of the whole admitted history, `#admittedHistory`).
    const withheld = chain.head !== undefined && !agent.admitSensitive;
    const head = withheld ? undefined : chain.head;
    const amendments = head === undefined ? [] : await this.reader.amendments(chain);
    const boundary = head === undefined ? undefined : { head, envelope: renderEnvelope("boundary", renderBoundaryBody(head.body.content)) };
    const envelope = amendmentEnvelope(amendments);
    if (envelope !== undefined && envelope.content.length > agent.context.maxAmendmentChars) {
      return fail(
        "amendment_too_large",
        `the covered-history amendment needs ${envelope.content.length} characters, more than the agent's ${agent.context.maxAmendmentChars}; it is never cut`,
        { amendmentChars: envelope.content.length, maxAmendmentChars: agent.context.maxAmendmentChars },
      );
    }
    const envelopes = [boundary?.envelope, envelope].filter((m) => m !== undefined);
    const history = agent.admitSensitive ? { groups: tail(chain), after: chain.windowStart, unreadThroughSeq: undefined } : await this.#admittedHistory(chain);
    const asOf = asOfSeq === undefined ? ok(history.groups) : groupsAsOf(history.groups, asOfSeq, history.after);
    if (!asOf.ok) return fail("not_found", `no context as of sequence ${asOfSeq ?? 0}: ${asOf.error.reason}`, { ...asOf.error });
    const selected = await selectWithMemory({ control: this.deps.env.DB, shard: this.deps.shard, shards: shardsOf(this.deps.env).map((s) => s.db) }, { conversationId, agent, scopes, query, envelopes, groups: asOf.value });
    if (!selected.ok) return fail(selected.error.code, selected.error.message);
    const { selection, memory } = selected.value;
    const amendment = envelope === undefined ? undefined : { items: amendments, envelope };
    const manifest = buildContextManifest({
      conversationId,
      agentId,
      epochId: declaration.epoch.id,
      boundary,
      amendment,
      withheld,
      selection,
      memory,
      policy: agent.context,
      unreadThroughSeq: history.unreadThroughSeq,
    });
    return ok({ messages: selection.messages, manifest });
  }

  /**
   * The stored head checked by the resolver: the row first (a forged or stale head is named for
   * what it is), then the log's anchor (a self-consistent row that is not the head the log
   * settled), then this object's own memory of the head it settled.
   */
  async #verify(declaration: StoredDeclaration, chain: HotChain, now: Date): Promise<Result<void>> {
    const { conversationId } = this.deps;
    const { agentId, epoch } = declaration;
    const { agent } = declaration.registration;
    const rows = await readHeadRows(this.deps.shard, conversationId, agentId, epoch.id);
    if (rows.head === undefined) {
      const anchored = verifyAnchor(rows.anchor, undefined);
      return anchored.ok ? this.#verified(agentId) : this.#refuse(agentId, rows.anchor?.boundaryId ?? "", null, anchored.error, now);
    }
    const packet = rows.plan === undefined ? undefined : await this.#verifiedPacket(chain, rows.plan.packetKey, rows.plan.packetHash);
    // The slice the head was made from, read again on every call (never cached): the log, not
    // this object's memory of it, is what a covered event deleted or rewritten must be caught in.
    const log = packet === undefined ? [] : await readSliceLog(this.deps.shard, conversationId, [frozenSliceRange(packet)]);
    const evidence = {
      conversationId,
      agentId,
      epoch,
      promptHash: declaration.promptHash,
      historyAgents: agent.historyAgents,
      admitSensitive: agent.admitSensitive,
      frontier: { id: chain.activation.frontierId, hash: chain.activation.frontierHash },
      head: rows.head,
      previous: rows.previous,
      rivals: rows.rivals,
      plan: rows.plan,
      packet,
      receipts: rows.receipts,
      anchor: rows.anchor,
    };
    const verdict = verifyHeadAgainstLog(evidence, log);
    // The row and the log's anchor first (a forged, stale or rewritten head is named for what it
    // is), then this object's own memory of the head it settled.
    const settled = chain.head === undefined ? undefined : { id: chain.head.body.id, hash: chain.head.hash };
    const checked = verdict.ok ? verifySettledHead(rows.head, settled) : verdict;
    if (checked.ok) return this.#verified(agentId);
    return this.#refuse(agentId, rows.head.id, rows.head.runId, checked.error, now);
  }

  /**
   * Boundaries are always sensitive, so an agent that does not admit sensitive content is served
   * the exact admitted turns instead — of the whole history, not only those after the withheld
   * boundary's coverage, or the covered part would silently vanish from its context. The log is
   * read back from the window in pages until the older admitted turns alone fill one of the
   * agent's caps (the selector then trims newest-first, reporting the rest in `manifest.omitted`),
   * so the read is bounded by the caps, not by the conversation.
   */
  async #admittedHistory(chain: HotChain): Promise<{ groups: Group[]; after: number; unreadThroughSeq: number | undefined }> {
    const fold = foldPolicy(chain.declaration);
    if (chain.history?.windowStart !== chain.windowStart) {
      const caps = chain.declaration.registration.agent.context;
      const events: StoredEvent[] = [];
      let after = chain.windowStart;
      let filled = false;
      for (let pages = 0; after > 0 && !filled && pages < HISTORY_MAX_PAGES; pages++) {
        const page = await listEventsBefore(this.deps.shard, this.deps.conversationId, after + 1, HISTORY_PAGE);
        events.unshift(...page.filter((event) => TURN_KINDS.has(event.kind)).reverse());
        after = page.length < HISTORY_PAGE ? 0 : (page.at(-1)?.seq ?? 1) - 1;
        const older = groupsAfter(events, after, fold);
        filled = older.reduce((n, g) => n + g.chars, 0) > caps.maxChars || older.reduce((n, g) => n + g.turns.length, 0) > caps.maxMessages;
      }
      // Stopped by the page bound with the log not read to its start and the caps not filled:
      // the manifest names what was left unread.
      chain.history = { windowStart: chain.windowStart, after, events, unreadThroughSeq: after > 0 && !filled ? after : undefined };
    }
    const { history } = chain;
    return { groups: groupsAfter([...history.events, ...chain.window], history.after, fold), after: history.after, unreadThroughSeq: history.unreadThroughSeq };
  }

  /** The agent's chain fell behind (an incident is open): the next head that verifies on it closes it. */
  fellBehind(agentId: string): void {
    this.#clear.delete(agentId);
  }

  /**
   * A chain behind its log holds only the oldest part of its uncovered history: the exact recent
   * tail is not in it, and a context without it would silently drop what was said last. Refused,
   * typed, and counted on the chain's one open incident (`behind`).
   */
  async #behind(chain: HotChain, now: Date): Promise<Result<never>> {
    this.fellBehind(chain.declaration.agentId);
    const bound = this.book.bound(chain.declaration);
    await raiseIncident(this.deps.env, behindIncident(this.deps.conversationId, chain, bound, now));
    const throughSeq = chain.behind ?? chain.lastSeenSeq;
    return fail("compaction_behind", `the chain's compactions fell behind: it holds its uncovered history through seq ${throughSeq} only, and serves no context until they catch up`, {
      throughSeq,
      coveredThroughSeq: chain.head?.coveredThroughSeq ?? 0,
    });
  }

  /** The head's packet, read from R2 and hash-checked, unless the same object (by etag) already was. */
  async #verifiedPacket(chain: HotChain, key: string, expectedHash: string): Promise<Packet | undefined> {
    const object = await this.deps.env.DOCUMENTS.head(key);
    if (object === null) return undefined;
    const cached = chain.verifiedPacket;
    if (cached !== undefined && cached.key === key && cached.etag === object.etag) return cached.packet;
    const read = await readPacket(this.deps.env.DOCUMENTS, key, expectedHash);
    if (!read.ok) return undefined;
    chain.verifiedPacket = { key, etag: object.etag, packet: read.packet };
    return read.packet;
  }

  /**
   * A head that verified on a chain that holds its recent tail: the agent's refused-chain
   * incidents, if any are open, are over (a chain no longer behind, too, however it caught up).
   */
  async #verified(agentId: string): Promise<Result<void>> {
    if (!this.#clear.has(agentId)) {
      await closeConditions(this.deps.shard, this.deps.conversationId, agentId, [{ kind: "resolver_failure" }, BEHIND]);
      this.#clear.add(agentId);
    }
    return ok(undefined);
  }

  /**
   * An unverifiable head: `chain_invalid` instead of any summary, and an incident for the operator.
   * The head stays refused on every call until it is repaired, so it is one open incident that
   * counts the calls (and pages once), not a row and a page per call (`raiseIncident`).
   */
  async #refuse(agentId: string, boundaryId: string, runId: string | null, reason: ResolverFailure, now: Date): Promise<Result<never>> {
    const { env, conversationId } = this.deps;
    const { code, cause, check, field, expected, found, message } = reason;
    this.#clear.delete(agentId);
    await raiseIncident(env, {
      conversationId,
      agentId,
      runId,
      kind: "resolver_failure",
      code,
      message: opsText`${cause}: check ${check} failed on ${field} of boundary ${boundaryId}`,
      detail: message,
      createdAt: now.toISOString(),
    });
    // `reason` is the code the API has always answered with; `cause` and the tagged data say which condition it was.
    return fail("chain_invalid", `no valid summary can be served: ${message}`, { reason: code, cause, check, field, expected, found, boundaryId });
  }
}
