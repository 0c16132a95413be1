import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { placeConversation, shardsOf } from "../../src/storage/shards";
import { mapDatabases } from "../../bench/worker/databases";
import type { ErrorBody } from "./helpers";
import { BOT_ID, call, eventsPath, freshConversation, json, logRows, sourceEvent, textUpdate, tokenFor, webhook } from "./helpers";
import type { D1Call } from "./seams-faults";
import { changeObjectEnv, failFirst, faultyD1, mentions, placementRows } from "./seams-faults";

/**
 * Answers a client can act on. A failure a retry will fix (a D1, R2 or Durable Object call that
 * threw or timed out) is `503 unavailable` with `Retry-After`; a deployment whose shards cannot
 * serve a conversation says which shard, with the same code; anything else stays `500 internal`.
 * The Telegram webhook answers 5xx for them, so Telegram delivers the update again.
 */

const ALL_CLOSED = shardsOf(env).map((shard) => shard.name).join(",");

/** The object's env with every shard named in `SHARDS_CLOSED`, as a deployment that closed them all. */
const closingAll = (objectEnv: Env) => ({ ...objectEnv, SHARDS_CLOSED: ALL_CLOSED }) as unknown as Env;

/** The first write of events to a conversation's shard. */
const writingEvents = (c: D1Call) => c.method === "batch" && mentions(c, "INSERT INTO log");

/** The object's env with every shard database under `judge`; the control database as it was. */
const shardsUnder = (judge: Parameters<typeof faultyD1>[1]) => (objectEnv: Env) => mapDatabases(objectEnv, (db, name) => (name === "DB" ? db : faultyD1(db, judge)));

/** The object's env without the binding `name`, as a Worker deployed without it sees it. */
const without = (name: string) => (objectEnv: Env) => {
  const bound: Record<string, unknown> = { ...(objectEnv as unknown as Record<string, unknown>) };
  delete bound[name];
  return bound as unknown as Env;
};

async function expectUnavailable(res: Response): Promise<ErrorBody["error"]> {
  const body = await res.clone().text();
  expect(res.status, body).toBe(503);
  expect(res.headers.get("retry-after"), body).toMatch(/^[1-9][0-9]*$/);
  const { error } = await json<ErrorBody>(res);
  expect(error.code).toBe("unavailable");
  expect(error["retryAfterSeconds"]).toBe(Number(res.headers.get("retry-after")));
  return error;
}

const freshChat = (): number => 700_000_000 + Math.floor(Math.random() * 100_000_000);

describe("a D1 failure during an append", () => {
  it("answers 503 with Retry-After when the write was refused, and the retry stores it once", async () => {
    const conversation = freshConversation("api:seams-503");
    const token = await tokenFor(conversation);
    const fault = failFirst(writingEvents);
    await changeObjectEnv(conversation, shardsUnder(fault));
    await expectUnavailable(await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") }));
    expect(fault.fired).toBe(1);
    expect(await logRows(conversation)).toEqual([]);

    const retry = await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") });
    expect(retry.status, await retry.clone().text()).toBe(201);
    expect((await logRows(conversation)).map((row) => row.idempotency_key)).toEqual(["k1"]);
  });

  it("answers 503 when the write was kept but its answer lost, and the retry is its replay: stored once", async () => {
    const conversation = freshConversation("api:seams-503");
    const token = await tokenFor(conversation);
    const fault = failFirst(writingEvents, { when: "after" });
    await changeObjectEnv(conversation, shardsUnder(fault));
    await expectUnavailable(await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") }));
    expect(fault.fired).toBe(1);

    const retry = await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") });
    expect(retry.status, await retry.clone().text()).toBe(200);
    expect((await json<{ duplicate: boolean }>(retry)).duplicate).toBe(true);
    const next = await call("POST", eventsPath(conversation), { token, body: sourceEvent("k2", "2", "and then") });
    expect(next.status, await next.clone().text()).toBe(201);
    expect((await logRows(conversation)).map((row) => [row.seq, row.idempotency_key])).toEqual([
      [1, "k1"],
      [2, "k2"],
    ]);
  });

  it("keeps a programming error a logged 500 internal, without Retry-After, and the object serves the next call", async () => {
    const conversation = freshConversation("api:seams-503");
    const token = await tokenFor(conversation);
    const fault = failFirst(writingEvents, { error: () => new TypeError("Cannot read properties of undefined (reading 'seq')") });
    await changeObjectEnv(conversation, shardsUnder(fault));
    const res = await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") });
    expect(res.status).toBe(500);
    expect(res.headers.get("retry-after")).toBeNull();
    expect((await json<ErrorBody>(res)).error.code).toBe("internal");
    const retry = await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") });
    expect(retry.status, await retry.clone().text()).toBe(201);
  });
});

describe("shards that cannot serve a conversation", () => {
  it("names the shard a conversation is placed on when the Worker does not bind it, for writes and reads", async () => {
    const conversation = freshConversation("api:seams-unbound");
    const agent = `seams-unbound-${Date.now().toString(36)}`;
    const token = await tokenFor(conversation, `agent:${agent}`);
    const { name } = await placeConversation(env, conversation);
    await changeObjectEnv(conversation, without(name));

    const appended = await expectUnavailable(await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") }));
    expect(appended.message).toContain(name);
    expect(appended["shard"]).toBe(name);
    expect(appended["reason"]).toBe("shard_unbound");
    const context = await expectUnavailable(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${agent}`, { token }));
    expect(context["shard"]).toBe(name);
    expect(await logRows(conversation)).toEqual([]);
  });

  it("refuses a new conversation with 503 while every shard is closed, places nothing, and takes the retry once one opens", async () => {
    const conversation = freshConversation("api:seams-closed");
    const token = await tokenFor(conversation);
    const reopen = await changeObjectEnv(conversation, closingAll);
    const refused = await expectUnavailable(await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") }));
    expect(refused["reason"]).toBe("no_open_shard");
    expect(await placementRows(conversation)).toEqual([]);

    await reopen();
    const retry = await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") });
    expect(retry.status, await retry.clone().text()).toBe(201);
    expect((await logRows(conversation)).map((row) => row.idempotency_key)).toEqual(["k1"]);
  });

  it("answers Telegram 503 while every shard is closed, so the update is delivered again and stored once", async () => {
    const chat = freshChat();
    const conversation = `telegram:${BOT_ID}:${chat}`;
    const update = textUpdate(chat % 1_000_000, chat, "hello while closed");
    const reopen = await changeObjectEnv(conversation, closingAll);
    await expectUnavailable(await webhook(update));
    expect(await placementRows(conversation)).toEqual([]);

    await reopen();
    const redelivered = await webhook(update);
    expect(redelivered.status, await redelivered.clone().text()).toBe(200);
    expect(await json(redelivered)).toMatchObject({ ok: true, seq: 1, duplicate: false });
    expect(await logRows(conversation)).toHaveLength(1);
  });
});
