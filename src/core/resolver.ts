import { LINK_CHECKS } from "./chain-audit-checks";
import type { AuditPlan, AuditRun, CheckName, Finding, LinkCheckName, LinkFacts, LinkRow, RivalRow } from "./chain-audit-link";
import { differs, finding, parseBoundaryBody, predecessorOf } from "./chain-audit-link";
import type { Epoch } from "./declarations";
import { checkFrozenTurns } from "./chain-audit-slice";
import type { ChainAnchor, StoredEvent } from "./events";
import { hashCanonical } from "./hash";
import type { Packet } from "./packet";
import { LogIndex } from "./turn-pages";

/**
 * The resolver's verdict on a head boundary: is this the latest valid boundary of the current
 * epoch? Pure: the caller gathers the rows, the packet, the receipts and the log's anchor; this
 * decides. It runs the head through every check of the chain audit (the same functions,
 * `chain-audit-checks.ts`, and the frozen slice against the log the caller read for the head's
 * packet, `chain-audit-slice.ts`), and through its own: the head against the
 * current declaration, the epoch's activation frontier, the log's newest anchor, and the
 * predecessor's own row. Any doubt fails closed, naming the check, the field, what was expected and
 * what was found; the agent is then served no summary rather than an unverified one.
 */

/**
 * The codes `chain_invalid` has always answered with (its `reason`) and incidents are recorded
 * under: stable, documented in docs/API.md and the OpenAPI document. A failure's `cause` says which
 * of the conditions behind a code it was.
 */
export type ResolverFailureCode = "missing_link" | "fork" | "stale_declaration" | "divergent_hash" | "wrong_route" | "fabricated_run" | "non_advancing";

/** The resolver's own checks, beside the audit's. */
type ResolverCheckName = "previous_body" | "declaration" | "route" | "frontier" | "anchor_head_stored" | "anchor_names_head" | "anchor_hash" | "settled_head";

export type HeadCheckName = CheckName | ResolverCheckName;

/**
 * What the failure of each check is called: its own `cause`, and the stable `code` it is reported
 * under. One entry per check, so a check added to the audit does not compile until it says what
 * the resolver answers for it.
 */
export const HEAD_CHECKS = {
  body_hash: { cause: "body_mismatch", code: "divergent_hash" },
  declaration: { cause: "stale_declaration", code: "stale_declaration" },
  route: { cause: "wrong_route", code: "wrong_route" },
  no_fork: { cause: "fork", code: "fork" },
  link: { cause: "missing_link", code: "missing_link" },
  previous_body: { cause: "previous_mismatch", code: "divergent_hash" },
  frontier: { cause: "frontier_mismatch", code: "divergent_hash" },
  coverage_advances: { cause: "non_advancing", code: "non_advancing" },
  plan: { cause: "plan_mismatch", code: "fabricated_run" },
  anchor_head_stored: { cause: "anchored_head_missing", code: "missing_link" },
  anchor_names_head: { cause: "unanchored_head", code: "fabricated_run" },
  anchor_hash: { cause: "anchor_mismatch", code: "divergent_hash" },
  completed_run: { cause: "run_not_completed", code: "fabricated_run" },
  packet_hash: { cause: "packet_unreadable", code: "divergent_hash" },
  packet_binding: { cause: "packet_mismatch", code: "divergent_hash" },
  model_evidence: { cause: "model_evidence_missing", code: "fabricated_run" },
  frozen_turns_match_log: { cause: "frozen_turns_mismatch", code: "divergent_hash" },
  settled_head: { cause: "unsettled_head", code: "fork" },
} as const satisfies Record<HeadCheckName, { readonly cause: string; readonly code: ResolverFailureCode }>;

export type ResolverCause = (typeof HEAD_CHECKS)[HeadCheckName]["cause"];

