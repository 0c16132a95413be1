import { beforeEach, describe, expect, inject, it } from "vitest";
import { signBody, verifySignature } from "../../src/external/signature";
import { readIncidents } from "../support/reads";
import { expectCounterpartTextPrivate } from "../support/incident-views";
import { shardOf } from "../support/shards";
import type { ReceivedRequest } from "../fake-bot/server";
import { pair } from "../support/declarations";
import { waitFor } from "../support/chain";
import { deliver, replyJobFor } from "../support/queue";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * The external bot hand-off: an agent whose reply comes from the bot's own code. `http` mode posts
 * the signed payload to the loopback fake bot (test/fake-bot, which verifies with the shipped
 * helper); `service` mode calls the auxiliary `echo-bot` Worker's RPC entrypoint (vitest.config.ts).
 * Either way the answer must land as a completed run plus a proposal, like the built-in agent's.
 */

/** This file's own session of the fake bot (test/fake-bot): other files run beside it. */
const botOrigin = `${inject("fakeBotOrigin")}/s/external-bot`;
const botSecret = inject("fakeBotSecret");

interface LogEvent {
  seq: number;
  kind: string;
  idempotencyKey: string;
  body: { status?: string; role?: string; model?: string; agentId?: string; runId?: string; text?: string; replyToMessageId?: string; detail?: Record<string, unknown>; error?: { code: string } };
}

interface Payload {
  version: number;
  conversationId: string;
  agentId: string;
  source: { seq: number; messageId: string };
  request: { model: string; messages: { role: string; content: unknown }[] };
  manifest: { conversationId: string; agentId: string };
}

const received = async (conversation: string): Promise<(ReceivedRequest & { body: Payload })[]> =>
  ((await (await fetch(`${botOrigin}/__requests`)).json()) as (ReceivedRequest & { body: Payload })[]).filter((r) => r.body.conversationId === conversation);

beforeEach(async () => {
  await fetch(`${botOrigin}/__reset`, { method: "POST" });
});

async function registerAgent(agentId: string, reply: Record<string, unknown>, conversation = freshConversation("api:ext")) {
  const token = await tokenFor(conversation, `agent:${agentId}`);
  const base = pair({ agentId, sources: [conversation], trigger: 50_000, retain: 20_000 });
  const response = await call("PUT", `/v1/agents/${agentId}`, { token, body: { agent: { ...base.agent, reply }, compactor: base.compactor } });
  expect(response.status, await response.clone().text()).toBeLessThan(300);
  return { conversation, token };
}

/** A message posted first, then the agent registered to serve it: the reply job is the test's to deliver. */
async function postedBeforeRegistration(agentId: string, reply: Record<string, unknown>, text = "Hello?") {
  const conversation = freshConversation("api:ext");
  const token = await tokenFor(conversation, `agent:${agentId}`);
  const posted = await json<{ event: { seq: number } }>(await call("POST", eventsPath(conversation), { token, body: sourceEvent("m-1", "7", text) }));
  await registerAgent(agentId, reply, conversation);
  return { conversation, token, job: replyJobFor(conversation, agentId, { seq: posted.event.seq, messageId: "7" }) };
}

async function log(token: string, conversation: string): Promise<LogEvent[]> {
  return (await json<{ events: LogEvent[] }>(await call("GET", `${eventsPath(conversation)}?limit=500`, { token }))).events;
}

async function say(token: string, conversation: string, key: string, messageId: string, text: string): Promise<void> {
  const response = await call("POST", eventsPath(conversation), { token, body: sourceEvent(key, messageId, text) });
  expect(response.status).toBe(201);
}

