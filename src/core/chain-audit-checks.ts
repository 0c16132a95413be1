import { buildBoundary } from "./boundary";
import type { Finding, LinkCheckName, LinkFacts } from "./chain-audit-link";
import { differs, finding, listed, notABoundary, predecessorOf, sliceStartsAfter } from "./chain-audit-link";
import { hashCanonical } from "./hash";

/**
 * The checks of one link that need nothing but the link (`LinkFacts`): the audit runs them on every
 * link, the resolver on the head on every context call. Each re-derives a claim the boundary makes
 * instead of trusting the code that wrote it, and returns what it found wrong (nothing: it passed).
 * A check that cannot run because what it needs is missing fails closed, with a detail that says
 * it was not checked rather than that it disagreed.
 */

function checkBodyHash({ row, body }: LinkFacts): Finding[] {
  if (row.body === undefined) return [finding("body", "JSON", null, "the stored body is not JSON")];
  if (body === undefined) return [finding("body", "a boundary event", null, "the stored body does not match the boundary event schema")];
  // Over the stored JSON itself, not the parse: a schema default or transform added later must not
  // make a stored body hash differently from what was written. (The strict schema already refused
  // any key outside the contract, so nothing unhashed can hide in the row.)
  const hash = hashCanonical(row.body);
  return [
    ...differs("hash", hash, row.hash, "hashCanonical(body) differs from the stored hash"),
    ...differs("body.id", row.id, body.id, `body.id ${body.id} is not the row id`),
    ...differs("body.position", row.position, body.position, `body.position ${body.position} is not the row position ${row.position}`),
    ...differs("body.run.id", row.runId, body.run.id, `body.run.id ${body.run.id} is not the row run id ${row.runId}`),
    ...differs("body.coveredThrough.seq", row.coveredThroughSeq, body.coveredThrough.seq, `body.coveredThrough.seq ${body.coveredThrough.seq} is not the row's ${row.coveredThroughSeq}`),
    ...differs("body.compactor.epochId", row.epochId, body.compactor.epochId, "body.compactor.epochId is not the row epoch"),
    ...differs("body.previous.id", row.previousId, body.previous?.id ?? "", "body.previous.id is not the row previous_id"),
    ...differs("body.previous.hash", row.previousHash, body.previous?.hash ?? null, "body.previous.hash is not the row previous_hash"),
  ];
}

function checkLink(facts: LinkFacts): Finding[] {
  const { row, body } = facts;
  if (body === undefined) return notABoundary();
  if (row.position === 1) {
    return [
      ...differs("body.previous.id", null, body.previous?.id ?? null, "the first boundary of an epoch names a previous boundary"),
      ...differs("previous_id", "", row.previousId, "the first boundary of an epoch has a previous_id"),
    ];
  }
  if (body.previous === null || row.previousId === "") return [finding("previous_id", "a previous boundary", null, `position ${row.position} has no previous boundary`)];
  if (body.previous.id !== row.previousId) return [finding("body.previous.id", row.previousId, body.previous.id, "body.previous.id is not the row previous_id")];
  const previous = predecessorOf(facts);
  if (previous === undefined) return [finding("previous", row.previousId, null, `previous boundary ${row.previousId} is missing from epoch ${row.epochId}`)];
  return [
    ...differs("previous.hash", body.previous.hash, previous.hash, `previous boundary ${previous.id} is stored with hash ${previous.hash}, this link names ${body.previous.hash}`),
    ...differs("previous.position", row.position - 1, previous.position, `previous boundary ${previous.id} is at position ${previous.position}, not ${row.position - 1}`),
    ...differs(
      "previous.coveredThroughSeq",
      body.previous.coveredThroughSeq,
      previous.coveredThroughSeq,
      `previous boundary ${previous.id} covers through ${previous.coveredThroughSeq}, this link says ${body.previous.coveredThroughSeq}`,
    ),
  ];
}

function checkCoverage(facts: LinkFacts): Finding[] {
  const { body } = facts;
  if (body === undefined) return notABoundary();
  const seq = body.coveredThrough.seq;
  const found: Finding[] = [];
  const notPast = (after: number, detail: string): void => {
    if (seq <= after) found.push(finding("coveredThrough.seq", `> ${after}`, seq, detail));
  };
  if (body.previous === null) {
    // The first boundary begins at its activation frontier: it cannot cover only older history.
    notPast(body.frontier.startSeq - 1, `covers through ${seq}, before its frontier starts at ${body.frontier.startSeq}`);
  } else {
    notPast(body.previous.coveredThroughSeq, `covers through ${seq}, not past the ${body.previous.coveredThroughSeq} it names for its previous boundary`);
    // Judged against the stored predecessor too (when it exists): the link check reports a missing one.
    const previous = predecessorOf(facts);
    if (previous !== undefined) notPast(previous.coveredThroughSeq, `covers through ${seq}, not past previous boundary ${previous.id} (${previous.coveredThroughSeq})`);
  }
  return [...found, ...sliceOverlap(facts)];
}

