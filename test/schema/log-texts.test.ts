import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import type { EventInput } from "../../src/core/events";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { releaseLog } from "../../src/storage/search-backfill";
import { listEvents, readEventsByKeys } from "../../src/storage/shard/events";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { searchTurns } from "../../src/storage/shard/turn-search";
import { btreeStats } from "./btree-stats";
import { shardHolding } from "./shard-migrations";
import { backfillOver, d1Over } from "./sqlite-d1";

/**
 * What a long message costs the log to keep (migrations/shard/0038). The log is a WITHOUT ROWID
 * table: SQLite keeps a row whole in its b-tree's cells up to about 1,000 bytes, and of a longer one
 * about 500 bytes there and the rest on an overflow page of its own, 4,096 bytes however little of
 * it is used. A message's UTF-8 bytes decide it, so a Chinese message reaches it at a third of a
 * Latin one's length. Appended through the log's own writer, measured with SQLite's own page
 * statistics (`dbstat`) over the log and wherever it keeps a text apart.
 */

const CONVERSATION = "telegram:7123456789:-1001987654321";
const AT = "2026-12-05T10:00:00.000Z";
const MESSAGES = 120;

/** Running text in a script, long enough for every message to be a different slice of it. */
const PROSE = {
  latin: "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. ",
  chinese: "却说那女娲氏炼石补天之时，于大荒山无稽崖炼成高十二丈、见方二十四丈大的顽石三万六千五百零一块。",
} as const;

const messageOf = (script: keyof typeof PROSE, chars: number, i: number): string => {
  const prose = PROSE[script].repeat(Math.ceil((chars + 200) / PROSE[script].length) + 1);
  return `${i} ${prose.slice(i % 97, i % 97 + chars)}`.slice(0, chars);
};

const source = (i: number, text: string): EventInput =>
  eventInputSchema.parse({ kind: "source", idempotencyKey: `tg:update:${900_000 + i}`, body: { messageId: String(5_000 + i), author: { id: "100000001", name: "Member 1" }, text } });

/** A shard holding the conversation, migrated whole; `below`: stored before the migrations from it on. */
const shard = (below?: string): DatabaseSync => shardHolding(new DatabaseSync(":memory:"), CONVERSATION, below);

async function append(db: DatabaseSync, events: readonly EventInput[], from = 1): Promise<void> {
  const planned = events.map((input, i) => ({ input, hash: eventHash(CONVERSATION, input), seq: from + i }));
  expect((await insertEvents(d1Over(db), CONVERSATION, planned, AT)).applied.every(Boolean)).toBe(true);
}

const utf8 = (text: string): number => new TextEncoder().encode(text).length;

it("keeps a message of any length and script in at most twice its UTF-8 bytes and 500 more (a message of 1 to 4 KB took a page of its own: 4,915 bytes for 330 Chinese characters)", async () => {
  const cases = [
    ["latin", 200],
    ["latin", 1_000],
    ["latin", 2_000],
    ["chinese", 100],
    ["chinese", 330],
    ["chinese", 700],
    ["chinese", 4_096],
  ] as const;
  const figures: string[] = [];
  for (const [script, chars] of cases) {
    const db = shard();
    const events = [...Array(MESSAGES).keys()].map((i) => source(i, messageOf(script, chars, i)));
    await append(db, events);
    const text = events.reduce((sum, e) => sum + utf8(e.kind === "source" ? e.body.text : ""), 0);
    const { bytes } = btreeStats(db, ["log", "log_texts"]);
    figures.push(`${script} ${chars}: ${(bytes / text).toFixed(2)}x (${Math.round(bytes / MESSAGES)} bytes a message of ${Math.round(text / MESSAGES)})`);
    // A row's own fields (ids, author, hash, its key's entries) beside its text; a text kept apart
    // shares pages with others, whole, so at worst one of just over half a page fills one alone.
    expect.soft(bytes / MESSAGES, `${script} ${chars}`).toBeLessThanOrEqual(2 * (text / MESSAGES) + 500);
    db.close();
  }
  console.log(`the log, a message: ${figures.join("; ")}`);
});

it("reads a long message back as it was appended, by every reader, and finds it by a word near its end", async () => {
  const db = shard();
  const long = messageOf("chinese", 2_000, 7) + " 结尾的词语";
  // What a JSON string escapes, and characters outside the BMP.
  const escaped = `${messageOf("latin", 1_500, 3)} "quoted", back\\slash, a\nline\tand tab, \u0001, 😀 and \u202e`;
  const events = [source(1, "a short one"), source(2, long), source(3, escaped)];
  await append(db, events);
  const d1 = d1Over(db);
  const listed = await listEvents(d1, CONVERSATION, 0, 10);
  expect(listed.map((e) => (e.kind === "source" ? e.body.text : undefined))).toEqual(["a short one", long, escaped]);
  expect(listed.map((e) => e.hash)).toEqual(events.map((e) => eventHash(CONVERSATION, e)));
  const byKey = await readEventsByKeys(d1, CONVERSATION, [events[1]?.idempotencyKey ?? ""]);
  expect([...byKey.values()].map((e) => (e.kind === "source" ? e.body.text : undefined))).toEqual([long]);
  const hits = await searchTurns(d1, CONVERSATION, "结尾的词语", { historyAgents: [], admitSensitive: false }, 3);
  // The message itself first, its text whole and its snippet cut from it (its neighbours follow, by what it lends them).
  expect(hits[0]).toMatchObject({ seq: 2, content: long });
  expect(hits[0]?.snippet).toContain("结尾的词语");
  // The long one appended again (a retry, planned at the next place): nothing more is kept.
  const before = btreeStats(db, ["log", "log_texts"]);
  const retried = events[1] ?? source(0, "");
  const again = await insertEvents(d1, CONVERSATION, [{ input: retried, hash: eventHash(CONVERSATION, retried), seq: 4 }], AT);
  expect(again.applied).toEqual([false]);
  expect(again.rows.get(retried.idempotencyKey)?.seq).toBe(2);
  expect(btreeStats(db, ["log", "log_texts"])).toEqual(before);
  db.close();
});

