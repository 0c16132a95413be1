import { env } from "cloudflare:workers";
import { conversationStub } from "../../src/durable/stub";
import { readChainBoundaries } from "./reads";
import { placedShardOf, shardOf } from "./shards";

/** Polls `probe` until it returns a value; compactions run on the queue, off the request path. */
export async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The current epoch's chain once nothing is in flight and it holds at least `atLeast` boundaries.
 * The object is asked first: with no run open and no message arriving nothing can settle
 * afterwards, so the rows read next are final (read the other way round, a run settling in
 * between would leave the rows one boundary short).
 */
export async function settledChain(conversation: string, agentId: string, atLeast: number, timeoutMs?: number) {
  return waitFor(async () => {
    const state = await conversationStub(env, conversation).describeChain(conversation, agentId);
    if (state?.openRunId !== null) return undefined;
    const chain = await readChainBoundaries(await shardOf(conversation), conversation, agentId, state.epochId);
    return chain.length >= atLeast && chain.at(-1)?.body.id === state.headId ? { chain, state } : undefined;
  }, `${atLeast} boundaries`, timeoutMs);
}

/** A plan row written by hand, as a forger with database access would. */
export async function insertPlan(conversation: string, agentId: string, epochId: string, runId: string, previousId: string, packetKey?: string, packetHash?: string): Promise<void> {
  await (await placedShardOf(conversation)).prepare(
    `INSERT INTO compaction_plans (run_id, conversation_id, agent_id, epoch_id, previous_boundary_id, packet_key, packet_hash, trigger_seq, through_seq, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, 1, 1, ?)`,
  )
    .bind(runId, conversation, agentId, epochId, previousId, packetKey ?? `packets/forged/${runId}.json`, packetHash ?? "0".repeat(64), new Date().toISOString())
    .run();
}
