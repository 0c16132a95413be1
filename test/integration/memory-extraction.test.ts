import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, inject, it } from "vitest";
import type { ExtractJob } from "../../src/core/jobs";
import { conversationStub } from "../../src/durable/stub";
import type { ScriptStep } from "../fake-openai/server";
import { waitFor } from "../support/chain";
import { register } from "../support/declarations";
import { extractionRuns, extractedThrough, fillUntilCovered, say } from "../support/extraction";
import { inspectorPage } from "../support/inspector";
import { deliver } from "../support/queue";
import { readChainBoundaries, readIncidents } from "../support/reads";
import { memorySourcesCount, shardOf } from "../support/shards";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, freshConversation, json, logRows, tokenFor } from "./helpers";

/**
 * Memory extraction: after each boundary settles, the durable facts of its frozen slice are merged
 * into the conversation's pages under `extracted/` for the agent, with provenance, on the
 * conversation's shard, and read through the conversation. The offline extractor runs on the
 * default profile (no key bound); the model path runs on the profile "fakex", this file's own
 * session of the loopback fake model, where the extractor's replies are scripted.
 */

const origin = `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/memory-extraction`;
const EXTRACTOR = "You are the memory extractor";

async function script(steps: readonly ScriptStep[]): Promise<void> {
  expect((await fetch(`${origin}/__script`, { method: "POST", body: JSON.stringify(steps) })).status).toBe(204);
}

beforeEach(async () => {
  await fetch(`${origin}/__reset`, { method: "POST" });
});

let counter = 0;
async function setup(profile = "default") {
  const conversation = freshConversation();
  const agentId = `extract-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, profile })).status).toBe(201);
  return { conversation, agentId, token };
}

interface PageView {
  version: number;
  content: string;
  facts?: { key: string; sources: { conversationId: string; messageId: string; seq: number; eventHash: string; runId: string; version: number }[] }[];
}
/** An extracted page of the conversation, read through it. */
async function page(token: string, conversation: string, agentId: string, path: string, query = "provenance=1"): Promise<Response> {
  return call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/memory/pages/${path}?agent=${agentId}&${query}`, { token });
}

