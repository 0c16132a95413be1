import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { mapDatabases } from "../../bench/worker/databases";
import type { ChainHealth } from "../../src/api/chain";
import { conversationStub } from "../../src/durable/stub";
import type { ErrorBody } from "../integration/helpers";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "../integration/helpers";
import { changeObjectEnv, faultyD1, mentions } from "../integration/seams-faults";
import type { D1Call, Verdict } from "../integration/seams-faults";
import { contextPath, verify } from "../support/anchored-chain";
import { waitFor } from "../support/chain";
import { register } from "../support/declarations";
import { compactionJobFor, deliver } from "../support/queue";
import { shardOf } from "../support/shards";
import { say } from "./harness";

/**
 * A chain whose compactions keep failing must not cost its conversation's object memory (or a
 * wake's reads) that grow with the backlog: past its bound (`HOT_WINDOW_EVENTS`, 48 in this
 * project, for an agent capped at 8 messages) it holds the oldest part of its uncovered history,
 * refuses context with `compaction_behind` under one open incident, and catches up from the part it
 * holds once compactions run again. Here nothing runs a job but the test (./harness.ts), so a
 * plan stays open until the test delivers it.
 */

const BOUND = 48;

async function behindIncident(conversation: string, agentId: string): Promise<{ count: number; open: number } | undefined> {
  const row = await (await shardOf(conversation))
    .prepare("SELECT count, open FROM incidents WHERE conversation_id = ? AND agent_id = ? AND kind = 'compaction_stalled' AND code = 'window_bound' ORDER BY id DESC LIMIT 1")
    .bind(conversation, agentId)
    .first<{ count: number; open: number }>();
  return row ?? undefined;
}

/** An agent capped at 8 messages whose first plan opens and is never run, then three bounds' worth of messages. */
async function fallenBehind() {
  const conversation = freshConversation("api:behind");
  const agentId = `behind-${Date.now().toString(36)}`;
  const token = await tokenFor(conversation, `agent:${agentId}`);
  expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, maxMessages: 8 })).status).toBe(201);
  const stub = conversationStub(env, conversation);
  let runId: string | null = null;
  for (let i = 0; i < 3 * BOUND; i++) {
    await say(token, conversation);
    runId ??= (await stub.describeChain(conversation, agentId))?.openRunId ?? null;
  }
  if (runId === null) throw new Error("no plan opened");
  return { conversation, agentId, token, stub, runId };
}

type Fallen = Awaited<ReturnType<typeof fallenBehind>>;

/**
 * Runs each plan the chain opens until it has none open and holds its whole uncovered history,
 * holding it to its bound after each; a chain that has no plan open while behind is waiting for
 * its catch-up deadline. Returns how many plans ran.
 */
async function catchUp({ conversation, agentId, stub }: Fallen): Promise<number> {
  let plans = 0;
  for (;;) {
    const state = await waitFor(async () => {
      const s = await stub.describeChain(conversation, agentId);
      return s !== undefined && (s.openRunId !== null || s.behindThroughSeq === null) ? s : undefined;
    }, "a plan to run, or the chain caught up");
    expect(state.heldEvents).toBeLessThanOrEqual(BOUND);
    if (state.openRunId === null) return plans;
    if (++plans > 40) throw new Error("the chain did not catch up in 40 plans");
    expect((await deliver("foldline-compaction", [await compactionJobFor(conversation, agentId, state.openRunId)])).explicitAcks).toEqual(["msg-0"]);
  }
}

async function expectServedAgain({ conversation, agentId, token }: Fallen, plans: number): Promise<void> {
  expect((await call("GET", contextPath(conversation, agentId), { token })).status).toBe(200);
  expect((await behindIncident(conversation, agentId))?.open).toBe(0);
  // Every link the catch-up settled, each planned as of the part the chain held, verifies.
  const audit = await verify(token, conversation, agentId);
  expect(audit.valid).toBe(true);
  expect(audit.epochs[0]?.links.length).toBe(plans);
}

