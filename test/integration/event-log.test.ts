import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, json, logRows, sourceEvent, tokenFor } from "./helpers";

interface TurnsReply {
  turns: { id: string; role: string; author: { id: string }; text: string; group: number; hash: string; sensitive: boolean }[];
  nextAfter: number | null;
}

describe("the event log in D1", () => {
  it("refuses UPDATE, DELETE and a sequence gap at the storage level", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "m1", "original") });
    const shard = await shardOf(conversation);
    await expect(shard.prepare("UPDATE log SET body = '{}' WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?)").bind(conversation).run()).rejects.toThrow(/immutable/);
    await expect(shard.prepare("DELETE FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?)").bind(conversation).run()).rejects.toThrow(/immutable/);
    await expect(
      shard.prepare(
        "INSERT INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES ((SELECT id FROM conversation_keys WHERE conversation_id = ?), 3, 'source', 'gap', 0, '{}', unhex(?), 0)",
      )
        .bind(conversation, "0".repeat(64))
        .run(),
    ).rejects.toThrow(/sequence/);
    expect(await logRows(conversation)).toHaveLength(1);
  });

  it("stores the body in its short spelling, reads back the canonical body, and keeps a hash that replays reproduce", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    const event = { kind: "source", idempotencyKey: "k", body: { text: "hi", author: { name: "Ada", id: "u1" }, messageId: "m1" } };
    const reply = await json<{ event: { hash: string } }>(await call("POST", eventsPath(conversation), { token, body: event }));
    const row = await (await shardOf(conversation)).prepare("SELECT body, lower(hex(hash)) AS hash FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?)").bind(conversation).first<{ body: string; hash: string }>();
    // The field names are not spelled in the row (migrations/shard/0033); the hash is over the canonical event.
    expect(row?.body).toBe('{"a":["u1","Ada"],"messageId":"m1","text":"hi"}');
    expect(row?.hash).toBe(reply.event.hash);
    expect(row?.hash).toBe(eventHash(conversation, eventInputSchema.parse(event)));
    const read = await json<{ events: { body: unknown; hash: string }[] }>(await call("GET", eventsPath(conversation), { token }));
    expect(read.events).toEqual([expect.objectContaining({ body: event.body, hash: reply.event.hash })]);
    const replay = await json<{ event: { hash: string } }>(await call("POST", eventsPath(conversation), { token, body: event }));
    expect(replay.event.hash).toBe(reply.event.hash);
  });

  it("stores a source of the longest text whose every character JSON escapes, within D1's 2 MB a bound value", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    // As many characters as a request may carry (1 MiB, `MAX_BODY_BYTES`'s default) that each take 6
    // in the request's JSON and 7 in the row's JSON around the body's: the row's parameter must not
    // carry the text twice.
    const chars = Math.floor((1_048_576 - 200) / 6);
    const event = { kind: "source", idempotencyKey: "long", body: { text: "\u0001".repeat(chars), author: { id: "u1" }, messageId: "m1" } };
    expect((await call("POST", eventsPath(conversation), { token, body: event })).status).toBe(201);
    const read = await json<{ events: { body: { text: string } }[] }>(await call("GET", eventsPath(conversation), { token }));
    expect(read.events[0]?.body.text).toBe(event.body.text);
  });

  it("continues the sequence after the Durable Object is evicted", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    await call("POST", eventsPath(conversation, "/batch"), { token, body: { events: [sourceEvent("a", "m1", "one"), sourceEvent("b", "m2", "two")] } });
    await evictDurableObject(env.CONVERSATION.get(env.CONVERSATION.idFromName(conversation)));
    const after = await call("POST", eventsPath(conversation), { token, body: { ...sourceEvent("c", "m3", "three"), expectedSeq: 2 } });
    expect(after.status).toBe(201);
    expect((await json<{ event: { seq: number } }>(after)).event.seq).toBe(3);
    expect((await logRows(conversation)).map((r) => r.seq)).toEqual([1, 2, 3]);
  });
});