describe("an external bot over signed HTTP", () => {
  it("receives the signed, composed request and its answer is recorded as the agent's proposal", async () => {
    const agentId = "ext-http";
    const { conversation, token } = await registerAgent(agentId, { mode: "http", url: `${botOrigin}/reply`, secret: "BOT_HMAC_SECRET" });
    await say(token, conversation, "m-1", "41", "What time does the Lisbon offsite start?");

    const events = await waitFor(async () => {
      const all = await log(token, conversation);
      return all.some((e) => e.kind === "proposal") ? all : undefined;
    }, "the bot's proposal");
    const proposal = events.find((e) => e.kind === "proposal");
    expect(proposal?.body).toMatchObject({ agentId, replyToMessageId: "41" });
    expect(proposal?.body.text).toBe("echo: Ada: What time does the Lisbon offsite start?");
    const run = events.find((e) => e.kind === "run" && e.body.role === "agent");
    expect(run?.body).toMatchObject({ status: "completed", agentId, model: "external:http", detail: { via: "http", provider: "external:http" } });
    expect(proposal?.body.runId).toBe(run?.body.runId);

    // The bot saw one request, signed with the shared key, verified by the shipped helper.
    const requests = await received(conversation);
    expect(requests).toHaveLength(1);
    const [request] = requests;
    expect(request?.verdict).toBe("ok");
    expect(request?.contentType).toBe("application/json");
    expect(request?.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    // The recorded body re-serialized need not be byte-identical, but its signature must not verify
    // under another key: the fake's "ok" means something.
    expect(await verifySignature("another-key", JSON.stringify(request?.body), request?.signature, Math.floor(Date.now() / 1_000))).toMatchObject({ ok: false });
    // The payload: the composed chat-completions body ending with the message being answered.
    const payload = request?.body;
    const source = events.find((e) => e.kind === "source");
    expect(payload).toMatchObject({ version: 1, conversationId: conversation, agentId, source: { seq: source?.seq, messageId: "41" } });
    expect(payload?.request.model).toBe("test-model");
    expect(payload?.request.messages.at(-1)).toEqual({ role: "user", content: "Ada: What time does the Lisbon offsite start?" });
    expect(payload?.request.messages.some((m) => m.role === "system")).toBe(false);
    expect(payload?.manifest).toMatchObject({ conversationId: conversation, agentId });
  });

  it("a bot that refuses the signature leaves a failed run and an incident, no proposal, and is not retried; one that is down is", async () => {
    // The messages arrive before their agents serve the conversations, so no reply job is queued
    // for them: the attempts below are the only ones, and what each decided is read from its result.
    const refusing = await postedBeforeRegistration("ext-http-wrong", { mode: "http", url: `${botOrigin}/reply`, secret: "BOT_HMAC_WRONG", timeoutMs: 5_000 });
    const refused = await deliver("foldline-compaction", [refusing.job]);
    expect(refused.explicitAcks).toEqual(["msg-0"]);
    expect(refused.retryMessages).toEqual([]);

    const incidents = await readIncidents(await shardOf(refusing.conversation), refusing.conversation, 10);
    expect(incidents.map((i) => [i.agentId, i.kind, i.code])).toEqual([["ext-http-wrong", "agent_failure", "bot_rejected"]]);
    expect(incidents[0]?.message).toBe("attempt 1: bot_rejected");
    expect(incidents[0]?.detail).toContain("401");
    const events = await log(refusing.token, refusing.conversation);
    expect(events.filter((e) => e.kind === "proposal")).toHaveLength(0);
    const runs = events.filter((e) => e.kind === "run" && e.body.role === "agent");
    expect(runs.map((r) => [r.body.status, r.body.error?.code])).toEqual([["failed", "bot_rejected"]]);
    expect((await received(refusing.conversation)).map((r) => r.verdict)).toEqual(["mismatch"]);

    // A bot that answers 503 is down, not refusing: it may answer next time.
    const down = await postedBeforeRegistration("ext-http-down", { mode: "http", url: `${botOrigin}/down`, secret: "BOT_HMAC_SECRET", timeoutMs: 5_000 });
    const retried = await deliver("foldline-compaction", [down.job]);
    expect(retried.retryMessages.map((m) => m.msgId)).toEqual(["msg-0"]);
    expect((await readIncidents(await shardOf(down.conversation), down.conversation, 10)).map((i) => i.code)).toEqual(["bot_unreachable"]);
  });

  it("a bot's error that quotes the chat reaches the conversation's own incidents, never the operator's fleet view", async () => {
    const marker = `MARK${crypto.randomUUID().replaceAll("-", "")}`;
    const quoting = await postedBeforeRegistration("ext-http-quote", { mode: "http", url: `${botOrigin}/quote`, secret: "BOT_HMAC_SECRET", timeoutMs: 5_000 }, `wire 5000 EUR to ${marker}`);
    const outcome = await deliver("foldline-compaction", [quoting.job]);
    expect(outcome.retryMessages.map((m) => m.msgId)).toEqual(["msg-0"]);
    const own = await expectCounterpartTextPrivate(quoting.conversation, quoting.token, "ext-http-quote", marker);
    expect(own.map((i) => [i.kind, i.code, i.message])).toEqual([["agent_failure", "bot_unreachable", "attempt 1: bot_unreachable"]]);
  });

  it("the fake bot itself refuses a forged signature (the helper rejects on the bot's side)", async () => {
    const body = JSON.stringify({ version: 1, conversationId: "api:ext:forged", request: { messages: [] } });
    const forged = await signBody("guessed-key", body, Math.floor(Date.now() / 1_000));
    const refused = await fetch(`${botOrigin}/reply`, { method: "POST", headers: { "content-type": "application/json", "x-foldline-signature": forged }, body });
    expect(refused.status).toBe(401);
    const genuine = await signBody(botSecret, body, Math.floor(Date.now() / 1_000));
    const accepted = await fetch(`${botOrigin}/reply`, { method: "POST", headers: { "content-type": "application/json", "x-foldline-signature": genuine }, body });
    expect(accepted.status).toBe(200);
    expect((await received("api:ext:forged")).map((r) => r.verdict)).toEqual(["mismatch", "ok"]);
  });

  it("refuses a declaration with a remote plain-http URL or a lower-case secret name", async () => {
    const conversation = freshConversation("api:ext");
    const agentId = "ext-http-invalid";
    const token = await tokenFor(conversation, `agent:${agentId}`);
    const base = pair({ agentId, sources: [conversation] });
    for (const reply of [
      { mode: "http", url: "http://bot.example.com/reply", secret: "BOT_HMAC_SECRET" },
      { mode: "http", url: "https://bot.example.com/reply", secret: "bot_hmac_secret" },
      { mode: "http", url: "https://bot.example.com/reply", secret: "BOT_HMAC_SECRET", timeoutMs: 60_000 },
      { mode: "service", binding: "echo-bot" },
    ]) {
      const response = await call("PUT", `/v1/agents/${agentId}`, { token, body: { agent: { ...base.agent, reply }, compactor: base.compactor } });
      expect(response.status, JSON.stringify(reply)).toBe(400);
    }
  });
});

describe("an external bot behind a service binding", () => {
  it("answers over RPC and its answer is recorded as the agent's proposal", async () => {
    const agentId = "ext-service";
    const { conversation, token } = await registerAgent(agentId, { mode: "service", binding: "ECHO_BOT" });
    await say(token, conversation, "m-1", "12", "Is the venue confirmed?");

    const events = await waitFor(async () => {
      const all = await log(token, conversation);
      return all.some((e) => e.kind === "proposal") ? all : undefined;
    }, "the echo bot's proposal");
    expect(events.find((e) => e.kind === "proposal")?.body).toMatchObject({ agentId, replyToMessageId: "12", text: "echo-bot (ext-service): Ada: Is the venue confirmed?" });
    expect(events.find((e) => e.kind === "run" && e.body.role === "agent")?.body).toMatchObject({ status: "completed", model: "external:service", detail: { via: "service" } });
  });

  it("a binding that is not configured is a failed run and an incident, not a retry loop", async () => {
    const agentId = "ext-service-missing";
    const { conversation, token, job } = await postedBeforeRegistration(agentId, { mode: "service", binding: "NO_SUCH_BOT" });
    const result = await deliver("foldline-compaction", [job]);
    expect(result.explicitAcks).toEqual(["msg-0"]);
    expect(result.retryMessages).toEqual([]);
    const incidents = await readIncidents(await shardOf(conversation), conversation, 10);
    expect(incidents.map((i) => [i.agentId, i.kind, i.code])).toEqual([[agentId, "agent_failure", "bot_rejected"]]);
    expect(incidents[0]?.detail).toContain("NO_SUCH_BOT");
    expect((await log(token, conversation)).filter((e) => e.kind === "proposal")).toHaveLength(0);
  });
});
