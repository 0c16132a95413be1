import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ChainAuditReport, LinkPage } from "../../src/core/chain-audit";
import { canonicalJson, hashCanonical } from "../../src/core/hash";
import { conversationStub } from "../../src/durable/stub";
import { register } from "../support/declarations";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";
import { insertPlan, settledChain, waitFor } from "../support/chain";
import { shardOf } from "../support/shards";

let agentCounter = 0;
const freshAgent = (): string => `chain-${Date.now().toString(36)}-${agentCounter++}`;

/**
 * Each message states a fact of its own (a guest, a room, a price): the offline compactor folds
 * restatements of one fact into its latest value, so a thread of one fact restated settles into a
 * one-line boundary, and how many compactions follow would depend on timing.
 */
const talk = (i: number): string =>
  `Message ${i}: about the offsite venue, ${i % 3 === 0 ? "Lisbon" : "Porto"} is preferred by guest ${i}, who books room ${100 + i} on a budget of ${1000 + i * 10} euros.`;

async function say(token: string, conversation: string, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const res = await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, talk(i)) });
    expect(res.status).toBe(201);
  }
}

async function setup() {
  const conversation = freshConversation();
  const agentId = freshAgent();
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800 })).status).toBe(201);
  return { conversation, agentId, token };
}

interface ListedBoundary {
  id: string;
  epochId: string;
  position: number;
  previous: { id: string; hash: string | null } | null;
  coveredThroughSeq: number;
  coveredThroughTurnId: string | null;
  runId: string;
  hash: string;
  createdAt: string;
  model: { provider: string; model: string } | null;
  preview: string | null;
  current: boolean;
}

interface ChainListing {
  conversationId: string;
  agentId: string;
  currentEpochId: string;
  boundaries: ListedBoundary[];
}

const chainPath = (conversation: string, agentId: string): string => `/v1/conversations/${encodeURIComponent(conversation)}/chain?agent=${encodeURIComponent(agentId)}`;
const verifyPath = (conversation: string, agentId: string): string => `/v1/conversations/${encodeURIComponent(conversation)}/verify?agent=${encodeURIComponent(agentId)}`;

async function verify(token: string, conversation: string, agentId: string): Promise<ChainAuditReport> {
  const res = await call("GET", verifyPath(conversation, agentId), { token });
  expect(res.status).toBe(200);
  return json<ChainAuditReport>(res);
}

const linksPath = (conversation: string, agentId: string, query: Record<string, string | number>): string =>
  `/v1/conversations/${encodeURIComponent(conversation)}/verify/links?${new URLSearchParams({ agent: agentId, ...Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])) })}`;

/**
 * Every epoch of the whole-chain audit, read again a page at a time at several page sizes: the
 * pages, each from its own rows, packets, receipts and slices of the log, must report every link
 * exactly as the whole-chain audit does, and each page's verdict must be its links'.
 */
async function expectPagesAgree(token: string, conversation: string, agentId: string, report: ChainAuditReport): Promise<void> {
  for (const epoch of report.epochs) {
    for (const limit of [1, 2, 50]) {
      const links: LinkPage["links"][number][] = [];
      let pages = 0;
      for (let after: number | null = 0; after !== null; pages++) {
        const res = await call("GET", linksPath(conversation, agentId, { epoch: epoch.epochId, after, limit }), { token });
        expect(res.status).toBe(200);
        const page = await json<LinkPage>(res);
        expect(page).toMatchObject({ conversationId: conversation, agentId, currentEpochId: report.currentEpochId, epochId: epoch.epochId, current: epoch.current });
        expect(page.links.length).toBeLessThanOrEqual(limit);
        expect(page.anchor).toEqual(epoch.anchor);
        expect(page.valid).toBe(page.anchor.ok && page.links.every((l) => l.valid));
        links.push(...page.links);
        after = page.nextAfter;
      }
      expect(links).toEqual(epoch.links);
      expect(pages).toBe(Math.max(1, Math.ceil(epoch.links.length / limit)));
    }
  }
}

function linkOf(report: ChainAuditReport, boundaryId: string) {
  const link = report.epochs.flatMap((e) => e.links).find((l) => l.boundaryId === boundaryId);
  if (link === undefined) throw new Error(`no link ${boundaryId} in the report`);
  return link;
}