describe("reading a conversation", () => {
  it("pages events by sequence", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    const events = Array.from({ length: 7 }, (_, i) => sourceEvent(`k${i}`, `m${i}`, `t${i}`));
    await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } });
    const seen: number[] = [];
    let after: number | null = 0;
    while (after !== null) {
      const page: { events: { seq: number }[]; nextAfter: number | null } = await json(
        await call("GET", `${eventsPath(conversation)}?after=${after}&limit=3`, { token }),
      );
      seen.push(...page.events.map((e) => e.seq));
      after = page.nextAfter;
    }
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect((await call("GET", `${eventsPath(conversation)}?limit=0`, { token })).status).toBe(400);
  });

  it("reconstructs effective turns: delivered replies only, corrections applied, sensitive withheld by default", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    const events = [
      sourceEvent("s1", "m1", "What time is it in Lisbon?"),
      { kind: "proposal", idempotencyKey: "p1", body: { proposalId: "p1", agentId: "helper", replyToMessageId: "m1", text: "It is 14:00." } },
      { kind: "proposal", idempotencyKey: "p2", body: { proposalId: "p2", agentId: "helper", replyToMessageId: "m1", text: "never sent" } },
      { kind: "proposal", idempotencyKey: "p3", body: { proposalId: "p3", agentId: "other", replyToMessageId: "m1", text: "other agent" } },
      sourceEvent("s2", "m2", "my card is 4111", { sensitive: true }),
      sourceEvent("s3", "m3", "delete me"),
      { kind: "delivery", idempotencyKey: "d1", body: { status: "delivered", proposalId: "p1" } },
      { kind: "delivery", idempotencyKey: "d2", body: { status: "failed", proposalId: "p2", reason: "blocked" } },
      { kind: "delivery", idempotencyKey: "d3", body: { status: "delivered", proposalId: "p3" } },
      { kind: "correction", idempotencyKey: "c1", body: { action: "delete", targetMessageId: "m3" } },
      { kind: "correction", idempotencyKey: "c2", body: { action: "edit", targetMessageId: "m1", text: "What time is it in Porto?" } },
    ];
    expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } })).status).toBe(201);

    const view = await json<TurnsReply>(await call("GET", `/v1/conversations/${conversation}/turns?agents=helper`, { token }));
    expect(view.turns.map((t) => [t.id, t.role, t.text])).toEqual([
      ["s1", "user", "What time is it in Porto?"],
      ["p2", "assistant", "It is 14:00."],
    ]);
    const withSensitive = await json<TurnsReply>(await call("GET", `/v1/conversations/${conversation}/turns?sensitive=include`, { token }));
    expect(withSensitive.turns.map((t) => t.id)).toEqual(["s1", "p2", "p4", "s5"]);
    expect(withSensitive.turns.find((t) => t.id === "s5")?.sensitive).toBe(true);
    expect((await call("GET", `/v1/conversations/${conversation}/turns?agents=not%20valid`, { token })).status).toBe(400);
  });

  it("pages turns by whole groups", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    const events = [1, 2, 3].flatMap((n) => [
      sourceEvent(`s${n}`, `m${n}`, `question ${n}`),
      { kind: "proposal", idempotencyKey: `p${n}`, body: { proposalId: `p${n}`, agentId: "a", replyToMessageId: `m${n}`, text: `answer ${n}` } },
      { kind: "delivery", idempotencyKey: `d${n}`, body: { status: "delivered", proposalId: `p${n}` } },
    ]);
    await call("POST", eventsPath(conversation, "/batch"), { token, body: { events } });
    const first = await json<TurnsReply>(await call("GET", `/v1/conversations/${conversation}/turns?limit=3`, { token }));
    expect(first.turns.map((t) => t.text)).toEqual(["question 1", "answer 1", "question 2", "answer 2"]);
    expect(first.nextAfter).toBe(4);
    const second = await json<TurnsReply>(await call("GET", `/v1/conversations/${conversation}/turns?after=4&limit=3`, { token }));
    expect(second.turns.map((t) => t.text)).toEqual(["question 3", "answer 3"]);
    expect(second.nextAfter).toBeNull();
  });
});