/** The conversation's extracted pages for the agent. */
async function listed(token: string, conversation: string, agentId: string): Promise<{ path: string }[]> {
  return (await json<{ pages: { path: string }[] }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/memory/pages?agent=${agentId}`, { token }))).pages;
}

const OFFSITE = "extracted/plans/offsite-date";

describe("memory extraction after settlement", () => {
  it("writes the slice's facts into extracted pages, with the source messages' ids, seqs and event hashes", async () => {
    const { conversation, agentId, token } = await setup();
    const seq = await say(token, conversation, "m-date", "The offsite date is March 3.");
    const { boundary, run } = await extractedThrough(token, conversation, agentId, seq);
    expect(run).toMatchObject({ run_id: boundary.body.run.id.replace(/^cmp_/, "ext_"), provider: "foldline-extractive" });
    expect(run.versions_written).toBeGreaterThan(0);

    const response = await page(token, conversation, agentId, OFFSITE);
    expect(response.status).toBe(200);
    const view = await json<PageView>(response);
    expect(view.content).toContain("@u1 (Ada): The offsite date is March 3.");
    const event = (await logRows(conversation)).find((row) => row.seq === seq);
    expect(view.facts).toEqual([{ key: "offsite-date", sources: [{ conversationId: conversation, messageId: "m-date", seq, eventHash: event?.hash, runId: run.run_id, version: 1 }] }]);

    // Every page extraction wrote is under extracted/, kept with the conversation; the person who spoke has one.
    const pages = await listed(token, conversation, agentId);
    expect(pages.map((p) => p.path)).toContain("extracted/people/u1");
    expect(pages.every((p) => p.path.startsWith("extracted/"))).toBe(true);
    // The agent's own pages are the ones people write: extraction wrote none there.
    expect((await json<{ pages: unknown[] }>(await call("GET", `/v1/agents/${agentId}/memory`, { token }))).pages).toEqual([]);
  });

  it("merges a later boundary's update of a fact: two versions, the latest value current, the earlier kept", async () => {
    const { conversation, agentId, token } = await setup();
    const first = await say(token, conversation, "m-date", "The offsite date is March 3.");
    const { boundary: one } = await extractedThrough(token, conversation, agentId, first);
    const second = await say(token, conversation, "m-move", "Update: the offsite date moved to March 10.");
    const { boundary: covering, run } = await extractedThrough(token, conversation, agentId, second);
    expect(covering.body.id).not.toBe(one.body.id);

    const now = await json<PageView>(await page(token, conversation, agentId, OFFSITE));
    expect(now.version).toBe(2);
    expect(now.content).toMatch(/- offsite-date: .*March 10\./);
    expect(now.content).toMatch(/previously: .*March 3\./);
    const log = await logRows(conversation);
    expect(now.facts).toEqual([{ key: "offsite-date", sources: [{ conversationId: conversation, messageId: "m-move", seq: second, eventHash: log.find((r) => r.seq === second)?.hash, runId: run.run_id, version: 2 }] }]);

    // The earlier version is still readable, with its own sources.
    const before = await json<PageView>(await page(token, conversation, agentId, OFFSITE, "version=1&provenance=1"));
    expect(before.content).toContain("March 3");
    expect(before.content).not.toContain("March 10");
    expect(before.facts?.[0]?.sources.map((s) => [s.messageId, s.seq])).toEqual([["m-date", first]]);
  });

  it("writes no second version when the same extraction job is delivered again", async () => {
    const { conversation, agentId, token } = await setup();
    const seq = await say(token, conversation, "m-budget", "The budget is 2000 euros.");
    const { boundary } = await extractedThrough(token, conversation, agentId, seq);
    const shard = await shardOf(conversation);
    const versions = () => shard.prepare("SELECT COUNT(*) AS n FROM conversation_memory_versions WHERE conversation_id = ? AND agent_id = ?").bind(conversation, agentId).first<{ n: number }>();
    const sources = () => memorySourcesCount(shard, conversation, agentId).first<{ n: number }>();
    const [beforeVersions, beforeSources] = [await versions(), await sources()];

    const job: ExtractJob = { type: "extract", conversationId: conversation, agentId, compactorId: `${agentId}.compactor`, runId: boundary.body.run.id, boundaryId: boundary.body.id, model: "test-model", profile: "default" };
    const result = await deliver("foldline-compaction", [job, job]);
    expect(result.explicitAcks.sort()).toEqual(["msg-0", "msg-1"]);
    expect(result.retryMessages).toEqual([]);
    expect(await versions()).toEqual(beforeVersions);
    expect(await sources()).toEqual(beforeSources);
    expect((await extractionRuns(conversation)).filter((r) => r.boundary_id === boundary.body.id)).toHaveLength(1);

    // A job that merged and then failed before recording its run (simulated: the record removed)
    // runs again, and merging the same facts again writes nothing.
    const runId = boundary.body.run.id.replace(/^cmp_/, "ext_");
    await shard.prepare("DELETE FROM extraction_runs WHERE run_id = ?").bind(runId).run();
    expect((await deliver("foldline-compaction", [job])).explicitAcks).toEqual(["msg-0"]);
    expect(await versions()).toEqual(beforeVersions);
    expect(await sources()).toEqual(beforeSources);
    expect((await extractionRuns(conversation)).filter((r) => r.run_id === runId)).toMatchObject([{ versions_written: 0 }]);
  });

  it("refuses a person's write or read under extracted/ with a typed error, and changes nothing", async () => {
    const { conversation, agentId, token } = await setup();
    const response = await call("PUT", `/v1/agents/${agentId}/memory/extracted/plans/forged`, { token, body: { content: "The offsite is cancelled." } });
    expect(response.status).toBe(403);
    expect((await json<ErrorBody>(response)).error.code).toBe("forbidden");
    expect((await page(token, conversation, agentId, "extracted/plans/forged", "")).status).toBe(404);
    // Extracted facts are read with their conversation, never through the agent's pages.
    for (const method of ["GET", "DELETE"] as const) {
      const refused = await call(method, `/v1/agents/${agentId}/memory/extracted/plans/forged`, { token });
      expect(refused.status).toBe(403);
      expect((await json<ErrorBody>(refused)).error.code).toBe("forbidden");
    }
    // Outside the namespace a person's page is written as before, and never gets extracted facts.
    expect((await call("PUT", `/v1/agents/${agentId}/memory/plans/offsite`, { token, body: { content: "Offsite: Lisbon." } })).status).toBe(201);
    expect((await json<PageView>(await call("GET", `/v1/agents/${agentId}/memory/plans/offsite?provenance=1`, { token }))).facts).toEqual([]);
  });
});

describe("extracted pages in recall", () => {
  it("serves each conversation its own facts: search names their messages, compose never brings a sibling conversation's value", async () => {
    const tenant = freshConversation();
    const [here, there] = [`${tenant}:here`, `${tenant}:there`];
    const agentId = `extract-${Date.now().toString(36)}-${counter++}`;
    const token = await tokenFor(`${tenant}:*`, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [`${tenant}:*`], trigger: 2_000, retain: 800 })).status).toBe(201);
    // The same fact is said in each conversation: each keeps its own page, with its own value.
    const first = await say(token, here, "m-here", "The offsite date is March 3.");
    await extractedThrough(token, here, agentId, first);
    const second = await say(token, there, "m-there", "Update: the offsite date moved to March 10.");
    await extractedThrough(token, there, agentId, second);

    const search = (conversation: string) =>
      call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/memory/search?agent=${agentId}&q=${encodeURIComponent("offsite date")}`, { token });
    type Found = { results: { type: string; path?: string; content: string; sources: { messageId: string; seq: number }[] }[] };
    // Each conversation's search names its own message (the turn that said it: the entry taken
    // from it is left to it), and says nothing of the sibling's value.
    const inThere = (await json<Found>(await search(there))).results;
    expect(inThere.find((r) => r.content.includes("March 10"))?.sources).toEqual([{ messageId: "m-there", seq: second }]);
    expect(inThere.some((r) => r.content.includes("March 3"))).toBe(false);
    const inHere = (await json<Found>(await search(here))).results;
    expect(inHere.find((r) => r.content.includes("March 3"))?.sources).toEqual([{ messageId: "m-here", seq: first }]);
    expect(inHere.some((r) => r.content.includes("March 10"))).toBe(false);
    // The page itself is the conversation's, with its own value.
    const page = await json<{ content: string }>(await call("GET", `/v1/conversations/${encodeURIComponent(here)}/memory/pages/${OFFSITE}?agent=${agentId}`, { token }));
    expect(page.content).toContain("March 3");
    expect(page.content).not.toContain("March 10");

    // Asked about the date here, the agent is served what was said here (in its history, or
    // recalled as untrusted history), never the value said in the sibling conversation.
    const composed = await json<{ request: { messages: { role: string; content: string }[] } }>(
      await call("POST", `/v1/conversations/${encodeURIComponent(here)}/compose`, { token, body: { agent: agentId, prompt: { text: "When is the offsite?" } } }),
    );
    expect(composed.request.messages.filter((m) => m.content.includes("March 3")).map((m) => m.role)).toContain("user");
    expect(composed.request.messages.some((m) => m.content.includes("March 10"))).toBe(false);
  });
});

