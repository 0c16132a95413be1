import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { canonicalJson, sha256Hex } from "../../src/core/hash";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { eventTerms } from "../../src/core/turn-terms";
import { searchForm } from "../../src/core/search-text";
import type { BackfillDatabase, BackfillProgress } from "../../src/storage/search-backfill";
import { releaseLog, runBackfill } from "../../src/storage/search-backfill";
import { readAllEvents } from "../../src/storage/shard/events";
import type { Statement } from "../../src/storage/shard/turn-terms";
import { readConversationFactSources } from "../../src/storage/shard/conversation-memory";
import { searchTurns } from "../../src/storage/shard/turn-search";
import { agentPageTerms, expectedTerms, termsByRow } from "../support/index-terms";

/**
 * A database stored before the word indexes were written by the service (migrations/shard/0023,
 * control/0019) is indexed in place by npm run migrate's backfill (src/storage/search-backfill.ts,
 * scripts/lib/search-backfill.mjs), losing nothing: the data is stored through the old schema, the
 * new migrations applied, the backfill run (here through the binding, as the script runs it through
 * wrangler), and the result compared with what the service writes for new data.
 */

const bound = (db: D1Database): BackfillDatabase => ({
  rows: async <T>(s: Statement) => (await db.prepare(s.sql).bind(...s.params).all<T>()).results,
  write: async (statements: readonly Statement[]) => {
    await db.batch(statements.map((s) => db.prepare(s.sql).bind(...s.params)));
  },
});

const before = (name: string, migrations: typeof env.TEST_MIGRATIONS_SHARD) => migrations.filter((m) => m.name < name);