export interface ResolverFailure {
  readonly code: ResolverFailureCode;
  readonly cause: ResolverCause;
  readonly check: HeadCheckName;
  /** The field the check read, what it should have held and what it held (ids, hashes, sequences: never text). */
  readonly field: string;
  readonly expected: Finding["expected"];
  readonly found: Finding["found"];
  readonly message: string;
}

export type Verdict = { readonly ok: true } | { readonly ok: false; readonly error: ResolverFailure };

const PASS: Verdict = { ok: true };

function failed(check: HeadCheckName, { field, expected, found, detail }: Finding, subject?: string): Verdict {
  const message = subject === undefined ? detail : `boundary ${subject} fails ${check}: ${detail}`;
  return { ok: false, error: { ...HEAD_CHECKS[check], check, field, expected, found, message } };
}

/** The first finding of the first check that has one, in the order given. */
function firstFailure<T>(steps: readonly (readonly [HeadCheckName, (input: T) => readonly Finding[]])[], input: T, subject?: string): Verdict {
  for (const [check, run] of steps) {
    const [first] = run(input);
    if (first !== undefined) return failed(check, first, subject);
  }
  return PASS;
}

// ---------------------------------------------------------------------------------------------
// The log's anchor

/** The newest boundary row of an epoch as stored, reduced to what its anchor binds. */
export interface AnchoredRow {
  readonly id: string;
  readonly epochId: string;
  readonly position: number;
  readonly hash: string;
  /** `hashCanonical` of the stored body's `content`; undefined when the body is not a boundary. */
  readonly contentHash: string | undefined;
}

type AnchorInput = readonly [ChainAnchor, AnchoredRow];

/** The anchored head is not stored: `stored` says what the epoch's newest row is instead. */
function missingHead(anchor: ChainAnchor, found: number | null, stored: string): Finding {
  const detail = `boundary ${anchor.boundaryId} at position ${anchor.position}, settled by the log's newest completed run, is missing: ${stored}`;
  return finding("position", anchor.position, found, detail);
}

const ANCHOR_STEPS: readonly (readonly [HeadCheckName, (input: AnchorInput) => Finding[]])[] = [
  [
    "anchor_head_stored",
    ([anchor, newest]) =>
      newest.epochId === anchor.epochId && newest.position >= anchor.position ? [] : [missingHead(anchor, newest.position, `the newest stored is ${newest.id} at position ${newest.position}`)],
  ],
  [
    "anchor_names_head",
    ([anchor, newest]) =>
      newest.position === anchor.position && newest.id === anchor.boundaryId
        ? []
        : [finding("id", anchor.boundaryId, newest.id, `boundary ${newest.id} at position ${newest.position} was settled by no completed run; the log's newest settled ${anchor.boundaryId} at position ${anchor.position}`)],
  ],
  [
    "anchor_hash",
    ([anchor, newest]) => {
      const detail = (what: string): string => `boundary ${newest.id} is stored with another ${what} than its completed run settled`;
      return [...differs("contentHash", anchor.contentHash, newest.contentHash ?? null, detail("content hash")), ...differs("hash", anchor.boundaryHash, newest.hash, detail("hash"))];
    },
  ],
];

/**
 * Does the newest stored boundary of an epoch match what the log says the chain's head is? The
 * log's newest anchor (the completed run of the highest position in the epoch) names the head; the
 * rows are a table that can be edited behind the service's back, the log cannot. A head row that
 * was deleted (or never written) is `missing_link`, one whose body or content was rewritten, even
 * with a recomputed hash, `divergent_hash`. No anchor (no boundary settled yet, or only boundaries
 * settled before runs carried anchors) leaves the rows to the other checks.
 */
export function verifyAnchor(anchor: ChainAnchor | undefined, newest: AnchoredRow | undefined): Verdict {
  if (anchor === undefined) return PASS;
  if (newest === undefined) return failed("anchor_head_stored", missingHead(anchor, null, "no boundary of its epoch is stored"));
  return firstFailure(ANCHOR_STEPS, [anchor, newest]);
}