/**
 * A slice must not re-freeze groups the previous boundary already covers (they would be summarized
 * twice). Judged only when the packet is readable; `packet_hash` reports when it is not.
 */
function sliceOverlap({ packet: read }: LinkFacts): Finding[] {
  if (!read.ok) return [];
  const after = sliceStartsAfter(read.packet);
  const early = read.packet.frozen.turns.filter((t) => t.group <= after).map((t) => t.id);
  return early.length === 0 ? [] : [finding("frozen.turns", `groups after ${after}`, listed(early), `the frozen slice re-freezes turns at or before ${after}: ${listed(early)}`)];
}

function checkNoFork({ row, rivals }: LinkFacts): Finding[] {
  const samePredecessor = rivals.filter((b) => b.previousId === row.previousId).map((b) => b.id);
  const samePosition = rivals.filter((b) => b.position === row.position).map((b) => b.id);
  const what = row.previousId === "" ? "also start the epoch" : `also follow ${row.previousId}`;
  return [
    ...(samePredecessor.length === 0 ? [] : [finding("previous_id", "no other successor", listed(samePredecessor), `${listed(samePredecessor)} ${what}`)]),
    ...(samePosition.length === 0 ? [] : [finding("position", "no other boundary", listed(samePosition), `${listed(samePosition)} also hold position ${row.position}`)]),
  ];
}

function checkPlan({ conversationId, agentId, row, body, plan }: LinkFacts): Finding[] {
  if (plan === undefined) return [finding("plan", row.runId, null, `no plan for run ${row.runId}: the run was never planned by the parent`)];
  const bound =
    body === undefined
      ? notABoundary()
      : [
          ...differs("plan.packetKey", body.packet.key, plan.packetKey, `the plan's packet is ${plan.packetKey}, the boundary names ${body.packet.key}`),
          ...differs("plan.packetHash", body.packet.hash, plan.packetHash, "the plan's packet hash is not the boundary's"),
          ...differs("plan.triggerSeq", body.run.triggerSeq, plan.triggerSeq, `the plan was triggered at ${plan.triggerSeq}, the boundary says ${body.run.triggerSeq}`),
          ...differs("plan.throughSeq", body.coveredThrough.seq, plan.throughSeq, `the plan froze through ${plan.throughSeq}, the boundary covers through ${body.coveredThrough.seq}`),
        ];
  return [
    ...differs("plan.conversationId", conversationId, plan.conversationId, "the plan belongs to another conversation"),
    ...differs("plan.agentId", agentId, plan.agentId, "the plan belongs to another agent"),
    ...differs("plan.epochId", row.epochId, plan.epochId, "the plan belongs to another epoch"),
    ...differs("plan.previousBoundaryId", row.previousId, plan.previousBoundaryId, `the plan follows ${plan.previousBoundaryId || "(none)"}, the boundary follows ${row.previousId || "(none)"}`),
    ...bound,
  ];
}

function checkPacketHash({ row, plan, packetSource: source }: LinkFacts): Finding[] {
  if (source === undefined) return [finding("packet", "a packet location", null, "no packet location: neither a plan nor a readable boundary body names one")];
  if (!source.outcome.ok) return [finding("packet", source.hash, source.outcome.reason, `packet ${source.key}: ${source.outcome.reason}`)];
  if (plan === undefined) return [finding("plan", row.runId, null, `no plan for run ${row.runId} to verify the packet against`)];
  if (source.key !== plan.packetKey) return [finding("packet.key", plan.packetKey, source.key, "the packet read is not the one the plan names")];
  return differs("packet.hash", plan.packetHash, source.hash, "the packet read is not the one the plan names");
}

