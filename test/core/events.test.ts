import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EventInput } from "../../src/core/events";
import {
  appendBatchRequestSchema,
  appendEventRequestSchema,
  eventHash,
  eventInputSchema,
  MAX_BATCH_EVENTS,
  MAX_TEXT_CHARS,
} from "../../src/core/events";
import { sha256Hex } from "../../src/core/hash";
import { CONVERSATION, deletion, delivered, edit, failed, proposal, run, source } from "./event-builders";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A plain JSON copy of an event, for building invalid variants. */
const raw = (event: EventInput): { [key: string]: Json } => JSON.parse(JSON.stringify(event)) as { [key: string]: Json };

function withBody(event: EventInput, patch: { [key: string]: Json }): { [key: string]: Json } {
  const copy = raw(event);
  const body = copy["body"];
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw new Error("event without body");
  return { ...copy, body: { ...body, ...patch } };
}

function bodyWithout(event: EventInput, key: string): { [key: string]: Json } {
  const copy = raw(event);
  const body = copy["body"];
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw new Error("event without body");
  return { ...copy, body: without(body, key) };
}

function without(value: { [key: string]: Json }, key: string): { [key: string]: Json } {
  const copy = { ...value };
  delete copy[key];
  return copy;
}

const SOURCE = source("m1", "hello", { key: "k1" });
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const ANCHOR = { epochId: "foldline-compactor/1:e", position: 1, boundaryId: "bnd_1", boundaryHash: sha256Hex("b"), contentHash: sha256Hex("c") };

describe("eventInputSchema: accepts", () => {
  it.each([
    ["source", SOURCE],
    ["source with every optional field", {
      kind: "source",
      idempotencyKey: "tg:update:1",
      sensitive: true,
      body: {
        messageId: "7",
        author: { id: "tg:42", name: "Ada", username: "ada" },
        text: "[photo] hi",
        sentAt: "2024-05-01T12:00:00+02:00",
        replyToMessageId: "5",
        attachments: [{ type: "photo", fileId: "F", fileUniqueId: "U" }],
      },
    }],
    ["edit", edit("m1", "fixed", { editedAt: "2024-05-01T10:00:00Z" })],
    ["delete", deletion("m1", { deletedAt: "2024-05-01T10:00:00.123Z" })],
    ["proposal", proposal("p1", "agent.a_1-x", "reply", { replyTo: "m1", runId: "r1" })],
    ["delivered", delivered("p1")],
    ["failed delivery", failed("p1", "blocked by user")],
    ["run", run("r1", "agent-a")],
    ["run with usage, error and detail", {
      kind: "run",
      idempotencyKey: "run:r2",
      body: {
        runId: "r2",
        agentId: "compactor-1",
        role: "compactor",
        status: "failed",
        model: "gpt-x",
        usage: { inputTokens: 10, outputTokens: 0 },
        error: { code: "timeout", message: "model took too long" },
        detail: { turns: 12, cached: true, label: "tail", none: null },
      },
    }],
  ])("%s", (_name, event) => {
    const parsed = eventInputSchema.safeParse(event);
    expect(parsed.error).toBeUndefined();
  });

  it("accepts an anchor on a completed compactor run", () => {
    expect(eventInputSchema.safeParse(withBody(run("r1", "a.compactor"), { role: "compactor", anchor: ANCHOR })).success).toBe(true);
  });

  it("defaults sensitive to false", () => {
    const parsed = eventInputSchema.parse(without(raw(SOURCE), "sensitive"));
    expect(parsed.sensitive).toBe(false);
  });

  it("accepts text of exactly MAX_TEXT_CHARS", () => {
    const long = "x".repeat(MAX_TEXT_CHARS);
    expect(eventInputSchema.safeParse(source("m1", long)).success).toBe(true);
    expect(eventInputSchema.safeParse(edit("m1", long)).success).toBe(true);
    expect(eventInputSchema.safeParse(proposal("p1", "a", long)).success).toBe(true);
  });
});