// ---------------------------------------------------------------------------------------------
// The head

export interface HeadEvidence {
  readonly conversationId: string;
  readonly agentId: string;
  readonly epoch: Epoch;
  readonly promptHash: string;
  readonly historyAgents: readonly string[];
  readonly admitSensitive: boolean;
  readonly frontier: { readonly id: string; readonly hash: string };
  /** The newest boundary row of the epoch. */
  readonly head: LinkRow;
  /** The row the head names as its predecessor, when it names one and it is stored. */
  readonly previous: LinkRow | undefined;
  /** The epoch's other rows that share the head's predecessor or position. */
  readonly rivals: readonly RivalRow[];
  readonly plan: AuditPlan | undefined;
  /** The plan's packet as read from R2 and verified against the plan's hash; undefined when it could not be. */
  readonly packet: Packet | undefined;
  /** The head run's completed receipts in the log. */
  readonly receipts: readonly AuditRun[];
  /** The log's newest anchor of the epoch (undefined: nothing anchored yet). */
  readonly anchor: ChainAnchor | undefined;
}

interface HeadInput {
  readonly evidence: HeadEvidence;
  readonly facts: LinkFacts;
}

function headFacts(e: HeadEvidence): LinkFacts {
  const { plan, packet } = e;
  return {
    conversationId: e.conversationId,
    agentId: e.agentId,
    row: e.head,
    body: parseBoundaryBody(e.head.body),
    previous: e.previous,
    rivals: e.rivals,
    plan,
    // The caller read the plan's packet and re-hashed it: undefined is a read that failed.
    packetSource: plan === undefined ? undefined : { key: plan.packetKey, hash: plan.packetHash, outcome: packet === undefined ? { ok: false, reason: "missing, altered or not a packet" } : { ok: true } },
    packet: packet === undefined ? { ok: false, detail: "not checked: the packet could not be read" } : { ok: true, packet },
    receipts: e.receipts,
  };
}

const linkStep = (name: LinkCheckName): readonly [HeadCheckName, (input: HeadInput) => readonly Finding[]] => [name, ({ facts }) => LINK_CHECKS[name](facts)];

function checkDeclaration({ evidence: e, facts: { body } }: HeadInput): Finding[] {
  if (body === undefined) return [];
  const { compactor } = body;
  const detail = "produced under another declaration or prompt";
  return [
    ...differs("compactor.epochId", e.epoch.id, compactor.epochId, detail),
    ...differs("compactor.fingerprint", e.epoch.fingerprint, compactor.fingerprint, detail),
    ...differs("compactor.version", e.epoch.compactorVersion, compactor.version, detail),
    ...differs("compactor.promptHash", e.promptHash, compactor.promptHash, detail),
  ];
}

function checkRoute({ evidence: e, facts: { body } }: HeadInput): Finding[] {
  if (body === undefined) return [];
  const detail = "belongs to another route, agent or privacy admission";
  return [
    ...differs("conversation.id", e.conversationId, body.conversation.id, detail),
    ...differs("targetAgentId", e.agentId, body.targetAgentId, detail),
    ...differs("admitSensitive", e.admitSensitive, body.admitSensitive, detail),
    ...differs("historyAgents", JSON.stringify([...e.historyAgents].sort()), JSON.stringify(body.historyAgents), detail),
  ];
}

/** The predecessor's own row against its hashed body: the audit's `body_hash`, run on the link before the head. */
function checkPreviousBody({ facts }: HeadInput): Finding[] {
  const previous = predecessorOf(facts);
  if (previous === undefined) return [];
  const findings = LINK_CHECKS.body_hash({ ...facts, row: previous, body: parseBoundaryBody(previous.body) });
  return findings.map((f) => ({ ...f, field: `previous.${f.field}`, detail: `previous boundary ${previous.id}: ${f.detail}` }));
}

