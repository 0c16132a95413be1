import { describe, expect, it } from "vitest";
import { eventInputSchema } from "../../src/core/events";
import { eventTerms } from "../../src/core/turn-terms";

const parse = (event: unknown) => eventInputSchema.parse(event);

describe("eventTerms", () => {
  it("indexes a source's text folded, its grams, and its author's name (else username, else id), folded", () => {
    const source = (author: object) => parse({ kind: "source", idempotencyKey: "k", body: { messageId: "m1", author, text: "كتاب ٣ 北京天气" } });
    expect(eventTerms(source({ id: "u1", name: "Ada", username: "ada" }))).toEqual({
      kind: "source", author: "Ada", raw: "كتاب ٣ 北京天气", text: "کتاب 3 北京天气", grams: "北京 京天 天气", messageId: "m1", authorTerms: undefined,
    });
    expect(eventTerms(source({ id: "u1", username: "ada" }))?.author).toBe("ada");
    expect(eventTerms(source({ id: "u1" }))?.author).toBe("u1");
    // A name folding changes is kept folded for the message's edits to read (turns.author_terms).
    expect(eventTerms(source({ id: "u2", name: "علي" }))).toMatchObject({ author: "علی", authorTerms: "علی" });
  });

  it("indexes an edit's text with no author of its own (its message's is read when it is written), and a reply's under its agent", () => {
    expect(eventTerms(parse({ kind: "correction", idempotencyKey: "e", body: { action: "edit", targetMessageId: "m1", text: "new words" } }))).toEqual({
      kind: "edit", author: undefined, raw: "new words", text: "new words", grams: "", messageId: "m1", authorTerms: undefined,
    });
    expect(eventTerms(parse({ kind: "proposal", idempotencyKey: "p", body: { proposalId: "p1", agentId: "host", text: "noted" } }))).toEqual({
      kind: "proposal", author: "host", raw: "noted", text: "noted", grams: "", messageId: undefined, authorTerms: undefined,
    });
  });

  it("has no row for an event without a text", () => {
    expect(eventTerms(parse({ kind: "correction", idempotencyKey: "d", body: { action: "delete", targetMessageId: "m1" } }))).toBeUndefined();
    expect(eventTerms(parse({ kind: "delivery", idempotencyKey: "v", body: { status: "delivered", proposalId: "p1" } }))).toBeUndefined();
    expect(eventTerms(parse({ kind: "run", idempotencyKey: "r", body: { runId: "r1", agentId: "host", role: "agent", status: "skipped" } }))).toBeUndefined();
  });
});
