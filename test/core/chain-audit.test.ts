import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ModelEvidence } from "../../src/core/boundary";
import { boundaryBodySchema, buildBoundary } from "../../src/core/boundary";
import type { AuditBoundary, AuditPlan, AuditRun, ChainAuditReport, CheckName, LinkAudit, LinkPage, PacketRead } from "../../src/core/chain-audit";
import { auditChain, auditLinkPage, CHECK_NAMES, frozenSliceRanges, packetLocation } from "../../src/core/chain-audit";
import { renderBoundaryBody } from "../../src/core/compactor-output";
import { compactionPolicySchema } from "../../src/core/declarations";
import type { StoredEvent } from "../../src/core/events";
import { canonicalJson, hashCanonical, sha256Hex } from "../../src/core/hash";
import type { CompactionContent, FrozenTurn, Packet } from "../../src/core/packet";
import { LEGACY_PACKET_FORMAT, OUTPUT_CONTRACT, PACKET_FORMAT, packetSchema } from "../../src/core/packet";
import { reconstruct, turnHash } from "../../src/core/reconstruction";
import { renderLegacySliceLine, renderSliceLine, renderTurn } from "../../src/core/render";
import { idsNamedBy, LogIndex } from "../../src/core/turn-pages";
import { BOB, CONVERSATION, delivered, edit, proposal, source, stored, storeAll } from "./event-builders";

/**
 * The audit over a chain built exactly the way the engine builds one: turns reconstructed from a
 * log, packets from those turns, boundaries with `buildBoundary`, plans, receipts and an in-memory
 * "R2" read through `packetLocation` with the same re-hashing `readDocument` does. Each corruption
 * is made where it would really happen (a stored row, an R2 object, a planner bug baked into a
 * packet), so that exactly the check aimed at it fails and nothing else does.
 */

const AGENT = "helper";
const COMPACTOR = "helper.compactor";
const FINGERPRINT = sha256Hex("fingerprint");
const EPOCH = { id: `foldline-compactor/1:${FINGERPRINT}`, compactorVersion: "foldline-compactor/1", fingerprint: FINGERPRINT };
const PROMPT = "Summarize the frozen history.";
const FRONTIER = { id: "frn-audit", hash: sha256Hex("frontier"), startSeq: 1 };
const FOLD = { admittedAgents: new Set([AGENT]), includeSensitive: false };

const OFFLINE: ModelEvidence = { provider: "foldline-extractive", model: "foldline-extractive-1", responseId: null, finishReason: null, usage: null, latencyMs: 3 };

