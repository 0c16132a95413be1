import { expect } from "vitest";
import type { ModelEvidence } from "../../src/core/boundary";
import { boundaryBodySchema, buildBoundary } from "../../src/core/boundary";
import type { AuditBoundary, AuditPlan, AuditRun, ChainAuditReport, CheckName, LinkAudit, LinkPage, PacketRead } from "../../src/core/chain-audit";
import { auditChain, auditLinkPage, frozenSliceRanges, packetLocation } from "../../src/core/chain-audit";
import { renderBoundaryBody } from "../../src/core/compactor-output";
import { compactionPolicySchema } from "../../src/core/declarations";
import type { StoredEvent } from "../../src/core/events";
import { canonicalJson, hashCanonical, sha256Hex } from "../../src/core/hash";
import type { CompactionContent, FrozenTurn, Packet } from "../../src/core/packet";
import { OUTPUT_CONTRACT, PACKET_FORMAT, packetSchema } from "../../src/core/packet";
import { reconstruct, turnHash } from "../../src/core/reconstruction";
import { renderSliceLine, renderTurn } from "../../src/core/render";
import { LogIndex } from "../../src/core/turn-pages";
import { BOB, CONVERSATION, delivered, proposal, source, storeAll } from "./event-builders";

/**
 * The audit over a chain built exactly the way the engine builds one: turns reconstructed from a
 * log, packets from those turns, boundaries with `buildBoundary`, plans, receipts and an in-memory
 * "R2" read through `packetLocation` with the same re-hashing `readDocument` does. Each corruption
 * is made where it would really happen (a stored row, an R2 object, a planner bug baked into a
 * packet), so that exactly the check aimed at it fails and nothing else does.
 */

export const AGENT = "helper";
export const COMPACTOR = "helper.compactor";
const FINGERPRINT = sha256Hex("fingerprint");
export const EPOCH = { id: `foldline-compactor/1:${FINGERPRINT}`, compactorVersion: "foldline-compactor/1", fingerprint: FINGERPRINT };
export const PROMPT = "Summarize the frozen history.";
export const FRONTIER = { id: "frn-audit", hash: sha256Hex("frontier"), startSeq: 1 };
const FOLD = { admittedAgents: new Set([AGENT]), includeSensitive: false };

export const OFFLINE: ModelEvidence = { provider: "foldline-extractive", model: "foldline-extractive-1", responseId: null, finishReason: null, usage: null, latencyMs: 3 };

/** seqs 1..12: a reply (p3, delivered at 4) sits in m2's group; every other event is a source. */
export const LOG: StoredEvent[] = storeAll([
  source("m1", "Morning! Shall we plan the offsite?"),
  source("m2", "Lisbon or Porto?", { author: BOB }),
  proposal("pa", AGENT, "Both fit the budget; Lisbon has better flights.", { replyTo: "m2" }),
  delivered("pa"),
  source("m3", "Lisbon then. Budget is 1,200 euros per person."),
  source("m4", "Agreed, I will book the venue.", { author: BOB }),
  source("m5", "Dates: the second week of May."),
  source("m6", "Flights need approval from finance.", { author: BOB }),
  source("m7", "Ask finance on Monday."),
  source("m8", "Done, waiting for them.", { author: BOB }),
  source("m9", "Any dietary constraints?"),
  source("m10", "Two vegetarians.", { author: BOB }),
]);

export interface LinkSpec {
  readonly n: number;
  readonly position: number;
  readonly triggerSeq: number;
  readonly throughSeq: number;
  readonly previous: Built | null;
  /** Exclusive lower group bound of the frozen slice; by default the previous coverage or the frontier. */
  readonly after?: number;
  readonly model?: ModelEvidence;
  /** A planner bug, baked into the packet before it is hashed and stored. */
  readonly mutate?: (packet: Packet) => Packet;
  readonly summary?: string;
}

export interface Built {
  readonly row: AuditBoundary;
  readonly plan: AuditPlan;
  readonly packetKey: string;
  readonly packetText: string;
  readonly run: AuditRun;
}