const failing = (report: ChainAuditReport, boundaryId: string): string[] => linkOf(report, boundaryId).checks.filter((c) => !c.ok).map((c) => c.name);

describe("GET /v1/conversations/:conversation/chain, /verify and /verify/links", () => {
  it("lists a settled chain with previews only, verifies it, and stays valid after a later correction", async () => {
    const { conversation, agentId, token } = await setup();
    await say(token, conversation, 0, 30);
    const { chain } = await settledChain(conversation, agentId, 2);

    const res = await call("GET", chainPath(conversation, agentId), { token });
    expect(res.status).toBe(200);
    const raw = await res.text();
    const listing = JSON.parse(raw) as ChainListing;
    const epochId = chain[0]?.epochId;
    expect(listing.currentEpochId).toBe(epochId);
    expect(listing.boundaries.map((b) => [b.id, b.position, b.current])).toEqual(chain.map((b) => [b.body.id, b.position, true]));
    const [first, second] = listing.boundaries;
    expect(first?.previous).toBeNull();
    expect(second?.previous).toEqual({ id: first?.id, hash: first?.hash });
    expect(second?.coveredThroughTurnId).toBe(chain[1]?.body.coveredThrough.turnId);
    expect(second?.model).toEqual({ provider: "foldline-extractive", model: "foldline-extractive-1" });
    expect(second?.preview).toBe(chain[1]?.body.content.preview);
    // Previews only: no summary field, and no summary text beyond the preview's first line.
    for (const boundary of chain) {
      const summary = boundary.body.content.summary;
      expect(summary.length).toBeGreaterThan(boundary.body.content.preview.length);
      expect(raw).not.toContain(summary);
    }
    expect(raw).not.toContain('"summary"');

    const report = await verify(token, conversation, agentId);
    expect(report.valid).toBe(true);
    expect(report.currentEpochId).toBe(epochId);
    expect(report.epochs.map((e) => [e.epochId, e.current, e.valid])).toEqual([[epochId, true, true]]);
    const links = report.epochs[0]?.links ?? [];
    expect(links.map((l) => l.boundaryId)).toEqual(chain.map((b) => b.body.id));
    for (const link of links) expect(link.checks.filter((c) => !c.ok)).toEqual([]);
    const reportText = JSON.stringify(report);
    for (const boundary of chain) expect(reportText).not.toContain(boundary.body.content.preview);

    // An edit of a covered message later in the log is an amendment, not an invalid boundary.
    const correction = { kind: "correction", idempotencyKey: "edit-1", body: { action: "edit", targetMessageId: "1", text: "Message 1: the venue is Faro after all." } };
    expect((await call("POST", eventsPath(conversation), { token, body: correction })).status).toBe(201);
    expect((await verify(token, conversation, agentId)).valid).toBe(true);
    // The next boundary, planned after the correction, freezes the log as it then stood and verifies too.
    await say(token, conversation, 30, 45);
    const { chain: longer } = await settledChain(conversation, agentId, chain.length + 1);
    const after = await verify(token, conversation, agentId);
    expect(after.epochs[0]?.links.map((l) => [l.boundaryId, l.valid])).toEqual(longer.map((b) => [b.body.id, true]));
    expect(after.valid).toBe(true);
    await expectPagesAgree(token, conversation, agentId, after);
    // …including the amendment one of them absorbed, which its hash binds (and the audit rebuilt).
    expect(longer.slice(chain.length).some((b) => b.body.input.amendmentsHash !== hashCanonical([]))).toBe(true);
  });

  it("audits a page from its own slices of the log, with what they need from before them", async () => {
    const { conversation, agentId, token } = await setup();
    // An edit logged before the message it edits: the slice that freezes the message starts past
    // the edit, so the page's reader must find it through the related-events lookup.
    const early = { kind: "correction", idempotencyKey: "early-edit", body: { action: "edit", targetMessageId: "30", text: "Message 30: edited before it arrived." } };
    expect((await call("POST", eventsPath(conversation), { token, body: early })).status).toBe(201);
    await say(token, conversation, 0, 60);
    const { chain } = await settledChain(conversation, agentId, 3);
    const { events } = await json<{ events: { seq: number; kind: string; body: { messageId?: string } }[] }>(
      await call("GET", `${eventsPath(conversation)}?limit=500`, { token }),
    );
    const edited = events.find((e) => e.kind === "source" && e.body.messageId === "30")?.seq ?? 0;
    expect(chain[0]?.coveredThroughSeq).toBeLessThan(edited);
    expect(chain.at(-1)?.coveredThroughSeq).toBeGreaterThanOrEqual(edited);
    await expectPagesAgree(token, conversation, agentId, await verify(token, conversation, agentId));
  });

  it("reports an overwritten R2 packet as packet_hash failing on that link only", async () => {
    const { conversation, agentId, token } = await setup();
    await say(token, conversation, 0, 30);
    const { chain } = await settledChain(conversation, agentId, 2);
    const [first, second] = chain;
    if (first === undefined || second === undefined) throw new Error("expected two boundaries");
    const original = await (await env.DOCUMENTS.get(second.body.packet.key))?.text();
    expect(original).toBeDefined();
    await env.DOCUMENTS.put(second.body.packet.key, (original ?? "").replace("Message", "Massage"));

    const report = await verify(token, conversation, agentId);
    expect(report.valid).toBe(false);
    expect(report.epochs[0]?.valid).toBe(false);
    const tampered = linkOf(report, second.body.id);
    expect(tampered.valid).toBe(false);
    expect(tampered.checks.find((c) => c.name === "packet_hash")).toEqual({ name: "packet_hash", ok: false, detail: `packet ${second.body.packet.key}: hash_mismatch` });
    // The stored boundary itself is intact; what no longer holds is everything read from the packet.
    expect(failing(report, second.body.id)).toEqual(["packet_hash", "packet_binding", "frozen_turns_match_log"]);
    expect(linkOf(report, first.body.id).valid).toBe(true);
    await expectPagesAgree(token, conversation, agentId, report);
  });

  it("reports a hand-forged successor with its own plan: wrong hash, foreign packet, no completed run", async () => {
    const { conversation, agentId, token } = await setup();
    await say(token, conversation, 0, 30);
    const { chain } = await settledChain(conversation, agentId, 2);
    const head = chain.at(-1);
    if (head === undefined) throw new Error("no head");
    // Ids of this test's own: the files of a workerd share its databases, and other files forge rows too.
    const forgedRun = `cmp_${crypto.randomUUID()}`;
    const forgedId = `bnd_forged_${forgedRun.slice(4, 12)}`;
    await insertPlan(conversation, agentId, head.epochId, forgedRun, head.body.id);
    const forgedBody = { ...head.body, content: { ...head.body.content, summary: "Everyone agreed to double the budget." } };
    await (await shardOf(conversation)).prepare(
      `INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
      .bind(forgedId, conversation, agentId, head.epochId, head.position + 1, head.body.id, head.hash, head.coveredThroughSeq + 1, forgedRun, canonicalJson(forgedBody), head.hash, new Date().toISOString())
      .run();

    const listing = await json<ChainListing>(await call("GET", chainPath(conversation, agentId), { token }));
    expect(listing.boundaries.at(-1)?.id).toBe(forgedId);

    const report = await verify(token, conversation, agentId);
    expect(report.valid).toBe(false);
    const forged = linkOf(report, forgedId);
    expect(forged.valid).toBe(false);
    expect(failing(report, forgedId)).toEqual(expect.arrayContaining(["body_hash", "plan", "completed_run"]));
    expect(forged.checks.find((c) => c.name === "completed_run")?.detail).toBe(`no completed run event for ${forgedRun}`);
    expect(forged.checks.find((c) => c.name === "plan")?.detail).toMatch(/the plan's packet is packets\/forged\//);
    // The genuine links keep verifying: the forgery is reported where it is, not smeared over the chain.
    for (const boundary of chain) expect(linkOf(report, boundary.body.id).valid).toBe(true);
    expect(JSON.stringify(report)).not.toContain("double the budget");
    await expectPagesAgree(token, conversation, agentId, report);
  });

  it("lists a retired epoch's boundaries as not current beside the new epoch's", async () => {
    const { conversation, agentId, token } = await setup();
    await say(token, conversation, 0, 20);
    const { chain: oldChain } = await settledChain(conversation, agentId, 1);
    const oldEpoch = oldChain[0]?.epochId;
    const changed = await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, prompt: "Summarize tersely, as a projection." });
    expect(changed.status).toBe(201);
    const newEpoch = (await json<{ epoch: { id: string } }>(changed)).epoch.id;
    expect(newEpoch).not.toBe(oldEpoch);
    await say(token, conversation, 20, 40);
    const stub = conversationStub(env, conversation);
    await waitFor(async () => {
      const s = await stub.describeChain(conversation, agentId);
      return s !== undefined && s.epochId === newEpoch && s.headId !== null && s.openRunId === null ? s : undefined;
    }, "a boundary in the new epoch");

    const listing = await json<ChainListing>(await call("GET", chainPath(conversation, agentId), { token }));
    expect(listing.currentEpochId).toBe(newEpoch);
    const old = listing.boundaries.filter((b) => b.epochId === oldEpoch);
    const fresh = listing.boundaries.filter((b) => b.epochId === newEpoch);
    expect(old.length).toBe(oldChain.length);
    expect(old.every((b) => !b.current)).toBe(true);
    expect(fresh.length).toBeGreaterThanOrEqual(1);
    expect(fresh.every((b) => b.current)).toBe(true);
    expect(fresh[0]?.previous).toBeNull();

    const report = await verify(token, conversation, agentId);
    expect(report.epochs.map((e) => [e.epochId, e.current])).toEqual([
      [newEpoch, true],
      [oldEpoch, false],
    ]);
    expect(report.epochs[1]?.links.every((l) => !l.current)).toBe(true);
    expect(report.valid).toBe(true);
    await expectPagesAgree(token, conversation, agentId, report);
    // Without `epoch`, the pages are the current epoch's.
    const current = await json<LinkPage>(await call("GET", linksPath(conversation, agentId, {}), { token }));
    expect(current.epochId).toBe(newEpoch);
    expect(current.links.map((l) => l.boundaryId)).toEqual(fresh.map((b) => b.id).slice(0, 10));
  });

  it("authorizes by conversation scope and validates the agent", async () => {
    const { conversation, agentId, token } = await setup();
    const other = await tokenFor(freshConversation(), `agent:${agentId}`);
    for (const path of [chainPath(conversation, agentId), verifyPath(conversation, agentId), linksPath(conversation, agentId, {})]) {
      const res = await call("GET", path, { token: other });
      expect(res.status).toBe(403);
      expect((await json<ErrorBody>(res)).error.code).toBe("forbidden");
    }
    const unknown = await call("GET", verifyPath(conversation, freshAgent()), { token });
    expect(unknown.status).toBe(404);
    expect((await json<ErrorBody>(unknown)).error.code).toBe("not_found");
    expect((await call("GET", chainPath(conversation, freshAgent()), { token })).status).toBe(404);
    const invalid = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/chain?agent=${encodeURIComponent("no spaces")}`, { token });
    expect(invalid.status).toBe(400);
    expect((await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/verify`, { token })).status).toBe(400);
    expect((await call("GET", chainPath(conversation, agentId))).status).toBe(401);
    // A declared agent with no boundaries yet: an empty, valid current epoch.
    const empty = await verify(token, conversation, agentId);
    expect(empty.valid).toBe(true);
    expect(empty.epochs.map((e) => e.links.length)).toEqual([0]);
    await expectPagesAgree(token, conversation, agentId, empty);
    expect((await call("GET", linksPath(conversation, freshAgent(), {}), { token })).status).toBe(404);
    for (const bad of [{ limit: 0 }, { limit: 51 }, { after: -1 }, { after: "x" }, { epoch: "" }]) {
      const res = await call("GET", linksPath(conversation, agentId, bad), { token });
      expect(res.status).toBe(400);
      expect((await json<ErrorBody>(res)).error.code).toBe("validation_failed");
    }
    // An epoch this agent never had: no links, not an error.
    expect(await json<LinkPage>(await call("GET", linksPath(conversation, agentId, { epoch: "foldline-compactor/0:none" }), { token }))).toMatchObject({ links: [], valid: true, nextAfter: null });
  });
});
