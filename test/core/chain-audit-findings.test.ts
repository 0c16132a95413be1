import { describe, expect, it } from "vitest";
import type { AuditBoundary, PacketRead } from "../../src/core/chain-audit";
import { auditChain, frozenSliceRanges, parseBoundaryBody } from "../../src/core/chain-audit";
import { LINK_CHECKS } from "../../src/core/chain-audit-checks";
import type { LinkFacts } from "../../src/core/chain-audit-link";
import { auditRunOf, listed } from "../../src/core/chain-audit-link";
import { checkFrozenTurns, parsePacket } from "../../src/core/chain-audit-slice";
import type { RunBody } from "../../src/core/events";
import { canonicalJson, hashCanonical, sha256Hex } from "../../src/core/hash";
import type { Packet } from "../../src/core/packet";
import { LogIndex } from "../../src/core/turn-pages";
import type { Built, World } from "./chain-audit-fixture";
import { AGENT, chain, COMPACTOR, EPOCH, LOG, mutableBody, OFFLINE, readPacket, world } from "./chain-audit-fixture";
import { BOB, CONVERSATION } from "./event-builders";

/**
 * What each check of a link finds, field by field: the audit's report is read by an operator who
 * acts on the field, the expected and found values and the sentence, so each is pinned here for
 * every way a check can fail, over the facts the audit gathers for one link.
 */

/** The facts the audit gathers for the link `id` of the world's epoch. */
function factsOf(w: World, id: string): LinkFacts {
  const row = w.boundaries.find((b) => b.id === id);
  if (row === undefined) throw new Error(`no row ${id}`);
  const epoch = w.boundaries.filter((b) => b.epochId === row.epochId);
  const read = readPacket(w, row);
  return {
    conversationId: CONVERSATION,
    agentId: AGENT,
    row,
    body: parseBoundaryBody(row.body),
    previous: row.previousId === "" ? undefined : epoch.find((b) => b !== row && b.id === row.previousId),
    rivals: epoch.filter((b) => b !== row),
    plan: w.plans.get(row.runId),
    packetSource: read,
    packet: parsePacket(read),
    receipts: w.runs,
  };
}

/** The world with link `index`'s row replaced. */
function withRow(links: readonly Built[], index: number, row: Partial<AuditBoundary>): World {
  const w = world(links);
  w.boundaries[index] = { ...links[index]!.row, ...row };
  return w;
}

const NOT_A_BOUNDARY = { field: "body", expected: "a boundary event", found: null, detail: "not checked: the stored body is not a boundary event" };

describe("listed", () => {
  it("names up to eight items and counts the rest", () => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => `b${i + 1}`);
    expect(listed(items(8))).toBe("b1, b2, b3, b4, b5, b6, b7, b8");
    expect(listed(items(9))).toBe("b1, b2, b3, b4, b5, b6, b7, b8 and 1 more");
    expect(listed(items(12))).toBe("b1, b2, b3, b4, b5, b6, b7, b8 and 4 more");
  });
});

describe("auditRunOf", () => {
  it("keeps the receipt's boundary id only when it is a string, and no anchor as null", () => {
    const anchor = { epochId: EPOCH.id, position: 1, boundaryId: "bnd_1", boundaryHash: sha256Hex("b"), contentHash: sha256Hex("c") };
    const run = (extra: Partial<RunBody>) => auditRunOf({ runId: "cmp_1", agentId: COMPACTOR, role: "compactor", status: "completed", ...extra });
    expect(run({ detail: { boundaryId: "bnd_1" }, anchor })).toEqual({ runId: "cmp_1", status: "completed", agentId: COMPACTOR, boundaryId: "bnd_1", anchor });
    expect(run({ detail: { boundaryId: 7 } })).toEqual({ runId: "cmp_1", status: "completed", agentId: COMPACTOR, boundaryId: null, anchor: null });
    expect(run({})).toEqual({ runId: "cmp_1", status: "completed", agentId: COMPACTOR, boundaryId: null, anchor: null });
  });
});

