import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ModelEvidence } from "../../src/core/boundary";
import type { CompactionContent } from "../../src/core/packet";
import { OUTPUT_CONTRACT } from "../../src/core/packet";
import { readIncidents } from "../support/reads";
import { shardOf } from "../support/shards";
import { waitFor } from "../support/chain";
import { deliver } from "../support/queue";
import { sayUntilPlanned, sentJobs, setup } from "./harness";

/**
 * What settlement refuses, where nothing but the test runs a job (./harness.ts) and the jobs it
 * delivers are the ones the object sent: each refusal is read from the object's answer and the
 * rows it left, and the same plan is then shown to settle, so a refusal cannot be mistaken for a
 * chain that was never going to settle.
 */

const CONTENT: CompactionContent = {
  contract: OUTPUT_CONTRACT,
  mode: "projection",
  summary: "The team compared Lisbon and Porto for the offsite; Ada wants cheap flights and a garden.",
  preview: "The team compared Lisbon and Porto for the offsite.",
  salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] },
  degraded: false,
};
const MODEL: ModelEvidence = { provider: "foldline-extractive", model: "foldline-extractive-1", responseId: null, finishReason: "stop", usage: null, latencyMs: 1 };

const boundaryOf = (runId: string): string => `bnd_${runId.replace(/^cmp_/, "")}`;

/** The conversation's boundary rows, straight from its shard: what settling wrote, whatever the object says. */
async function boundaryRows(conversation: string): Promise<{ run_id: string; previous_id: string }[]> {
  const { results } = await (await shardOf(conversation)).prepare("SELECT run_id, previous_id FROM boundaries WHERE conversation_id = ? ORDER BY position").bind(conversation).all<{ run_id: string; previous_id: string }>();
  return results;
}

async function completedRuns(conversation: string): Promise<number> {
  const row = await (await shardOf(conversation)).prepare("SELECT COUNT(*) AS n FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) AND kind = 'run' AND json_extract(body, '$.status') = 'completed'")
    .bind(conversation)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

describe("settlement refuses what it cannot prove", () => {
  it("refuses a plan whose packet is gone from R2 or no longer matches its hash (packet_unreadable), writes nothing, and settles once the frozen bytes are back", async () => {
    const { conversation, agentId, token, stub } = await setup();
    const runId = await sayUntilPlanned(token, conversation, agentId);
    const [job] = await sentJobs(runId, 1);
    if (job === undefined) throw new Error("no job sent");
    const frozen = await (await env.DOCUMENTS.get(job.packetKey))?.text();
    if (frozen === undefined) throw new Error(`no packet at ${job.packetKey}`);

    // Gone: deleted behind the service's back. The consumer reads the packet once for its step and
    // fails its attempt on it (retried), before any model call or settlement.
    await env.DOCUMENTS.delete(job.packetKey);
    expect((await deliver("foldline-compaction", [job])).retryMessages.map((m) => m.msgId)).toEqual(["msg-0"]);
    // Altered: still a well-formed packet of this run, one frozen turn rewritten; only its hash tells.
    const altered = JSON.parse(frozen) as { frozen: { turns: { text: string }[] } };
    const [turn] = altered.frozen.turns;
    if (turn === undefined) throw new Error("a packet with no frozen turn");
    turn.text = `${turn.text} (and the budget doubled)`;
    await env.DOCUMENTS.put(job.packetKey, JSON.stringify(altered));
    // Handed to the settlement as a step would hand what it read: checked against the plan's hash, refused.
    const rewritten = await stub.settle(conversation, runId, CONTENT, MODEL, JSON.stringify(altered));
    expect(rewritten.ok ? "settled" : [rewritten.error.code, rewritten.error.message]).toEqual(["packet_unreadable", "packet hash_mismatch"]);

    // Nothing was written, and the plan is still the chain's open plan.
    expect(await boundaryRows(conversation)).toEqual([]);
    expect(await completedRuns(conversation)).toBe(0);
    expect(await stub.describeChain(conversation, agentId)).toMatchObject({ headId: null, openRunId: runId });

    // The job of that plan fails its own attempt on the same evidence (and is retried), never a boundary.
    const attempt = await deliver("foldline-compaction", [job], { attempts: 2 });
    expect(attempt.retryMessages.map((m) => m.msgId)).toEqual(["msg-0"]);
    expect((await readIncidents(await shardOf(conversation), conversation, 10)).filter((i) => i.kind === "compactor_failure").map((i) => i.code).sort()).toEqual(["packet_hash_mismatch", "packet_missing"]);

    // The exact bytes back: the same plan settles from the same job.
    await env.DOCUMENTS.put(job.packetKey, frozen);
    expect((await deliver("foldline-compaction", [job], { attempts: 3 })).explicitAcks).toEqual(["msg-0"]);
    expect(await stub.describeChain(conversation, agentId)).toMatchObject({ headId: boundaryOf(runId), openRunId: null });
    expect(await boundaryRows(conversation)).toEqual([{ run_id: runId, previous_id: "" }]);
  }, 60_000);

  it("refuses a late copy of a dead-lettered plan's job as stale, before and after the plan that replaced it settles", async () => {
    const { conversation, agentId, token, stub } = await setup();
    const abandoned = await sayUntilPlanned(token, conversation, agentId);
    const [lateJob] = await sentJobs(abandoned, 1);
    expect((await deliver("foldline-compaction-dlq", [lateJob])).explicitAcks).toEqual(["msg-0"]);
    // The backoff (1 s here) brings the replacement plan: the same predecessor (none), its own packet.
    const replacement = await waitFor(async () => {
      const open = (await stub.describeChain(conversation, agentId))?.openRunId;
      return typeof open === "string" && open !== abandoned ? open : undefined;
    }, "the plan after the dead-letter", 20_000);

    // A copy of the abandoned plan's job the watchdog had re-sent arrives now. Its packet is intact
    // and its predecessor is still the head: only the plan being no longer the chain's own refuses it.
    expect((await deliver("foldline-compaction", [lateJob])).explicitAcks).toEqual(["msg-0"]);
    const whileOpen = await stub.settle(conversation, abandoned, CONTENT, MODEL, "");
    expect(whileOpen.ok ? "settled" : whileOpen.error.code).toBe("stale_plan");
    expect(await boundaryRows(conversation)).toEqual([]);
    expect(await stub.describeChain(conversation, agentId)).toMatchObject({ headId: null, openRunId: replacement });

    // The replacement settles; the abandoned plan is refused as stale, not by the storage's fork constraint.
    const [replacementJob] = await sentJobs(replacement, 1);
    expect((await deliver("foldline-compaction", [replacementJob])).explicitAcks).toEqual(["msg-0"]);
    const afterHead = await stub.settle(conversation, abandoned, CONTENT, MODEL, "");
    expect(afterHead.ok ? "settled" : afterHead.error.code).toBe("stale_plan");
    expect(await boundaryRows(conversation)).toEqual([{ run_id: replacement, previous_id: "" }]);
    expect(await completedRuns(conversation)).toBe(1);
    expect(await stub.describeChain(conversation, agentId)).toMatchObject({ headId: boundaryOf(replacement) });
  }, 60_000);
});