describe("the inspector's extracted memory", () => {
  it("shows the conversation's extracted facts with the messages they came from", async () => {
    const { conversation, agentId, token } = await setup();
    const seq = await say(token, conversation, "m-date", "The offsite date is March 3.");
    await extractedThrough(token, conversation, agentId, seq);

    const html = await inspectorPage(token, `/inspector/conversations/${encodeURIComponent(conversation)}?agent=${agentId}`);
    const row = /<tr data-testid="extracted-fact" data-path="extracted\/plans\/offsite-date" data-key="offsite-date">([\s\S]*?)<\/tr>/.exec(html)?.[1] ?? "";
    expect(row).toContain("The offsite date is March 3.");
    expect(row).toContain(`data-testid="fact-source" data-seq="${seq}" data-message="m-date"`);
  });
});

describe("memory extraction through the compactor's model", () => {
  it("writes the model's facts with the sources it cited", async () => {
    const { conversation, agentId, token } = await setup("fakex");
    const seq = await say(token, conversation, "m-venue", "Ada: we booked the Quinta in Sintra as the venue.");
    const facts = { facts: [{ kind: "decisions", subject: "Offsite venue", key: "venue", statement: "Ada booked the Quinta in Sintra as the offsite venue.", messageIds: ["m-venue"] }] };
    await script([{ content: JSON.stringify(facts), whenSystemIncludes: EXTRACTOR }]);
    const { run } = await extractedThrough(token, conversation, agentId, seq);
    expect(run.provider).toBe("openai-compatible");

    const view = await json<PageView>(await page(token, conversation, agentId, "extracted/decisions/offsite-venue"));
    expect(view.content).toContain("Ada booked the Quinta in Sintra as the offsite venue.");
    expect(view.facts?.[0]?.sources.map((s) => [s.messageId, s.seq])).toEqual([["m-venue", seq]]);
    // The request repeated the compactor's request for the slice, the slice fenced as data in it,
    // then gave the extractor's own instructions last, held to its schema.
    const requests = (await (await fetch(`${origin}/__requests`)).json()) as { body: { messages: { role: string; content: string }[]; response_format?: { json_schema?: { name?: string } } } }[];
    const extraction = requests.find((r) => r.body.messages.at(-1)?.content.startsWith(EXTRACTOR));
    expect(extraction?.body.response_format?.json_schema?.name).toBe("extracted_facts");
    expect(extraction?.body.messages.map((m) => m.role)).toEqual(["system", "user", "system"]);
    const compaction = requests.find((r) => r.body.messages.length === 2 && r.body.messages[1]?.content === extraction?.body.messages[1]?.content);
    expect(compaction?.body.messages).toEqual(extraction?.body.messages.slice(0, 2));
    expect(extraction?.body.messages[1]?.content).toMatch(/<slice>\n\[m-venue\] @\S+ \(user\): Ada: we booked the Quinta in Sintra as the venue\./);
  });

  it("writes 400 facts on 400 pages in one extraction within one invocation's D1 queries (the limits are enforced: test/limits-check.ts)", { timeout: 120_000 }, async () => {
    const { conversation, agentId, token } = await setup("fakex");
    const seq = await say(token, conversation, "m-many", "Ada: here is the list of every vendor we spoke to this year.");
    const facts = { facts: Array.from({ length: 400 }, (_, i) => ({ kind: "people", subject: `vendor ${i}`, key: "contact", statement: `Vendor ${i} was contacted by Ada.`, messageIds: ["m-many"] })) };
    await script([{ content: JSON.stringify(facts), whenSystemIncludes: EXTRACTOR }]);
    const { run } = await extractedThrough(token, conversation, agentId, seq);
    expect(run.provider).toBe("openai-compatible");
    const pages: { path: string }[] = [];
    for (let after = ""; ; ) {
      const body = await json<{ pages: { path: string }[] }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/memory/pages?agent=${agentId}&limit=500&after=${encodeURIComponent(after)}`, { token }));
      pages.push(...body.pages);
      if (body.pages.length < 500) break;
      after = body.pages.at(-1)?.path ?? after;
    }
    expect(pages.filter((p) => p.path.startsWith("extracted/people/vendor-"))).toHaveLength(400);
  });

  it("pays no second model call for a run already recorded, however often its job is delivered again", async () => {
    const { conversation, agentId, token } = await setup("fakex");
    const seq = await say(token, conversation, "m-venue", "Ada: we booked the Quinta in Sintra as the venue.");
    const facts = { facts: [{ kind: "decisions", subject: "Offsite venue", key: "venue", statement: "Ada booked the Quinta in Sintra as the offsite venue.", messageIds: ["m-venue"] }] };
    await script([{ content: JSON.stringify(facts), whenSystemIncludes: EXTRACTOR }]);
    const { boundary, run } = await extractedThrough(token, conversation, agentId, seq);
    expect(run.provider).toBe("openai-compatible");
    // The model calls that extracted this boundary's slice (a later boundary's slice holds other messages).
    const extractorCalls = async () =>
      ((await (await fetch(`${origin}/__requests`)).json()) as { body: { messages: { content: string }[] } }[]).filter(
        (r) => r.body.messages.at(-1)?.content.startsWith(EXTRACTOR) === true && r.body.messages[1]?.content.includes("[m-venue]") === true,
      ).length;
    const before = await extractorCalls();
    expect(before).toBe(1);

    const job: ExtractJob = { type: "extract", conversationId: conversation, agentId, compactorId: `${agentId}.compactor`, runId: boundary.body.run.id, boundaryId: boundary.body.id, model: "test-model", profile: "fakex" };
    const result = await deliver("foldline-compaction", [job, job], { attempts: 2 });
    expect(result.explicitAcks.sort()).toEqual(["msg-0", "msg-1"]);
    expect(result.retryMessages).toEqual([]);
    expect(await extractorCalls()).toBe(before);
    expect((await extractionRuns(conversation)).filter((r) => r.boundary_id === boundary.body.id)).toHaveLength(1);
  });

  it("keeps a failed extraction private (no page, a failed run and an incident) and never blocks compaction", async () => {
    const { conversation, agentId, token } = await setup("fakex");
    // Every extraction attempt gets a reply that is not JSON; the compactor's requests skip these steps.
    await script(Array.from({ length: 40 }, () => ({ content: "Here are the facts you asked for!", whenSystemIncludes: EXTRACTOR })));
    const seq = await say(token, conversation, "m-date", "The offsite date is March 3.");
    const [one] = await fillUntilCovered(token, conversation, agentId, seq);
    if (one === undefined) throw new Error("no boundary");
    const runId = one.body.run.id.replace(/^cmp_/, "ext_");

    const incident = await waitFor(async () => (await readIncidents(await shardOf(conversation), conversation, 100)).find((i) => i.kind === "extraction_failure"), "an extraction incident");
    expect(incident).toMatchObject({ agentId, runId, code: "output_not_json" });
    const failedRun = await waitFor(async () => {
      const events = await json<{ events: { kind: string; body: { runId?: string; status?: string; role?: string; error?: { code: string }; detail?: Record<string, unknown> } }[] }>(await call("GET", `${eventsPath(conversation)}?limit=500`, { token }));
      return events.events.find((e) => e.kind === "run" && e.body.runId === runId);
    }, "the failed extraction run");
    expect(failedRun.body).toMatchObject({ role: "compactor", status: "failed", error: { code: "output_not_json" }, detail: { process: "extraction", boundaryId: one.body.id } });

    // The chain keeps settling past the failing extraction.
    const again = await say(token, conversation, "m-more", "Another ordinary line to push the window further along.");
    const chain = await fillUntilCovered(token, conversation, agentId, again);
    expect(chain.length).toBeGreaterThanOrEqual(2);
    expect((await readChainBoundaries(await shardOf(conversation), conversation, agentId)).length).toBe(chain.length);
    expect((await conversationStub(env, conversation).describeChain(conversation, agentId))?.headId).toBe(chain.at(-1)?.body.id);

    // Nothing was written: no page, no provenance, no completed extraction.
    expect(await listed(token, conversation, agentId)).toEqual([]);
    expect(await extractionRuns(conversation)).toEqual([]);
    const incidents = await readIncidents(await shardOf(conversation), conversation, 100);
    expect(incidents.filter((i) => i.kind === "compactor_failure" || i.kind === "compactor_abandoned")).toEqual([]);
  });
});
