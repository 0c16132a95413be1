import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import type { EventInput } from "../../src/core/events";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { skippedRun } from "../../src/core/preflight-decider";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { btreeStats } from "./btree-stats";
import { migrateShard } from "./shard-migrations";
import { d1Over } from "./sqlite-d1";

/**
 * What the event log costs to keep, beside what it keeps: a group chat's messages of ~90
 * characters, each followed by the skipped run of the one compactor that serves it (a source's
 * usual company in the log), appended through the log's own writer under a Telegram group's
 * conversation id. Measured in the migrated schema with SQLite's own page statistics (`dbstat`)
 * over every table the log has been kept in (`events` before migrations/shard/0031, `log` since).
 */

const CONVERSATION = "telegram:7123456789:-1001987654321";
const MESSAGES = 2_000;
const TEXT = "the offsite budget is four thousand euros and we meet at the harbour on Tuesday morning, ok?";

function migratedShard(): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  migrateShard(db);
  return db;
}

/** Each message and its compactor's skipped run, in log order. */
function chat(): EventInput[] {
  const events: EventInput[] = [];
  for (let i = 0; i < MESSAGES; i++) {
    const member = i % 6;
    events.push(
      eventInputSchema.parse({
        kind: "source",
        idempotencyKey: `tg:update:${900_000 + i}`,
        body: { messageId: String(5_000 + i), author: { id: String(100_000_000 + member), name: `Member ${member}` }, text: `${i} ${TEXT}` },
      }),
    );
    const active = { chars: 90 * (i + 1), messages: i + 1 };
    events.push(skippedRun({ compactorId: "summarizer", sourceSeq: 2 * i + 1, active, policy: { triggerInputChars: 1_000_000, retainRecentChars: 10_000 } as never }, "below_trigger"));
  }
  return events;
}

it("keeps a message in three entries and its skipped run in two, at most 240 bytes an event, the conversation named by its integer key", async () => {
  const db = migratedShard();
  const events = chat();
  const planned = events.map((input, i) => ({ input, hash: eventHash(CONVERSATION, input), seq: i + 1 }));
  // The first message and its run, then the rest: the compactor's first skipped run gives it its
  // key (migrations/shard/0033), and the runs after it are spelled short.
  expect((await insertEvents(d1Over(db), CONVERSATION, planned.slice(0, 2), "2026-12-05T10:00:00.000Z")).applied).toEqual([true, true]);
  const { applied } = await insertEvents(d1Over(db), CONVERSATION, planned.slice(2), "2026-12-05T10:00:00.000Z");
  expect(applied.every(Boolean)).toBe(true);
  const text = MESSAGES * (TEXT.length + 5);
  const { bytes, entries } = btreeStats(db, ["events", "log"]);
  // Before the log's rebuild (0031): 4 entries a source (the rowid row, the primary key, the
  // idempotency key, the index by message id) and 3 a run, 455 bytes an event; 276.5 before 0033.
  expect(entries).toBe(MESSAGES * 3 + MESSAGES * 2);
  expect(bytes / events.length).toBeLessThanOrEqual(240);
  // Reported, not asserted: the log's bytes per character of text said.
  console.log(`log: ${entries} entries, ${bytes} bytes, ${(bytes / events.length).toFixed(1)} bytes an event, ${(bytes / text).toFixed(2)}× the text`);
  db.close();
});