describe("eventInputSchema: rejects", () => {
  const tooLong = "x".repeat(MAX_TEXT_CHARS + 1);
  it.each<[string, unknown]>([
    ["an unknown kind", { ...raw(SOURCE), kind: "reaction" }],
    ["a missing kind", without(raw(SOURCE), "kind")],
    ["a missing idempotencyKey", without(raw(SOURCE), "idempotencyKey")],
    ["an empty idempotencyKey", { ...raw(SOURCE), idempotencyKey: "" }],
    ["an idempotencyKey with a space", { ...raw(SOURCE), idempotencyKey: "a b" }],
    ["an idempotencyKey of 201 chars", { ...raw(SOURCE), idempotencyKey: "k".repeat(201) }],
    ["a missing body", without(raw(SOURCE), "body")],
    ["a non-boolean sensitive", { ...raw(SOURCE), sensitive: "yes" }],
    ["an extra envelope field", { ...raw(SOURCE), seq: 1 }],
    ["expectedSeq on a plain event", { ...raw(SOURCE), expectedSeq: 0 }],
    ["an extra body field", withBody(SOURCE, { html: "<b>hi</b>" })],
    ["an extra author field", withBody(SOURCE, { author: { id: "u", name: "A", isAdmin: true } })],
    ["a source without messageId", bodyWithout(SOURCE, "messageId")],
    ["a source without author", bodyWithout(SOURCE, "author")],
    ["a source without text", bodyWithout(SOURCE, "text")],
    ["an edit without targetMessageId", bodyWithout(edit("m1", "x"), "targetMessageId")],
    ["a proposal without agentId", bodyWithout(proposal("p1", "agent-a", "x"), "agentId")],
    ["a source with text too long", source("m1", tooLong)],
    ["an edit with text too long", edit("m1", tooLong)],
    ["a proposal with text too long", proposal("p1", "agent-a", tooLong)],
    ["a source body under another kind", { ...raw(SOURCE), kind: "proposal" }],
    ["a sentAt that is not ISO", withBody(SOURCE, { sentAt: "yesterday" })],
    ["a sentAt without an offset", withBody(SOURCE, { sentAt: "2024-05-01T10:00:00" })],
    ["21 attachments", withBody(SOURCE, { attachments: Array.from({ length: 21 }, () => ({ type: "photo" })) })],
    ["an unknown attachment type", withBody(SOURCE, { attachments: [{ type: "hologram" }] })],
    ["an unknown correction action", withBody(edit("m1", "x"), { action: "undo" })],
    ["a failed delivery without reason", { ...raw(delivered("p1")), body: { status: "failed", proposalId: "p1" } }],
    ["a delivered body with a reason", withBody(delivered("p1"), { reason: "n/a" })],
    ["an agentId starting with a dot", withBody(proposal("p1", "agent-a", "x"), { agentId: ".agent" })],
    ["an agentId of 65 chars", withBody(proposal("p1", "agent-a", "x"), { agentId: "a".repeat(65) })],
    ["a negative token count", withBody(run("r1", "a"), { usage: { inputTokens: -1, outputTokens: 0 } })],
    ["nested content in run detail", withBody(run("r1", "a"), { detail: { transcript: ["hello"] } })],
    // Only a completed compactor run (which only Foldline may write) anchors a boundary.
    ["an anchor on an agent's run", withBody(run("r1", "a"), { anchor: ANCHOR })],
    ["an anchor on a planned compactor run", withBody(run("r1", "a"), { role: "compactor", status: "planned", anchor: ANCHOR })],
    ["an anchor with a short hash", withBody(run("r1", "a"), { role: "compactor", anchor: { ...ANCHOR, boundaryHash: "abc" } })],
    ["an anchor at position 0", withBody(run("r1", "a"), { role: "compactor", anchor: { ...ANCHOR, position: 0 } })],
    ["a non-object", "source"],
  ])("%s", (_name, event) => {
    expect(eventInputSchema.safeParse(event).success).toBe(false);
  });
});

describe("eventInputSchema: unpaired surrogates", () => {
  const UNPAIRED = "contains an unpaired UTF-16 surrogate";
  const issues = (event: unknown) => {
    const parsed = eventInputSchema.safeParse(event);
    return parsed.success ? [] : parsed.error.issues.map(({ code, path, message }) => ({ code, path, message }));
  };

  it.each<[string, unknown, PropertyKey[]]>([
    ["in a source's text", source("m1", "broken \ud800 text"), ["body", "text"]],
    ["in an author's name", source("m1", "hi", { author: { id: "u1", name: "Ada \udc00" } }), ["body", "author", "name"]],
    [
      "in the second attachment's file id",
      withBody(SOURCE, { attachments: [{ type: "photo", fileId: "f1" }, { type: "photo", fileId: "f2", fileUniqueId: "\ud83d" }] }),
      ["body", "attachments", 1, "fileUniqueId"],
    ],
    ["in a run's detail label", withBody(run("r1", "a"), { detail: { label: "\udfff" } }), ["body", "detail", "label"]],
  ])("refuses one %s, at the path of the string that holds it", (_name, event, path) => {
    expect(issues(event)).toEqual([{ code: "custom", path, message: UNPAIRED }]);
  });

  it("names every string that holds one", () => {
    expect(issues(source("m1", "\ud800", { author: { id: "u1", name: "\udc00" } }))).toEqual([
      { code: "custom", path: ["body", "author", "name"], message: UNPAIRED },
      { code: "custom", path: ["body", "text"], message: UNPAIRED },
    ]);
  });

  it("accepts an optional field that code building an event set to undefined", () => {
    const event = { ...SOURCE, body: { ...SOURCE.body, replyToMessageId: undefined } };
    expect(issues(event)).toEqual([]);
  });
});

