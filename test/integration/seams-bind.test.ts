import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { chooseShard, openShards } from "../../src/storage/shards";
import { call, eventsPath, freshConversation, json, logRows, sourceEvent, tokenFor } from "./helpers";
import type { D1Call } from "./seams-faults";
import { changeObjectEnv, failFirst, faultyD1, mentions, placementRows } from "./seams-faults";

/**
 * A conversation's object binds itself to its conversation and shard on its first call. A bind
 * that fails (the control database unreachable while placing) must leave the object as it was, so
 * the next call binds it again instead of finding it half-bound for the rest of its life.
 */

const placing = (call: D1Call) => call.method === "batch" && mentions(call, "conversation_placements");

describe("a failed placement", () => {
  for (const when of ["before", "after"] as const) {
    it(`is retried by the next call (control database fails ${when === "before" ? "before placing" : "after placing, its answer lost"})`, async () => {
      const conversation = freshConversation("api:seams-bind");
      const token = await tokenFor(conversation);
      const fault = failFirst(placing, { when });
      await changeObjectEnv(conversation, (objectEnv) => ({ ...objectEnv, DB: faultyD1(objectEnv.DB, fault) }));

      const first = await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") });
      expect(fault.fired).toBe(1);
      expect(first.status, await first.clone().text()).toBeGreaterThanOrEqual(500);
      expect(await logRows(conversation)).toEqual([]);

      // The retry binds the object afresh and places the conversation: stored once.
      const retry = await call("POST", eventsPath(conversation), { token, body: sourceEvent("k1", "1", "hello") });
      expect(retry.status, await retry.clone().text()).toBe(201);
      expect((await json<{ event: { seq: number } }>(retry)).event.seq).toBe(1);
      const later = await call("POST", eventsPath(conversation), { token, body: sourceEvent("k2", "2", "again") });
      expect(later.status, await later.clone().text()).toBe(201);
      expect((await logRows(conversation)).map((row) => [row.seq, row.idempotency_key])).toEqual([
        [1, "k1"],
        [2, "k2"],
      ]);
      expect(await placementRows(conversation)).toEqual([{ shard: chooseShard(conversation, openShards(env)).name }]);
    });
  }
});
