import { describe, expect, it } from "vitest";
import { D1Meter, meteredD1 } from "../../bench/worker/d1-meter";
import { LAG_BIN_EDGES_MS } from "../../src/core/fleet-series";
import { readLagCells } from "../../src/storage/shard/fleet";
import { placedShardOf } from "../support/shards";
import { freshConversation } from "./helpers";

/**
 * The fleet page's lag chart reads the boundaries settled in its window, not every boundary the
 * shard holds: a shard of a thousand groups settles thousands of boundaries a day, for years, and
 * an operator opens the page for the last day.
 */

/** `count` settled boundaries of one chain, with their plans, all settled at `at`. */
function settledAt(shard: D1Database, conversation: string, count: number, at: string): D1PreparedStatement[] {
  return Array.from({ length: count }, (_, i) => {
    const runId = `run-lag-${conversation}-${i}`;
    return [
      shard
        .prepare(
          `INSERT INTO compaction_plans (run_id, conversation_id, agent_id, epoch_id, previous_boundary_id, packet_key, packet_hash, trigger_seq, through_seq, created_at)
           VALUES (?1, ?2, 'lag-agent', 'epoch-1', ?3, ?1, ?4, 1, 1, ?5)`,
        )
        .bind(runId, conversation, i === 0 ? "" : `b-run-lag-${conversation}-${i - 1}`, "0".repeat(64), at),
      shard
        .prepare(
          `INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at)
           VALUES (?1, ?2, 'lag-agent', 'epoch-1', ?3, ?4, NULL, 1, ?5, '{}', ?6, ?7)`,
        )
        .bind(`b-${runId}`, conversation, i + 1, i === 0 ? "" : `b-run-lag-${conversation}-${i - 1}`, runId, "0".repeat(64), at),
    ];
  }).flat();
}

describe("the fleet page's lag", () => {
  it("reads the boundaries settled in its window, not the shard's older ones", { timeout: 120_000 }, async () => {
    const conversation = freshConversation("api:fleet-lag-reads");
    const shard = await placedShardOf(conversation);
    const statements = settledAt(shard, conversation, 1_000, new Date(Date.now() - 30 * 86_400_000).toISOString());
    for (let i = 0; i < statements.length; i += 200) await shard.batch(statements.slice(i, i + 200));
    // A window that starts tomorrow holds none of them, nor any other file's.
    const meter = new D1Meter();
    meter.arm();
    const cells = await readLagCells(meteredD1(shard, meter), new Date(Date.now() + 86_400_000).toISOString(), LAG_BIN_EDGES_MS);
    expect(cells).toEqual([]);
    expect(meter.take().rowsRead, "rows read for an empty window over a shard of 1,000 older boundaries").toBeLessThan(10);
  });
});
