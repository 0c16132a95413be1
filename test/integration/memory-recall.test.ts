import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { D1Meter, meteredD1 } from "../../src/storage/d1-meter";
import { insertEvents } from "../../src/storage/event-store";
import { call, eventsPath, freshConversation, json, sourceEvent, tokenFor } from "./helpers";

/**
 * Recall: the turn index over effective turns (migrations/0013), the search over pages and turns,
 * and the memory envelope served by context and compose.
 */

interface IndexRow {
  message_id: string;
  role: string;
  text: string;
}

/** The turns `turn_fts` holds for a conversation, by message id. */
async function indexedTurns(conversation: string): Promise<IndexRow[]> {
  const { results } = await env.DB.prepare(
    `SELECT t.message_id AS message_id, t.role AS role, turn_fts.text AS text FROM turn_fts JOIN turn_index t ON t.id = turn_fts.rowid
     WHERE turn_fts.conversation_id = ? ORDER BY t.message_id`,
  )
    .bind(conversation)
    .all<IndexRow>();
  return results;
}

async function post(token: string, conversation: string, event: unknown): Promise<void> {
  const res = await call("POST", eventsPath(conversation), { token, body: event });
  expect(res.status, JSON.stringify(await res.clone().json())).toBeLessThan(300);
}

const edit = (key: string, target: string, text: string, editedAt?: string) => ({
  kind: "correction",
  idempotencyKey: key,
  body: { action: "edit", targetMessageId: target, text, ...(editedAt === undefined ? {} : { editedAt }) },
});
const deletion = (key: string, target: string) => ({ kind: "correction", idempotencyKey: key, body: { action: "delete", targetMessageId: target } });
const proposal = (key: string, proposalId: string, agentId: string, text: string, replyTo?: string) => ({
  kind: "proposal",
  idempotencyKey: key,
  body: { proposalId, agentId, text, ...(replyTo === undefined ? {} : { replyToMessageId: replyTo }) },
});
const delivered = (key: string, proposalId: string) => ({ kind: "delivery", idempotencyKey: key, body: { status: "delivered", proposalId } });

describe("the turn index", () => {
  it("holds each turn's effective text: edits replace it (the latest instant wins, as in reconstruction), deletions and undelivered replies are absent", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    await post(token, conversation, sourceEvent("k1", "1", "the venue is Lisbon"));
    await post(token, conversation, sourceEvent("k2", "2", "bring the projector"));
    await post(token, conversation, sourceEvent("k3", "3", "budget is 4000 euros"));
    // Edits of 1 at the same millisecond (offset and fraction read as Date.parse reads them): the later one wins.
    await post(token, conversation, edit("e1", "1", "the venue is Porto", "2026-05-01T12:00:00.9999+02:00"));
    await post(token, conversation, edit("e2", "1", "the venue is Madrid", "2026-05-01T10:00:00.999Z"));
    await post(token, conversation, deletion("d2", "2"));
    // A correction before its message applies once the message arrives.
    await post(token, conversation, edit("e4", "4", "dinner at eight"));
    await post(token, conversation, sourceEvent("k4", "4", "dinner at seven"));
    // A second source reusing an id is recorded, never folded in.
    await post(token, conversation, sourceEvent("k1b", "1", "a second message 1"));
    await post(token, conversation, proposal("p1", "prop-1", "helper", "noted the budget", "3"));
    await post(token, conversation, proposal("p2", "prop-2", "helper", "never delivered"));
    await post(token, conversation, delivered("v1", "prop-1"));

    expect(await indexedTurns(conversation)).toEqual([
      { message_id: "1", role: "user", text: "the venue is Madrid" },
      { message_id: "3", role: "user", text: "budget is 4000 euros" },
      { message_id: "4", role: "user", text: "dinner at eight" },
      { message_id: "prop-1", role: "assistant", text: "noted the budget" },
    ]);
    await post(token, conversation, edit("e3", "1", "the venue is Faro", "2026-05-01T10:00:00.9991Z"));
    // An earlier instant, or none, loses to the current edit whenever it arrives.
    await post(token, conversation, edit("e5", "1", "the venue is Braga", "2026-05-01T09:59:59Z"));
    await post(token, conversation, edit("e6", "1", "the venue is Evora"));
    const indexed = await indexedTurns(conversation);
    expect(indexed[0]).toEqual({ message_id: "1", role: "user", text: "the venue is Faro" });
    // The same turns and texts as canonical reconstruction serves.
    const turns = await json<{ turns: { messageId: string; role: string; text: string }[] }>(
      await call("GET", `/v1/conversations/${conversation}/turns?sensitive=include`, { token }),
    );
    expect(turns.turns.map((t) => ({ message_id: t.messageId, role: t.role, text: t.text })).sort((a, b) => (a.message_id < b.message_id ? -1 : 1))).toEqual(indexed);
  });

  it("costs a source append no statement of its own: the triggers write inside the event's insert", async () => {
    const conversation = freshConversation();
    const meter = new D1Meter();
    const db = meteredD1(env.DB, meter);
    const input = eventInputSchema.parse(sourceEvent("m1", "1", "the offsite is in Lisbon"));
    meter.arm();
    await insertEvents(db, conversation, [{ input, hash: eventHash(conversation, input), seq: 1 }], new Date().toISOString());
    const cost = meter.take();
    // The append's batch before the index was these three statements: the conversation row, the
    // event, the read-back of its key. The index adds rows written, not statements or round trips.
    expect(cost.statements).toBe(3);
    expect(cost.roundTrips).toBe(1);
    expect(await indexedTurns(conversation)).toEqual([{ message_id: "1", role: "user", text: "the offsite is in Lisbon" }]);
  });
});