export const frozenTurn = (t: { id: string; messageId?: string | undefined; group: number; role: "user" | "assistant"; author: FrozenTurn["author"]; text: string }): FrozenTurn => ({
  id: t.id,
  messageId: t.messageId ?? t.id,
  group: t.group,
  role: t.role,
  author: t.author,
  text: t.text,
  hash: turnHash(t.role, t.author, t.text),
  rendered: renderSliceLine({ ...t, messageId: t.messageId ?? t.id }),
  nativeChars: renderTurn(t).content.length,
});

function content(summary: string): CompactionContent {
  return {
    contract: OUTPUT_CONTRACT,
    mode: "plain",
    summary,
    preview: summary.split("\n", 1)[0] ?? "",
    salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] },
    degraded: false,
  };
}

export function buildLink(spec: LinkSpec): Built {
  const runId = `cmp_run-${spec.n}`;
  const id = `bnd_run-${spec.n}`;
  const createdAt = new Date(Date.UTC(2026, 0, 1, 0, spec.n)).toISOString();
  const previous = spec.previous;
  const after = spec.after ?? Math.max(FRONTIER.startSeq - 1, previous?.row.coveredThroughSeq ?? 0);
  const turns = reconstruct(
    LOG.filter((e) => e.seq <= spec.triggerSeq),
    FOLD,
  )
    .filter((t) => t.group > after && t.group <= spec.throughSeq)
    .map(frozenTurn);
  const previousContent = previous === null ? undefined : boundaryBodySchema.parse(previous.row.body).content;
  let packet: Packet = {
    format: PACKET_FORMAT,
    conversationId: CONVERSATION,
    conversationType: "group",
    agentId: AGENT,
    compactorId: COMPACTOR,
    historyAgents: [AGENT],
    admitSensitive: false,
    epoch: EPOCH,
    runId,
    triggerSeq: spec.triggerSeq,
    frontier: FRONTIER,
    policy: compactionPolicySchema.parse({ triggerInputChars: 500, retainInputChars: 200 }),
    outputMode: "plain",
    prompt: PROMPT,
    promptHash: sha256Hex(PROMPT),
    previousBoundary:
      previous === null || previousContent === undefined
        ? null
        : { id: previous.row.id, hash: previous.row.hash, coveredThroughSeq: previous.row.coveredThroughSeq, body: renderBoundaryBody(previousContent) },
    amendments: [],
    frozen: frozenSlice(turns),
    memoryPages: [],
    documents: [],
    sizes: { preCompactionChars: 900, retainedTailChars: 150, replacedChars: 600 },
    createdAt,
  };
  if (spec.mutate !== undefined) {
    const mutated = spec.mutate(packet);
    packet = { ...mutated, frozen: frozenSlice(mutated.frozen.turns) };
  }
  packet = packetSchema.parse(packet);
  const packetText = canonicalJson(packet);
  const packetHash = sha256Hex(packetText);
  const packetKey = `packets/${runId}.json`;
  const boundary = buildBoundary({
    id,
    position: spec.position,
    packet,
    packetKey,
    packetHash,
    content: content(spec.summary ?? `Summary of link ${spec.n}: the offsite is being planned.\nOpen: dates.`),
    model: spec.model ?? OFFLINE,
    createdAt,
  });
  const { body } = boundary;
  return {
    row: {
      id,
      epochId: body.compactor.epochId,
      position: body.position,
      previousId: body.previous?.id ?? "",
      previousHash: body.previous?.hash ?? null,
      coveredThroughSeq: body.coveredThrough.seq,
      runId,
      hash: boundary.hash,
      createdAt,
      // As storage returns it: the canonical JSON column, parsed.
      body: JSON.parse(canonicalJson(body)) as unknown,
    },
    plan: {
      runId,
      conversationId: CONVERSATION,
      agentId: AGENT,
      epochId: EPOCH.id,
      previousBoundaryId: previous?.row.id ?? "",
      packetKey,
      packetHash,
      triggerSeq: spec.triggerSeq,
      throughSeq: body.coveredThrough.seq,
    },
    packetKey,
    packetText,
    run: {
      runId,
      status: "completed",
      agentId: COMPACTOR,
      boundaryId: id,
      // As the engine settles it: the log binds what was settled.
      anchor: { epochId: body.compactor.epochId, position: body.position, boundaryId: id, boundaryHash: boundary.hash, contentHash: hashCanonical(body.content) },
    },
  };
}

