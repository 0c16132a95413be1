import { describe, expect, it } from "vitest";
import type { ErrorBody } from "./helpers";
import { BOT_ID, call, json, logRows, textUpdate, tokenFor, totalEventRows, webhook } from "./helpers";

let nextChat = 100_000;
const freshChat = (): number => nextChat++;
const conversationOf = (chat: number, thread?: number): string =>
  thread === undefined ? `telegram:${BOT_ID}:${chat}` : `telegram:${BOT_ID}:${chat}:${thread}`;

interface TurnsReply {
  turns: { id: string; role: string; text: string; group: number; hash: string }[];
}

async function turnsOf(conversation: string): Promise<TurnsReply["turns"]> {
  const token = await tokenFor(conversation);
  const res = await call("GET", `/v1/conversations/${conversation}/turns`, { token });
  expect(res.status).toBe(200);
  return (await json<TurnsReply>(res)).turns;
}

describe("POST /telegram/{bot}/webhook", () => {
  it("stores a text message as a source event", async () => {
    const chat = freshChat();
    const res = await webhook(textUpdate(1, chat, "hello foldline"));
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ ok: true, seq: 1, duplicate: false });
    const rows = await logRows(conversationOf(chat));
    expect(rows).toEqual([expect.objectContaining({ seq: 1, kind: "source", idempotency_key: "tg:update:1" })]);
  });

  const secretCases: [string, string | null, string][] = [
    ["missing secret", null, BOT_ID],
    ["wrong secret", "not-the-secret", BOT_ID],
    ["secret of another length", "x", BOT_ID],
    ["unknown bot", "test-webhook-secret-7001", "7002"],
    ["malformed bot id", "test-webhook-secret-7001", "bot7001"],
  ];
  it.each(secretCases)("rejects a %s with 401 and writes nothing", async (_name, secret, bot) => {
    const before = await totalEventRows();
    const res = await webhook(textUpdate(2, freshChat(), "intruder"), { secret, bot });
    expect(res.status).toBe(401);
    expect((await json<ErrorBody>(res)).error.code).toBe("unauthorized");
    expect(await totalEventRows()).toBe(before);
  });

  it("stores 500 concurrent deliveries of 100 updates exactly once, as sequences 1…100", async () => {
    const chat = freshChat();
    const updates = Array.from({ length: 100 }, (_, i) => textUpdate(10_000 + i, chat, `message ${i}`));
    const deliveries = updates.flatMap((update) => Array.from({ length: 5 }, () => update));
    // Interleave so redeliveries of one update race each other and other updates.
    deliveries.sort((a, b) => ((a.update_id * 7919) % 101) - ((b.update_id * 7919) % 101));
    const responses = await Promise.all(deliveries.map((update) => webhook(update)));
    expect(responses.map((r) => r.status).every((s) => s === 200)).toBe(true);
    const rows = await logRows(conversationOf(chat));
    expect(rows).toHaveLength(100);
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(new Set(rows.map((r) => r.idempotency_key)).size).toBe(100);
  });

  it("acknowledges a redelivery without storing it again", async () => {
    const chat = freshChat();
    const update = textUpdate(3, chat, "once");
    await webhook(update);
    const again = await webhook(update);
    expect(again.status).toBe(200);
    expect(await json(again)).toMatchObject({ ok: true, seq: 1, duplicate: true });
    expect(await logRows(conversationOf(chat))).toHaveLength(1);
  });

  it("applies edits, including an edit that arrives before its message", async () => {
    const chat = freshChat();
    const original = textUpdate(20, chat, "meet at 5pm");
    const edit = (updateId: number, text: string, editDate: number) => ({
      update_id: updateId,
      edited_message: { ...original.message, text, edit_date: editDate },
    });
    // The later edit is delivered first, then the message, then an older edit.
    expect((await webhook(edit(22, "meet at 7pm", 1_790_000_200))).status).toBe(200);
    expect((await webhook(original)).status).toBe(200);
    expect((await webhook(edit(21, "meet at 6pm", 1_790_000_100))).status).toBe(200);
    const turns = await turnsOf(conversationOf(chat));
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ role: "user", text: "meet at 7pm" });
    expect((await logRows(conversationOf(chat))).map((r) => r.kind)).toEqual(["correction", "source", "correction"]);
  });

  it("keeps out-of-order updates in arrival order, each once", async () => {
    const chat = freshChat();
    for (const id of [33, 31, 32, 31, 33]) await webhook(textUpdate(id, chat, `update ${id}`));
    const rows = await logRows(conversationOf(chat));
    expect(rows.map((r) => r.idempotency_key)).toEqual(["tg:update:33", "tg:update:31", "tg:update:32"]);
    expect((await turnsOf(conversationOf(chat))).map((t) => t.text)).toEqual(["update 33", "update 31", "update 32"]);
  });

  it("gives each forum topic its own conversation", async () => {
    const chat = -1_001_000 - freshChat();
    const inTopic = (updateId: number, thread: number, text: string) =>
      textUpdate(updateId, chat, text, {
        chat: { id: chat, type: "supergroup", title: "Team" },
        message_thread_id: thread,
        is_topic_message: true,
      });
    await webhook(inTopic(40, 11, "topic eleven"));
    await webhook(inTopic(41, 12, "topic twelve"));
    await webhook(textUpdate(42, chat, "general", { chat: { id: chat, type: "supergroup", title: "Team" } }));
    expect(await logRows(conversationOf(chat, 11))).toHaveLength(1);
    expect(await logRows(conversationOf(chat, 12))).toHaveLength(1);
    expect(await logRows(conversationOf(chat))).toHaveLength(1);
  });

  it("turns media into a marker with its file id", async () => {
    const chat = freshChat();
    const update = textUpdate(50, chat, "", {
      text: undefined,
      caption: "the menu",
      photo: [
        { file_id: "small", file_unique_id: "s", width: 90, height: 90 },
        { file_id: "large", file_unique_id: "l", width: 1280, height: 1280 },
      ],
    });
    expect((await webhook(update)).status).toBe(200);
    const token = await tokenFor(conversationOf(chat));
    const events = await json<{ events: { body: { text: string; attachments: unknown[] } }[] }>(
      await call("GET", `/v1/conversations/${conversationOf(chat)}/events`, { token }),
    );
    expect(events.events[0]?.body.text).toBe("[photo] the menu");
    expect(events.events[0]?.body.attachments).toEqual([{ type: "photo", fileId: "large", fileUniqueId: "l" }]);
  });

  it("acknowledges update kinds it does not use, writing nothing", async () => {
    const before = await totalEventRows();
    for (const update of [
      { update_id: 60, callback_query: { id: "1", from: { id: 1, is_bot: false, first_name: "A" }, data: "x" } },
      { update_id: 61, my_chat_member: { chat: { id: 1, type: "private" } } },
      { update_id: 62, message: { message_id: 9, date: 1, chat: { id: 5, type: "group" }, new_chat_members: [] } },
    ]) {
      const res = await webhook(update);
      expect(res.status).toBe(200);
      expect(await json(res)).toMatchObject({ ok: true, ignored: expect.any(String) });
    }
    expect(await totalEventRows()).toBe(before);
  });

  it("rejects malformed updates with 400 and writes nothing", async () => {
    const before = await totalEventRows();
    for (const request of [{ raw: "{" }, { raw: JSON.stringify({ message: { text: "no update id" } }) }, { raw: JSON.stringify({ update_id: "7" }) }]) {
      const res = await webhook(undefined, request);
      expect(res.status).toBe(400);
    }
    expect(await totalEventRows()).toBe(before);
  });
});
