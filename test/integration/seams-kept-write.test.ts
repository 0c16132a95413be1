import { env } from "cloudflare:workers";
import { afterAll, describe, expect, it } from "vitest";
import { declarationRevision } from "../../src/storage/control/declarations";
import { raiseRevisionStatement } from "../../src/storage/declaration-revision";
import { shardsOf } from "../../src/storage/shards";
import { mapDatabases } from "../../bench/worker/databases";
import { register } from "../support/declarations";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";
import { changeObjectEnv, failFirst, faultyD1, mentions } from "./seams-faults";

/**
 * A write that was kept is acknowledged. The one-round-trip source append writes the source, then
 * (when the shard's copy of the declarations' revision is behind the one the object confirmed)
 * raises that copy in a follow-up call. When that follow-up fails, the source is already stored:
 * the client must hear 201, the object's head must not go stale, and the source's preflight must
 * still run.
 */

interface Logged {
  readonly seq: number;
  readonly kind: string;
  readonly idempotencyKey: string;
  readonly body: { readonly status?: string; readonly detail?: { readonly sourceSeq?: number; readonly reason?: string } };
}

async function log(token: string, conversation: string): Promise<Logged[]> {
  return (await json<{ events: Logged[] }>(await call("GET", `${eventsPath(conversation)}?limit=500`, { token }))).events;
}

const message = (n: number, extra: Record<string, unknown> = {}) => sourceEvent(`s${n}`, `m${n}`, `Message ${n}: the venue holds ${40 + n} people.`, extra);

afterAll(async () => {
  // Later files in this workerd find every shard's copy current, as a finished registration leaves it.
  const revision = await declarationRevision(env.DB);
  await Promise.all(shardsOf(env).map((shard) => raiseRevisionStatement(shard.db, revision).run()));
});

describe("a source append whose revision raise fails", () => {
  it("is acknowledged, keeps the object's head current, and still preflights the source", async () => {
    const conversation = freshConversation("api:seams-kept");
    const agentId = `seams-kept-${Date.now().toString(36)}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], historyAgents: [agentId, "host"], trigger: 60_000 })).status).toBe(201);
    // A registration that moved the control database's revision and did not get to raise the shards' copies.
    await env.DB.prepare("UPDATE declaration_revision SET revision = revision + 1 WHERE id = 1").run();
    const raise = failFirst((c) => c.method === "run" && mentions(c, "UPDATE declaration_revision"));
    await changeObjectEnv(conversation, (objectEnv) => mapDatabases(objectEnv, (db, name) => (name === "DB" ? db : faultyD1(db, raise))));

    // The first source warms the object (declarations and chain held); the second takes the one-round-trip path.
    const first = await call("POST", eventsPath(conversation), { token, body: message(1) });
    expect(first.status, await first.clone().text()).toBe(201);
    const second = await call("POST", eventsPath(conversation), { token, body: message(2) });
    expect(raise.fired).toBe(1);
    expect(second.status, await second.clone().text()).toBe(201);
    const stored = (await json<{ event: { seq: number } }>(second)).event.seq;
    expect((await log(token, conversation)).find((e) => e.idempotencyKey === "s2")?.seq).toBe(stored);

    // The object's head is current: an append that names the log's last sequence number is taken.
    const head = (await log(token, conversation)).at(-1)?.seq;
    const third = await call("POST", eventsPath(conversation), { token, body: message(3, { expectedSeq: head }) });
    expect(third.status, await third.clone().text()).toBe(201);

    // A retry of the kept source is a replay, and writes nothing.
    const before = await log(token, conversation);
    const retried = await call("POST", eventsPath(conversation), { token, body: message(2) });
    expect(retried.status).toBe(200);
    expect((await json<{ duplicate: boolean }>(retried)).duplicate).toBe(true);
    expect(await log(token, conversation)).toEqual(before);

    // Every source was preflighted once: its skipped run, below the trigger.
    const events = await log(token, conversation);
    const sources = events.filter((e) => e.kind === "source");
    expect(sources.map((e) => e.idempotencyKey)).toEqual(["s1", "s2", "s3"]);
    const skips = events.filter((e) => e.kind === "run" && e.body.status === "skipped");
    expect(skips.map((e) => e.body.detail?.sourceSeq)).toEqual(sources.map((e) => e.seq));
    for (const skip of skips) expect(skip.body.detail?.reason).toBe("below_trigger");
  });
});