/** Leaf paths where two JSON values differ, with the two leaves (names only in details: the values may be conversation text). */
function differences(a: unknown, b: unknown, path = ""): { path: string; a: unknown; b: unknown }[] {
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return [{ path: `${path || "(root)"} (length)`, a: a.length, b: b.length }];
    return a.flatMap((item: unknown, i) => differences(item, b[i], `${path}[${i}]`));
  }
  if (isRecord(a) && isRecord(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((key) => differences(a[key], b[key], path === "" ? key : `${path}.${key}`));
  }
  return Object.is(a, b) ? [] : [{ path: path || "(root)", a, b }];
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** A leaf as tagged data: a scalar as it is, anything else by its kind. */
const leaf = (value: unknown): string | number | boolean | null =>
  value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? value : Array.isArray(value) ? "(array)" : typeof value;

function checkPacketBinding({ conversationId, agentId, body, packet: read }: LinkFacts): Finding[] {
  if (!read.ok) return [finding("packet", "a readable packet", null, read.detail)];
  if (body === undefined) return notABoundary();
  const { packet } = read;
  // The parent derives every field but the model's content from the packet (`buildBoundary`), so
  // rebuilding from this packet with the stored content and receipt must give the stored body
  // exactly. This covers run, epoch, prompt, frontier, previous link, coverage, sizes and input
  // hashes at once, and anything added to the binding later.
  const rebuilt = buildBoundary({
    id: body.id,
    position: body.position,
    packet,
    packetKey: body.packet.key,
    packetHash: body.packet.hash,
    content: body.content,
    model: body.model,
    createdAt: body.createdAt,
  }).body;
  const differing = differences(rebuilt, body);
  const [first] = differing;
  // The packet's own summary hashes are believed by the rebuild; recompute them from its turns.
  const { frozen } = packet;
  return [
    ...differs("packet.conversationId", conversationId, packet.conversationId, "the packet belongs to another conversation"),
    ...differs("packet.agentId", agentId, packet.agentId, "the packet belongs to another agent"),
    ...(first === undefined ? [] : [finding(first.path, leaf(first.a), leaf(first.b), `the boundary disagrees with its packet on ${listed(differing.map((d) => d.path))}`)]),
    ...differs("input.turnIdsHash", hashCanonical(frozen.turns.map((t) => t.id)), body.input.turnIdsHash, "input.turnIdsHash is not the hash of the frozen turn ids"),
    ...differs("input.renderedHash", hashCanonical(frozen.turns.map((t) => t.rendered)), body.input.renderedHash, "input.renderedHash is not the hash of the frozen rendered lines"),
    ...differs("frozen.throughTurnId", frozen.turns.at(-1)?.id ?? null, frozen.throughTurnId, "frozen.throughTurnId is not the last frozen turn"),
  ];
}

function checkCompletedRun({ row, body, receipts }: LinkFacts): Finding[] {
  if (body === undefined) return notABoundary();
  const completed = receipts.filter((r) => r.runId === row.runId && r.status === "completed");
  if (completed.length === 0) return [finding("run.status", "completed", null, `no completed run event for ${row.runId}`)];
  const receipt = completed.find((r) => r.agentId === body.compactorId);
  if (receipt === undefined) {
    const agents = listed(completed.map((r) => r.agentId));
    return [finding("run.agentId", body.compactorId, agents, `run ${row.runId} was completed by ${agents}, not the compactor ${body.compactorId}`)];
  }
  if (receipt.boundaryId !== null && receipt.boundaryId !== row.id) return [finding("run.detail.boundaryId", row.id, receipt.boundaryId, `the completed run names boundary ${receipt.boundaryId}`)];
  const { anchor } = receipt;
  if (anchor === null) return [];
  // A body edited under its old hash is body_hash's finding; a rewritten row with a recomputed
  // hash is this one's, and the content hash says whether the summary itself was rewritten.
  const content = anchor.contentHash === hashCanonical(body.content) ? "its content hash matches" : "its content hash differs too";
  return [
    ...differs("run.anchor.boundaryId", anchor.boundaryId, row.id, `the completed run anchors boundary ${anchor.boundaryId}`),
    ...differs("run.anchor.epochId", anchor.epochId, row.epochId, "the completed run anchors another epoch"),
    ...differs("run.anchor.position", anchor.position, row.position, `the completed run anchors position ${anchor.position}, the row is at ${row.position}`),
    ...differs("run.anchor.boundaryHash", anchor.boundaryHash, row.hash, `the row's hash is not the hash its completed run settled (${content})`),
  ];
}

function checkModelEvidence({ body }: LinkFacts): Finding[] {
  if (body === undefined) return notABoundary();
  const { model } = body;
  return [
    ...(model.provider.trim() === "" ? [finding("model.provider", "a provider", model.provider, "no provider")] : []),
    ...(model.model.trim() === "" ? [finding("model.model", "a model", model.model, "no model")] : []),
  ];
}

export const LINK_CHECKS: Record<LinkCheckName, (facts: LinkFacts) => Finding[]> = {
  body_hash: checkBodyHash,
  link: checkLink,
  coverage_advances: checkCoverage,
  no_fork: checkNoFork,
  plan: checkPlan,
  packet_hash: checkPacketHash,
  packet_binding: checkPacketBinding,
  completed_run: checkCompletedRun,
  model_evidence: checkModelEvidence,
};