/** The frozen block's derived fields, recomputed from its turns as the planner does. */
function frozenSlice(turns: readonly FrozenTurn[]): Packet["frozen"] {
  const first = turns[0];
  const last = turns.at(-1);
  if (first === undefined || last === undefined) throw new Error("a frozen slice needs a turn");
  return {
    turns: [...turns],
    fromSeq: first.group,
    throughSeq: last.group,
    throughTurnId: last.id,
    sourceCount: new Set(turns.map((t) => t.group)).size,
    eventCount: turns.length,
    chars: turns.reduce((n, t) => n + t.nativeChars, 0),
    turnIdsHash: hashCanonical(turns.map((t) => t.id)),
    renderedHash: hashCanonical(turns.map((t) => t.rendered)),
  };
}

export interface World {
  readonly boundaries: AuditBoundary[];
  readonly plans: Map<string, AuditPlan>;
  /** The R2 bucket: key → object text. */
  readonly bucket: Map<string, string>;
  readonly runs: AuditRun[];
  readonly log: StoredEvent[];
  readonly currentEpochId: string;
}

export function world(links: readonly Built[], options: { log?: StoredEvent[]; currentEpochId?: string } = {}): World {
  return {
    boundaries: links.map((l) => l.row),
    plans: new Map(links.map((l) => [l.plan.runId, l.plan])),
    bucket: new Map(links.map((l) => [l.packetKey, l.packetText])),
    runs: [
      ...links.flatMap((l) => [{ ...l.run, status: "planned", boundaryId: null, anchor: null }, l.run]),
      { runId: "pf_helper.compactor_5", status: "skipped", agentId: COMPACTOR, boundaryId: null, anchor: null },
    ],
    log: options.log ?? LOG,
    currentEpochId: options.currentEpochId ?? EPOCH.id,
  };
}

/** Reads the in-memory bucket the way `readDocument` reads R2: missing, or re-hashed and refused on mismatch. */
export function readPacket(w: World, boundary: AuditBoundary): PacketRead | undefined {
  const location = packetLocation(boundary, w.plans.get(boundary.runId));
  if (location === undefined) return undefined;
  const text = w.bucket.get(location.key);
  const outcome: PacketRead["outcome"] =
    text === undefined ? { ok: false, reason: "missing" } : sha256Hex(text) === location.hash ? { ok: true, text } : { ok: false, reason: "hash_mismatch" };
  return { ...location, outcome };
}

function readPackets(w: World, boundaries: readonly AuditBoundary[]): Map<string, PacketRead> {
  const packets = new Map<string, PacketRead>();
  for (const boundary of boundaries) {
    const read = readPacket(w, boundary);
    if (read !== undefined) packets.set(boundary.id, read);
  }
  return packets;
}

export function audit(w: World): ChainAuditReport {
  return auditChain({
    conversationId: CONVERSATION,
    agentId: AGENT,
    currentEpochId: w.currentEpochId,
    boundaries: w.boundaries,
    plans: w.plans,
    packets: readPackets(w, w.boundaries),
    runs: w.runs,
    log: w.log,
  });
}

/**
 * An epoch's links a page at a time, each page given only what `verifyLinks` reads for it (the
 * same selections, over the in-memory world instead of D1): the rows at the page's positions with
 * their predecessors and any row sharing a predecessor; the page's plans, packets and completed
 * receipts; and each of `frozenSliceRanges`' slices of the log (`LogIndex.slice`, as `readSliceLog` reads D1).
 */
