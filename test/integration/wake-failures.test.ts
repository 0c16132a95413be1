import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Wake } from "../../src/core/wakeups";
import { wakeKey } from "../../src/core/wakeups";
import { WAKE_FAILURES_BEFORE_INCIDENT, WAKE_RETRY_BASE_MS } from "../../src/core/wake-retries";
import { conversationStub } from "../../src/durable/stub";
import { WakeupBook, wakeFailed, wakeSucceeded } from "../../src/durable/wakeups";
import { placedShardOf } from "../support/shards";
import { freshConversation } from "./helpers";
import { incidentRows } from "../support/incidents";

/**
 * A deadline of a conversation's object whose handler keeps failing (or the preflight a catch-up
 * stands in for) is retried with backoff, and once it has failed `WAKE_FAILURES_BEFORE_INCIDENT`
 * times in a row it is one open `wake_failure` incident that counts the rest, closed by the next
 * success. Driven here through the object's own storage (`runInDurableObject`) with a fixed clock,
 * so the schedule is read exactly, not waited for.
 */

const lost = new Error("D1_ERROR: Network connection lost.");

describe("a deadline that keeps failing", () => {
  it("is retried with doubling backoff, raises exactly one incident however often it fails, and closes it on the next success", async () => {
    const conversation = freshConversation("api:wakes");
    await placedShardOf(conversation);
    // A day ahead: the platform moves an alarm set in the past to now, and none of these may fire during the test.
    const t0 = Date.now() + 86_400_000;
    const due: Wake = { kind: "catch_up", at: t0 };
    const schedule = await runInDurableObject(conversationStub(env, conversation), async (_instance, state) => {
      const book = new WakeupBook(state.storage);
      const retries: number[] = [];
      for (let i = 0; i < 5; i++) {
        await wakeFailed(env, book, conversation, wakeKey.catchUp, due, lost, new Date(t0));
        retries.push(((await book.get(wakeKey.catchUp))?.at ?? 0) - t0);
      }
      return { retries, alarm: await state.storage.getAlarm(), wakes: [...(await book.list()).keys()] };
    });
    // Backoff doubles from the base; the one platform alarm follows the deadline; nothing else is a deadline.
    expect(schedule.retries).toEqual([1, 2, 4, 8, 16].map((n) => n * WAKE_RETRY_BASE_MS));
    expect(schedule.alarm).toBe(t0 + 16 * WAKE_RETRY_BASE_MS);
    expect(schedule.wakes).toEqual([wakeKey.catchUp]);
    // Below the threshold it was a blip; from it on, one incident counting every failure in the streak.
    expect(WAKE_FAILURES_BEFORE_INCIDENT).toBeLessThan(5);
    expect(await incidentRows(conversation)).toEqual([{ agent_id: "", run_id: null, kind: "wake_failure", code: "catch_up", count: 5, open: 1 }]);

    // The handler succeeds: the streak is over and so is the incident; the next failure starts afresh.
    await runInDurableObject(conversationStub(env, conversation), async (_instance, state) => {
      const book = new WakeupBook(state.storage);
      await wakeSucceeded(env, book, conversation, wakeKey.catchUp, due);
      await wakeFailed(env, book, conversation, wakeKey.catchUp, due, lost, new Date(t0));
      expect(((await book.get(wakeKey.catchUp))?.at ?? 0) - t0).toBe(WAKE_RETRY_BASE_MS);
    });
    expect(await incidentRows(conversation)).toEqual([{ agent_id: "", run_id: null, kind: "wake_failure", code: "catch_up", count: 5, open: 0 }]);
  });

  it("names the chain of an agent's deadline, and a success below the threshold raises nothing", async () => {
    const conversation = freshConversation("api:wakes");
    await placedShardOf(conversation);
    const t0 = Date.now() + 86_400_000;
    const watchdog: Wake = { kind: "plan_watchdog", at: t0, agentId: "wake-agent", epochId: "v1:e", runId: "cmp_1", planCreatedAt: t0 - 1_000, dispatches: 1, stalledReported: false };
    const key = wakeKey.watchdog("wake-agent");
    await runInDurableObject(conversationStub(env, conversation), async (_instance, state) => {
      const book = new WakeupBook(state.storage);
      for (let i = 1; i < WAKE_FAILURES_BEFORE_INCIDENT; i++) await wakeFailed(env, book, conversation, key, watchdog, lost, new Date(t0));
      await wakeSucceeded(env, book, conversation, key, watchdog);
      for (let i = 0; i < WAKE_FAILURES_BEFORE_INCIDENT; i++) await wakeFailed(env, book, conversation, key, watchdog, lost, new Date(t0));
    });
    expect(await incidentRows(conversation)).toEqual([{ agent_id: "wake-agent", run_id: "cmp_1", kind: "wake_failure", code: "plan_watchdog", count: WAKE_FAILURES_BEFORE_INCIDENT, open: 1 }]);
  });
});