describe("parsePacket", () => {
  it("says why a packet was not checked: no location, unreadable, not JSON, not a packet", () => {
    expect(parsePacket(undefined)).toEqual({ ok: false, detail: "not checked: no packet location" });
    expect(parsePacket({ key: "k", hash: "h", outcome: { ok: false, reason: "missing" } })).toEqual({ ok: false, detail: "not checked: the packet could not be read (missing)" });
    expect(parsePacket({ key: "k", hash: "h", outcome: { ok: true, text: "{not json" } })).toEqual({ ok: false, detail: "the packet is not JSON" });
    expect(parsePacket({ key: "k", hash: "h", outcome: { ok: true, text: "{}" } })).toEqual({ ok: false, detail: "the packet does not match the packet schema" });
  });
});

describe("frozenSliceRanges", () => {
  const links = chain();
  const read = (packet: Packet): PacketRead => ({ key: "k", hash: "h", outcome: { ok: true, text: canonicalJson(packet) } });
  const packetOf = (i: number): Packet => JSON.parse(links[i]!.packetText) as Packet;

  it("merges slices whose groups overlap or touch, in any order, and skips unreadable packets", () => {
    // Link 1 reads groups (0, 2] as of seq 6, link 2 (2, 6] as of 9, link 3 (6, 8] as of 12.
    expect(frozenSliceRanges([read(packetOf(1)), read(packetOf(0))])).toEqual([{ after: 0, groupsThrough: 6, through: 9 }]);
    expect(frozenSliceRanges([read(packetOf(2)), read(packetOf(1)), read(packetOf(0))])).toEqual([{ after: 0, groupsThrough: 8, through: 12 }]);
    expect(frozenSliceRanges([{ key: "k", hash: "h", outcome: { ok: false, reason: "missing" } }, read(packetOf(2))])).toEqual([{ after: 6, groupsThrough: 8, through: 12 }]);
  });

  it("keeps slices apart when groups lie between them, even if one's trigger lies past the other's start, and drops a slice that reads nothing", () => {
    expect(frozenSliceRanges([read(packetOf(2)), read(packetOf(0))])).toEqual([
      { after: 0, groupsThrough: 2, through: 6 },
      { after: 6, groupsThrough: 8, through: 12 },
    ]);
    const early = { ...packetOf(0), triggerSeq: 3 };
    expect(frozenSliceRanges([read(packetOf(2)), read(early)])).toEqual([
      { after: 0, groupsThrough: 2, through: 3 },
      { after: 6, groupsThrough: 8, through: 12 },
    ]);
    expect(frozenSliceRanges([read({ ...packetOf(2), triggerSeq: 6 })])).toEqual([]);
  });
});

describe("body_hash", () => {
  it("names every row column its body disagrees with", () => {
    const links = chain();
    const w = withRow(links, 1, { id: "bnd_x", position: 5, runId: "cmp_x", coveredThroughSeq: 99, epochId: "e2", previousId: "bnd_y", previousHash: "h" });
    expect(LINK_CHECKS.body_hash(factsOf(w, "bnd_x"))).toEqual([
      { field: "body.id", expected: "bnd_x", found: "bnd_run-2", detail: "body.id bnd_run-2 is not the row id" },
      { field: "body.position", expected: 5, found: 2, detail: "body.position 2 is not the row position 5" },
      { field: "body.run.id", expected: "cmp_x", found: "cmp_run-2", detail: "body.run.id cmp_run-2 is not the row run id cmp_x" },
      { field: "body.coveredThrough.seq", expected: 99, found: 6, detail: "body.coveredThrough.seq 6 is not the row's 99" },
      { field: "body.compactor.epochId", expected: "e2", found: EPOCH.id, detail: "body.compactor.epochId is not the row epoch" },
      { field: "body.previous.id", expected: "bnd_y", found: "bnd_run-1", detail: "body.previous.id is not the row previous_id" },
      { field: "body.previous.hash", expected: "h", found: links[0].row.hash, detail: "body.previous.hash is not the row previous_hash" },
    ]);
  });

  it("says whether the body is not JSON or not a boundary, and every check that needs a boundary says it did not run", () => {
    const links = chain();
    expect(LINK_CHECKS.body_hash(factsOf(withRow(links, 1, { body: undefined }), "bnd_run-2"))).toEqual([
      { field: "body", expected: "JSON", found: null, detail: "the stored body is not JSON" },
    ]);
    const facts = factsOf(withRow(links, 1, { body: {} }), "bnd_run-2");
    expect(LINK_CHECKS.body_hash(facts)).toEqual([{ field: "body", expected: "a boundary event", found: null, detail: "the stored body does not match the boundary event schema" }]);
    for (const name of ["link", "coverage_advances", "completed_run", "model_evidence", "packet_binding"] as const) expect(LINK_CHECKS[name](facts)).toEqual([NOT_A_BOUNDARY]);
  });
});