/** seqs 1..12: a reply (p3, delivered at 4) sits in m2's group; every other event is a source. */
const LOG: StoredEvent[] = storeAll([
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

interface LinkSpec {
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

interface Built {
  readonly row: AuditBoundary;
  readonly plan: AuditPlan;
  readonly packetKey: string;
  readonly packetText: string;
  readonly run: AuditRun;
}

const frozenTurn = (t: { id: string; messageId?: string | undefined; group: number; role: "user" | "assistant"; author: FrozenTurn["author"]; text: string }): FrozenTurn => ({
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

function buildLink(spec: LinkSpec): Built {
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

interface World {
  readonly boundaries: AuditBoundary[];
  readonly plans: Map<string, AuditPlan>;
  /** The R2 bucket: key → object text. */
  readonly bucket: Map<string, string>;
  readonly runs: AuditRun[];
  readonly log: StoredEvent[];
  readonly currentEpochId: string;
}

function world(links: readonly Built[], options: { log?: StoredEvent[]; currentEpochId?: string } = {}): World {
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
function readPackets(w: World, boundaries: readonly AuditBoundary[]): Map<string, PacketRead> {
  const packets = new Map<string, PacketRead>();
  for (const boundary of boundaries) {
    const location = packetLocation(boundary, w.plans.get(boundary.runId));
    if (location === undefined) continue;
    const text = w.bucket.get(location.key);
    const outcome: PacketRead["outcome"] =
      text === undefined ? { ok: false, reason: "missing" } : sha256Hex(text) === location.hash ? { ok: true, text } : { ok: false, reason: "hash_mismatch" };
    packets.set(boundary.id, { ...location, outcome });
  }
  return packets;
}

function audit(w: World): ChainAuditReport {
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
 * receipts; and the log over `frozenSliceRanges` with the events related to each range.
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
    for (const range of frozenSliceRanges(packets.values())) {
      const window = index.range(range.after, range.through);
      const ids = idsNamedBy(window);
      for (const event of [...window, ...index.related(ids.messageIds, ids.proposalIds, Number.MAX_SAFE_INTEGER)]) log.set(event.seq, event);
    }
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
function expectPagesAgree(w: World): void {
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
function failures(report: ChainAuditReport): Record<string, CheckName[]> {
  const out: Record<string, CheckName[]> = {};
  for (const link of report.epochs.flatMap((e) => e.links)) {
    const failing = link.checks.filter((c) => !c.ok).map((c) => c.name);
    if (failing.length > 0) out[link.boundaryId] = failing;
  }
  return out;
}

function check(report: ChainAuditReport, boundaryId: string, name: CheckName) {
  const found = report.epochs.flatMap((e) => e.links).find((l) => l.boundaryId === boundaryId)?.checks.find((c) => c.name === name);
  if (found === undefined) throw new Error(`no ${name} check for ${boundaryId}`);
  return found;
}

// Three links: groups 1–2 (with the reply p3), 5–6, 7–8.
function chain(overrides: { 1?: Partial<LinkSpec>; 2?: Partial<LinkSpec>; 3?: Partial<LinkSpec> } = {}): [Built, Built, Built] {
  const b1 = buildLink({ n: 1, position: 1, triggerSeq: 6, throughSeq: 2, previous: null, ...overrides[1] });
  const b2 = buildLink({ n: 2, position: 2, triggerSeq: 9, throughSeq: 6, previous: b1, ...overrides[2] });
  const b3 = buildLink({ n: 3, position: 3, triggerSeq: 12, throughSeq: 8, previous: b2, ...overrides[3] });
  return [b1, b2, b3];
}

const mutableBody = (row: AuditBoundary): Record<string, unknown> => structuredClone(row.body) as Record<string, unknown>;

describe("auditChain: a chain built the way the engine builds it", () => {
  it("passes every check on every link of a valid three-link chain", () => {
    const links = chain();
    const report = audit(world(links));
    expect(report.valid).toBe(true);
    expectPagesAgree(world(links));
    expect(report.epochs).toHaveLength(1);
    const [epoch] = report.epochs;
    expect(epoch?.current).toBe(true);
    expect(epoch?.valid).toBe(true);
    expect(epoch?.links.map((l) => [l.boundaryId, l.position, l.current, l.valid])).toEqual([
      ["bnd_run-1", 1, true, true],
      ["bnd_run-2", 2, true, true],
      ["bnd_run-3", 3, true, true],
    ]);
    for (const link of epoch?.links ?? []) {
      expect(link.checks.map((c) => c.name)).toEqual([...CHECK_NAMES]);
      expect(link.checks.every((c) => c.ok && c.detail === undefined)).toBe(true);
    }
    // The fixture really chains: what each link names is its predecessor's stored row.
    expect(links[1].row.previousId).toBe(links[0].row.id);
    expect(links[2].row.previousHash).toBe(links[1].row.hash);
  });

  it("still verifies a link whose packet predates platform ids in slice lines, by that packet's own line format", () => {
    const legacy = (p: Packet): Packet => ({
      ...p,
      format: LEGACY_PACKET_FORMAT,
      frozen: { ...p.frozen, turns: p.frozen.turns.map(({ messageId: _id, ...t }) => ({ ...t, rendered: renderLegacySliceLine(t) })) },
    });
    const links = chain({ 1: { mutate: legacy } });
    expect(audit(world(links)).valid).toBe(true);
    // Each format is held to its own lines: legacy lines under the current format do not pass.
    const mislabelled = chain({ 1: { mutate: (p) => ({ ...legacy(p), format: PACKET_FORMAT }) } });
    expect(check(audit(world(mislabelled)), "bnd_run-1", "frozen_turns_match_log").ok).toBe(false);
  });

  it("does not let a correction made after a run invalidate the boundary that froze the older text", () => {
    const links = chain();
    const later = [...LOG, stored(13, { ...edit("m1", "Evening! Shall we plan the offsite?"), idempotencyKey: "k13" })];
    expect(audit(world(links, { log: later })).valid).toBe(true);
    expectPagesAgree(world(links, { log: later }));
    // The same edit before the first run's trigger is history that run should have frozen.
    const earlier = [...LOG.slice(0, 5), stored(6, { ...edit("m1", "Evening! Shall we plan the offsite?"), idempotencyKey: "k6" })];
    const moved = [...earlier, ...LOG.slice(5).map((e) => ({ ...e, seq: e.seq + 1 }))];
    const report = audit(world(links, { log: moved }));
    expectPagesAgree(world(links, { log: moved }));
    expect(check(report, "bnd_run-1", "frozen_turns_match_log").ok).toBe(false);
  });

  it("reads a page's slice with what it needs from before its range: an edit logged before its message", () => {
    // m6 (seq 8, frozen by the third link) is edited by an event at seq 4, before the third link's
    // range of the log begins: only the lookup of related events finds it.
    const early = LOG.map((e) => (e.seq === 4 ? stored(4, { ...edit("m6", "Flights are approved already."), idempotencyKey: "k4" }) : e));
    const w = world(chain(), { log: early });
    const report = audit(w);
    expect(failures(report)["bnd_run-3"]).toContain("frozen_turns_match_log");
    expectPagesAgree(w);
  });

  it("never puts conversation text in the report", () => {
    const links = chain({ 2: { mutate: (p) => ({ ...p, frozen: { ...p.frozen, turns: p.frozen.turns.map((t) => (t.id === "s5" ? frozenTurn({ ...t, text: "SECRET EDIT" }) : t)) } }) } });
    const w = world(links);
    const body = mutableBody(links[0].row);
    (body["content"] as Record<string, unknown>)["summary"] = "SECRET SUMMARY";
    w.boundaries[0] = { ...links[0].row, body };
    const text = JSON.stringify(audit(w));
    expect(text).toContain("frozen_turns_match_log");
    for (const secret of ["SECRET", "Lisbon", "Summary of link", "offsite"]) expect(text).not.toContain(secret);
  });
});

describe("auditChain: each corruption fails exactly the check aimed at it", () => {
  interface Case {
    readonly name: string;
    readonly make: () => World;
    readonly expected: Record<string, CheckName[]>;
    readonly detail?: RegExp;
  }

  const cases: Case[] = [
    {
      name: "edited body text kept with the old hash",
      make: () => {
        const links = chain();
        const w = world(links);
        const body = mutableBody(links[1].row);
        (body["content"] as Record<string, unknown>)["summary"] = "A rewritten summary.";
        w.boundaries[1] = { ...links[1].row, body };
        return w;
      },
      expected: { "bnd_run-2": ["body_hash"] },
      detail: /hashCanonical\(body\) differs/,
    },
    {
      name: "a wrong previous hash (bound consistently from a bad packet)",
      make: () => world(chain({ 2: { mutate: (p) => ({ ...p, previousBoundary: p.previousBoundary && { ...p.previousBoundary, hash: sha256Hex("not the predecessor") } }) } })),
      expected: { "bnd_run-2": ["link"] },
      detail: /is stored with hash/,
    },
    {
      name: "a missing previous boundary",
      make: () => {
        const w = world(chain());
        w.boundaries.splice(0, 1);
        return w;
      },
      expected: { "bnd_run-2": ["link"] },
      detail: /bnd_run-1 is missing/,
    },
    {
      name: "a fork: two complete boundaries after one predecessor",
      make: () => {
        const links = chain();
        const sibling = buildLink({ n: 20, position: 2, triggerSeq: 9, throughSeq: 6, previous: links[0], summary: "Another take on the same slice." });
        const w = world([...links, sibling]);
        return w;
      },
      expected: { "bnd_run-2": ["no_fork"], "bnd_run-20": ["no_fork"] },
      detail: /bnd_run-20 also follow bnd_run-1; bnd_run-20 also hold position 2/,
    },
    {
      name: "coverage that does not advance (the same groups frozen again)",
      make: () => world(chain({ 2: { throughSeq: 2, after: 0 } })),
      expected: { "bnd_run-2": ["coverage_advances"] },
      detail: /covers through 2, not past/,
    },
    {
      name: "a slice that advances but re-freezes groups the previous boundary covers",
      make: () => world(chain({ 2: { after: 0 } })),
      expected: { "bnd_run-2": ["coverage_advances"] },
      detail: /re-freezes turns at or before 2: s1, s2, p3/,
    },
    {
      name: "a plan naming another copy of the packet",
      make: () => {
        const links = chain();
        const w = world(links);
        w.bucket.set("packets/elsewhere.json", links[1].packetText);
        w.plans.set(links[1].plan.runId, { ...links[1].plan, packetKey: "packets/elsewhere.json" });
        return w;
      },
      expected: { "bnd_run-2": ["plan"] },
      detail: /the plan's packet is packets\/elsewhere.json/,
    },
    {
      name: "a plan naming a different packet (another run's)",
      make: () => {
        const links = chain();
        const w = world(links);
        w.plans.set(links[1].plan.runId, { ...links[1].plan, packetKey: links[0].packetKey, packetHash: links[0].plan.packetHash });
        return w;
      },
      expected: { "bnd_run-2": ["plan", "packet_binding"] },
    },
    {
      name: "a tampered packet in R2 (the packet checks cannot run on it)",
      make: () => {
        const links = chain();
        const w = world(links);
        w.bucket.set(links[1].packetKey, links[1].packetText.replace("Lisbon then", "Porto then"));
        return w;
      },
      expected: { "bnd_run-2": ["packet_hash", "packet_binding", "frozen_turns_match_log"] },
      detail: /hash_mismatch/,
    },
    {
      name: "a frozen turn whose text is not the log's",
      make: () =>
        world(chain({ 2: { mutate: (p) => ({ ...p, frozen: { ...p.frozen, turns: p.frozen.turns.map((t) => (t.id === "s5" ? frozenTurn({ ...t, text: "Porto then." }) : t)) } }) } })),
      expected: { "bnd_run-2": ["frozen_turns_match_log"] },
      detail: /s5 \(text, hash, rendered\)/,
    },
    {
      name: "a frozen slice that silently drops a turn",
      make: () => world(chain({ 1: { mutate: (p) => ({ ...p, frozen: { ...p.frozen, turns: p.frozen.turns.filter((t) => t.id !== "p3") } }) } })),
      expected: { "bnd_run-1": ["frozen_turns_match_log"] },
      detail: /missing from the frozen slice: p3/,
    },
    {
      name: "no completed run event",
      make: () => {
        const w = world(chain());
        const index = w.runs.findIndex((r) => r.runId === "cmp_run-2" && r.status === "completed");
        w.runs.splice(index, 1);
        return w;
      },
      expected: { "bnd_run-2": ["completed_run"] },
      detail: /no completed run event for cmp_run-2/,
    },
    {
      name: "a completed run from someone other than the compactor",
      make: () => {
        const w = world(chain());
        const index = w.runs.findIndex((r) => r.runId === "cmp_run-2" && r.status === "completed");
        w.runs[index] = { runId: "cmp_run-2", status: "completed", agentId: AGENT, boundaryId: "bnd_run-2", anchor: null };
        return w;
      },
      expected: { "bnd_run-2": ["completed_run"] },
      detail: /not the compactor helper.compactor/,
    },
    {
      name: "a language-model receipt without usage",
      make: () => world(chain({ 2: { model: { ...OFFLINE, provider: "openai-compatible", model: "gpt-test" } } })),
      expected: { "bnd_run-2": ["model_evidence"] },
      detail: /openai-compatible receipt without usage/,
    },
  ];

  it.each(cases)("$name", ({ make, expected, detail }) => {
    const report = audit(make());
    expect(failures(report)).toEqual(expected);
    expect(report.valid).toBe(false);
    expect(report.epochs[0]?.valid).toBe(false);
    if (detail !== undefined) {
      const details = report.epochs.flatMap((e) => e.links).flatMap((l) => l.checks.map((c) => c.detail ?? ""));
      expect(details.some((d) => detail.test(d))).toBe(true);
    }
  });

  it.each(cases)("reports the same links a page at a time: $name", ({ make }) => {
    expectPagesAgree(make());
  });

  it("reports the packet checks as not checked when the packet is unreadable, rather than as agreeing", () => {
    const links = chain();
    const w = world(links);
    w.bucket.delete(links[2].packetKey);
    const report = audit(w);
    expect(check(report, "bnd_run-3", "packet_hash")).toEqual({ name: "packet_hash", ok: false, detail: `packet ${links[2].packetKey}: missing` });
    expect(check(report, "bnd_run-3", "packet_binding").detail).toBe("not checked: the packet could not be read (missing)");
    expect(check(report, "bnd_run-3", "frozen_turns_match_log").detail).toBe("not checked: the packet could not be read (missing)");
  });

  it("reports a hand-forced row that is not a boundary without throwing", () => {
    const links = chain();
    const w = world(links);
    w.boundaries.push({ ...links[2].row, id: "bnd_forced", position: 4, previousId: "bnd_run-3", runId: "cmp_forced", body: {} });
    w.boundaries.push({ ...links[2].row, id: "bnd_not_json", position: 5, previousId: "bnd_forced", runId: "cmp_not_json", body: undefined });
    const report = audit(w);
    const forced = failures(report)["bnd_forced"] ?? [];
    expect(forced).toEqual(expect.arrayContaining(["body_hash", "link", "plan", "completed_run", "model_evidence"]));
    expect(check(report, "bnd_forced", "body_hash").detail).toBe("the stored body does not match the boundary event schema");
    expect(check(report, "bnd_not_json", "body_hash").detail).toBe("the stored body is not JSON");
    expect(failures(report)["bnd_run-3"]).toBeUndefined();
  });
});

describe("auditChain: epochs", () => {
  it("lists the current epoch first (even empty) and a retired one as not current, still audited", () => {
    const links = chain();
    const report = audit(world(links, { currentEpochId: "foldline-compactor/1:new" }));
    expect(report.currentEpochId).toBe("foldline-compactor/1:new");
    expect(report.epochs.map((e) => [e.epochId, e.current, e.valid, e.links.length])).toEqual([
      ["foldline-compactor/1:new", true, true, 0],
      [EPOCH.id, false, true, 3],
    ]);
    expect(report.epochs[1]?.links.every((l) => !l.current && l.valid)).toBe(true);
    expect(report.valid).toBe(true);
    expectPagesAgree(world(links, { currentEpochId: "foldline-compactor/1:new" }));
  });

  it("judges links only within their own epoch: a predecessor in another epoch is missing", () => {
    const links = chain();
    const w = world(links);
    w.boundaries[0] = { ...links[0].row, epochId: "foldline-compactor/1:other" };
    const report = audit(w);
    expect(report.epochs.map((e) => e.epochId)).toEqual([EPOCH.id, "foldline-compactor/1:other"]);
    expect(failures(report)["bnd_run-2"]).toEqual(["link"]);
    // The moved row itself no longer matches its body's epoch, its plan's, or the epoch its receipt anchored.
    expect(failures(report)["bnd_run-1"]).toEqual(["body_hash", "plan", "completed_run"]);
    expectPagesAgree(w);
  });
});

describe("auditChain: properties", () => {
  /** One variant per leaf of a JSON value, each leaf changed. */
  function leafVariants(value: unknown, path = ""): { path: string; value: unknown }[] {
    if (Array.isArray(value)) {
      if (value.length === 0) return [{ path, value: ["added"] }];
      return value.flatMap((item: unknown, i) => leafVariants(item, `${path}[${i}]`).map((v) => ({ path: v.path, value: value.map((x: unknown, j) => (j === i ? v.value : x)) })));
    }
    if (value !== null && typeof value === "object") {
      return Object.entries(value).flatMap(([key, item]) =>
        leafVariants(item, path === "" ? key : `${path}.${key}`).map((v) => ({ path: v.path, value: { ...value, [key]: v.value } })),
      );
    }
    if (value === null) return [{ path, value: "was null" }];
    if (typeof value === "string") return [{ path, value: `${value}x` }];
    if (typeof value === "number") return [{ path, value: value + 1 }];
    return [{ path, value: !value }];
  }

  const links = chain();
  const variants = leafVariants(links[1].row.body);

  it("any single change to a stored body under its old hash fails body_hash and invalidates the chain", () => {
    expect(variants.length).toBeGreaterThan(50);
    fc.assert(
      fc.property(fc.constantFrom(...variants), ({ value }) => {
        const w = world(links);
        w.boundaries[1] = { ...links[1].row, body: value };
        const report = audit(w);
        expect(check(report, "bnd_run-2", "body_hash").ok).toBe(false);
        expect(report.valid).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  it("the report does not depend on the order rows arrive in", () => {
    const w = world([...links, buildLink({ n: 20, position: 2, triggerSeq: 9, throughSeq: 6, previous: links[0], summary: "A fork." })]);
    const reference = audit(w);
    fc.assert(
      fc.property(fc.shuffledSubarray(w.boundaries, { minLength: w.boundaries.length, maxLength: w.boundaries.length }), (shuffled) => {
        expect(audit({ ...w, boundaries: shuffled })).toEqual(reference);
      }),
      { numRuns: 50 },
    );
  });
});

describe("auditChain: the head is anchored in the log", () => {
  /** A row rewritten by hand with its hash recomputed, and, when given, the predecessor hash it now names. */
  function rewrite(row: AuditBoundary, change: (body: Record<string, unknown>) => void): AuditBoundary {
    const body = mutableBody(row);
    change(body);
    const previous = body["previous"] as { hash: string } | null;
    return { ...row, body, hash: hashCanonical(body), previousHash: previous?.hash ?? null };
  }
  /** The three-link chain with `count` rows deleted by hand from `start`; the log keeps every receipt. */
  function withoutRows(start: number, count: number): World {
    const w = world(chain());
    w.boundaries.splice(start, count);
    return w;
  }
  const newSummary = (body: Record<string, unknown>): void => {
    (body["content"] as Record<string, unknown>)["summary"] = "Everyone agreed to double the budget.";
  };

  interface AnchorCase {
    readonly name: string;
    readonly make: () => World;
    /** Failing link checks, as in the corruption table. */
    readonly links: Record<string, CheckName[]>;
    readonly anchor: RegExp;
  }

  const cases: AnchorCase[] = [
    {
      name: "the head row deleted",
      make: () => withoutRows(2, 1),
      links: {},
      anchor: /bnd_run-3 at position 3, settled by the log's newest completed run, is missing: the newest stored is bnd_run-2 at position 2/,
    },
    {
      name: "the head pointed back at the first boundary (the newer rows deleted)",
      make: () => withoutRows(1, 2),
      links: {},
      anchor: /bnd_run-3 .* is missing: the newest stored is bnd_run-1 at position 1/,
    },
    {
      name: "every row of the epoch deleted",
      make: () => withoutRows(0, 3),
      links: {},
      anchor: /is missing: no boundary of its epoch is stored/,
    },
    {
      name: "the head's summary rewritten with its hash recomputed",
      make: () => {
        const links = chain();
        const w = world(links);
        w.boundaries[2] = rewrite(links[2].row, newSummary);
        return w;
      },
      links: { "bnd_run-3": ["completed_run"] },
      anchor: /bnd_run-3 is stored with another content hash than its completed run settled/,
    },
    {
      name: "the first summary rewritten and every later link re-hashed to match",
      make: () => {
        const links = chain();
        const w = world(links);
        let previous: AuditBoundary | undefined;
        links.forEach((link, i) => {
          const row = rewrite(link.row, (body) => {
            if (i === 0) newSummary(body);
            else if (previous !== undefined) body["previous"] = { ...(body["previous"] as object), hash: previous.hash };
          });
          w.boundaries[i] = row;
          previous = row;
        });
        return w;
      },
      // The later links' packets in R2 still name the original predecessor hashes, too.
      links: { "bnd_run-1": ["completed_run"], "bnd_run-2": ["packet_binding", "completed_run"], "bnd_run-3": ["packet_binding", "completed_run"] },
      anchor: /bnd_run-3 is stored with another hash than its completed run settled/,
    },
    {
      name: "a newer row that no completed run settled",
      make: () => {
        const links = chain();
        const w = world(links);
        const forged = buildLink({ n: 4, position: 4, triggerSeq: 12, throughSeq: 12, previous: links[2] });
        w.boundaries.push(forged.row);
        w.plans.set(forged.plan.runId, forged.plan);
        w.bucket.set(forged.packetKey, forged.packetText);
        return w;
      },
      links: { "bnd_run-4": ["completed_run"] },
      anchor: /bnd_run-4 at position 4 was settled by no completed run; the log's newest settled bnd_run-3 at position 3/,
    },
  ];

  it.each(cases)("$name", ({ make, links, anchor }) => {
    const report = audit(make());
    expect(failures(report)).toEqual(links);
    expect(report.valid).toBe(false);
    const epoch = report.epochs[0];
    expect(epoch?.valid).toBe(false);
    expect(epoch?.anchor.ok).toBe(false);
    expect(epoch?.anchor.detail).toMatch(anchor);
    expect(JSON.stringify(report)).not.toContain("double the budget");
  });

  it.each(cases)("reports the same anchor on every page: $name", ({ make }) => {
    expectPagesAgree(make());
  });

  it("names the head the log anchors on an intact chain, and ignores other epochs' anchors", () => {
    const links = chain();
    const w = world(links);
    const other = { ...links[0].run, runId: "cmp_other", anchor: { ...(links[0].run.anchor ?? { epochId: "", position: 1, boundaryId: "", boundaryHash: "", contentHash: "" }), epochId: "foldline-compactor/1:other", position: 9 } };
    w.runs.push(other);
    const report = audit(w);
    expect(report.valid).toBe(true);
    expect(report.epochs[0]?.anchor).toEqual({ ok: true, boundaryId: "bnd_run-3", position: 3 });
    expectPagesAgree(w);
  });

  it("leaves a chain settled before runs carried anchors to the link checks", () => {
    const w = world(chain());
    const legacy = { ...w, runs: w.runs.map((r) => ({ ...r, anchor: null })) };
    const report = audit(legacy);
    expect(report.valid).toBe(true);
    expect(report.epochs[0]?.anchor).toEqual({ ok: true, boundaryId: null, position: null });
    expectPagesAgree(legacy);
  });
});