describe("append request schemas", () => {
  it.each([0, 1, 42])("appendEventRequestSchema accepts expectedSeq %d", (expectedSeq) => {
    const parsed = appendEventRequestSchema.parse({ ...raw(SOURCE), expectedSeq });
    expect(parsed.expectedSeq).toBe(expectedSeq);
  });

  it.each<[string, unknown]>([
    ["-1", -1],
    ["1.5", 1.5],
    ['"3"', "3"],
    ["null", null],
  ])("appendEventRequestSchema rejects expectedSeq %s", (_name, expectedSeq) => {
    expect(appendEventRequestSchema.safeParse({ ...raw(SOURCE), expectedSeq }).success).toBe(false);
  });

  it("appendEventRequestSchema is as strict as the event schema", () => {
    expect(appendEventRequestSchema.safeParse({ ...raw(SOURCE), extra: 1 }).success).toBe(false);
    expect(appendEventRequestSchema.safeParse({ ...raw(SOURCE), kind: "reaction" }).success).toBe(false);
  });

  const batch = (n: number) => Array.from({ length: n }, (_, i) => raw(source(`m${i}`, "x", { key: `k${i}` })));
  it.each([
    [1, true],
    [MAX_BATCH_EVENTS, true],
    [0, false],
    [MAX_BATCH_EVENTS + 1, false],
  ])("appendBatchRequestSchema with %d events: accepted=%s", (n, accepted) => {
    expect(appendBatchRequestSchema.safeParse({ events: batch(n), expectedSeq: 3 }).success).toBe(accepted);
  });

  it("appendBatchRequestSchema rejects extra fields and an invalid member", () => {
    expect(appendBatchRequestSchema.safeParse({ events: batch(1), dryRun: true }).success).toBe(false);
    expect(appendBatchRequestSchema.safeParse({ events: [...batch(2), { kind: "reaction" }] }).success).toBe(false);
    expect(appendBatchRequestSchema.safeParse({ events: [{ ...raw(SOURCE), expectedSeq: 1 }] }).success).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------

/** The same value with every object's keys in another order (a seeded shuffle); values untouched. */
function reorderKeys<T>(value: T, seed: number): T {
  const visit = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(visit);
    if (v === null || typeof v !== "object") return v;
    const entries = Object.entries(v)
      .map(([key, child], i) => ({ key, child, rank: sha256Hex(`${seed}:${key}:${i}`) }))
      .sort((a, b) => (a.rank < b.rank ? -1 : 1));
    return Object.fromEntries(entries.map(({ key, child }) => [key, visit(child)]));
  };
  return visit(value) as T;
}

const eventArb: fc.Arbitrary<EventInput> = fc.oneof(
  fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 40 }), fc.boolean()).map(([m, t, sensitive]) =>
    source(m.replace(/[^\x21-\x7e]/g, "x") || "m", t, { sensitive, sentAt: "2024-05-01T10:00:00Z", replyTo: "m0" }),
  ),
  fc.tuple(fc.string({ maxLength: 40 }), fc.boolean()).map(([t, sensitive]) => edit("m1", t, { sensitive, editedAt: "2024-05-01T10:00:00Z" })),
  fc.string({ maxLength: 40 }).map((t) => proposal("p1", "agent-a", t, { replyTo: "m1", runId: "r1" })),
  fc.string({ minLength: 1, maxLength: 40 }).map((reason) => failed("p1", reason)),
);

