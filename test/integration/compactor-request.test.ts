import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, inject, it } from "vitest";
import { packetSchema } from "../../src/core/packet";
import { readPlan } from "../../src/storage/shard/plans";
import { settledChain } from "../support/chain";
import { register } from "../support/declarations";
import { OPENAI_CHAT_REQUEST } from "../fixtures/openai/chat-completion-request";
import { validateAgainst } from "../support/openapi-schema";
import { BOT_ID, call, json, tokenFor, webhook } from "./helpers";
import { shardOf } from "../support/shards";

/**
 * What the compactor is really sent, read off the wire: Telegram updates go in through the
 * webhook, the compactor of profile "fakereq" calls the loopback model through the `openai` SDK,
 * and the fake records the request body. This file owns the fake's `compactor-request` session.
 */

const session = `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/compactor-request`;

interface Recorded {
  readonly body: { messages: { role: string; content: string }[]; response_format?: unknown };
}

const asChatRequest = (body: unknown): string[] => validateAgainst(OPENAI_CHAT_REQUEST.schemas, "CreateChatCompletionRequest", body);

beforeEach(async () => {
  await fetch(`${session}/__reset`, { method: "POST" });
});

const IDENTITY = "You are Pip, the concierge of the Lisbon offsite team. 'The boss' means @carla; 'the budget' is the flight cap of 200 euros.";

let counter = 0;
async function setup(chatId: number) {
  const conversation = `telegram:${BOT_ID}:${chatId}`;
  const agentId = `req-${Date.now().toString(36)}-${counter++}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  const uploaded = await call("PUT", `/v1/agents/${agentId}/documents/identity`, { token, body: { content: IDENTITY } });
  expect(uploaded.status).toBe(201);
  const { hash } = await json<{ hash: string }>(uploaded);
  const registered = await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, profile: "fakereq", documents: [{ name: "identity", hash }], documentBudgetChars: 4_000 });
  expect(registered.status).toBe(201);
  return { conversation, agentId };
}

/** Messages from one person until a compaction settles; the Telegram message ids start at 7001. */
async function post(chat: { id: number; type: string; title?: string; first_name?: string }, from: Record<string, unknown>, updateBase: number): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const text = `Message ${i}: flights to Lisbon stay under the budget, ${200 + i} euros at most, and the venue needs a garden.`;
    const update = { update_id: updateBase + i, message: { message_id: 7001 + i, date: 1_790_000_000 + i, chat, from, text } };
    expect((await webhook(update)).status).toBe(200);
  }
}

async function compactorRequest(): Promise<Recorded["body"]> {
  const recorded = (await (await fetch(`${session}/__requests`)).json()) as Recorded[];
  const request = recorded.find((r) => r.body.messages[0]?.content.includes("compactor"));
  if (request === undefined) throw new Error("no compactor request was recorded");
  return request.body;
}

describe("the compactor's request", () => {
  it("carries the trusted documents, the chat's type from Telegram and slice lines with Telegram message ids", async () => {
    const chatId = -1_009_000_000_000 - Math.floor(Math.random() * 1_000_000);
    const { conversation, agentId } = await setup(chatId);
    // A supergroup in which only one person has spoken so far: still a group.
    const ada = { id: 4242, is_bot: false, first_name: "Ada", last_name: "Lovelace" };
    await post({ id: chatId, type: "supergroup", title: "Offsite" }, ada, 880_000 + counter * 100);
    const { chain } = await settledChain(conversation, agentId, 1);
    const [boundary] = chain;

    const body = await compactorRequest();
    const [system, user] = body.messages;
    // The subscribed document, whole, in the trusted (system) part; the history stays in the user part.
    expect(system?.content).toContain(`<trusted-documents>\n<document name="identity">\n${IDENTITY}\n</document>\n</trusted-documents>`);
    expect(user?.content).not.toContain(IDENTITY);
    expect(user?.content).toContain("<conversation-type>group</conversation-type>");
    // Seed 001's `[msgId] @username (role): text`, with Telegram's message ids and a label for a
    // person without a username; no internal turn id reaches the model.
    expect(user?.content).toContain("\n[7001] @Ada_Lovelace~tg:4242 (user): Message 0: flights to Lisbon");
    expect(user?.content).not.toMatch(/\[s\d+\]/);

    // The boundary binds no sender for a group, and the packet keeps the turn ids beside the message ids.
    expect(boundary?.body.conversation).toMatchObject({ source: "telegram", sender: null });
    const plan = await readPlan(await shardOf(conversation), boundary?.runId ?? "");
    const object = await env.DOCUMENTS.get(plan?.packetKey ?? "");
    const packet = packetSchema.parse(JSON.parse((await object?.text()) ?? "null") as unknown);
    expect(packet.conversationType).toBe("group");
    expect(packet.frozen.turns[0]).toMatchObject({ id: expect.stringMatching(/^s\d+$/), messageId: "7001" });
    expect(packet.documents).toEqual([{ name: "identity", hash: expect.any(String), content: IDENTITY }]);
  });

  it("calls a private chat direct and binds its sender", async () => {
    const chatId = 5_000_000 + Math.floor(Math.random() * 1_000_000);
    const { conversation, agentId } = await setup(chatId);
    const ada = { id: chatId, is_bot: false, first_name: "Ada", username: "ada" };
    await post({ id: chatId, type: "private", first_name: "Ada" }, ada, 890_000 + counter * 100);
    const { chain } = await settledChain(conversation, agentId, 1);
    const user = (await compactorRequest()).messages[1]?.content ?? "";
    expect(user).toContain("<conversation-type>direct</conversation-type>");
    expect(user).toContain("\n[7001] @ada (user): Message 0");
    expect(chain[0]?.body.conversation).toMatchObject({ sender: `tg:${chatId}` });
  });
});

describe("the compactor's request against the official OpenAI API description", () => {
  it("is a valid CreateChatCompletionRequest, structured output and repair turn included", async () => {
    const chatId = -1_008_000_000_000 - Math.floor(Math.random() * 1_000_000);
    const { conversation, agentId } = await setup(chatId);
    // The first reply is unusable, so the second request carries the repair turn.
    await fetch(`${session}/__script`, { method: "POST", body: JSON.stringify([{ content: "Sure! Here is the summary you asked for." }]) });
    const ada = { id: 4343, is_bot: false, first_name: "Ada" };
    await post({ id: chatId, type: "group", title: "Offsite" }, ada, 870_000 + counter * 100);
    await settledChain(conversation, agentId, 1);
    const recorded = ((await (await fetch(`${session}/__requests`)).json()) as Recorded[]).filter((r) => r.body.messages[0]?.content.includes("compactor"));
    expect(recorded.map((r) => r.body.messages.length)).toEqual([2, 4]);
    expect(recorded[0]?.body.response_format).toMatchObject({ type: "json_schema" });
    for (const request of recorded) expect(asChatRequest(request.body)).toEqual([]);
  });

  it("would catch a body that is not one (the check can fail)", () => {
    const valid = { model: "m", messages: [{ role: "system", content: "s" }, { role: "user", content: "u" }], temperature: 0 };
    expect(asChatRequest(valid)).toEqual([]);
    expect(asChatRequest({ ...valid, messages: [] })).not.toEqual([]);
    expect(asChatRequest({ ...valid, messages: [{ role: "compactor", content: "x" }] })).not.toEqual([]);
    expect(asChatRequest({ ...valid, response_format: { type: "json_schema" } })).not.toEqual([]);
    expect(asChatRequest({ ...valid, temperature: 3 })).not.toEqual([]);
  });
});