describe("link", () => {
  const links = chain();

  it("refuses a first link that names a predecessor, in its body or its row", () => {
    expect(LINK_CHECKS.link(factsOf(withRow(links, 1, { position: 1 }), "bnd_run-2"))).toEqual([
      { field: "body.previous.id", expected: null, found: "bnd_run-1", detail: "the first boundary of an epoch names a previous boundary" },
      { field: "previous_id", expected: "", found: "bnd_run-1", detail: "the first boundary of an epoch has a previous_id" },
    ]);
  });

  it("refuses a later link without a predecessor, whether the row or the body lacks it", () => {
    const none = [{ field: "previous_id", expected: "a previous boundary", found: null, detail: "position 2 has no previous boundary" }];
    expect(LINK_CHECKS.link(factsOf(withRow(links, 1, { previousId: "" }), "bnd_run-2"))).toEqual(none);
    // The first link's body (no previous) stored as a second link that names one.
    expect(LINK_CHECKS.link(factsOf(withRow(links, 0, { position: 2, previousId: "bnd_run-2" }), "bnd_run-1"))).toEqual(none);
  });

  it("refuses a row that names another predecessor than its body, or itself", () => {
    expect(LINK_CHECKS.link(factsOf(withRow(links, 1, { previousId: "bnd_other" }), "bnd_run-2"))).toEqual([
      { field: "body.previous.id", expected: "bnd_other", found: "bnd_run-1", detail: "body.previous.id is not the row previous_id" },
    ]);
    const self = withRow(links, 1, { id: "bnd_run-1x" });
    const body = mutableBody(links[1].row);
    (body["previous"] as Record<string, unknown>)["id"] = "bnd_run-1x";
    self.boundaries[1] = { ...self.boundaries[1]!, body, previousId: "bnd_run-1x" };
    self.boundaries.splice(0, 1);
    expect(LINK_CHECKS.link(factsOf(self, "bnd_run-1x"))).toEqual([
      { field: "previous", expected: "bnd_run-1x", found: null, detail: `previous boundary bnd_run-1x is missing from epoch ${EPOCH.id}` },
    ]);
  });

  it("names each way the stored predecessor differs from what the link says of it", () => {
    const w = withRow(links, 0, { position: 5, hash: "hX", coveredThroughSeq: 3 });
    expect(LINK_CHECKS.link(factsOf(w, "bnd_run-2"))).toEqual([
      { field: "previous.hash", expected: links[0].row.hash, found: "hX", detail: `previous boundary bnd_run-1 is stored with hash hX, this link names ${links[0].row.hash}` },
      { field: "previous.position", expected: 1, found: 5, detail: "previous boundary bnd_run-1 is at position 5, not 1" },
      { field: "previous.coveredThroughSeq", expected: 2, found: 3, detail: "previous boundary bnd_run-1 covers through 3, this link says 2" },
    ]);
  });
});

describe("coverage_advances", () => {
  it("judges coverage against the predecessor as named and as stored, and names re-frozen turns", () => {
    const links = chain({ 2: { throughSeq: 2, after: 0 } });
    expect(LINK_CHECKS.coverage_advances(factsOf(withRow(links, 0, { coveredThroughSeq: 7 }), "bnd_run-2"))).toEqual([
      { field: "coveredThrough.seq", expected: "> 2", found: 2, detail: "covers through 2, not past the 2 it names for its previous boundary" },
      { field: "coveredThrough.seq", expected: "> 7", found: 2, detail: "covers through 2, not past previous boundary bnd_run-1 (7)" },
      { field: "frozen.turns", expected: "groups after 2", found: "s1, s2, p3", detail: "the frozen slice re-freezes turns at or before 2: s1, s2, p3" },
    ]);
  });
});