it("keeps a skipped run in at most 100 bytes (its row and its key's entry), its compactor named once, its usual reason not at all", async () => {
  const compactorId = "support-bot.compactor";
  const sized = async (withRuns: boolean) => {
    const db = migratedShard();
    const events: EventInput[] = [];
    for (let i = 0; i < MESSAGES; i++) {
      events.push(eventInputSchema.parse({ kind: "source", idempotencyKey: `tg:update:${900_000 + i}`, body: { messageId: String(5_000 + i), author: { id: "100000001", name: "Member" }, text: `${i} ${TEXT}` } }));
      const active = { chars: 90 * (i + 1), messages: i + 1 };
      if (withRuns) events.push(skippedRun({ compactorId, sourceSeq: events.length, active, policy: { triggerInputChars: 1_000_000, retainRecentChars: 10_000 } as never }, "below_trigger"));
    }
    const planned = events.map((input, i) => ({ input, hash: eventHash(CONVERSATION, input), seq: i + 1 }));
    // As above: the first message (and its run) first.
    const first = await insertEvents(d1Over(db), CONVERSATION, planned.slice(0, 2), "2026-12-05T10:00:00.000Z");
    const rest = await insertEvents(d1Over(db), CONVERSATION, planned.slice(2), "2026-12-05T10:00:00.000Z");
    expect([...first.applied, ...rest.applied].every(Boolean)).toBe(true);
    // What is read back is what was appended, key and body, whatever the row spells.
    const rows = new Map([...first.rows, ...rest.rows]);
    for (const { input } of planned) expect(rows.get(input.idempotencyKey)?.body).toEqual(input.body);
    const { bytes } = btreeStats(db, ["log"]);
    const stored = db.prepare("SELECT idempotency_key, body FROM log WHERE kind = 'run' ORDER BY seq DESC LIMIT 1").get() as { idempotency_key: string; body: string } | undefined;
    db.close();
    return { bytes, stored };
  };
  const bare = await sized(false);
  const full = await sized(true);
  const perRun = (full.bytes - bare.bytes) / MESSAGES;
  console.log(`a skipped run: ${perRun.toFixed(1)} bytes, stored as ${JSON.stringify(full.stored)}`);
  // Before migrations/shard/0033: 227.3 bytes, its key (`run:pf_support-bot.compactor_2:skipped`)
  // in its row and in its entry, the compactor and the reason again in its body. Now 96.3, a third of
  // it the hash.
  expect(perRun).toBeLessThanOrEqual(100);
  expect(full.stored?.body.includes(compactorId) ?? true).toBe(false);
  expect(full.stored?.body.includes("below_trigger") ?? true).toBe(false);
});

it("keeps a Telegram message in at most 260 bytes beside its text (its row and its entries), its body's field names not spelled again", async () => {
  const db = migratedShard();
  const events = Array.from({ length: MESSAGES }, (_, i) =>
    eventInputSchema.parse({
      kind: "source",
      idempotencyKey: `tg:update:${900_000 + i}`,
      body: {
        messageId: String(5_000 + i),
        author: { id: String(100_000_000 + (i % 6)), name: `Member ${i % 6}`, username: `member${i % 6}` },
        conversationType: "group",
        sentAt: new Date(Date.UTC(2026, 11, 6, 10, 0, i)).toISOString(),
        text: `${i} ${TEXT}`,
      },
    }),
  );
  const planned = events.map((input, i) => ({ input, hash: eventHash(CONVERSATION, input), seq: i + 1 }));
  const { applied, rows } = await insertEvents(d1Over(db), CONVERSATION, planned, "2026-12-05T10:00:00.000Z");
  expect(applied.every(Boolean)).toBe(true);
  // What is read back is what was appended, whatever the row spells.
  for (const { input } of planned) expect(rows.get(input.idempotencyKey)?.body).toEqual(input.body);
  const text = events.reduce((sum, e) => sum + Buffer.byteLength((e.body as { text: string }).text), 0);
  const { bytes } = btreeStats(db, ["log"]);
  const stored = (db.prepare("SELECT body FROM log ORDER BY seq DESC LIMIT 1").get() as { body: string }).body;
  db.close();
  const beside = (bytes - text) / MESSAGES;
  console.log(`a Telegram message: ${beside.toFixed(1)} bytes beside its text, stored as ${stored}`);
  // Before migrations/shard/0033: 335.7 bytes, the body spelling `author`, `id`, `name`, `username`,
  // `conversationType` and `sentAt` (24 characters of time) in every row. Now 253.8, of it the
  // hash (32), the update's key in the row and its entry, the message id in the row and its entry.
  expect(beside).toBeLessThanOrEqual(260);
  expect(stored).not.toContain('"author"');
  expect(stored).not.toContain('"conversationType"');
});
