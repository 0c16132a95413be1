import { describe, expect, it } from "vitest";
import type { ErrorBody } from "./helpers";
import { call, eventsPath, freshConversation, json, logRows, sourceEvent, tokenFor, totalEventRows } from "./helpers";


interface EventReply {
  event: { seq: number; hash: string; kind: string; idempotencyKey: string; recordedAt: string; body: Record<string, unknown> };
  duplicate: boolean;
}

describe("POST /v1/conversations/{conversation}/events", () => {
  it("appends the five event kinds with gap-free sequence numbers", async () => {
    const CONV = freshConversation();
    const token = await tokenFor(`${CONV.slice(0, CONV.lastIndexOf(":"))}:*`);
    const events = [
      sourceEvent("k-src", "m1", "Hello, can you book a table?"),
      { kind: "run", idempotencyKey: "k-run", body: { runId: "r1", agentId: "host", role: "agent", status: "completed", model: "m" } },
      { kind: "proposal", idempotencyKey: "k-prop", body: { proposalId: "p1", agentId: "host", runId: "r1", replyToMessageId: "m1", text: "For how many?" } },
      { kind: "delivery", idempotencyKey: "k-del", body: { status: "delivered", proposalId: "p1", externalMessageId: "900" } },
      { kind: "correction", idempotencyKey: "k-cor", body: { action: "edit", targetMessageId: "m1", text: "Hello, can you book a table for two?" } },
    ];
    const seqs: number[] = [];
    for (const event of events) {
      const res = await call("POST", eventsPath(CONV), { token, body: event });
      expect(res.status).toBe(201);
      const reply = await json<EventReply>(res);
      expect(reply.duplicate).toBe(false);
      expect(reply.event.kind).toBe(event.kind);
      expect(reply.event.hash).toMatch(/^[0-9a-f]{64}$/);
      seqs.push(reply.event.seq);
    }
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
    expect((await logRows(CONV)).map((r) => r.kind)).toEqual(["source", "run", "proposal", "delivery", "correction"]);
  });

  it("returns the original result for a replay and 409 for the same key with another payload", async () => {
    const CONV = freshConversation();
    const token = await tokenFor(CONV);
    const first = await json<EventReply>(await call("POST", eventsPath(CONV), { token, body: sourceEvent("same", "m1", "hi") }));
    const replay = await call("POST", eventsPath(CONV), { token, body: sourceEvent("same", "m1", "hi") });
    expect(replay.status).toBe(200);
    const replayed = await json<EventReply>(replay);
    expect(replayed.duplicate).toBe(true);
    expect(replayed.event).toEqual(first.event);

    const conflicting = await call("POST", eventsPath(CONV), { token, body: sourceEvent("same", "m1", "something else") });
    expect(conflicting.status).toBe(409);
    const error = await json<ErrorBody>(conflicting);
    expect(error.error.code).toBe("idempotency_conflict");
    expect(error.error["existingSeq"]).toBe(1);
    expect(await logRows(CONV)).toHaveLength(1);
  });

  it("checks expectedSeq, answering 409 with the current sequence", async () => {
    const CONV = freshConversation();
    const token = await tokenFor(CONV);
    const ok = await call("POST", eventsPath(CONV), { token, body: { ...sourceEvent("a", "m1", "one"), expectedSeq: 0 } });
    expect(ok.status).toBe(201);
    const stale = await call("POST", eventsPath(CONV), { token, body: { ...sourceEvent("b", "m2", "two"), expectedSeq: 0 } });
    expect(stale.status).toBe(409);
    const error = await json<ErrorBody>(stale);
    expect(error.error.code).toBe("sequence_conflict");
    expect(error.error["currentSeq"]).toBe(1);
    // A retry of the request that succeeded still gets its original answer despite the stale expectation.
    const retry = await call("POST", eventsPath(CONV), { token, body: { ...sourceEvent("a", "m1", "one"), expectedSeq: 0 } });
    expect(retry.status).toBe(200);
    expect((await json<EventReply>(retry)).event.seq).toBe(1);
    const next = await call("POST", eventsPath(CONV), { token, body: { ...sourceEvent("b", "m2", "two"), expectedSeq: 1 } });
    expect(next.status).toBe(201);
    expect(await logRows(CONV)).toHaveLength(2);
  });

  it("serializes concurrent appends to one conversation without gaps", async () => {
    const CONV = freshConversation();
    const token = await tokenFor(CONV);
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => call("POST", eventsPath(CONV), { token, body: sourceEvent(`c${i % 20}`, `m${i % 20}`, `text ${i % 20}`) })),
    );
    expect(responses.every((r) => r.status === 201 || r.status === 200)).toBe(true);
    const rows = await logRows(CONV);
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(new Set(rows.map((r) => r.idempotency_key)).size).toBe(20);
  });
});

