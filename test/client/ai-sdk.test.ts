import { env, exports } from "cloudflare:workers";
import { generateText, isStepCount, jsonSchema, streamText, tool, wrapLanguageModel } from "ai";
import { MockLanguageModelV4, simulateReadableStream } from "ai/test";
import { describe, expect, it } from "vitest";
import type { FoldlineAnswer } from "../../client/ai-sdk";
import { foldline, recordDelivery } from "../../client/ai-sdk";
import type { FoldlineClient } from "../../client/index";
import { createClient, FoldlineError } from "../../client/index";
import { conversationStub } from "../../src/durable/stub";
import { settledChain, waitFor } from "../support/chain";
import { register } from "../support/declarations";
import { call, freshConversation, json, tokenFor } from "../integration/helpers";

/**
 * `foldline/ai-sdk` in the AI SDK itself (`ai`'s `generateText`, `streamText` and
 * `wrapLanguageModel`), against the real Worker over a service binding to its RPC entrypoint. The
 * model is the SDK's own mock (`ai/test`): it records every prompt it was called with.
 */

type Prompt = MockLanguageModelV4["doGenerateCalls"][number]["prompt"];

const USAGE = { inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 5, text: 5, reasoning: undefined } };

/** A model that answers every call with `answer(callIndex)`, as text. */
function answering(answer: (call: number) => string) {
  let calls = 0;
  return new MockLanguageModelV4({
    doGenerate: async () => ({ content: [{ type: "text", text: answer(calls++) }], finishReason: { unified: "stop", raw: "stop" }, usage: USAGE, warnings: [] }),
    // Streamed, the same answer in two deltas.
    doStream: async () => {
      const text = answer(calls++);
      const half = Math.floor(text.length / 2);
      return {
        stream: simulateReadableStream({
          chunks: [
            { type: "text-start" as const, id: "t" },
            { type: "text-delta" as const, id: "t", delta: text.slice(0, half) },
            { type: "text-delta" as const, id: "t", delta: text.slice(half) },
            { type: "text-end" as const, id: "t" },
            { type: "finish" as const, finishReason: { unified: "stop" as const, raw: "stop" }, usage: USAGE },
          ],
        }),
      };
    },
  });
}

async function setUp(options: { trigger?: number; retain?: number; admitSensitive?: boolean } = {}) {
  const conversation = freshConversation("api:ai-sdk");
  const agent = `ai-${crypto.randomUUID().slice(0, 8)}`;
  const token = await tokenFor(conversation, `agent:${agent}`);
  expect((await register(token, { agentId: agent, sources: [conversation], ...options })).status).toBe(201);
  const client = createClient({ binding: exports.FoldlineRpc, token, fetcher: exports.default });
  return { conversation, agent, token, client };
}