describe("plan", () => {
  it("names the predecessor each side follows, or none", () => {
    const links = chain();
    const w = world(links);
    w.plans.set("cmp_run-2", { ...links[1].plan, previousBoundaryId: "" });
    w.plans.set("cmp_run-1", { ...links[0].plan, previousBoundaryId: "bnd_z" });
    expect(LINK_CHECKS.plan(factsOf(w, "bnd_run-2"))).toEqual([
      { field: "plan.previousBoundaryId", expected: "bnd_run-1", found: "", detail: "the plan follows (none), the boundary follows bnd_run-1" },
    ]);
    expect(LINK_CHECKS.plan(factsOf(w, "bnd_run-1"))).toEqual([
      { field: "plan.previousBoundaryId", expected: "", found: "bnd_z", detail: "the plan follows bnd_z, the boundary follows (none)" },
    ]);
  });
});

describe("packet_hash", () => {
  it("names a missing location and a packet read from another key than the plan's", () => {
    const links = chain();
    const facts = factsOf(world(links), "bnd_run-2");
    expect(LINK_CHECKS.packet_hash({ ...facts, packetSource: undefined })).toEqual([
      { field: "packet", expected: "a packet location", found: null, detail: "no packet location: neither a plan nor a readable boundary body names one" },
    ]);
    expect(LINK_CHECKS.packet_hash({ ...facts, packetSource: { key: "packets/other.json", hash: links[1].plan.packetHash, outcome: { ok: true } } })).toEqual([
      { field: "packet.key", expected: links[1].packetKey, found: "packets/other.json", detail: "the packet read is not the one the plan names" },
    ]);
  });
});

describe("packet_binding", () => {
  it("names a list of another length and a leaf of another kind by path", () => {
    const links = chain();
    const longer = mutableBody(links[1].row);
    longer["historyAgents"] = [AGENT, "intruder"];
    const facts = factsOf(world(links), "bnd_run-2");
    const bind = (body: Record<string, unknown>) => LINK_CHECKS.packet_binding({ ...facts, body: body as LinkFacts["body"] }).map((f) => [f.field, f.expected, f.found]);
    expect(bind(longer)).toEqual([["historyAgents (length)", 1, 2]]);
    const scalar = mutableBody(links[1].row);
    scalar["historyAgents"] = AGENT;
    expect(bind(scalar)).toEqual([["historyAgents", "(array)", AGENT]]);
  });
});

describe("completed_run", () => {
  const links = chain();
  const receipts = (w: World, replace: (r: World["runs"][number]) => World["runs"][number]) => {
    w.runs.splice(0, w.runs.length, ...w.runs.map((r) => (r.runId === "cmp_run-2" && r.status === "completed" ? replace(r) : r)));
    return w;
  };

  it("names the boundary a receipt names when it is another, and accepts a receipt naming none", () => {
    const other = receipts(world(links), (r) => ({ ...r, boundaryId: "bnd_other" }));
    expect(LINK_CHECKS.completed_run(factsOf(other, "bnd_run-2"))).toEqual([
      { field: "run.detail.boundaryId", expected: "bnd_run-2", found: "bnd_other", detail: "the completed run names boundary bnd_other" },
    ]);
    const none = receipts(world(links), (r) => ({ ...r, boundaryId: null, anchor: null }));
    expect(LINK_CHECKS.completed_run(factsOf(none, "bnd_run-2"))).toEqual([]);
  });

  it("lists every agent that completed the run when none is the compactor", () => {
    const w = receipts(world(links), (r) => ({ ...r, agentId: AGENT }));
    w.runs.push({ runId: "cmp_run-2", status: "completed", agentId: "someone", boundaryId: null, anchor: null });
    expect(LINK_CHECKS.completed_run(factsOf(w, "bnd_run-2"))).toEqual([
      { field: "run.agentId", expected: COMPACTOR, found: `${AGENT}, someone`, detail: `run cmp_run-2 was completed by ${AGENT}, someone, not the compactor ${COMPACTOR}` },
    ]);
  });

  it("says whether a row whose hash its run did not settle also has other content", () => {
    const settled = links[1].row.hash;
    const rehashed = withRow(links, 1, { hash: "hX" });
    expect(LINK_CHECKS.completed_run(factsOf(rehashed, "bnd_run-2"))).toEqual([
      { field: "run.anchor.boundaryHash", expected: settled, found: "hX", detail: "the row's hash is not the hash its completed run settled (its content hash matches)" },
    ]);
    const body = mutableBody(links[1].row);
    (body["content"] as Record<string, unknown>)["summary"] = "A rewritten summary.";
    const rewritten = withRow(links, 1, { body, hash: hashCanonical(body) });
    expect(LINK_CHECKS.completed_run(factsOf(rewritten, "bnd_run-2"))).toEqual([
      { field: "run.anchor.boundaryHash", expected: settled, found: hashCanonical(body), detail: "the row's hash is not the hash its completed run settled (its content hash differs too)" },
    ]);
  });
});

