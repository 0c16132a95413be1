import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, inject, it } from "vitest";
import { readIncidents } from "../support/reads";
import { shardOf } from "../support/shards";
import { sendMessage } from "../../src/telegram/bot-api";
import { pair } from "../support/declarations";
import { settledChain, waitFor } from "../support/chain";
import { BOT_ID, call, eventsPath, json, textUpdate, tokenFor, webhook } from "./helpers";
import { deliver, replyJobFor } from "../support/queue";

/**
 * The agent's side through Telegram: updates arrive at the webhook, the built-in agent answers off
 * the request path, and the dispatcher posts replies of allowlisted agents to the loopback fake Bot
 * API (test/fake-telegram, default session) — recording every attempt as a delivery event. The
 * compactor of the same pair runs on the same model endpoint (profile "faketg") with scripted
 * failures, which must never reach the chat. Tests in this file run in order and own both
 * default/"telegram-dispatch" sessions of the fakes.
 */

const telegramOrigin = inject("fakeTelegramOrigin");
const modelOrigin = `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/telegram-dispatch`;

interface SentMessage {
  body: { chat_id: number; text: string; reply_parameters?: { message_id: number }; message_thread_id?: number };
}
const sent = async (): Promise<SentMessage[]> => (await (await fetch(`${telegramOrigin}/__requests`)).json()) as SentMessage[];
const scriptTelegram = async (steps: unknown[]): Promise<void> => {
  await fetch(`${telegramOrigin}/__script`, { method: "POST", body: JSON.stringify(steps) });
};
const scriptModel = async (steps: unknown[]): Promise<void> => {
  await fetch(`${modelOrigin}/__script`, { method: "POST", body: JSON.stringify(steps) });
};

beforeEach(async () => {
  await fetch(`${telegramOrigin}/__reset`, { method: "POST" });
  await fetch(`${modelOrigin}/__reset`, { method: "POST" });
});

let nextChat = 900_000;

async function registerAgent(agentId: string, chat: number, trigger = 2_000) {
  const conversation = `telegram:${BOT_ID}:${chat}`;
  // The bot's operator: the agent moves from one test's chat to the next, so the token must contain
  // the chat it served before as well as the new one.
  const token = await tokenFor(`telegram:${BOT_ID}:*`, `agent:${agentId}`);
  // Each test's agent serves its own chat only, so no earlier agent answers there too.
  const base = pair({ agentId, sources: [conversation], trigger, retain: Math.floor(trigger * 0.4), admitSensitive: true, profile: "faketg" });
  const body = { agent: { ...base.agent, reply: { mode: "builtin" } }, compactor: base.compactor };
  expect((await call("PUT", `/v1/agents/${agentId}`, { token, body })).status).toBeLessThan(300);
  return { conversation, token };
}

interface LogEvent {
  seq: number;
  kind: string;
  idempotencyKey: string;
  body: { status?: string; role?: string; proposalId?: string; agentId?: string; text?: string; externalMessageId?: string; reason?: string; messageId?: string; error?: { code: string } };
}
async function log(token: string, conversation: string): Promise<LogEvent[]> {
  return (await json<{ events: LogEvent[] }>(await call("GET", `${eventsPath(conversation)}?limit=500`, { token }))).events;
}

/** The reply jobs of the chat's messages for an agent registered after them: the test's to deliver. */
async function replyJobs(token: string, conversation: string, agentId: string) {
  return (await log(token, conversation)).filter((e) => e.kind === "source").map((e) => replyJobFor(conversation, agentId, { seq: e.seq, messageId: e.body.messageId ?? "" }));
}

const say = (chat: number, updateId: number, i: number) =>
  webhook(textUpdate(updateId, chat, `Question ${i}: can you confirm the venue in Lisbon, the flights for the team and a budget of ${1000 + i} euros?`));