function checkFrontier({ evidence: e, facts: { row, body } }: HeadInput): Finding[] {
  if (body === undefined || row.position !== 1) return [];
  const detail = "does not start at this epoch's activation frontier";
  return [...differs("frontier.id", e.frontier.id, body.frontier.id, detail), ...differs("frontier.hash", e.frontier.hash, body.frontier.hash, detail)];
}

function checkHeadAnchor({ evidence: e, facts: { row, body } }: HeadInput, step: (typeof ANCHOR_STEPS)[number]): Finding[] {
  if (e.anchor === undefined) return [];
  const content = body === undefined ? undefined : hashCanonical(body.content);
  return step[1]([e.anchor, { id: row.id, epochId: row.epochId, position: row.position, hash: row.hash, contentHash: content }]);
}

/**
 * The order the resolver reports in: the row against its hashed body first (a forged or rewritten
 * row is named for what it is), then what the head claims to be, how it links, what planned and
 * settled it, then the packet it was compacted from, and last that packet's slice against the log.
 * `body_hash` refuses a head whose body is not a boundary event, so the checks after it always read
 * a parsed body (their `body === undefined` guards narrow the type), and `packet_hash` refuses an
 * unread packet before `packet_binding` runs.
 */
const HEAD_STEPS: readonly (readonly [HeadCheckName, (input: HeadInput) => readonly Finding[]])[] = [
  linkStep("body_hash"),
  ["declaration", checkDeclaration],
  ["route", checkRoute],
  linkStep("no_fork"),
  linkStep("link"),
  ["previous_body", checkPreviousBody],
  ["frontier", checkFrontier],
  linkStep("coverage_advances"),
  linkStep("plan"),
  ...ANCHOR_STEPS.map((step): readonly [HeadCheckName, (input: HeadInput) => readonly Finding[]] => [step[0], (input) => checkHeadAnchor(input, step)]),
  linkStep("completed_run"),
  linkStep("packet_hash"),
  linkStep("packet_binding"),
  linkStep("model_evidence"),
];

/** @internal The checks in the order `verifyHeadAgainstLog` runs them (its failure is the first of these that fails); the property tests hold the resolver to it. */
export const HEAD_CHECK_ORDER: readonly HeadCheckName[] = [...HEAD_STEPS.map(([name]) => name), "frozen_turns_match_log"];

/** The head against its rows, plan, packet, receipts and anchor: every check but the slice's against the log. */
export function verifyHead(evidence: HeadEvidence): Verdict {
  return firstFailure(HEAD_STEPS, { evidence, facts: headFacts(evidence) }, evidence.head.id);
}

/**
 * Every check, last the packet's frozen slice against `log`: the log over the head packet's range
 * with the events related to it (`frozenSliceRange`, `readSliceLog`), read again on every call, so
 * a covered event deleted or rewritten since the head was made refuses it, as the audit does.
 */
export function verifyHeadAgainstLog(evidence: HeadEvidence, log: readonly StoredEvent[]): Verdict {
  const verdict = verifyHead(evidence);
  if (!verdict.ok) return verdict;
  const [first] = checkFrozenTurns(headFacts(evidence), new LogIndex(log));
  return first === undefined ? PASS : failed("frozen_turns_match_log", first, evidence.head.id);
}

/** The stored head against the head this chain settled, which the caller holds: a verified row that is not it is a fork the rows alone cannot show. */
export function verifySettledHead(stored: { readonly id: string; readonly hash: string }, settled: { readonly id: string; readonly hash: string } | undefined): Verdict {
  if (settled !== undefined && settled.id === stored.id && settled.hash === stored.hash) return PASS;
  const detail = `the stored head ${stored.id} is not the head this chain settled`;
  return failed("settled_head", settled?.id === stored.id ? finding("hash", settled.hash, stored.hash, detail) : finding("id", settled?.id ?? null, stored.id, detail));
}