describe("a chain whose compactions fall behind", () => {
  it("holds at most its bound, refuses context under one incident while behind, and catches up once its plans run", async () => {
    const fallen = await fallenBehind();
    const { conversation, agentId, token, stub, runId } = fallen;
    const held = await stub.describeChain(conversation, agentId);
    expect(held?.heldEvents).toBeLessThanOrEqual(BOUND);
    expect(held?.behindThroughSeq).toBeTypeOf("number");
    expect(held?.openRunId).toBe(runId);

    // No context without its recent tail: refused, typed, and counted on one open incident.
    for (let i = 0; i < 2; i++) {
      const res = await call("GET", contextPath(conversation, agentId), { token });
      expect(res.status).toBe(409);
      expect((await json<ErrorBody>(res)).error).toMatchObject({ code: "compaction_behind", throughSeq: held?.behindThroughSeq });
    }
    expect(await behindIncident(conversation, agentId)).toEqual({ count: 3, open: 1 });
    // The operator sees it in the chain's health.
    const listing = await json<{ health: ChainHealth }>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/chain?agent=${agentId}`, { token }));
    expect(listing.health.behindThroughSeq).toBe(held?.behindThroughSeq);
    // Its last failure is the bound's, or, on a machine slow enough that the open plan's own
    // deadline passed meanwhile (nothing runs it here), that plan's stall: both are true of it.
    expect(listing.health.lastFailure?.kind).toBe("compaction_stalled");
    expect(["window_bound", "plan_stalled"]).toContain(listing.health.lastFailure?.code);

    // A woken object reads at most its bound again, whatever the backlog, and counts what it found.
    await evictDurableObject(stub);
    const woken = await stub.describeChain(conversation, agentId);
    expect(woken?.heldEvents).toBeLessThanOrEqual(BOUND);
    expect(woken?.behindThroughSeq).toBe(held?.behindThroughSeq);
    expect(await behindIncident(conversation, agentId)).toEqual({ count: 4, open: 1 });

    // Compactions run again: each settled plan lets the chain read on and plan the next, from the
    // part it holds, until it holds its whole uncovered history.
    const plans = await catchUp(fallen);
    expect(plans).toBeGreaterThan(1);
    await expectServedAgain(fallen, plans);
  });

  it("plans from the part it holds when one batch puts it behind before it ever planned", async () => {
    const conversation = freshConversation("api:behind");
    const agentId = `behind-${Date.now().toString(36)}-batch`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, maxMessages: 8 })).status).toBe(201);
    const events = Array.from({ length: 70 }, (_, i) => sourceEvent(`b${i}`, `b${i}`, `Batch message ${i}: the team compares Lisbon and Porto for the offsite; Ada wants flights under ${200 + i} euros.`));
    expect((await call("POST", `${eventsPath(conversation)}/batch`, { token, body: { events } })).status).toBe(201);
    // The object read the chain after the write, already past its bound: behind, and planning.
    const state = await conversationStub(env, conversation).describeChain(conversation, agentId);
    expect(state?.behindThroughSeq).toBeTypeOf("number");
    expect(state?.heldEvents).toBeLessThanOrEqual(BOUND);
    expect(state?.openRunId).toBeTypeOf("string");
    const fallen = { conversation, agentId, token, stub: conversationStub(env, conversation), runId: state?.openRunId ?? "" };
    await expectServedAgain(fallen, await catchUp(fallen));
  });

  it("raises its incident when the object next reads it, if the write that fell behind lost it, and the append is still acknowledged", async () => {
    const conversation = freshConversation("api:behind");
    const agentId = `behind-${Date.now().toString(36)}-raise`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, maxMessages: 8 })).status).toBe(201);
    const stub = conversationStub(env, conversation);
    await say(token, conversation);
    // A fresh object, given databases where the first raised incident is lost.
    await evictDurableObject(stub);
    let failed = 0;
    const judge = (call: D1Call): Verdict => {
      if (failed > 0 || !mentions(call, "INSERT INTO incidents") || !mentions(call, "ON CONFLICT")) return undefined;
      failed += 1;
      return { when: "before", error: () => new Error("D1_ERROR: Network connection lost.") };
    };
    const restore = await changeObjectEnv(conversation, (objectEnv) => mapDatabases(objectEnv, (db, name) => (name === "DB" ? db : faultyD1(db, judge))));
    try {
      // Every message is acknowledged (say expects 201), the one that puts the chain behind too.
      for (let i = 0; i < 2 * BOUND && failed === 0; i++) await say(token, conversation);
    } finally {
      await restore();
    }
    expect(failed).toBe(1);
    const state = await stub.describeChain(conversation, agentId);
    expect(state?.behindThroughSeq).toBeTypeOf("number");
    expect(state?.heldEvents).toBeLessThanOrEqual(BOUND);
    expect(await behindIncident(conversation, agentId)).toEqual({ count: 1, open: 1 });
  });

  it("catches up all the same when reading on after a settled boundary fails: the chain is read again within its bound", async () => {
    const fallen = await fallenBehind();
    const { conversation, agentId, runId } = fallen;
    // The boundary is stored; the next read of the log after it (the chain reading on) is lost.
    let stored = false;
    let failed = 0;
    const judge = (call: D1Call): Verdict => {
      if (mentions(call, "INSERT INTO boundaries")) stored = true;
      else if (stored && failed === 0 && mentions(call, "ORDER BY seq LIMIT")) {
        failed += 1;
        return { when: "before", error: () => new Error("D1_ERROR: Network connection lost.") };
      }
      return undefined;
    };
    // A fresh object, given the faulty databases before anything binds it.
    await evictDurableObject(fallen.stub);
    const restore = await changeObjectEnv(conversation, (objectEnv) => mapDatabases(objectEnv, (db, name) => (name === "DB" ? db : faultyD1(db, judge))));
    try {
      expect((await deliver("foldline-compaction", [await compactionJobFor(conversation, agentId, runId)])).explicitAcks).toEqual(["msg-0"]);
    } finally {
      await restore();
    }
    expect(failed).toBe(1);
    const plans = await catchUp(fallen);
    await expectServedAgain(fallen, plans + 1);
  });
});