it("keeps texts in the log's row until the release on a shard that held conversations before 0038, then apart; both read back", async () => {
  const db = shard("0038");
  expect(db.prepare("SELECT apart FROM log_texts_mode").get()).toEqual({ apart: 0 });
  const first = [...Array(4).keys()].map((i) => source(i, messageOf("chinese", 600, i)));
  await append(db, first);
  expect(db.prepare("SELECT COUNT(*) AS n FROM log_texts").get()).toEqual({ n: 0 });
  await releaseLog(backfillOver(db));
  expect(db.prepare("SELECT apart FROM log_texts_mode").get()).toEqual({ apart: 1 });
  const second = [...Array(4).keys()].map((i) => source(10 + i, messageOf("chinese", 600, 10 + i)));
  await append(db, second, 5);
  expect(db.prepare("SELECT COUNT(*) AS n FROM log_texts").get()).toEqual({ n: 4 });
  const listed = await listEvents(d1Over(db), CONVERSATION, 0, 20);
  expect(listed.map((e) => (e.kind === "source" ? e.body.text : undefined))).toEqual([...first, ...second].map((e) => (e.kind === "source" ? e.body.text : undefined)));
  expect(() => db.prepare("DELETE FROM log_texts").run()).toThrow(/immutable/);
  expect(() => db.prepare("UPDATE log_texts SET text = '\"x\"'").run()).toThrow(/immutable/);
  db.close();
});

it("keeps the text of a row from seq 2^32 on in the row, where its id would name the next conversation's place", async () => {
  const db = shard();
  const other = "api:the-next-conversation";
  db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, '2026-12-05T00:00:00.000Z')").run(other);
  await append(db, [source(1, "the first")]);
  const next = [source(2, messageOf("latin", 800, 2))].map((input) => ({ input, hash: eventHash(other, input), seq: 1 }));
  expect((await insertEvents(d1Over(db), other, next, AT)).applied).toEqual([true]);
  expect(db.prepare("SELECT id FROM log_texts").all()).toEqual([{ id: 2 * 2 ** 32 + 1 }]);
  // The conversation's mark moved on as 2^32 - 2 more events would have moved it (its trigger,
  // which lets it pass no event stored, set aside for that), then a long text at seq 2^32.
  db.exec("DROP TRIGGER conversations_high_water_advances");
  db.prepare("UPDATE conversations SET last_seq = ? WHERE id = ?").run(2 ** 32 - 1, CONVERSATION);
  const far = source(3, messageOf("chinese", 400, 3));
  expect((await insertEvents(d1Over(db), CONVERSATION, [{ input: far, hash: eventHash(CONVERSATION, far), seq: 2 ** 32 }], AT)).applied).toEqual([true]);
  expect(db.prepare("SELECT COUNT(*) AS n FROM log_texts").get()).toEqual({ n: 1 });
  const [stored] = await listEvents(d1Over(db), CONVERSATION, 2 ** 32 - 1, 5);
  expect(stored?.kind === "source" ? stored.body.text : undefined).toBe(far.kind === "source" ? far.body.text : undefined);
  expect((await listEvents(d1Over(db), other, 0, 5)).map((e) => (e.kind === "source" ? e.body.text : undefined))).toEqual([messageOf("latin", 800, 2)]);
  // A third conversation keeps a text apart at its seq 1: (3 << 32) | 1, which is also (2 << 32) |
  // (2^32 + 1). A row of the second at that seq, spelled apart by hand, is refused: read, it would
  // show the third's text.
  const third = "api:the-third-conversation";
  db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, '2026-12-05T00:00:00.000Z')").run(third);
  const theirs = source(4, messageOf("latin", 900, 4));
  expect((await insertEvents(d1Over(db), third, [{ input: theirs, hash: eventHash(third, theirs), seq: 1 }], AT)).applied).toEqual([true]);
  expect(db.prepare("SELECT id FROM log_texts ORDER BY id").all()).toEqual([{ id: 2 * 2 ** 32 + 1 }, { id: 3 * 2 ** 32 + 1 }]);
  db.prepare("UPDATE conversations SET last_seq = ? WHERE id = ?").run(2 ** 32, other);
  expect(() =>
    db
      .prepare(
        "INSERT INTO log (conversation_key, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) SELECT conversation_key, ?, kind, 'forged', sensitive, json_set(body, '$.text', 0), hash, recorded_at FROM log WHERE conversation_key = 2 AND seq = 1",
      )
      .run(2 ** 32 + 1),
  ).toThrow(/a text kept apart must be in log_texts/);
  db.close();
});
