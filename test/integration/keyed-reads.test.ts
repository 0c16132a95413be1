import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { D1Meter, meteredD1 } from "../../bench/worker/d1-meter";
import { readEventHashes } from "../../src/storage/shard/extractions";
import { livePagePaths, putPage, recallPages } from "../../src/storage/control/memory-pages";
import { shardOf } from "../support/shards";
import { declareForStorage } from "../support/declarations";
import { call, eventsPath, freshConversation, sourceEvent, tokenFor } from "./helpers";

/**
 * Reads that name their rows in a JSON list (sequence numbers, page paths, page versions) seek each
 * row by its key. Joined the other way round, SQLite walked every row of the conversation or the
 * agent once per listed key: the cost table (bench §10) measured one such read at 1.4 million rows
 * per 1,000 messages. Rows read are D1's own count (`meta.rows_read`), through the D1 meter.
 */

/** `read` against `db` (the control database unless a conversation's shard is named), metered. */
async function rowsRead<T>(read: (db: D1Database) => Promise<T>, db: D1Database = env.DB): Promise<{ value: T; rows: number }> {
  const meter = new D1Meter();
  meter.arm();
  const value = await read(meteredD1(db, meter));
  return { value, rows: meter.take().rowsRead };
}

describe("reads by a list of keys", () => {
  it("reads the hashes of three events of a long conversation without walking it", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    const events = Array.from({ length: 120 }, (_, i) => sourceEvent(`k${i}`, `${i}`, `message ${i}`));
    for (let i = 0; i < events.length; i += 60) {
      expect((await call("POST", eventsPath(conversation, "/batch"), { token, body: { events: events.slice(i, i + 60) } })).status).toBe(201);
    }
    const { value, rows } = await rowsRead((db) => readEventHashes(db, conversation, [3, 50, 117]), await shardOf(conversation));
    expect([...value.keys()].sort((a, b) => a - b)).toEqual([3, 50, 117]);
    expect(rows).toBeLessThanOrEqual(10);
  });

  it("reads the live pages and page versions it names without walking the agent's memory", async () => {
    const agentId = `keyed-${crypto.randomUUID().slice(0, 8)}`;
    await declareForStorage(env.DB, agentId);
    const now = new Date();
    for (let i = 0; i < 80; i++) await putPage(env.DB, agentId, `notes/page-${i}`, `Page ${i} about topic${i} and the quarterly offsite.`, now);
    const live = await rowsRead((db) => livePagePaths(db, agentId, ["notes/page-7", "notes/page-70", "notes/none"]));
    expect([...live.value].sort()).toEqual(["notes/page-7", "notes/page-70"]);
    // Each page found also reads its agent's first declaration (a page is served only once its agent was declared).
    expect(live.rows).toBeLessThanOrEqual(16);

    // Ranking reads the full-text index; the bodies of the ranked versions are then read by key.
    const ranked = await rowsRead((db) => recallPages(db, agentId, "topic12 topic34", 10_000, 5));
    expect(ranked.value.map((p) => p.path).sort()).toEqual(["notes/page-12", "notes/page-34"]);
    const ranking = await rowsRead((db) =>
      db
        .prepare("SELECT count(*) AS n FROM memory_terms WHERE memory_terms MATCH ('scope : \"a' || (SELECT id FROM agent_keys WHERE agent_id = ?1) || '\" AND (\"topic12\" OR \"topic34\")')")
        .bind(agentId)
        .first(),
    );
    expect(ranked.rows - ranking.rows).toBeLessThanOrEqual(20);
  });
});
