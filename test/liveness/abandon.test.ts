import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { wakeKey } from "../../src/core/wakeups";
import { conversationStub } from "../../src/durable/stub";
import { readIncidents } from "../support/reads";
import { shardOf } from "../support/shards";
import { changeObjectEnv } from "../integration/seams-faults";
import { deliver } from "../support/queue";
import { sayUntilPlanned, sentJobs, setup } from "./harness";

/**
 * A dead-lettered plan is abandoned once, and its chain always backs off to a re-plan: the
 * operator's notice of the abandonment is a send that can fail after the incident row is written,
 * and the dead letter's retry then finds the plan abandoned already; it must still arm the re-plan.
 */

const replanArmed = (conversation: string, agentId: string) =>
  runInDurableObject(conversationStub(env, conversation), async (_instance, state) => state.storage.get(wakeKey.replan(agentId)));

describe("abandoning a dead-lettered plan", () => {
  it("arms the chain's re-plan even when the operator's notice fails after the incident is written, and the retry records no second incident", async () => {
    const { conversation, agentId, token } = await setup();
    let notices = 0;
    const restore = await changeObjectEnv(conversation, (objectEnv) => ({
      ...objectEnv,
      REPLY_QUEUE: {
        send: async (...args: Parameters<Queue["send"]>) => {
          const [body] = args;
          if ((body as { type?: string }).type === "notice" && ++notices === 1) throw new Error("Queue send failed: Network connection lost.");
          return objectEnv.REPLY_QUEUE.send(...args);
        },
        sendBatch: (...args: Parameters<Queue["sendBatch"]>) => objectEnv.REPLY_QUEUE.sendBatch(...args),
      } as Queue,
    }));
    try {
      const runId = await sayUntilPlanned(token, conversation, agentId);
      const [job] = await sentJobs(runId, 1);
      if (job === undefined) throw new Error("no job sent");
      // The dead letter's first delivery: the incident row is written, the notice's send fails, and the delivery is retried.
      expect((await deliver("foldline-compaction-dlq", [job])).retryMessages.map((m) => m.msgId)).toEqual(["msg-0"]);
      expect(notices).toBe(1);
      // Its retry: the plan is abandoned already.
      expect((await deliver("foldline-compaction-dlq", [job], { attempts: 2 })).retryMessages).toEqual([]);
      expect(await replanArmed(conversation, agentId)).toMatchObject({ kind: "replan", agentId });
      const abandoned = (await readIncidents(await shardOf(conversation), conversation, 10)).filter((i) => i.kind === "compactor_abandoned");
      expect(abandoned.map((i) => i.runId)).toEqual([runId]);
    } finally {
      await restore();
    }
  }, 60_000);
});
