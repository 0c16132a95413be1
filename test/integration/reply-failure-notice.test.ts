import { env } from "cloudflare:workers";
import { createMessageBatch } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import { appendToConversation } from "../../src/durable/stub";
import { consumeBatch } from "../../src/queue/consumer";
import { FAILURE_NOTICE } from "../../src/queue/reply-notice";
import { pair } from "../support/declarations";
import { BOT_ID, call, eventsPath, json, sourceEvent, tokenFor } from "./helpers";

/**
 * The dead-letter path of a reply job (`abandonReply`): when every attempt failed, an agent on the
 * direct-reply allowlist posts one short failure notice into its Telegram chat, recorded as a
 * proposal with its delivery; nobody else ever does. Each test uses its own fake Bot API session
 * and allowlist, so nothing another file sends is counted.
 */

interface LogEvent {
  kind: string;
  idempotencyKey: string;
  body: { proposalId?: string; agentId?: string; text?: string; status?: string; replyToMessageId?: string };
}
interface SentMessage {
  body: { chat_id: number; text: string; reply_parameters?: { message_id: number } };
}

let nextChat = 4_400_000;

async function setup(agentId: string, conversation: string) {
  const token = await tokenFor(conversation, `agent:${agentId}`);
  const base = pair({ agentId, sources: [conversation], trigger: 50_000, admitSensitive: true });
  // `none`: no reply job of its own runs, so the dead-lettered job below is the only one.
  expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: base })).status).toBeLessThan(300);
  const appended = await json<{ event: { seq: number } }>(await call("POST", eventsPath(conversation), { token, body: sourceEvent(`k-${crypto.randomUUID()}`, "77", "Can you book the table?") }));
  const session = `${inject("fakeTelegramOrigin")}/s/${crypto.randomUUID()}`;
  const job = { type: "reply", conversationId: conversation, agentId, sourceSeq: appended.event.seq, sourceMessageId: "77" };
  const deadLetter = async (allowlist: string) => {
    const batch = createMessageBatch("foldline-compaction-dlq", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body: job }]);
    await consumeBatch(batch, { ...env, TELEGRAM_API_BASE_URL: session, DIRECT_REPLY_AGENTS: allowlist } as Env);
  };
  const sent = async () => (await (await fetch(`${session}/__requests`)).json()) as SentMessage[];
  const log = async () => (await json<{ events: LogEvent[] }>(await call("GET", `${eventsPath(conversation)}?limit=100`, { token }))).events;
  return { token, job, deadLetter, sent, log };
}

describe("the failure notice of a dead-lettered reply", () => {
  it("posts one notice for an allowlisted agent, replying to the message, recorded with its delivery, and never twice", async () => {
    const chat = nextChat++;
    const agentId = "notice-agent";
    const { deadLetter, sent, log } = await setup(agentId, `telegram:${BOT_ID}:${chat}`);
    await deadLetter(`other,${agentId}`);
    const requests = await sent();
    expect(requests.map((r) => [r.body.chat_id, r.body.text, r.body.reply_parameters?.message_id])).toEqual([[chat, FAILURE_NOTICE, 77]]);
    const events = await log();
    const notices = events.filter((e) => e.kind === "proposal");
    expect(notices.map((e) => [e.body.agentId, e.body.text, e.body.replyToMessageId])).toEqual([[agentId, FAILURE_NOTICE, "77"]]);
    const deliveries = events.filter((e) => e.kind === "delivery");
    expect(deliveries.map((e) => [e.body.proposalId, e.body.status])).toEqual([[notices[0]?.body.proposalId, "delivered"]]);

    // The dead-letter queue delivers at least once: a second delivery of the same job sends nothing.
    await deadLetter(agentId);
    expect(await sent()).toHaveLength(1);
    expect((await log()).filter((e) => e.kind === "proposal" || e.kind === "delivery")).toHaveLength(2);
  });

  it("posts nothing, and records nothing, for an agent that is not on the allowlist", async () => {
    const chat = nextChat++;
    const { deadLetter, sent, log } = await setup("notice-quiet", `telegram:${BOT_ID}:${chat}`);
    await deadLetter("notice-agent");
    expect(await sent()).toEqual([]);
    expect((await log()).filter((e) => e.kind === "proposal" || e.kind === "delivery")).toEqual([]);
  });

  it("posts nothing outside Telegram, even for an allowlisted agent", async () => {
    const { deadLetter, sent, log } = await setup("notice-api", `api:notice:${crypto.randomUUID()}`);
    await deadLetter("notice-api");
    expect(await sent()).toEqual([]);
    expect((await log()).filter((e) => e.kind === "proposal")).toEqual([]);
  });

  it("posts no notice when the reply itself was recorded (a late success is not a failure)", async () => {
    const chat = nextChat++;
    const agentId = "notice-late";
    const conversation = `telegram:${BOT_ID}:${chat}`;
    const { job, deadLetter, sent, log } = await setup(agentId, conversation);
    const proposal = { kind: "proposal" as const, idempotencyKey: `reply:${agentId}:${job.sourceSeq}:proposal`, body: { proposalId: `rp_${agentId}_${job.sourceSeq}`, agentId, replyToMessageId: "77", text: "Booked." } };
    // Written as the reply job writes it (its keys are Foldline's own, not a client's).
    expect((await appendToConversation(env, { conversationId: conversation, events: [{ ...proposal, sensitive: false }] })).ok).toBe(true);
    await deadLetter(agentId);
    expect(await sent()).toEqual([]);
    expect((await log()).filter((e) => e.kind === "proposal").map((e) => e.body.text)).toEqual(["Booked."]);
  });
});
