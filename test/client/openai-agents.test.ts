import { exports } from "cloudflare:workers";
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createClient, FoldlineError } from "../../client/index";
import { FoldlineSession } from "../../client/openai-agents";
import { register } from "../support/declarations";
import { call, freshConversation, json, tokenFor } from "../integration/helpers";

/**
 * `foldline/openai-agents` as the session of a real OpenAI Agents SDK `run`, against the real Worker
 * over a service binding to its RPC entrypoint. The model is the SDK's chat-completions model over
 * the official `openai` client, whose network edge answers as the API does: a chat completion, a tool
 * call when the agent has a tool and has not called it yet. Every request it was sent is kept.
 */

setTracingDisabled(true);

interface ChatRequest {
  readonly messages: { readonly role: string; readonly content?: unknown; readonly tool_calls?: unknown }[];
  readonly tools?: unknown[];
}

/** The chat-completions API at the network edge: `answer` says what the assistant replies to each request. */
function chatApi(answer: (request: ChatRequest) => { text: string } | { tool: string; args: Record<string, unknown> }) {
  const requests: ChatRequest[] = [];
  const fetch = async (_input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = JSON.parse(String(init?.body)) as ChatRequest;
    requests.push(request);
    const reply = answer(request);
    const message =
      "text" in reply
        ? { role: "assistant", content: reply.text }
        : { role: "assistant", content: null, tool_calls: [{ id: `call_${requests.length}`, type: "function", function: { name: reply.tool, arguments: JSON.stringify(reply.args) } }] };
    return Response.json({
      // The same id for every answer, as a provider may give: nothing may take it for the message's own.
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1_790_000_000,
      model: "test-model",
      choices: [{ index: 0, message, finish_reason: "text" in reply ? "stop" : "tool_calls", logprobs: null }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
  };
  const model = new OpenAIChatCompletionsModel(new OpenAI({ apiKey: "test-key", baseURL: "https://model.test/v1", fetch, maxRetries: 0 }), "test-model");
  return { requests, model };
}

async function setUp() {
  const conversation = freshConversation("api:openai-agents");
  const agent = `oa-${crypto.randomUUID().slice(0, 8)}`;
  const token = await tokenFor(conversation, `agent:${agent}`);
  expect((await register(token, { agentId: agent, sources: [conversation], admitSensitive: true })).status).toBe(201);
  const client = createClient({ binding: exports.FoldlineRpc, token, fetcher: exports.default });
  const session = new FoldlineSession({ client, conversation, agent, author: { id: "u:ada", name: "Ada" } });
  return { conversation, agent, token, client, session };
}

async function logOf(token: string, conversation: string): Promise<{ kind: string; body: Record<string, unknown> }[]> {
  return (await json<{ events: { kind: string; body: Record<string, unknown> }[] }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/events?after=0&limit=500`, { token }))).events.filter((e) => e.kind !== "run");
}

/** Each message of a request with its text (the SDK sends an assistant's as text parts). */
const said = (request: ChatRequest | undefined) =>
  (request?.messages ?? []).map((m) => [m.role, typeof m.content === "string" ? m.content : Array.isArray(m.content) ? m.content.map((p: { text?: string }) => p.text ?? "").join("") : JSON.stringify(m.tool_calls)]);

describe("foldline/openai-agents", () => {
  it("is a run's session: the history is Foldline's context, and what was said is recorded", async () => {
    const { conversation, agent, token, session } = await setUp();
    const api = chatApi((request) => ({ text: `I have ${request.messages.length} messages.` }));
    const helper = new Agent({ name: "helper", instructions: "You are the team's assistant.", model: api.model });

    const first = await run(helper, "We meet in Lisbon on Friday.", { session });
    expect(first.finalOutput).toBe("I have 2 messages.");
    const second = await run(helper, "When do we meet?", { session });
    // The instructions, then the history as Foldline serves it (the first exchange), then the new message, once.
    expect(said(api.requests[1])).toEqual([
      ["system", "You are the team's assistant."],
      ["user", "Ada: We meet in Lisbon on Friday."],
      ["assistant", "I have 2 messages."],
      ["user", "When do we meet?"],
    ]);
    expect(second.finalOutput).toBe("I have 4 messages.");

    const log = await logOf(token, conversation);
    expect(log.map((e) => [e.kind, e.body["text"] ?? e.body["status"]])).toEqual([
      ["source", "We meet in Lisbon on Friday."],
      ["proposal", "I have 2 messages."],
      ["delivery", "delivered"],
      ["source", "When do we meet?"],
      ["proposal", "I have 4 messages."],
      ["delivery", "delivered"],
    ]);
    // Each answer replies to the message its run was given.
    expect(log.filter((e) => e.kind === "proposal").map((e) => [e.body["agentId"], e.body["replyToMessageId"]])).toEqual(
      log.filter((e) => e.kind === "source").map((e) => [agent, e.body["messageId"]]),
    );
    expect(await session.getSessionId()).toBe(conversation);
    expect((await session.getItems(1)).map((item) => ("role" in item ? item.role : item.type))).toEqual(["assistant"]);
  });

  it("records a run that calls a tool by what was said only", async () => {
    const { conversation, token, session } = await setUp();
    const api = chatApi((request) => (request.messages.some((m) => m.role === "tool") ? { text: "Sunny in Lisbon." } : { tool: "weather", args: { city: "Lisbon" } }));
    const weather = tool({ name: "weather", description: "The weather in a city", parameters: z.object({ city: z.string() }), execute: async ({ city }) => `${city}: sunny, 24°C` });
    const helper = new Agent({ name: "helper", instructions: "Answer briefly.", model: api.model, tools: [weather] });
    const result = await run(helper, "What is the weather in Lisbon?", { session });
    expect(result.finalOutput).toBe("Sunny in Lisbon.");
    expect(api.requests).toHaveLength(2);
    expect((await logOf(token, conversation)).map((e) => [e.kind, e.body["text"] ?? e.body["status"]])).toEqual([
      ["source", "What is the weather in Lisbon?"],
      ["proposal", "Sunny in Lisbon."],
      ["delivery", "delivered"],
    ]);
  });

  it("withdraws a person's newest message, never a delivered reply, and refuses to clear the conversation", async () => {
    const { conversation, agent, token, client, session } = await setUp();
    await session.addItems([{ role: "user", content: "A message sent by mistake." }]);
    const popped = await session.popItem();
    expect(popped).toMatchObject({ role: "user", content: "Ada: A message sent by mistake." });
    expect(await session.getItems()).toEqual([]);
    const log = await logOf(token, conversation);
    expect(log.map((e) => [e.kind, e.body["action"] ?? null])).toEqual([
      ["source", null],
      ["correction", "delete"],
    ]);
    expect(await session.popItem()).toBeUndefined();

    await session.addItems([{ role: "user", content: "Hello?" }, { role: "assistant", status: "completed", content: [{ type: "output_text", text: "Hello, Ada." }] }]);
    await expect(session.popItem()).rejects.toMatchObject({ code: "unsupported" });
    await expect(session.clearSession()).rejects.toBeInstanceOf(FoldlineError);
    expect((await client.context(conversation, { agent })).messages.map((m) => m.content)).toEqual(["Ada: Hello?", "Hello, Ada."]);
  });
});