/** The log's events of a kind, as the API lists them. */
async function eventsOf(token: string, conversation: string, kind: string): Promise<Record<string, unknown>[]> {
  const events: Record<string, unknown>[] = [];
  for (let after = 0; ; ) {
    const page = await json<{ events: { seq: number; kind: string; body: Record<string, unknown> }[] }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/events?after=${after}&limit=500`, { token }));
    events.push(...page.events.filter((e) => e.kind === kind).map((e) => e.body));
    if (page.events.length < 500) return events;
    after = page.events.at(-1)?.seq ?? after;
  }
}

/** The characters of a prompt's text, as a provider would be sent them. */
const promptChars = (prompt: Prompt): number => prompt.reduce((n, m) => n + (m.role === "system" ? m.content.length : m.content.reduce((k, p) => k + (p.type === "text" ? p.text.length : 0), 0)), 0);

const texts = (prompt: Prompt) => prompt.map((m) => (m.role === "system" ? { system: m.content } : { [m.role]: m.content.map((p) => (p.type === "text" ? p.text : p.type)).join("") }));

async function context(client: FoldlineClient, conversation: string, agent: string, query?: string) {
  return (await client.context(conversation, { agent, ...(query === undefined ? {} : { query }) })).messages.map((m) => ({ [m.role]: m.content }));
}

describe("foldline/ai-sdk", () => {
  it("gives the model Foldline's history in place of the call's own, records the user's message and the answer", async () => {
    const { conversation, agent, token, client } = await setUp();
    await client.append(conversation, { kind: "source", idempotencyKey: "earlier", body: { messageId: "m1", author: { id: "u:ada", name: "Ada" }, text: "We meet in Lisbon on Friday." } });
    const model = answering(() => "Friday, in Lisbon.");
    const result = await generateText({
      model: wrapLanguageModel({ model, middleware: foldline({ client, conversation, agent, user: { messageId: "m2", author: { id: "u:ada", name: "Ada" } } }) }),
      system: "You are the team's assistant.",
      messages: [
        { role: "user", content: "A message Foldline never saw, from the caller's own copy of the chat." },
        { role: "assistant", content: "An answer Foldline never saw." },
        { role: "user", content: "When do we meet?" },
      ],
    });
    expect(result.text).toBe("Friday, in Lisbon.");
    // The call's system message, then the agent's verified context, which ends with the user's message, recorded first.
    const served = await context(client, conversation, agent, "When do we meet?");
    expect(texts(model.doGenerateCalls[0]?.prompt ?? [])).toEqual([{ system: "You are the team's assistant." }, ...served]);
    expect(JSON.stringify(served)).toContain("When do we meet?");
    expect(JSON.stringify(model.doGenerateCalls[0]?.prompt)).not.toContain("never saw");
    const answer = result.providerMetadata?.["foldline"] as unknown as FoldlineAnswer;
    expect(answer).toMatchObject({ conversation, proposalId: expect.stringMatching(/^ai-/) });
    expect(await eventsOf(token, conversation, "proposal")).toEqual([{ proposalId: answer.proposalId, agentId: agent, replyToMessageId: "m2", text: "Friday, in Lisbon." }]);
    expect((await eventsOf(token, conversation, "source")).map((s) => s["messageId"])).toEqual(["m1", "m2"]);

    // Undelivered, the answer is not history; once the caller reports it shown, it is.
    expect(JSON.stringify(await context(client, conversation, agent))).not.toContain("Friday, in Lisbon.");
    await recordDelivery(client, answer);
    expect(JSON.stringify(await context(client, conversation, agent))).toContain("Friday, in Lisbon.");
    // The same call again records the user's message once (a replay) and a second answer.
    await generateText({ model: wrapLanguageModel({ model, middleware: foldline({ client, conversation, agent, user: { messageId: "m2", author: { id: "u:ada", name: "Ada" } } }) }), prompt: "When do we meet?" });
    expect((await eventsOf(token, conversation, "source")).map((s) => s["messageId"])).toEqual(["m1", "m2"]);
    expect(await eventsOf(token, conversation, "proposal")).toHaveLength(2);
  });

  it("sends a user message that carries an image as the call gave it, its text recorded", async () => {
    const { conversation, agent, token, client } = await setUp();
    const model = answering(() => "A cat.");
    const image = new Uint8Array([137, 80, 78, 71]);
    await generateText({
      model: wrapLanguageModel({ model, middleware: foldline({ client, conversation, agent, user: { messageId: "img-1", author: { id: "u:ada" } } }) }),
      messages: [{ role: "user", content: [{ type: "text", text: "What is in this picture?" }, { type: "image", image, mediaType: "image/png" }] }],
    });
    const prompt = model.doGenerateCalls[0]?.prompt ?? [];
    expect(prompt.at(-1)).toMatchObject({ role: "user", content: [{ type: "text", text: "What is in this picture?" }, { type: "file", mediaType: "image/png" }] });
    expect((await eventsOf(token, conversation, "source")).map((s) => s["text"])).toEqual(["What is in this picture?"]);
  });

  it("passes a step's tool calls and tool results through untouched, after the history", async () => {
    const { conversation, agent, token, client } = await setUp();
    let calls = 0;
    const model = new MockLanguageModelV4({
      doGenerate: async () =>
        calls++ === 0
          ? { content: [{ type: "tool-call", toolCallId: "call-1", toolName: "weather", input: JSON.stringify({ city: "Lisbon" }) }], finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage: USAGE, warnings: [] }
          : { content: [{ type: "text", text: "Sunny in Lisbon." }], finishReason: { unified: "stop", raw: "stop" }, usage: USAGE, warnings: [] },
    });
    // Counted at the client: each step sends the user's message again, and it is appended once.
    let appends = 0;
    const counting: FoldlineClient = { ...client, append: async (...args) => (appends++, client.append(...args)) };
    const weather = tool({ description: "The weather in a city", inputSchema: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }), execute: async ({ city }) => `${city}: sunny, 24°C` });
    const result = await generateText({
      model: wrapLanguageModel({ model, middleware: foldline({ client: counting, conversation, agent, user: { messageId: "w1", author: { id: "u:bob" } } }) }),
      tools: { weather },
      stopWhen: isStepCount(2),
      prompt: "What is the weather in Lisbon?",
    });
    expect(result.text).toBe("Sunny in Lisbon.");
    expect(appends).toBe(1);
    const second = model.doGenerateCalls[1]?.prompt ?? [];
    const served = await context(client, conversation, agent, "What is the weather in Lisbon?");
    expect(texts(second).slice(0, served.length)).toEqual(served);
    expect(second.slice(served.length)).toEqual([
      { role: "assistant", content: [expect.objectContaining({ type: "tool-call", toolCallId: "call-1", toolName: "weather", input: { city: "Lisbon" } })] },
      { role: "tool", content: [expect.objectContaining({ type: "tool-result", toolCallId: "call-1", toolName: "weather", output: { type: "text", value: "Lisbon: sunny, 24°C" } })] },
    ]);
    // Only the text answer is a proposal: a tool call says nothing to the chat.
    expect((await eventsOf(token, conversation, "proposal")).map((p) => p["text"])).toEqual(["Sunny in Lisbon."]);
  });

  it("records a streamed answer whole, delivered with it when asked, its id on the finish", async () => {
    const { conversation, agent, token, client } = await setUp();
    const model = new MockLanguageModelV4({
      doStream: async () => ({
        stream: simulateReadableStream({
          chunks: [
            { type: "text-start", id: "t1" },
            { type: "text-delta", id: "t1", delta: "Twelve " },
            { type: "text-delta", id: "t1", delta: "people." },
            { type: "text-end", id: "t1" },
            { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: USAGE },
          ],
        }),
      }),
    });
    const result = streamText({
      model: wrapLanguageModel({ model, middleware: foldline({ client, conversation, agent, user: { messageId: "s1", author: { id: "u:ada" } }, delivery: "with-answer" }) }),
      prompt: "How many people are coming?",
    });
    expect(await result.text).toBe("Twelve people.");
    const answer = (await result.providerMetadata)?.["foldline"] as unknown as FoldlineAnswer;
    expect(await eventsOf(token, conversation, "proposal")).toEqual([{ proposalId: answer.proposalId, agentId: agent, replyToMessageId: "s1", text: "Twelve people." }]);
    expect(await eventsOf(token, conversation, "delivery")).toEqual([expect.objectContaining({ status: "delivered", proposalId: answer.proposalId })]);
    expect(JSON.stringify(await context(client, conversation, agent))).toContain("Twelve people.");
  });

  it("never calls the model without the agent's verified context, and returns an answer it could not record", async () => {
    const { conversation, agent, client } = await setUp();
    const model = answering(() => "An answer.");
    // An agent the token does not reach: the context is refused, and so is the call.
    const refused = generateText({ model: wrapLanguageModel({ model, middleware: foldline({ client, conversation, agent: "someone-else" }) }), prompt: "Hello?" });
    await expect(refused).rejects.toMatchObject({ name: "FoldlineError", code: "not_found" });
    expect(model.doGenerateCalls).toHaveLength(0);
    // Foldline refuses the proposal's append (here: the client's batch fails): the caller still gets the answer.
    const failing: FoldlineClient = { ...client, appendBatch: async () => Promise.reject(new FoldlineError({ code: "unavailable", message: "later", status: 503 })) };
    const reported: unknown[] = [];
    const result = await generateText({ model: wrapLanguageModel({ model, middleware: foldline({ client: failing, conversation, agent, onRecordError: (error) => reported.push(error) }) }), prompt: "Hello?" });
    expect(result.text).toBe("An answer.");
    expect(result.providerMetadata?.["foldline"]).toBeUndefined();
    expect(reported).toEqual([expect.objectContaining({ code: "unavailable" })]);
  });

  it("over 300 messages through generateText and streamText in turn, calls the model with a bounded prompt once compaction runs, every answer in the log, and the chain verifies", { timeout: 300_000 }, async () => {
    const trigger = 3_000;
    // Boundaries are sensitive: an agent is served them only if it admits sensitive history.
    const { conversation, agent, token, client } = await setUp({ trigger, retain: 1_000, admitSensitive: true });
    const model = answering((i) => `Answer ${i}: the offsite stays in Lisbon, the budget at twelve thousand euros, the date on Friday.`);
    const boundariesAt: number[] = [];
    for (let i = 0; i < 300; i++) {
      // At a chat's pace: each message once the compaction the last one called for has settled.
      const state = await waitFor(async () => {
        const now = await conversationStub(env, conversation).describeChain(conversation, agent);
        return now === undefined || now.openRunId === null ? (now ?? null) : undefined;
      }, "no compaction in flight");
      boundariesAt.push(state?.headId === null || state === null ? 0 : 1);
      // generateText and streamText in turn.
      const call = {
        model: wrapLanguageModel({ model, middleware: foldline({ client, conversation, agent, user: { messageId: `loop-${i}`, author: { id: "u:ada", name: "Ada" } }, delivery: "with-answer" }) }),
        prompt: `Message ${i}: should the offsite move from Lisbon to Porto, and what does that do to the budget?`,
      };
      if (i % 2 === 0) await generateText(call);
      else expect(await streamText(call).text).toMatch(/^Answer \d+:/);
    }
    const proposals = await eventsOf(token, conversation, "proposal");
    expect(proposals).toHaveLength(300);
    expect(new Set(proposals.map((p) => p["replyToMessageId"]))).toEqual(new Set(Array.from({ length: 300 }, (_, i) => `loop-${i}`)));
    const { chain } = await settledChain(conversation, agent, 1, 60_000);
    expect(chain.length).toBeGreaterThan(10);
    // Once a boundary serves, every prompt is within the trigger and the memory budget (4,000 by
    // default), plus the message and answer that came since the last compaction settled.
    const prompts = Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? model.doGenerateCalls[i / 2] : model.doStreamCalls[(i - 1) / 2])?.prompt ?? []);
    const chars = prompts.map(promptChars);
    const ctx = await client.context(conversation, { agent });
    expect(ctx.manifest.boundary?.id).toBe(chain.at(-1)?.body.id);
    const first = boundariesAt.indexOf(1);
    expect(first).toBeGreaterThan(0);
    expect(Math.max(...chars.slice(first)), `prompt characters ${chars.slice(-5).join(", ")}`).toBeLessThanOrEqual(trigger + 4_000 + 300);
    // Without it the prompt would hold the whole conversation.
    expect(chars.at(-1)).toBeLessThan(300 * 200);
    const verdict = await json<{ valid: boolean }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/verify?agent=${agent}`, { token }));
    expect(verdict.valid).toBe(true);
  });
});