describe("model_evidence", () => {
  it("names a blank provider and a blank model, and takes a language-model receipt whose provider reported no usage", () => {
    const facts = factsOf(world(chain()), "bnd_run-2");
    const judge = (model: object) => LINK_CHECKS.model_evidence({ ...facts, body: { ...facts.body!, model: { ...OFFLINE, ...model } } });
    expect(judge({})).toEqual([]);
    expect(judge({ provider: "  ", model: " " })).toEqual([
      { field: "model.provider", expected: "a provider", found: "  ", detail: "no provider" },
      { field: "model.model", expected: "a model", found: " ", detail: "no model" },
    ]);
    expect(judge({ provider: "openai-compatible" })).toEqual([]);
  });
});

describe("frozen_turns_match_log", () => {
  const judge = (mutate: (p: Packet) => Packet) => checkFrozenTurns(factsOf(world(chain({ 2: { mutate } })), "bnd_run-2"), new LogIndex(LOG));
  const turns = (p: Packet) => p.frozen.turns;

  it("names a turn the log never held, and the log's turns the slice dropped", () => {
    const [first] = judge((p) => ({ ...p, frozen: { ...p.frozen, turns: [...turns(p), { ...turns(p).at(-1)!, id: "s99" }] } }));
    expect(first).toEqual({ field: "frozen.turns", expected: null, found: "s99", detail: "frozen turns the log did not hold at seq 9: s99" });
    expect(judge((p) => ({ ...p, frozen: { ...p.frozen, turns: turns(p).slice(1) } }))).toEqual([
      { field: "frozen.turns", expected: "s5", found: null, detail: "log turns missing from the frozen slice: s5" },
    ]);
  });

  it("names each field of a turn that is not the log's", () => {
    const changed = (change: object) => judge((p) => ({ ...p, frozen: { ...p.frozen, turns: turns(p).map((t, i) => (i === 0 ? { ...t, ...change } : t)) } }));
    const mismatch = (fields: string) => [{ field: "frozen.turns", expected: "the log's turns", found: `s5 (${fields})`, detail: `frozen turns differ from the log as of seq 9: s5 (${fields})` }];
    expect(changed({ role: "assistant" })).toEqual(mismatch("role"));
    expect(changed({ group: 6 })).toEqual(mismatch("group"));
    expect(changed({ author: BOB })).toEqual(mismatch("author"));
  });

  it("names a slice out of the log's order", () => {
    expect(judge((p) => ({ ...p, frozen: { ...p.frozen, turns: [...turns(p)].reverse() } }))).toEqual([
      { field: "frozen.turns", expected: "the log's order", found: null, detail: "frozen turns are not in the log's order" },
    ]);
  });
});

describe("auditChain: retired epochs", () => {
  it("lists retired epochs newest first by their newest boundary, ties by id", () => {
    const links = chain();
    const w = world(links, { currentEpochId: "e-current" });
    const moved = (i: number, epochId: string, createdAt: string) => ({ ...links[i]!.row, epochId, createdAt });
    const order = (rows: AuditBoundary[]) => auditChain({ conversationId: CONVERSATION, agentId: AGENT, currentEpochId: "e-current", boundaries: rows, plans: w.plans, packets: new Map(), runs: [], log: LOG }).epochs.map((e) => e.epochId);
    expect(order([moved(0, "e-b", "2026-01-01T00:01:00.000Z"), moved(1, "e-a", "2026-01-01T00:02:00.000Z"), moved(2, "e-b", "2026-01-01T00:00:00.000Z")])).toEqual(["e-current", "e-a", "e-b"]);
    expect(order([moved(0, "e-b", "2026-01-01T00:03:00.000Z"), moved(1, "e-a", "2026-01-01T00:02:00.000Z")])).toEqual(["e-current", "e-b", "e-a"]);
    expect(order([moved(0, "e-b", "2026-01-01T00:02:00.000Z"), moved(1, "e-a", "2026-01-01T00:02:00.000Z")])).toEqual(["e-current", "e-a", "e-b"]);
  });
});
