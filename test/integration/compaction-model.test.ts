import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, inject, it } from "vitest";
import { conversationStub } from "../../src/durable/stub";
import { readChainBoundaries, readIncidents } from "../support/reads";
import { expectCounterpartTextPrivate } from "../support/incident-views";
import { shardOf } from "../support/shards";
import type { ScriptStep } from "../fake-openai/server";
import { register } from "../support/declarations";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";
import { settledChain } from "../support/chain";

/**
 * The compactor through a real model path: declarations on the provider profile "fakecm" reach the
 * loopback OpenAI-compatible server (test/fake-openai) with a key, through the `openai` SDK, from the
 * real queue consumer. It scripts its own session of the fake, so other files may run beside it.
 */

/** This file's own session of the fake model, reached through the provider profile "fakecm". */
const origin = `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/compaction-model`;

async function script(steps: readonly ScriptStep[]): Promise<void> {
  expect((await fetch(`${origin}/__script`, { method: "POST", body: JSON.stringify(steps) })).status).toBe(204);
}

interface Recorded {
  readonly body: { model?: string; messages?: { role: string; content: string }[]; tools?: unknown; temperature?: number; response_format?: unknown };
}
async function requests(): Promise<Recorded[]> {
  return (await (await fetch(`${origin}/__requests`)).json()) as Recorded[];
}

beforeEach(async () => {
  await fetch(`${origin}/__reset`, { method: "POST" });
});