describe("eventHash", () => {
  it("is SHA-256 of the canonical envelope, without seq or expectedSeq", () => {
    const event = source("m1", "hi", { key: "k1", author: { id: "u1" } });
    const text =
      '{"body":{"author":{"id":"u1"},"messageId":"m1","text":"hi"},' +
      '"conversationId":"api:x","idempotencyKey":"k1","kind":"source","sensitive":false}';
    expect(eventHash("api:x", event)).toBe(sha256Hex(text));
    const request = appendEventRequestSchema.parse({ ...raw(event), expectedSeq: 9 });
    expect(eventHash("api:x", request)).toBe(eventHash("api:x", event));
  });

  it("does not depend on the order of object keys", () => {
    const forward = proposal("p1", "agent-a", "hi", { key: "k", replyTo: "m1", runId: "r1" });
    const backward: EventInput = {
      body: { text: "hi", replyToMessageId: "m1", runId: "r1", agentId: "agent-a", proposalId: "p1" },
      sensitive: false,
      idempotencyKey: "k",
      kind: "proposal",
    };
    expect(JSON.stringify(backward)).not.toBe(JSON.stringify(forward));
    expect(eventHash(CONVERSATION, backward)).toBe(eventHash(CONVERSATION, forward));
    fc.assert(
      fc.property(eventArb, fc.integer(), (event, seed) => {
        expect(eventHash(CONVERSATION, reorderKeys(event, seed))).toBe(eventHash(CONVERSATION, event));
      }),
      { numRuns: 100 },
    );
  });

  it("changes when the conversation, key, sensitivity or body changes", () => {
    fc.assert(
      fc.property(eventArb, fc.string({ minLength: 1, maxLength: 5 }), (event, extra) => {
        const base = eventHash(CONVERSATION, event);
        expect(eventHash(`${CONVERSATION}:other`, event)).not.toBe(base);
        expect(eventHash(CONVERSATION, { ...event, idempotencyKey: `${event.idempotencyKey}-2` })).not.toBe(base);
        expect(eventHash(CONVERSATION, { ...event, sensitive: !event.sensitive })).not.toBe(base);
        // "é" never occurs in generated text, so the new value always differs from the old one.
        const changed = withBody(event, event.kind === "delivery" ? { reason: `é${extra}` } : { text: `é${extra}` });
        expect(eventHash(CONVERSATION, eventInputSchema.parse(changed))).not.toBe(base);
      }),
      { numRuns: 100 },
    );
  });

  it("changes when only the kind changes", () => {
    // The envelope binds the kind, so a body could never be replayed as another kind's.
    const asSource = source("m1", "hi", { key: "k" });
    const asEdit = edit("m1", "hi", { key: "k" });
    expect(eventHash(CONVERSATION, asSource)).not.toBe(eventHash(CONVERSATION, asEdit));
    const envelope = (kind: string) =>
      sha256Hex(
        `{"body":{"proposalId":"p1","status":"delivered"},"conversationId":"${CONVERSATION}",` +
          `"idempotencyKey":"k","kind":"${kind}","sensitive":false}`,
      );
    expect(eventHash(CONVERSATION, delivered("p1", { key: "k" }))).toBe(envelope("delivery"));
    expect(envelope("delivery")).not.toBe(envelope("proposal"));
  });

  // Regression: JSON can carry a lone UTF-16 surrogate ("\ud800") and zod strings accept it, but
  // canonicalJson (RFC 8785) throws on it, so an event that passed validation made eventHash throw.
  it("can hash every event the schema accepts, including text with a lone surrogate", () => {
    const body: unknown = JSON.parse(
      '{"kind":"source","idempotencyKey":"k","body":{"messageId":"m1","author":{"id":"u"},"text":"broken \\ud800 text"}}',
    );
    const parsed = eventInputSchema.safeParse(body);
    let hashError: unknown;
    if (parsed.success) {
      try {
        eventHash(CONVERSATION, parsed.data);
      } catch (error) {
        hashError = error;
      }
    }
    // Either outcome is correct: refused by the schema, or accepted and hashable.
    expect(hashError, "accepted by eventInputSchema, then eventHash threw").toBeUndefined();
  });

  it("hashes every event the schema accepts, whatever UTF-16 its strings hold", () => {
    // Surrogate halves alone, and next to each other (where they pair up into one valid character).
    const anyText = fc.string({ unit: fc.constantFrom("a", "é", "\ud83d\ude00", "\ud800", "\udc00"), maxLength: 6 });
    fc.assert(
      fc.property(anyText, anyText, anyText, (text, name, reason) => {
        for (const candidate of [
          source("m1", text, { author: { id: "u", name } }),
          edit("m1", text),
          proposal("p1", "agent-a", text),
          failed("p1", `${reason}.`),
        ]) {
          const parsed = eventInputSchema.safeParse(candidate);
          if (parsed.success) expect(eventHash(CONVERSATION, parsed.data)).toMatch(/^[0-9a-f]{64}$/);
          else expect([text, name, reason].some((s) => LONE_SURROGATE.test(s))).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });
});
