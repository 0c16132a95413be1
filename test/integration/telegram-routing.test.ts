import { env } from "cloudflare:workers";
import fc from "fast-check";
import { describe, expect, inject, it } from "vitest";
import { directReplyAgents, operatorChat } from "../../src/config";
import { telegramConversationId, telegramRoute } from "../../src/core/conversation-id";
import { pair } from "../support/declarations";
import { deliver, replyJobFor } from "../support/queue";
import { BOT_ID, call, eventsPath, json, sourceEvent, tokenFor } from "./helpers";

/**
 * Which chat a conversation's replies and notices go to (`telegramRoute`), and the two settings
 * that decide whether anything goes at all (`DIRECT_REPLY_AGENTS`, `OPERATOR_CHAT`). A conversation
 * id reaches the API from any client holding a scope for it, so every spelling of an id that the
 * webhook would never write is hostile: it must name no chat rather than someone else's.
 */

const withVars = (vars: Partial<Record<"DIRECT_REPLY_AGENTS" | "OPERATOR_CHAT" | "TELEGRAM_API_BASE_URL", string>>): Env => ({ ...env, ...vars }) as Env;

describe("telegramRoute", () => {
  it.each([
    ["a private chat", "telegram:7001:42", { botId: "7001", chatId: 42 }],
    ["a basic group", "telegram:7001:-4242", { botId: "7001", chatId: -4242 }],
    ["a supergroup", "telegram:7001:-1001234567890", { botId: "7001", chatId: -1001234567890 }],
    ["a forum topic", "telegram:7001:-1001234567890:77", { botId: "7001", chatId: -1001234567890, threadId: 77 }],
    ["the largest safe chat id", `telegram:7001:-${Number.MAX_SAFE_INTEGER}`, { botId: "7001", chatId: -Number.MAX_SAFE_INTEGER }],
  ])("routes %s (%s)", (_name, id, route) => {
    expect(telegramRoute(id)).toEqual(route);
  });

  it.each([
    ["an API conversation", "api:acme:42"],
    ["an API key that mentions Telegram", "api:telegram:7001:42"],
    ["another platform", "slack:7001:42"],
    ["an upper-case prefix", "TELEGRAM:7001:42"],
    ["a leading space", " telegram:7001:42"],
    ["a trailing newline", "telegram:7001:42\n"],
    ["no chat", "telegram:7001"],
    ["an empty chat", "telegram:7001:"],
    ["a non-numeric chat", "telegram:7001:ops"],
    ["a non-numeric bot", "telegram:bot:42"],
    ["a plus sign", "telegram:7001:+42"],
    ["hexadecimal", "telegram:7001:0x2a"],
    ["an exponent", "telegram:7001:4e1"],
    ["a fraction", "telegram:7001:4.2"],
    ["non-ASCII digits", "telegram:7001:\u0664\u0662"],
    ["a negative topic", "telegram:7001:-100:-5"],
    ["an extra segment", "telegram:7001:-100:5:6"],
    ["a trailing colon", "telegram:7001:42:"],
    // Each of these would reach a chat that is not the conversation's own.
    ["chat 42 spelled with leading zeros", "telegram:7001:0042"],
    ["chat -42 spelled with a leading zero", "telegram:7001:-042"],
    ["minus zero", "telegram:7001:-0"],
    ["a topic with a leading zero", "telegram:7001:-100:07"],
    ["topic 0", "telegram:7001:-100:0"],
    ["a bot with a leading zero", "telegram:07001:42"],
    ["a chat id past 2^53, which rounds to its neighbour", "telegram:7001:9007199254740993"],
    ["a 20-digit chat id", `telegram:7001:-${"9".repeat(20)}`],
    ["a topic past 2^53", `telegram:7001:-100:${"9".repeat(17)}`],
  ])("routes nowhere for %s (%j)", (_name, id) => {
    expect(telegramRoute(id)).toBeUndefined();
  });

  it("gives back exactly the chat and topic of every id the webhook writes", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[1-9]\d{0,11}$/),
        fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
        fc.option(fc.integer({ min: 1, max: 2 ** 31 - 1 }), { nil: undefined }),
        (botId, chatId, threadId) => {
          const route = telegramRoute(telegramConversationId(botId, chatId, threadId));
          expect(route).toEqual(threadId === undefined ? { botId, chatId } : { botId, chatId, threadId });
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("replies follow the route", () => {
  it("posts into the forum topic the conversation names, and nowhere for an id that only spells a chat", async () => {
    const session = `${inject("fakeTelegramOrigin")}/s/${crypto.randomUUID()}`;
    const agentId = "route-agent";
    const topic = `telegram:${BOT_ID}:-1001234567890:77`;
    // Accepted as a conversation (the schema takes up to 20 digits), but chat 42 is `telegram:7001:42`.
    const disguised = `telegram:${BOT_ID}:0042`;
    const token = await tokenFor(topic, disguised, `agent:${agentId}`);
    // The messages arrive before the agent serves either conversation: the reply jobs are the
    // test's to deliver, each with this test's own Bot API session and allowlist.
    const seqs: number[] = [];
    for (const conversation of [topic, disguised]) {
      const posted = await call("POST", eventsPath(conversation), { token, body: sourceEvent("m-1", "501", "Is the venue booked?") });
      expect(posted.status).toBe(201);
      seqs.push((await json<{ event: { seq: number } }>(posted)).event.seq);
    }
    const body = pair({ agentId, sources: [topic, disguised], trigger: 50_000, admitSensitive: true });
    expect((await call("PUT", `/v1/agents/${agentId}`, { token, body: { ...body, agent: { ...body.agent, reply: { mode: "builtin" } } } })).status).toBe(201);

    // The allowlist as an operator might type it: spaces, an empty entry, the agent twice.
    const routed = withVars({ TELEGRAM_API_BASE_URL: session, DIRECT_REPLY_AGENTS: ` other , ${agentId},,${agentId} ` });
    const jobs = [topic, disguised].map((conversation, i) => replyJobFor(conversation, agentId, { seq: seqs[i] ?? 0, messageId: "501" }));
    expect((await deliver("foldline-compaction", jobs, { env: routed })).explicitAcks).toEqual(["msg-0", "msg-1"]);

    const requests = (await (await fetch(`${session}/__requests`)).json()) as { body: { chat_id: number; message_thread_id?: number; reply_parameters?: { message_id: number } } }[];
    expect(requests.map((r) => [r.body.chat_id, r.body.message_thread_id, r.body.reply_parameters?.message_id])).toEqual([[-1001234567890, 77, 501]]);
    // Both replies are recorded; only the routed one has delivery evidence.
    for (const [conversation, deliveries] of [[topic, ["delivered"]], [disguised, []]] as const) {
      const events = (await json<{ events: { kind: string; body: { status?: string } }[] }>(await call("GET", `${eventsPath(conversation)}?limit=50`, { token }))).events;
      expect(events.filter((e) => e.kind === "proposal"), conversation).toHaveLength(1);
      expect(events.filter((e) => e.kind === "delivery").map((e) => e.body.status), conversation).toEqual(deliveries);
    }
  });
});

describe("DIRECT_REPLY_AGENTS", () => {
  it.each([
    ["empty", "", []],
    ["blank", "   ", []],
    ["only separators", " , ,, ", []],
    ["one agent", "tg-concierge", ["tg-concierge"]],
    ["spaces around entries", " tg-concierge ,\ttg-failing\n", ["tg-concierge", "tg-failing"]],
    ["duplicates and empty entries", "tg-concierge,,tg-concierge,", ["tg-concierge"]],
  ])("%s (%j) admits exactly %j", (_name, value, agents) => {
    expect([...directReplyAgents(withVars({ DIRECT_REPLY_AGENTS: value }))].sort()).toEqual(agents);
  });

  it("admits an agent only by its exact id: no wildcard, prefix, case folding or compactor", () => {
    for (const value of ["tg-*", "*", "tg-concierg", "TG-CONCIERGE", "tg-concierge.compactor", "tg-concierge tg-failing"]) {
      expect(directReplyAgents(withVars({ DIRECT_REPLY_AGENTS: value })).has("tg-concierge"), value).toBe(false);
    }
  });
});

describe("OPERATOR_CHAT", () => {
  it.each([
    ["a private chat", "7001:42", { botId: "7001", chatId: 42 }],
    ["a basic group", "7001:-4242", { botId: "7001", chatId: -4242 }],
    ["a supergroup", "7001:-1001234567890", { botId: "7001", chatId: -1001234567890 }],
    ["spaces around it", "  7001:-1001234567890\n", { botId: "7001", chatId: -1001234567890 }],
  ])("names %s (%j)", (_name, value, chat) => {
    expect(operatorChat(withVars({ OPERATOR_CHAT: value }))).toEqual(chat);
  });

  it.each([
    ["empty", ""],
    ["blank", "   "],
    ["a bot only", "7001"],
    ["a chat only", ":42"],
    ["an empty chat", "7001:"],
    ["a non-numeric chat", "7001:ops"],
    ["a non-numeric bot", "bot:42"],
    ["a username", "7001:@ops_channel"],
    ["spaces inside", "7001: 42"],
    ["two chats", "7001:42,7001:43"],
    ["a forum topic", "7001:-100:5"],
    ["a plus sign", "7001:+42"],
    ["leading zeros", "7001:0042"],
    ["minus zero", "7001:-0"],
    ["a chat id past 2^53", "7001:-9007199254740993"],
  ])("names no chat when %s (%j)", (_name, value) => {
    expect(operatorChat(withVars({ OPERATOR_CHAT: value }))).toBeUndefined();
  });
});