let counter = 0;
async function setup(outputMode: "projection" | "plain") {
  const conversation = freshConversation();
  const agentId = `model-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, outputMode, model: "gpt-requested", profile: "fakecm" })).status).toBe(201);
  return { conversation, agentId, token };
}

async function sayUntilPlanned(token: string, conversation: string): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const text = `Message ${i}: the team compares Lisbon and Porto for the offsite; Ada wants flights under ${200 + i} euros and a venue with a garden.`;
    expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, text) })).status).toBe(201);
  }
}

interface RunEvent {
  kind: string;
  body: { runId: string; agentId: string; role: string; status: string; model?: string; usage?: unknown; error?: { code: string } };
}
async function runs(token: string, conversation: string): Promise<RunEvent[]> {
  const page = await json<{ events: RunEvent[] }>(await call("GET", `${eventsPath(conversation)}?limit=500`, { token }));
  return page.events.filter((e) => e.kind === "run");
}

const idle = async (conversation: string, agentId: string, boundaries: number) => (await settledChain(conversation, agentId, boundaries)).chain;

describe("the compactor through an OpenAI-compatible endpoint", () => {
  it("runs as its own consumer, wraps plain text, and records the provider's model and usage", async () => {
    const { conversation, agentId, token } = await setup("plain");
    const summary = "Ada and the team compared Lisbon and Porto for the offsite.\nFlights must stay under about 200 euros.";
    await script([{ content: summary, usage: { prompt_tokens: 912, completion_tokens: 41 }, model: "gpt-reported-2026-11", id: "chatcmpl-e2e" }]);
    await sayUntilPlanned(token, conversation);
    const [boundary] = await idle(conversation, agentId, 1);

    expect(boundary?.body.model).toMatchObject({
      provider: "openai-compatible",
      model: "gpt-reported-2026-11",
      responseId: "chatcmpl-e2e",
      usage: { inputTokens: 912, outputTokens: 41 },
    });
    // The parent wraps plain text: summary verbatim, preview derived, empty auxiliary lists.
    expect(boundary?.body.content).toMatchObject({
      mode: "plain",
      summary,
      preview: "Ada and the team compared Lisbon and Porto for the offsite.",
      salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] },
    });
    const [first] = await requests();
    expect(first?.body.model).toBe("gpt-requested");
    expect(first?.body.tools).toBeUndefined();
    expect(first?.body.messages?.map((m) => m.role)).toEqual(["system", "user"]);

    const completed = (await runs(token, conversation)).filter((r) => r.body.status === "completed");
    expect(completed).toHaveLength(1);
    expect(completed[0]?.body).toMatchObject({ agentId: `${agentId}.compactor`, role: "compactor", model: "gpt-reported-2026-11", usage: { inputTokens: 912, outputTokens: 41 } });
  });

  it("keeps what the provider said (an error echoing the chat, a refusal quoting it) out of the operator's fleet view", async () => {
    const { conversation, agentId, token } = await setup("projection");
    const marker = `MARK${crypto.randomUUID().replaceAll("-", "")}`;
    await script([{ status: 400, errorMessage: `content flagged in: wire the money to ${marker}` }, { content: `I'm sorry, I cannot summarize "${marker}".` }]);
    await sayUntilPlanned(token, conversation);
    await idle(conversation, agentId, 1);
    const own = await expectCounterpartTextPrivate(conversation, token, `${agentId}`, marker);
    const failures = own.filter((i) => i.kind === "compactor_failure");
    expect(failures.map((i) => i.message)).toEqual(["attempt 1: model_rejected", "attempt 2: output_refusal"]);
    expect(failures[0]?.detail).toContain(marker);
  });

  it("turns 429, 500 and invalid output into private failed runs, retries the same packet, then settles", async () => {
    const { conversation, agentId, token } = await setup("projection");
    await script([{ status: 429, retryAfter: 0 }, { status: 500 }, { content: "Sure! Here is a summary of the chat." }, { content: '{"summary":"x"', finishReason: "length" }]);
    await sayUntilPlanned(token, conversation);
    const [boundary] = await idle(conversation, agentId, 1);

    const failed = (await runs(token, conversation)).filter((r) => r.body.status === "failed");
    expect(failed.map((r) => r.body.error?.code)).toEqual(["model_rate_limited", "model_server_error", "output_invalid_json", "output_truncated_output"]);
    expect(new Set(failed.map((r) => r.body.runId))).toEqual(new Set([boundary?.runId]));
    expect(failed.every((r) => r.body.role === "compactor" && r.body.agentId === `${agentId}.compactor`)).toBe(true);
    const incidents = await readIncidents(await shardOf(conversation), conversation, 20);
    expect(incidents.filter((i) => i.kind === "compactor_failure")).toHaveLength(4);
    // Every attempt read the same packet: the same two messages each time. After a transport
    // failure the request is repeated as it was; after an unusable reply the retry shows the model
    // that reply and says what was wrong with it, instead of asking the identical question again.
    const sent = (await requests()).map((r) => r.body.messages ?? []);
    expect(sent).toHaveLength(5);
    expect(new Set(sent.map((m) => JSON.stringify(m.slice(0, 2)))).size).toBe(1);
    expect(sent.slice(0, 3).map((m) => m.length)).toEqual([2, 2, 2]);
    expect(sent[3]?.slice(2)).toEqual([
      { role: "assistant", content: "Sure! Here is a summary of the chat." },
      { role: "user", content: expect.stringContaining("not a single JSON object") },
    ]);
    expect(sent[4]?.slice(2)).toEqual([
      { role: "assistant", content: '{"summary":"x"' },
      { role: "user", content: expect.stringContaining("output token limit") },
    ]);
  });

  it("settles a reply whose provider reported no token usage, its receipt saying so (usage null), with no failed run, and serves it", async () => {
    const { conversation, agentId, token } = await setup("plain");
    const noUsage = {
      id: "chatcmpl-no-usage",
      object: "chat.completion",
      created: 1_800_000_000,
      model: "gpt-reported",
      choices: [{ index: 0, message: { role: "assistant", content: "Ada compared Lisbon and Porto.", refusal: null }, finish_reason: "stop", logprobs: null }],
    };
    await script([{ rawBody: JSON.stringify(noUsage) }]);
    await sayUntilPlanned(token, conversation);
    const [boundary] = await idle(conversation, agentId, 1);

    expect((await runs(token, conversation)).filter((r) => r.body.status === "failed")).toEqual([]);
    expect(boundary?.body.model).toMatchObject({ provider: "openai-compatible", model: "gpt-reported", responseId: "chatcmpl-no-usage", usage: null });
    // The settled head is served: a receipt without usage passes the resolver's evidence check.
    const context = await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${agentId}`, { token });
    expect(context.status).toBe(200);
  });

  it("settles a fenced reply that points at a page recall did not find, dropping a pointer to no page, with no failed run", async () => {
    const { conversation, agentId, token } = await setup("projection");
    expect((await call("PUT", `/v1/agents/${agentId}/memory/people/carla.md`, { token, body: { content: "Carla approves every expense claim." } })).status).toBe(201);
    const reply = {
      summary: "The team weighs Lisbon against Porto; flights stay under 200 euros.",
      salientFacts: { memoryRefs: [{ path: "people/carla.md", note: "approves the flights" }, { path: "people/nobody.md", note: "invented" }] },
    };
    await script([{ content: "```json\n" + JSON.stringify(reply) + "\n```" }]);
    await sayUntilPlanned(token, conversation);
    const [boundary] = await idle(conversation, agentId, 1);

    expect(boundary?.body.content).toMatchObject({
      summary: reply.summary,
      salientFacts: { memoryRefs: [{ path: "people/carla.md", note: "approves the flights" }] },
      droppedMemoryRefs: [{ path: "people/nobody.md", note: "no such memory page" }],
      degraded: false,
    });
    expect((await runs(token, conversation)).filter((r) => r.body.status === "failed")).toEqual([]);
    const [first] = await requests();
    expect(first?.body.response_format).toMatchObject({ type: "json_schema", json_schema: { name: "session_projection", strict: true } });
  });

  it("dead-letters a run whose retries are exhausted, records an incident, backs off and re-plans", async () => {
    const { conversation, agentId, token } = await setup("projection");
    await script(Array.from({ length: 6 }, () => ({ status: 503 })));
    await sayUntilPlanned(token, conversation);
    // Six attempts, the dead-letter hop and a re-plan each wait out the queue's batch window.
    const [boundary] = (await settledChain(conversation, agentId, 1, 60_000)).chain;

    const incidents = await readIncidents(await shardOf(conversation), conversation, 50);
    const abandoned = incidents.filter((i) => i.kind === "compactor_abandoned");
    expect(abandoned).toHaveLength(1);
    expect(incidents.filter((i) => i.kind === "compactor_failure" && i.runId === abandoned[0]?.runId)).toHaveLength(6);
    // The abandoned run never became a boundary; a new plan from the alarm did.
    expect(boundary?.runId).not.toBe(abandoned[0]?.runId);
    const planned = (await runs(token, conversation)).filter((r) => r.body.status === "planned");
    expect(planned.map((r) => r.body.runId)).toEqual([abandoned[0]?.runId, boundary?.runId]);
  }, 90_000);

  it("records a message that finds nothing to freeze as a skip, not a failure, and plans once the tail outgrows its target", async () => {
    const { conversation, agentId, token } = await setup("plain");
    // A boundary almost as large as the slice it replaces (it must be smaller): with it and the
    // exact tail (at most 800) the chain is at the trigger (2,000) while every uncovered group
    // still fits the tail, so there is nothing to freeze until the tail outgrows its target.
    const summary = Array.from({ length: 12 }, (_, i) => `Point ${i + 1}: the offsite is in Lisbon, flights under 200 euros, a venue with a garden.`).join("\n");
    await script([{ content: summary }]);
    const stub = conversationStub(env, conversation);
    // Up to the first plan and no further, so the tail at the settle is what the plan retained.
    for (let i = 0; (await stub.describeChain(conversation, agentId))?.openRunId === null; i++) {
      expect(i).toBeLessThan(40);
      const text = `Message ${i}: the team compares Lisbon and Porto for the offsite; Ada wants flights under ${200 + i} euros and a venue with a garden.`;
      expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`m${i}`, `${i}`, text) })).status).toBe(201);
    }
    const [first] = await idle(conversation, agentId, 1);
    const settled = await stub.describeChain(conversation, agentId);
    // The premise: at the trigger with no run open (before, this state recorded a failed plan).
    expect(settled?.activeChars).toBeGreaterThanOrEqual(2_000);
    expect(settled?.openRunId).toBeNull();

    // Short messages, one at a time, until the tail outgrows its target and a run is planned.
    let sent = 0;
    for (; sent < 60; sent++) {
      expect((await call("POST", eventsPath(conversation), { token, body: sourceEvent(`s${sent}`, `s${sent}`, `Short note ${sent}.`) })).status).toBe(201);
      if ((await stub.describeChain(conversation, agentId))?.openRunId !== null) break;
    }
    expect(sent).toBeLessThan(60);
    const second = await idle(conversation, agentId, 2);
    expect(second[0]?.body.id).toBe(first?.body.id);

    const compactor = (await runs(token, conversation)).filter((r) => r.body.role === "compactor");
    const nothing = compactor
      .filter((r) => r.body.status === "skipped")
      .map((r) => (r.body as { detail?: { reason?: string; activeChars?: number } }).detail)
      .filter((d) => d?.reason === "nothing_to_freeze");
    expect(nothing.length).toBeGreaterThan(0);
    for (const detail of nothing) expect(detail?.activeChars).toBeGreaterThanOrEqual(2_000);
    expect(compactor.filter((r) => r.body.status === "failed").map((r) => r.body.error?.code)).toEqual([]);
    expect((await readIncidents(await shardOf(conversation), conversation, 50)).filter((i) => i.kind === "plan_failure")).toEqual([]);
  });

  it("never makes ingest wait for the model", async () => {
    const { conversation, agentId, token } = await setup("projection");
    await script([{ delayMs: 4_000 }]);
    await sayUntilPlanned(token, conversation);
    // Every append above was acknowledged while the model call was still outstanding.
    const state = await conversationStub(env, conversation).describeChain(conversation, agentId);
    expect(state?.openRunId).not.toBeNull();
    expect(await readChainBoundaries(await shardOf(conversation), conversation, agentId)).toHaveLength(0);
    await idle(conversation, agentId, 1);
  });
});
