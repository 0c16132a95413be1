import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { readBusiestConversations } from "../../src/storage/shard/fleet";
import { d1Over } from "./sqlite-d1";

/**
 * The fleet page's busiest conversations count the events each conversation recorded since the
 * window's start, found by a search of its log by time: events before the window do not count,
 * however many, and a conversation idle since before it is not listed.
 */

const SHARD = fileURLToPath(new URL("../../migrations/shard/", import.meta.url));

async function append(db: DatabaseSync, conversationId: string, from: number, count: number, at: string): Promise<void> {
  const planned = Array.from({ length: count }, (_, i) => {
    const input = eventInputSchema.parse({ kind: "source", idempotencyKey: `k${from + i}`, body: { messageId: `m${from + i}`, author: { id: "u1", name: "Ada" }, text: `message ${from + i}` } });
    return { input, hash: eventHash(conversationId, input), seq: from + i };
  });
  const { applied } = await insertEvents(d1Over(db), conversationId, planned, at);
  expect(applied.every(Boolean)).toBe(true);
}

it("counts each conversation's events since the window's start, whatever it recorded before, and leaves out one idle since before it", async () => {
  const db = new DatabaseSync(":memory:");
  for (const file of readdirSync(SHARD).filter((f) => f.endsWith(".sql")).sort()) db.exec(readFileSync(`${SHARD}${file}`, "utf8"));
  const before = "2026-12-04T09:00:00.000Z";
  const inside = "2026-12-05T10:00:00.000Z";
  // Counts chosen so the search meets every shape: long before, short inside, all inside, one inside.
  await append(db, "api:busy", 1, 1_000, before);
  await append(db, "api:busy", 1_001, 37, inside);
  await append(db, "api:all-inside", 1, 64, inside);
  await append(db, "api:one", 1, 5, before);
  await append(db, "api:one", 6, 1, inside);
  await append(db, "api:idle", 1, 300, before);
  const busiest = await readBusiestConversations(d1Over(db), "DB_SHARD_0", "2026-12-05T00:00:00.000Z", 20);
  expect(busiest).toEqual([
    { conversationId: "api:all-inside", shard: "DB_SHARD_0", events: 64, lastRecordedAt: inside },
    { conversationId: "api:busy", shard: "DB_SHARD_0", events: 37, lastRecordedAt: inside },
    { conversationId: "api:one", shard: "DB_SHARD_0", events: 1, lastRecordedAt: inside },
  ]);
  expect(await readBusiestConversations(d1Over(db), "DB_SHARD_0", "2026-12-05T00:00:00.000Z", 1)).toHaveLength(1);
  db.close();
});
