import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { eventInputSchema } from "../../src/core/events";
import { eventTerms } from "../../src/core/turn-terms";
import { expectedTerms, indexedTurns, termsByRow } from "../support/index-terms";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, json, tokenFor } from "./helpers";

/**
 * The turn index holds, for every event that carries a text, exactly the terms core/search-text
 * computes for it (migrations/shard/0023: only TypeScript computes them, so the two cannot
 * disagree), in any script; and the turns a search can serve are exactly canonical reconstruction's.
 * Events go in through the real append path, as a client sends them.
 */

/** Words of every script the rules treat apart: folded Arabic-script letters and digits, marks, runs without spaces, astral characters. */
const word = fc.constantFrom(
  "venue", "Zürich", "naïve", "DONATED", "северный", "Ελλάδα", "غذای", "كتاب", "يوم٣", "می‌خواهم", "مـــدرسة", "۱۴۰۲",
  "नमस्ते", "किताब", "北京天气", "预算", "東京タワー", "ひらがな", "ภาษาไทย", "ພາສາລາວ", "ខ្មែរ", "မြန်မာ", "한국어", "𠀋𠂉", "🙂", "x-ray", "4,096",
);
const text = fc.array(word, { minLength: 0, maxLength: 6 }).map((words) => words.join(" "));
const name = fc.constantFrom("Ann", "علي", "علی", "王小明", "Zoë");
const messageId = fc.integer({ min: 0, max: 5 }).map((n) => `m${n}`);
const proposalId = fc.integer({ min: 0, max: 2 }).map((n) => `p${n}`);
const second = fc.integer({ min: 10, max: 59 });

/** One change the log can make, weighted towards new messages. */
const change = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("source" as const), m: messageId, text, name, sensitive: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("edit" as const), m: messageId, text, at: fc.option(second, { nil: undefined }), sensitive: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), m: messageId }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("proposal" as const), p: proposalId, text }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delivery" as const), p: proposalId }) },
);
type Change = typeof change extends fc.Arbitrary<infer T> ? T : never;

function eventOf(c: Change, key: string): unknown {
  switch (c.kind) {
    case "source":
      return { kind: "source", idempotencyKey: key, sensitive: c.sensitive, body: { messageId: c.m, author: { id: `u-${c.name}`, name: c.name }, text: c.text } };
    case "edit":
      return { kind: "correction", idempotencyKey: key, sensitive: c.sensitive, body: { action: "edit", targetMessageId: c.m, text: c.text, ...(c.at === undefined ? {} : { editedAt: `2026-01-01T00:00:${c.at}Z` }) } };
    case "delete":
      return { kind: "correction", idempotencyKey: key, body: { action: "delete", targetMessageId: c.m } };
    case "proposal":
      return { kind: "proposal", idempotencyKey: key, body: { proposalId: c.p, agentId: "host", text: c.text } };
    case "delivery":
      return { kind: "delivery", idempotencyKey: key, body: { status: "delivered", proposalId: c.p } };
  }
}

describe("the turn index", () => {
  it("holds, for every event with a text, the terms search-text computes, and serves exactly reconstruction's turns", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(change, { minLength: 1, maxLength: 14 }), async (changes) => {
        const conversation = freshConversation("api:terms");
        const token = await tokenFor(conversation);
        const sent: unknown[] = [];
        for (const [i, c] of changes.entries()) {
          const event = eventOf(c, `k${i}`);
          const res = await call("POST", eventsPath(conversation), { token, body: event });
          expect(res.status, await res.clone().text()).toBe(201);
          sent.push(event);
        }
        const db = await shardOf(conversation);
        // Every row: the event's terms as core/turn-terms computes them (an edit's author is its message's).
        const rows = await termsByRow(db, "turn_terms_vocab", "SELECT (k.id << 32) + e.seq FROM conversation_keys k JOIN log e ON e.conversation_key = k.id WHERE k.conversation_id = ?1", conversation);
        const { results: keys } = await db.prepare("SELECT id FROM conversation_keys WHERE conversation_id = ?").bind(conversation).all<{ id: number }>();
        const base = (keys[0]?.id ?? 0) * 2 ** 32;
        let texts = 0;
        for (const [i, raw] of sent.entries()) {
          const terms = eventTerms(eventInputSchema.parse(raw));
          const held = rows.get(base + i + 1);
          if (terms === undefined) {
            expect(held, `event ${i + 1} has no text and no row`).toBeUndefined();
            continue;
          }
          texts += 1;
          const row = { ...held };
          if (terms.author === undefined) delete row["author"];
          expect(row, `event ${i + 1}: ${JSON.stringify(raw)}`).toEqual(await expectedTerms(db, { ...(terms.author === undefined ? {} : { author: terms.author }), text: terms.text, grams: terms.grams }));
        }
        // The conversation's count of rows, bm25's number of documents.
        const counted = await db.prepare("SELECT texts FROM conversations WHERE id = ?").bind(conversation).first<{ texts: number }>();
        expect(counted?.texts).toBe(texts);
        // What a search may serve: reconstruction's turns, each with its current text's row.
        const served = await indexedTurns(db, conversation);
        const turns = await json<{ turns: { messageId: string; role: string; text: string }[] }>(await call("GET", `/v1/conversations/${conversation}/turns?sensitive=include`, { token }));
        expect(served).toEqual(turns.turns.map((t) => ({ message_id: t.messageId, role: t.role, text: t.text })).sort((a, b) => (a.message_id < b.message_id ? -1 : 1)));
      }),
      { numRuns: 25, seed: 35 },
    );
  });
});
