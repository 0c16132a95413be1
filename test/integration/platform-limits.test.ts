import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { invocation, LIMITS, limitedEnv, takeBreaches } from "../../bench/worker/limits";

/**
 * The tests run under Cloudflare's per-invocation limits (bench/worker/limits.ts, test/limits-check.ts):
 * a call past one throws with the limit's name, as the platform's would, and is kept for the test's
 * check even when the code that made it caught the throw.
 */

const limited = () => limitedEnv(env as unknown as Env);
/** An invocation under the limits, as the tests' Worker runs each. */
const enforced = { PLATFORM_LIMITS: "enforce" } as unknown as Env;

describe("the platform's limits, in the tests", () => {
  it("refuses the 1,001st D1 query of one invocation, and counts each statement of a batch", async () => {
    const db = limited().DB;
    const refused = invocation("probe: limits", enforced, async () => {
      await db.batch(Array.from({ length: 999 }, () => db.prepare("SELECT 1")));
      await db.prepare("SELECT 1").first();
      await db.prepare("SELECT 1").first();
    });
    await expect(refused).rejects.toThrow(/platform limit exceeded: d1Queries \(1001 > 1000\) in probe: limits/);
    expect(takeBreaches()).toEqual([expect.stringMatching(/^platform limit exceeded: d1Queries/)]);
    // A new invocation counts from zero.
    await invocation("probe: another", enforced, () => db.prepare("SELECT 1").first());
    expect(takeBreaches()).toEqual([]);
  });

  it("refuses a sendBatch of more than 100 messages, a statement with more than 100 parameters, and keeps what was caught", async () => {
    const { JOB_QUEUE, DB } = limited();
    await invocation("probe: limits", enforced, async () => {
      await expect(JOB_QUEUE.sendBatch(Array.from({ length: LIMITS.sendBatchMessages + 1 }, () => ({ body: { type: "noop" } })))).rejects.toThrow(/sendBatchMessages \(101 > 100\)/);
      expect(() => DB.prepare("SELECT ?").bind(...Array.from({ length: 101 }, () => 1))).toThrow(/boundParameters \(101 > 100\)/);
    });
    expect(takeBreaches().map((b) => b.split(" ")[3])).toEqual(["sendBatchMessages", "boundParameters"]);
  });
});
