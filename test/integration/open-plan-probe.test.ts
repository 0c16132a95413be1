import { describe, expect, it } from "vitest";
import { D1Meter, meteredD1 } from "../../bench/worker/d1-meter";
import { oldestOpenPlan } from "../../src/storage/shard/ops";
import { placedShardOf } from "../support/shards";
import { freshConversation } from "./helpers";

/**
 * The health probe's oldest open plan (`GET /v1/ops/health`) is found by the shard's chains, each
 * one's newest plan, not by every plan the shard ever made: a shard of a thousand groups compacting
 * for years holds millions of settled plans, and the probe runs every minute.
 */

const EPOCH = "epoch-1";

/** `count` settled plans of the chain, positions `from` on, each with its boundary. */
function settled(shard: D1Database, conversation: string, agentId: string, from: number, count: number, day: number): D1PreparedStatement[] {
  return Array.from({ length: count }, (_, i) => {
    const position = from + i;
    const runId = `run-${conversation}-${agentId}-${position}`;
    const createdAt = new Date(Date.UTC(2026, 0, day, 0, 0, position)).toISOString();
    return [
      shard
        .prepare(
          `INSERT INTO compaction_plans (run_id, conversation_id, agent_id, epoch_id, previous_boundary_id, packet_key, packet_hash, trigger_seq, through_seq, created_at)
           VALUES (?1, ?2, ?3, ?4, ?5, ?1, ?6, 1, 1, ?7)`,
        )
        .bind(runId, conversation, agentId, EPOCH, position === 1 ? "" : `b-${runId}-prev`, "0".repeat(64), createdAt),
      shard
        .prepare(
          `INSERT INTO boundaries (id, conversation_id, agent_id, epoch_id, position, previous_id, previous_hash, covered_through_seq, run_id, body, hash, created_at)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, 1, ?7, '{}', ?8, ?9)`,
        )
        .bind(`b-${runId}`, conversation, agentId, EPOCH, position, position === 1 ? "" : `b-run-${conversation}-${agentId}-${position - 1}`, runId, "0".repeat(64), createdAt),
    ];
  }).flat();
}

describe("the health probe's oldest open plan", () => {
  it("costs the shard's chains, not their settled plans", { timeout: 120_000 }, async () => {
    const conversations = Array.from({ length: 10 }, () => freshConversation("api:probe"));
    const shard = await placedShardOf(conversations[0] ?? "");
    // All on one shard: the probe reads a shard.
    const agents = ["a", "b"];
    const write = async (from: number, count: number) => {
      const statements = conversations.flatMap((c) => agents.flatMap((a) => settled(shard, c, a, from, count, 1)));
      for (let i = 0; i < statements.length; i += 200) await shard.batch(statements.slice(i, i + 200));
    };
    await write(1, 2);
    // No plan of these chains is open (another file's may be: the workerd's shards are shared).
    expect(conversations).not.toContain((await oldestOpenPlan(shard))?.conversationId);
    // One chain's newest plan is open (no boundary), and older than any other open plan.
    const open = `run-open-${crypto.randomUUID()}`;
    await shard
      .prepare(
        `INSERT INTO compaction_plans (run_id, conversation_id, agent_id, epoch_id, previous_boundary_id, packet_key, packet_hash, trigger_seq, through_seq, created_at)
         VALUES (?1, ?2, 'z', ?3, '', ?1, ?4, 1, 1, '2000-01-01T00:00:00.000Z')`,
      )
      .bind(open, conversations[3], EPOCH, "0".repeat(64))
      .run();
    // An older plan left open, which a later plan of its chain replaced: it waits for nothing.
    const replaced = `run-replaced-${crypto.randomUUID()}`;
    await shard
      .prepare(
        `INSERT INTO compaction_plans (run_id, conversation_id, agent_id, epoch_id, previous_boundary_id, packet_key, packet_hash, trigger_seq, through_seq, created_at)
         VALUES (?1, ?2, 'a', 'epoch-0', '', ?1, ?3, 1, 1, '1999-01-01T00:00:00.000Z')`,
      )
      .bind(replaced, conversations[5], "0".repeat(64))
      .run();
    const probe = async () => {
      const meter = new D1Meter();
      meter.arm();
      const found = await oldestOpenPlan(meteredD1(shard, meter));
      return { found, rowsRead: meter.take().rowsRead };
    };
    const few = await probe();
    expect(few.found).toMatchObject({ conversationId: conversations[3], agentId: "z", runId: open });
    // Forty-eight more settled plans in every chain.
    await write(3, 48);
    const many = await probe();
    expect(many.found).toEqual(few.found);
    // Every plan of the shard was walked, each with three probes: 2,005 rows against 85; now 159 and 159.
    expect(many.rowsRead, `${few.rowsRead} rows read with 2 plans a chain, ${many.rowsRead} with 50`).toBeLessThan(few.rowsRead + 200);
  });
});