describe("the Telegram dispatcher", () => {
  it("posts every reply of the built-in agent with delivery evidence, and no compactor failure ever reaches the chat", async () => {
    const chat = nextChat++;
    const agentId = "tg-concierge";
    const { conversation, token } = await registerAgent(agentId, chat);
    await scriptModel([
      { status: 500, whenSystemIncludes: "compactor" },
      { content: "COMPACTOR-FAILURE-MARKER not a projection", whenSystemIncludes: "compactor" },
      { status: 429, retryAfter: 0, whenSystemIncludes: "compactor" },
    ]);
    const messages = 24;
    for (let i = 0; i < messages; i++) expect((await say(chat, 50_000 + chat * 100 + i, i)).status).toBe(200);

    const events = await waitFor(async () => {
      const all = await log(token, conversation);
      const delivered = all.filter((e) => e.kind === "delivery" && e.body.status === "delivered");
      return delivered.length >= messages ? all : undefined;
    }, "a delivered reply to every message");
    await settledChain(conversation, agentId, 1);

    const proposals = events.filter((e) => e.kind === "proposal");
    expect(proposals).toHaveLength(messages);
    const requests = (await sent()).filter((r) => r.body.chat_id === chat);
    // One message per reply, each answering its own source, never more.
    expect(requests).toHaveLength(messages);
    expect(requests.map((r) => r.body.text).sort()).toEqual(proposals.map((p) => p.body.text).sort());
    const sources = events.filter((e) => e.kind === "source").map((e) => Number(e.body.messageId));
    expect(requests.map((r) => r.body.reply_parameters?.message_id).sort()).toEqual(sources.sort());
    // Every proposal has its delivery evidence with the Telegram message id.
    for (const proposal of proposals) {
      const delivery = events.find((e) => e.kind === "delivery" && e.body.proposalId === proposal.body.proposalId && e.body.status === "delivered");
      expect(delivery?.body.externalMessageId).toMatch(/^\d+$/);
    }
    // The compactor did fail (the failures were injected) — privately. Read once the chain has
    // settled: the deliveries can all land before the compactor's retries have run. One failed run
    // per injected failure, in order (the SDK does not retry: MODEL_MAX_RETRIES is 0), and no
    // other: a chain at the trigger with nothing to freeze is a skip, not a failure (on a loaded
    // machine the replies can land after the boundary settles, which is how that was found).
    const settledLog = await log(token, conversation);
    const compactorFailures = settledLog.filter((e) => e.kind === "run" && e.body.role === "compactor" && e.body.status === "failed");
    expect(compactorFailures.map((e) => e.body.error?.code)).toEqual(["model_server_error", "output_invalid_json", "model_rate_limited"]);
    const chatText = requests.map((r) => r.body.text).join("\n");
    for (const forbidden of ["COMPACTOR-FAILURE-MARKER", "compactor", "untrusted-history-summary", "output_invalid_json", "model_server_error"]) {
      expect(chatText).not.toContain(forbidden);
    }
  });

  it("records but never posts the replies of an agent that is not on the allowlist", async () => {
    const chat = nextChat++;
    // The messages arrive before the agent serves this chat and the test delivers their reply jobs:
    // once those return, nothing is left that could still send.
    for (let i = 0; i < 3; i++) expect((await say(chat, 60_000 + chat * 10 + i, i)).status).toBe(200);
    const { conversation, token } = await registerAgent("tg-quiet", chat, 50_000);
    expect((await deliver("foldline-compaction", await replyJobs(token, conversation, "tg-quiet"))).explicitAcks).toEqual(["msg-0", "msg-1", "msg-2"]);
    const events = await log(token, conversation);
    expect(events.filter((e) => e.kind === "proposal")).toHaveLength(3);
    expect(events.filter((e) => e.kind === "delivery")).toHaveLength(0);
    expect((await sent()).filter((r) => r.body.chat_id === chat)).toHaveLength(0);
  });

  it("retries after Telegram's retry_after and never sends a delivered reply twice", async () => {
    const chat = nextChat++;
    const { conversation, token } = await registerAgent("tg-concierge", chat, 50_000);
    await scriptTelegram([{ status: 429, retryAfter: 1 }]);
    await say(chat, 70_000 + chat, 0);
    const first = await waitFor(async () => {
      const all = await log(token, conversation);
      return all.some((e) => e.kind === "delivery" && e.body.status === "delivered") ? all : undefined;
    }, "a delivery after the rate limit");
    const deliveries = first.filter((e) => e.kind === "delivery");
    expect(deliveries.map((d) => d.body.status)).toEqual(["failed", "delivered"]);
    expect(deliveries[0]?.body.reason).toContain("rate limited");
    expect((await sent()).filter((r) => r.body.chat_id === chat)).toHaveLength(2);

    // The same job delivered again (at-least-once queues do that) sends nothing new.
    const again = await deliver("foldline-compaction", await replyJobs(token, conversation, "tg-concierge"));
    expect(again.explicitAcks).toEqual(["msg-0"]);
    expect((await sent()).filter((r) => r.body.chat_id === chat)).toHaveLength(2);
  });

  it("records a chat that blocked the bot once, with an incident, and does not retry it (a rate limit before it is retried)", async () => {
    const chat = nextChat++;
    const agentId = "tg-concierge";
    // The message arrives before the agent serves this chat, so no reply job is queued for it: the
    // attempts below are the only ones, and what each decided is read from its queue result.
    expect((await say(chat, 75_000 + chat, 0)).status).toBe(200);
    const { conversation, token } = await registerAgent(agentId, chat, 50_000);
    const [job] = await replyJobs(token, conversation, agentId);
    await scriptTelegram([{ status: 429, retryAfter: 1 }, { status: 403, description: "Forbidden: bot was blocked by the user" }]);

    const limited = await deliver("foldline-compaction", [job]);
    expect(limited.retryMessages.map((m) => m.msgId)).toEqual(["msg-0"]);
    expect(limited.explicitAcks).toEqual([]);
    const blocked = await deliver("foldline-compaction", [job], { attempts: 2 });
    expect(blocked.explicitAcks).toEqual(["msg-0"]);
    expect(blocked.retryMessages).toEqual([]);

    // Two sends, two failed deliveries, one proposal (asked for once), and the operator's incident.
    expect((await sent()).filter((r) => r.body.chat_id === chat)).toHaveLength(2);
    const events = await log(token, conversation);
    expect(events.filter((e) => e.kind === "proposal")).toHaveLength(1);
    expect(events.filter((e) => e.kind === "delivery").map((e) => [e.body.status, e.body.reason])).toEqual([
      ["failed", "rate limited for 1s"],
      ["failed", "forbidden: Forbidden: bot was blocked by the user"],
    ]);
    expect((await readIncidents(await shardOf(conversation), conversation, 10)).map((i) => [i.kind, i.code])).toEqual([["delivery_failure", "forbidden"]]);
  });

  it("splits a long reply at sensible places, only the first part replying to the source", async () => {
    const chat = nextChat++;
    const { conversation, token } = await registerAgent("tg-concierge", chat, 50_000);
    const paragraph = "The venue in Lisbon is confirmed for the whole team. ".repeat(40).trim();
    await scriptModel([{ content: [paragraph, paragraph, paragraph].join("\n\n") }]);
    await say(chat, 80_000 + chat, 0);
    await waitFor(async () => ((await log(token, conversation)).some((e) => e.kind === "delivery") ? true : undefined), "the delivery");
    const parts = (await sent()).filter((r) => r.body.chat_id === chat);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    expect(parts.every((p) => p.body.text.length <= 4_096)).toBe(true);
    expect(parts[0]?.body.reply_parameters?.message_id).toBeDefined();
    expect(parts.slice(1).every((p) => p.body.reply_parameters === undefined)).toBe(true);
    expect(parts.map((p) => p.body.text).join("")).toContain(paragraph.slice(0, 100));
  });

  it("resumes a split reply after the parts already in the chat when a later part is rate limited", async () => {
    const chat = nextChat++;
    const { conversation, token } = await registerAgent("tg-concierge", chat, 50_000);
    const paragraph = (n: number) => `Part ${n}: the venue in Lisbon is confirmed for the whole team. `.repeat(55).trim();
    await scriptModel([{ content: [paragraph(1), paragraph(2), paragraph(3)].join("\n\n") }]);
    // The first part goes through, the second is rate limited once.
    await scriptTelegram([{}, { status: 429, retryAfter: 1 }]);
    await say(chat, 85_000 + chat, 0);
    const all = await waitFor(async () => {
      const events = await log(token, conversation);
      return events.some((e) => e.kind === "delivery" && e.body.status === "delivered") ? events : undefined;
    }, "the delivery after the rate limit");

    const attempts = (await sent()).filter((r) => r.body.chat_id === chat).map((r) => r.body.text);
    expect(attempts).toHaveLength(4); // part 1, part 2 (429), part 2, part 3
    expect(attempts.filter((t) => t.startsWith("Part 1"))).toHaveLength(1);
    expect(attempts.filter((t) => t.startsWith("Part 2"))).toHaveLength(2);
    expect(attempts.filter((t) => t.startsWith("Part 3"))).toHaveLength(1);
    const [failure, delivered] = all.filter((e) => e.kind === "delivery");
    const progress = (failure?.body as { sentMessageIds?: string[] }).sentMessageIds;
    expect(progress).toHaveLength(1);
    // The delivery names the first part, sent by the first attempt.
    expect(delivered?.body.externalMessageId).toBe(progress?.[0]);
  });

  it("reaches the fake Bot API through the TELEGRAM_API_BASE_URL binding the tests configure", async () => {
    const chat = nextChat++;
    const result = await sendMessage(env, BOT_ID, { chatId: chat, text: "through the binding" });
    expect(result.ok).toBe(true);
    expect((await sent()).map((r) => [r.body.chat_id, r.body.text])).toEqual([[chat, "through the binding"]]);
  });
});