/** One event as the log stores it, through the old schema's triggers. */
async function store(db: D1Database, conversationId: string, seq: number, event: unknown): Promise<void> {
  const input = eventInputSchema.parse(event);
  await db
    .prepare("INSERT INTO events (conversation_id, seq, kind, idempotency_key, sensitive, body, hash, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    .bind(conversationId, seq, input.kind, input.idempotencyKey, input.sensitive ? 1 : 0, canonicalJson(input.body), eventHash(conversationId, input), new Date(0).toISOString())
    .run();
}

const source = (key: string, messageId: string, text: string, name = "Ada") => ({ kind: "source", idempotencyKey: key, body: { messageId, author: { id: `u-${name}`, name }, text } });
const edit = (key: string, target: string, text: string) => ({ kind: "correction", idempotencyKey: key, body: { action: "edit", targetMessageId: target, text } });

describe("the word indexes' backfill", () => {
  it("indexes a shard's events, moves its turn index (and the texts it held go) and indexes its pages, once, whatever is run twice", async () => {
    const db = env.BACKFILL_SHARD;
    await applyD1Migrations(db, before("0023", env.TEST_MIGRATIONS_SHARD));
    const conversations = ["api:old:one", "api:old:two"];
    const events = [
      source("a1", "1", "the ferry leaves Lisbon at noon"),
      edit("a2", "1", "the ferry leaves Porto at noon"),
      source("a3", "2", "预算是四千欧元，我们明天在港口见面", "王小明"),
      { kind: "run", idempotencyKey: "run:x:skipped", body: { runId: "x", agentId: "host", role: "agent", status: "skipped" } },
      source("a4", "3", "سأرسل الكتاب إلى المكتبة يوم ٣ مايو", "علي"),
      edit("a5", "3", "سأرسل الكتاب يوم ۴ مايو"),
      { kind: "proposal", idempotencyKey: "a6", body: { proposalId: "p1", agentId: "host", text: "noted: Porto" } },
      { kind: "delivery", idempotencyKey: "a7", body: { status: "delivered", proposalId: "p1" } },
    ];
    for (const c of conversations) {
      await db.prepare("INSERT INTO conversations (id, created_at) VALUES (?, ?)").bind(c, new Date(0).toISOString()).run();
      for (const [i, e] of events.entries()) await store(db, c, i + 1, e);
    }
    const page = "facts: the venue is Porto; 预算 4000";
    await db
      .prepare("INSERT INTO conversation_memory_versions (conversation_id, agent_id, path, version, content, content_hash, chars, deleted, created_at) VALUES (?, 'host', 'extracted/plans', 1, ?, ?, ?, 0, ?)")
      .bind(conversations[0], page, sha256Hex(page), page.length, new Date(0).toISOString())
      .run();
    // A source of that page's facts, as the table of the time kept it.
    await db
      .prepare("INSERT INTO conversation_memory_provenance (conversation_id, agent_id, path, version, fact_key, message_id, seq, event_hash, run_id) VALUES (?, 'host', 'extracted/plans', 1, 'venue', 'm1', 1, ?, 'ext_1')")
      .bind(conversations[0], eventHash(conversations[0] ?? "", eventInputSchema.parse(events[0])))
      .run();

    await applyD1Migrations(db, env.TEST_MIGRATIONS_SHARD);
    const progress: BackfillProgress[] = [];
    const done = await runBackfill(bound(db), "shard", (p) => progress.push(p));
    expect(done.events).toBe(conversations.length * (events.length - 2)); // runs and deliveries are not read
    expect(done.pages).toBe(1);
    expect(progress.length).toBeGreaterThan(2);
    // The log was copied to the table that keeps it now (migrations/shard/0031) before anything read it.
    expect(done.logThroughId).toBeGreaterThan(0);
    expect((await db.prepare("SELECT count(*) AS n FROM log").first<{ n: number }>())?.n).toBe(conversations.length * events.length);
    // Once the Worker that reads `log` is live, the copied rows leave `events`; the log reads back each event as stored.
    expect(await releaseLog(bound(db))).toBe(1);
    expect((await db.prepare("SELECT count(*) AS n FROM events").first<{ n: number }>())?.n).toBe(0);
    for (const c of conversations) {
      expect((await readAllEvents(db, c)).map((e) => [e.seq, e.idempotencyKey, e.hash, e.recordedAt])).toEqual(
        events.map((e, i) => [i + 1, eventInputSchema.parse(e).idempotencyKey, eventHash(c, eventInputSchema.parse(e)), new Date(0).toISOString()]),
      );
    }
    // The source moved to the table that keeps it now (migrations/shard/0027), and reads back the same.
    expect(done.sourcesThroughId).toBeGreaterThan(0);
    expect(await db.prepare("SELECT COUNT(*) AS n FROM conversation_memory_provenance_v1").first<{ n: number }>()).toEqual({ n: 0 });
    expect(await readConversationFactSources(db, conversations[0] ?? "", "host", "extracted/plans", 1)).toEqual([
      { conversationId: conversations[0], factKey: "venue", messageId: "m1", seq: 1, eventHash: eventHash(conversations[0] ?? "", eventInputSchema.parse(events[0])), runId: "ext_1", version: 1 },
    ]);

    // A second run finds nothing left; a batch replayed over finished progress writes nothing.
    expect(await runBackfill(bound(db), "shard")).toEqual({ logThroughId: 0, events: 0, turnsThroughId: 0, pages: 0, sourcesThroughId: 0, extractedPagesThroughId: 0, extractedSourcesBatches: 0, extractedVersionsThroughId: 0 });

    for (const c of conversations) {
      const rows = await termsByRow(db, "turn_terms_vocab", "SELECT (k.id << 32) + e.seq FROM conversation_keys k JOIN log e ON e.conversation_key = k.id WHERE k.conversation_id = ?1", c);
      const key = await db.prepare("SELECT id FROM conversation_keys WHERE conversation_id = ?").bind(c).first<{ id: number }>();
      let texts = 0;
      for (const [i, e] of events.entries()) {
        const terms = eventTerms(eventInputSchema.parse(e));
        const held = rows.get((key?.id ?? 0) * 2 ** 32 + i + 1);
        if (terms === undefined) {
          expect(held).toBeUndefined();
          continue;
        }
        texts += 1;
        // An edit's author is its message's, folded (علي's Arabic yeh as the Persian one).
        const author = terms.author ?? searchForm(terms.messageId === "3" ? "علي" : "Ada").text;
        expect(held, `${c} event ${i + 1}`).toEqual(await expectedTerms(db, { author, text: terms.text, grams: terms.grams }));
      }
      expect((await db.prepare("SELECT texts FROM conversations WHERE id = ?").bind(c).first<{ texts: number }>())?.texts).toBe(texts);
      // Found by a search as the service runs it: the edited text first (its neighbours after it,
      // by the words it lends them), and the original text nowhere.
      const found = await searchTurns(db, c, "Porto ferry", { historyAgents: ["host"], admitSensitive: true }, 10);
      expect(found[0]).toMatchObject({ messageId: "1", content: "the ferry leaves Porto at noon" });
      expect(found.map((t) => t.messageId)).toContain("p1");
      expect(await searchTurns(db, c, "Lisbon", { historyAgents: ["host"], admitSensitive: true }, 10)).toEqual([]);
      expect((await searchTurns(db, c, "预算", { historyAgents: [], admitSensitive: true }, 10))[0]?.messageId).toBe("2");
      expect((await searchTurns(db, c, "يوم ۴", { historyAgents: [], admitSensitive: true }, 10))[0]?.messageId).toBe("3");
    }
    // The turn index moved to `turns` (migrations/shard/0028), which holds no texts; the old table is empty.
    expect(done.turnsThroughId).toBeGreaterThan(0);
    expect((await db.prepare("SELECT count(*) AS n FROM turn_index_v1").first<{ n: number }>())?.n).toBe(0);
    expect((await db.prepare("SELECT count(*) AS n FROM search_backfill WHERE done_seq < through_seq").first<{ n: number }>())?.n).toBe(0);
    const pages = await termsByRow(db, "conversation_memory_terms_vocab", "SELECT id FROM conversation_memory_pages WHERE conversation_id = ?1", conversations[0] ?? "");
    const [pageRow] = [...pages.values()];
    expect({ ...pageRow, scope: undefined }).toEqual({ ...(await expectedTerms(db, { path: "extracted/plans", content: searchForm(page).text, grams: searchForm(page).grams })), scope: undefined });
  });

  it("indexes the control database's live pages, and no tombstone", async () => {
    const db = env.BACKFILL_CONTROL;
    await applyD1Migrations(db, before("0019", env.TEST_MIGRATIONS_CONTROL));
    const write = (path: string, version: number, content: string, deleted = 0) =>
      db
        .prepare("INSERT INTO memory_page_versions (agent_id, path, version, content, content_hash, chars, deleted, created_at) VALUES ('helper', ?, ?, ?, ?, ?, ?, ?)")
        .bind(path, version, content, sha256Hex(content), content.length, deleted, new Date(0).toISOString())
        .run();
    await write("notes/venue", 1, "The venue is Lisbon.");
    await write("notes/venue", 2, "The venue is Porto.");
    await write("notes/gone", 1, "Forget the nebula.");
    await write("notes/gone", 2, "", 1);
    await applyD1Migrations(db, env.TEST_MIGRATIONS_CONTROL);
    expect((await runBackfill(bound(db), "control")).pages).toBe(1);
    const held = await agentPageTerms(db, "helper");
    expect([...held.keys()]).toEqual(["notes/venue"]);
    expect({ ...held.get("notes/venue"), scope: undefined }).toEqual({ ...(await expectedTerms(db, { path: "notes/venue", content: "The venue is Porto." })), scope: undefined });
    expect(await runBackfill(bound(db), "control")).toEqual({ logThroughId: 0, events: 0, turnsThroughId: 0, pages: 0, sourcesThroughId: 0, extractedPagesThroughId: 0, extractedSourcesBatches: 0, extractedVersionsThroughId: 0 });
  });
});