function pagedLinks(w: World, epochId: string, limit: number): { links: LinkAudit[]; pages: LinkPage[] } {
  const epoch = w.boundaries.filter((b) => b.epochId === epochId);
  const index = new LogIndex(w.log);
  const pages: LinkPage[] = [];
  for (let after: number | null = 0; after !== null; ) {
    const cursor: number = after;
    const positions = [...new Set(epoch.map((b) => b.position).filter((p) => p > cursor))].sort((a, b) => a - b).slice(0, limit + 1);
    const first = positions[0] ?? cursor + 1;
    const through = positions[Math.min(limit, positions.length) - 1] ?? cursor;
    const inPage = epoch.filter((b) => b.position >= first && b.position <= through);
    const newest = Math.max(0, ...epoch.map((b) => b.position));
    const rows = epoch.filter((b) => inPage.includes(b) || inPage.some((p) => p.previousId === b.previousId || p.previousId === b.id) || b.position === newest);
    const audited = rows.filter((b) => b.position > cursor && b.position <= through);
    const runIds = new Set(audited.map((b) => b.runId));
    const packets = readPackets(w, audited);
    const log = new Map<number, StoredEvent>();
    for (const range of frozenSliceRanges(packets.values())) for (const event of index.slice(range)) log.set(event.seq, event);
    const page = auditLinkPage(
      {
        conversationId: CONVERSATION,
        agentId: AGENT,
        currentEpochId: w.currentEpochId,
        boundaries: rows,
        plans: new Map([...w.plans].filter(([runId]) => runIds.has(runId))),
        packets,
        // The page's receipts, and the log's newest anchor of the epoch (one indexed read).
        runs: [...w.runs.filter((r) => runIds.has(r.runId) && r.status === "completed"), ...newestAnchorRun(w, epochId)],
        log: [...log.values()].sort((a, b) => a.seq - b.seq),
      },
      epochId,
      cursor,
      through,
      positions.length > limit ? through : null,
    );
    pages.push(page);
    after = page.nextAfter;
  }
  return { links: pages.flatMap((p) => p.links), pages };
}

function newestAnchorRun(w: World, epochId: string): AuditRun[] {
  const anchored = w.runs.filter((r) => r.status === "completed" && r.anchor?.epochId === epochId);
  const newest = anchored.reduce<AuditRun | undefined>((best, r) => ((r.anchor?.position ?? 0) > (best?.anchor?.position ?? 0) ? r : best), undefined);
  return newest === undefined ? [] : [newest];
}

/** Every epoch of the whole audit read again a page at a time, at page sizes 1, 2 and 3. */
export function expectPagesAgree(w: World): void {
  for (const epoch of audit(w).epochs) {
    for (const limit of [1, 2, 3]) {
      const { links, pages } = pagedLinks(w, epoch.epochId, limit);
      expect(links).toEqual(epoch.links);
      for (const page of pages) {
        expect(page.anchor).toEqual(epoch.anchor);
        expect(page.valid).toBe(page.anchor.ok && page.links.every((l) => l.valid));
        expect(page.current).toBe(epoch.current);
      }
    }
  }
}

/** Every failing check of the report, as `boundary id → names`. */
export function failures(report: ChainAuditReport): Record<string, CheckName[]> {
  const out: Record<string, CheckName[]> = {};
  for (const link of report.epochs.flatMap((e) => e.links)) {
    const failing = link.checks.filter((c) => !c.ok).map((c) => c.name);
    if (failing.length > 0) out[link.boundaryId] = failing;
  }
  return out;
}

export function check(report: ChainAuditReport, boundaryId: string, name: CheckName) {
  const found = report.epochs.flatMap((e) => e.links).find((l) => l.boundaryId === boundaryId)?.checks.find((c) => c.name === name);
  if (found === undefined) throw new Error(`no ${name} check for ${boundaryId}`);
  return found;
}

// Three links: groups 1–2 (with the reply p3), 5–6, 7–8.
export function chain(overrides: { 1?: Partial<LinkSpec>; 2?: Partial<LinkSpec>; 3?: Partial<LinkSpec> } = {}): [Built, Built, Built] {
  const b1 = buildLink({ n: 1, position: 1, triggerSeq: 6, throughSeq: 2, previous: null, ...overrides[1] });
  const b2 = buildLink({ n: 2, position: 2, triggerSeq: 9, throughSeq: 6, previous: b1, ...overrides[2] });
  const b3 = buildLink({ n: 3, position: 3, triggerSeq: 12, throughSeq: 8, previous: b2, ...overrides[3] });
  return [b1, b2, b3];
}

export const mutableBody = (row: AuditBoundary): Record<string, unknown> => structuredClone(row.body) as Record<string, unknown>;