describe("POST /v1/conversations/{conversation}/events/batch", () => {
  it("appends a backfill in order and replays it idempotently", async () => {
    const CONV = freshConversation();
    const token = await tokenFor(CONV);
    const events = Array.from({ length: 30 }, (_, i) => sourceEvent(`b${i}`, `m${i}`, `message ${i}`));
    const first = await call("POST", eventsPath(CONV, "/batch"), { token, body: { events, expectedSeq: 0 } });
    expect(first.status).toBe(201);
    const reply = await json<{ results: EventReply[]; lastSeq: number }>(first);
    expect(reply.lastSeq).toBe(30);
    expect(reply.results.map((r) => r.event.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));

    const again = await call("POST", eventsPath(CONV, "/batch"), { token, body: { events } });
    expect(again.status).toBe(200);
    const replayed = await json<{ results: EventReply[] }>(again);
    expect(replayed.results.every((r) => r.duplicate)).toBe(true);
    expect(await logRows(CONV)).toHaveLength(30);
  });

  it("is all-or-nothing: one conflicting key rejects the whole batch", async () => {
    const CONV = freshConversation();
    const token = await tokenFor(CONV);
    await call("POST", eventsPath(CONV), { token, body: sourceEvent("taken", "m0", "original") });
    const res = await call("POST", eventsPath(CONV, "/batch"), {
      token,
      body: { events: [sourceEvent("fresh-1", "m1", "a"), sourceEvent("taken", "m0", "changed"), sourceEvent("fresh-2", "m2", "b")] },
    });
    expect(res.status).toBe(409);
    expect((await json<ErrorBody>(res)).error).toMatchObject({ code: "idempotency_conflict", index: 1 });
    expect(await logRows(CONV)).toHaveLength(1);
  });

  it("stores a key repeated inside one batch once", async () => {
    const CONV = freshConversation();
    const token = await tokenFor(CONV);
    const res = await call("POST", eventsPath(CONV, "/batch"), {
      token,
      body: { events: [sourceEvent("x", "m1", "a"), sourceEvent("x", "m1", "a"), sourceEvent("y", "m2", "b")] },
    });
    expect(res.status).toBe(201);
    const reply = await json<{ results: EventReply[] }>(res);
    expect(reply.results.map((r) => [r.event.seq, r.duplicate])).toEqual([
      [1, false],
      [1, true],
      [2, false],
    ]);
  });
});

describe("bad input changes nothing", () => {
  const cases: [string, { raw?: string; body?: unknown; headers?: Record<string, string> }, number, string][] = [
    ["malformed JSON", { raw: "{not json" }, 400, "invalid_json"],
    ["unknown kind", { body: { kind: "reaction", idempotencyKey: "k", body: {} } }, 400, "validation_failed"],
    ["missing idempotency key", { body: { kind: "source", body: { messageId: "m", author: { id: "u" }, text: "x" } } }, 400, "validation_failed"],
    ["missing body fields", { body: { kind: "source", idempotencyKey: "k", body: { text: "x" } } }, 400, "validation_failed"],
    ["wrong types", { body: { kind: "source", idempotencyKey: 7, sensitive: "yes", body: { messageId: 1, author: { id: "u" }, text: 5 } } }, 400, "validation_failed"],
    ["unknown fields", { body: { ...sourceEvent("k", "m", "x"), admin: true } }, 400, "validation_failed"],
    ["edit without text", { body: { kind: "correction", idempotencyKey: "k", body: { action: "edit", targetMessageId: "m" } } }, 400, "validation_failed"],
    ["oversize text", { body: sourceEvent("k", "m", "x".repeat(200_001)) }, 400, "validation_failed"],
    ["oversize body", { raw: JSON.stringify(sourceEvent("k", "m", "x".repeat(1_100_000))) }, 413, "payload_too_large"],
    ["not JSON content type", { raw: "kind=source", headers: { "content-type": "application/x-www-form-urlencoded" } }, 415, "unsupported_media_type"],
    ["negative expectedSeq", { body: { ...sourceEvent("k", "m", "x"), expectedSeq: -1 } }, 400, "validation_failed"],
  ];
  it.each(cases)("%s → %i %s", async (_name, request, status, code) => {
    const CONV = freshConversation();
    const token = await tokenFor(CONV);
    const before = await totalEventRows();
    const res = await call("POST", eventsPath(CONV), { token, ...request });
    expect(res.status).toBe(status);
    const body = await json<ErrorBody>(res);
    expect(body.error.code).toBe(code);
    expect(body.error.message.length).toBeGreaterThan(0);
    expect(await totalEventRows()).toBe(before);
  });

  it("refuses compactor runs and reserved idempotency keys from clients", async () => {
    const CONV = freshConversation();
    const token = await tokenFor(CONV);
    const before = await totalEventRows();
    const forgedReceipt = { kind: "run", idempotencyKey: "receipt", body: { runId: "r", agentId: "a.compactor", role: "compactor", status: "completed" } };
    for (const body of [forgedReceipt, sourceEvent("run:cmp_x:completed", "m", "x"), sourceEvent("tg:update:1", "m", "x")]) {
      const res = await call("POST", eventsPath(CONV), { token, body });
      expect(res.status).toBe(403);
      expect((await json<ErrorBody>(res)).error.code).toBe("forbidden");
    }
    const batch = await call("POST", eventsPath(CONV, "/batch"), { token, body: { events: [sourceEvent("ok", "m", "x"), forgedReceipt] } });
    expect(batch.status).toBe(403);
    expect((await json<ErrorBody>(batch)).error["index"]).toBe(1);
    expect(await totalEventRows()).toBe(before);
  });

  it("rejects a malformed conversation id", async () => {
    const token = await tokenFor("*");
    const before = await totalEventRows();
    const res = await call("POST", eventsPath("mastodon:123"), { token, body: sourceEvent("k", "m", "x") });
    expect(res.status).toBe(400);
    expect(await totalEventRows()).toBe(before);
  });

  it("rejects an empty batch and an oversize batch", async () => {
    const CONV = freshConversation();
    const token = await tokenFor(CONV);
    const before = await totalEventRows();
    for (const events of [[], Array.from({ length: 101 }, (_, i) => sourceEvent(`k${i}`, `m${i}`, "x"))]) {
      const res = await call("POST", eventsPath(CONV, "/batch"), { token, body: { events } });
      expect(res.status).toBe(400);
    }
    expect(await totalEventRows()).toBe(before);
  });
});
