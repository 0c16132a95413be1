import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compactorRunEvent } from "../../src/core/compactor-runs";
import type { EventInput } from "../../src/core/events";
import { eventInputSchema } from "../../src/core/events";
import { compactionPolicySchema } from "../../src/core/declarations";
import { canonicalJson } from "../../src/core/hash";
import type { SkipReason } from "../../src/core/preflight-decider";
import { skippedRun } from "../../src/core/preflight-decider";
import { borrowedTail, compactSource, eventBody, shortSkipped, skippedNames, storedBody } from "../../src/core/stored-body";

const policy = compactionPolicySchema.parse({ triggerInputChars: 20_000, retainInputChars: 10_000 });
type RunBody = Record<string, unknown> & { detail: Record<string, unknown> };
const skipped = (compactorId = "b-memory.compactor", sourceSeq = 41, reason: SkipReason = "below_trigger", chars = 8_190, messages = 37): RunBody =>
  skippedRun({ compactorId, sourceSeq, active: { chars, messages }, policy }, reason).body as RunBody;

/** What a row written with `body` reads back as, in canonical form. */
const readBack = (kind: Parameters<typeof storedBody>[0], body: unknown): string => canonicalJson(eventBody(kind, "", storedBody(kind, body)));
const KEY = "run:pf_b-memory.compactor_41:skipped";

describe("a skipped run's stored form before migration 0033", () => {
  it("is the array of the six values its body does not derive", () => {
    expect(storedBody("run", skipped())).toBe('["b-memory.compactor",41,8190,37,20000,"below_trigger"]');
    expect(eventBody("run", KEY, '["b-memory.compactor",41,8190,37,20000,"below_trigger"]')).toEqual(skipped());
    expect(eventBody("run", "any-key", '["b-memory.compactor",41,8190,37,20000,"below_trigger"]')).toEqual(skipped());
  });

  it.each<SkipReason>(["below_trigger", "compaction_in_flight", "backoff", "nothing_to_freeze"])("reads back as the body it was for a skip with reason %s", (reason) => {
    const body = skipped("a_b.c-1.compactor", 1, reason, 0, 0);
    expect(storedBody("run", body).startsWith("[")).toBe(true);
    expect(readBack("run", body)).toBe(canonicalJson(body));
  });

  it("keeps a null value as null, and an absent one absent", () => {
    const withNull = { ...skipped(), detail: { ...skipped().detail, activeChars: null } };
    expect(storedBody("run", withNull)).toBe('["b-memory.compactor",41,null,37,20000,"below_trigger"]');
    expect(readBack("run", withNull)).toBe(canonicalJson(withNull));
  });

  it("reads back as exactly the body it was, for any compactor, source, sizes and trigger", () => {
    const compactor = fc.stringMatching(/^[A-Za-z0-9._-]{1,64}$/);
    fc.assert(
      fc.property(compactor, fc.nat(), fc.nat(), fc.nat(), fc.integer({ min: 1, max: 10_000_000 }), (compactorId, sourceSeq, chars, messages, trigger) => {
        const body = skippedRun({ compactorId, sourceSeq, active: { chars, messages }, policy: { ...policy, triggerInputChars: trigger } }, "below_trigger").body;
        const stored = storedBody("run", body);
        expect(stored.startsWith("[")).toBe(true);
        expect(stored.length).toBeLessThan(canonicalJson(body).length);
        expect(readBack("run", body)).toBe(canonicalJson(body));
      }),
    );
  });
});

describe("every other body", () => {
  it.each([
    ["a planned run", compactorRunEvent("c", "cmp_1", "planned", { detail: { activeChars: 20_034, triggerSeq: 364 } }).body],
    ["a skipped run with a model named", { ...skipped(), model: "m" }],
    ["a skipped run with one more detail", { ...skipped(), detail: { ...skipped().detail, extra: 1 } }],
    ["a skipped run with one detail fewer", { ...skipped(), detail: { ...skipped().detail, triggerInputChars: undefined } }],
    ["a skipped run whose id is not its preflight's", { ...skipped(), runId: "pf_b-memory.compactor_42" }],
    ["a skipped run of an agent", { ...skipped(), role: "agent" }],
    ["a run of another status", { ...skipped(), status: "failed" }],
    ["a run with no detail", { agentId: "c", role: "compactor", runId: "r", status: "started" }],
  ])("is stored whole: %s", (_, body) => {
    expect(storedBody("run", body)).toBe(canonicalJson(body));
    expect(readBack("run", body)).toBe(canonicalJson(body));
  });

  it("of a kind other than run is stored whole, even in a skipped run's shape", () => {
    for (const kind of ["source", "proposal", "delivery", "correction"] as const) expect(storedBody(kind, skipped())).toBe(canonicalJson(skipped()));
  });

  it("reads back as what the row holds when it is not a skipped run's array", () => {
    expect(eventBody("run", KEY, '{"status":"planned"}')).toEqual({ status: "planned" });
    expect(eventBody("run", KEY, "[1,2,3,4,5]")).toEqual([1, 2, 3, 4, 5]);
    expect(eventBody("run", KEY, "[1,2]")).toEqual([1, 2]);
    expect(eventBody("run", KEY, "[1,2,3,4,5,6,7]")).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(eventBody("proposal", KEY, '["c",1,2,3,4,"below_trigger"]')).toEqual(["c", 1, 2, 3, 4, "below_trigger"]);
    expect(eventBody("proposal", KEY, "[1,2,3]")).toEqual([1, 2, 3]);
    // A run's object whose fields happen to spell an array's length is an object.
    expect(eventBody("run", KEY, '{"length":6}')).toEqual({ length: 6 });
    expect(eventBody("run", KEY, '{"length":3}')).toEqual({ length: 3 });
    // The short form's three sizes name a skipped run only under a skipped run's key.
    expect(eventBody("run", "run:cmp_1:planned", "[1,2,3]")).toEqual([1, 2, 3]);
    expect(eventBody("source", KEY, "[1,2,3]")).toEqual([1, 2, 3]);
  });
});

describe("a skipped run's short form (migration 0033)", () => {
  const event = (body: RunBody, idempotencyKey = KEY) => ({ kind: "run" as const, idempotencyKey, body: body as EventInput["body"] });

  it("is the three sizes beside the compactor and source its key names, the usual reason left out", () => {
    expect(shortSkipped(event(skipped()))).toEqual({ compactor: "b-memory.compactor", sourceSeq: 41, body: "[8190,37,20000]" });
    expect(eventBody("run", KEY, "[8190,37,20000]")).toEqual(skipped());
    expect(skippedNames(KEY)).toEqual({ compactor: "b-memory.compactor", sourceSeq: 41 });
  });

  it.each<SkipReason>(["compaction_in_flight", "backoff", "nothing_to_freeze"])("keeps any other reason (%s) after the sizes", (reason) => {
    const body = skipped("b-memory.compactor", 41, reason);
    expect(shortSkipped(event(body))?.body).toBe(`[8190,37,20000,"${reason}"]`);
    expect(canonicalJson(eventBody("run", KEY, shortSkipped(event(body))!.body))).toBe(canonicalJson(body));
  });

  it("keeps a null size as null", () => {
    const body = { ...skipped(), detail: { ...skipped().detail, activeChars: null } };
    expect(shortSkipped(event(body))?.body).toBe("[null,37,20000]");
    expect(canonicalJson(eventBody("run", KEY, "[null,37,20000]"))).toBe(canonicalJson(body));
  });

  it("names the source by the digits its key ends with, whatever the compactor's id ends with", () => {
    const body = skipped("bot_2", 15);
    expect(shortSkipped(event(body, "run:pf_bot_2_15:skipped"))).toEqual({ compactor: "bot_2", sourceSeq: 15, body: "[8190,37,20000]" });
  });

  it.each([
    ["a key that is not its preflight's", event(skipped(), "run:pf_b-memory.compactor_42:skipped")],
    ["a key of another compactor", event(skipped(), "run:pf_other_41:skipped")],
    ["a key with a source number spelled with a leading zero", event(skipped("c", 7), "run:pf_c_07:skipped")],
    ["a body with one more detail", event({ ...skipped(), detail: { ...skipped().detail, extra: 1 } })],
    ["a body with no reason", event({ ...skipped(), detail: { ...skipped().detail, reason: undefined } })],
    ["a run of another status", event({ ...skipped(), status: "failed" })],
  ])("is not taken for %s", (_, input) => {
    expect(shortSkipped(input)).toBeUndefined();
  });

  it("is never taken for an event of another kind, nor for a key a client may give", () => {
    expect(shortSkipped({ kind: "source", idempotencyKey: KEY, body: skipped() as EventInput["body"] })).toBeUndefined();
    expect(skippedNames("tg:update:1")).toBeUndefined();
    expect(skippedNames("run:pf_c_1:completed")).toBeUndefined();
  });

  it("reads back as exactly the event it was, for any compactor, source, sizes, trigger and reason", () => {
    const compactor = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/);
    const reason = fc.constantFrom<SkipReason>("below_trigger", "compaction_in_flight", "backoff", "nothing_to_freeze");
    fc.assert(
      fc.property(compactor, fc.nat(), fc.nat(), fc.nat(), fc.integer({ min: 1, max: 10_000_000 }), reason, (compactorId, sourceSeq, chars, messages, trigger, why) => {
        const run = skippedRun({ compactorId, sourceSeq, active: { chars, messages }, policy: { ...policy, triggerInputChars: trigger } }, why);
        const short = shortSkipped(run);
        expect(short).toEqual({ compactor: compactorId, sourceSeq, body: expect.stringMatching(/^\[/) as unknown });
        expect(short!.body.length).toBeLessThanOrEqual(why === "below_trigger" ? 3 * 16 + 4 : 3 * 16 + 26);
        expect(canonicalJson(eventBody("run", run.idempotencyKey, short!.body))).toBe(canonicalJson(run.body));
      }),
    );
  });
});

describe("a source's compact form (migration 0033)", () => {
  const telegram = {
    author: { id: "100000001", name: "Ada Lovelace", username: "ada" },
    conversationType: "group",
    messageId: "42",
    sentAt: "2026-12-06T10:00:00.000Z",
    text: "The venue is in Porto.",
  };

  it("keeps the message id and the text under their names, every other value in order, the time in milliseconds", () => {
    const stored = compactSource("source", telegram);
    expect(stored).toBe('{"a":["100000001","Ada Lovelace","ada",1796551200000,"group"],"messageId":"42","text":"The venue is in Porto."}');
    expect(eventBody("source", "tg:update:1", stored!)).toEqual(telegram);
  });

  it.each([
    ["an author with no name", { ...telegram, author: { id: "1", username: "ada" } }],
    ["an author with an id alone", { author: { id: "1" }, messageId: "m", text: "" }],
    ["a reply with attachments", { ...telegram, replyToMessageId: "41", attachments: [{ type: "photo", fileId: "f" }] }],
    ["a time with an offset", { ...telegram, sentAt: "2026-12-06T11:00:00+01:00" }],
    ["a time with no milliseconds", { ...telegram, sentAt: "2026-12-06T10:00:00Z" }],
  ])("reads back as exactly the body it was: %s", (_, body) => {
    const stored = compactSource("source", body);
    expect(stored?.startsWith('{"a":[')).toBe(true);
    expect(canonicalJson(eventBody("source", "k", stored!))).toBe(canonicalJson(body));
  });

  it("keeps a time that milliseconds would not spell back as its text", () => {
    expect(compactSource("source", { ...telegram, sentAt: "2026-12-06T10:00:00Z" })).toContain('"2026-12-06T10:00:00Z"');
  });

  it.each([
    ["a body with a field of its own", { ...telegram, extra: 1 }],
    ["a body with no author", { messageId: "m", text: "t" }],
  ])("is not taken for %s", (_, body) => {
    expect(compactSource("source", body)).toBeUndefined();
  });

  it("is taken for sources only, and a stored body of another kind or shape reads back as itself", () => {
    expect(compactSource("proposal", telegram)).toBeUndefined();
    expect(compactSource("correction", telegram)).toBeUndefined();
    const stored = compactSource("source", telegram)!;
    expect(eventBody("proposal", "k", stored)).toEqual(JSON.parse(stored));
    expect(eventBody("source", "k", '{"a":1,"messageId":"m","text":"t"}')).toEqual({ a: 1, messageId: "m", text: "t" });
    expect(eventBody("source", "k", '{"a":[],"messageId":"m","text":"t","x":1}')).toEqual({ a: [], messageId: "m", text: "t", x: 1 });
    expect(eventBody("source", "k", '{"a":[],"b":"m","text":"t"}')).toEqual({ a: [], b: "m", text: "t" });
    expect(eventBody("source", "k", '{"a":[],"messageId":"m","b":"t"}')).toEqual({ a: [], messageId: "m", b: "t" });
    expect(eventBody("source", "k", "[1]")).toEqual([1]);
    expect(eventBody("source", "k", "null")).toBeNull();
    expect(eventBody("source", "k", '"abc"')).toBe("abc");
  });

  it("reads back as exactly the body it was, for any source the schema takes", () => {
    const text = fc.string({ unit: "grapheme", maxLength: 40 });
    const id = fc.stringMatching(/^[\x21-\x7e]{1,12}$/);
    const at = fc.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true }).map((d) => d.toISOString());
    const body = fc.record(
      {
        messageId: id,
        author: fc.record({ id, name: text, username: id }, { requiredKeys: ["id"] }),
        text,
        sentAt: fc.oneof(at, at.map((iso) => iso.replace(".000Z", "Z"))),
        replyToMessageId: id,
        conversationType: fc.constantFrom("direct", "group"),
      },
      { requiredKeys: ["messageId", "author", "text"] },
    );
    fc.assert(
      fc.property(body, (b) => {
        const parsed = eventInputSchema.parse({ kind: "source", idempotencyKey: "k", body: b }).body;
        const stored = compactSource("source", parsed);
        expect(stored).toBeDefined();
        expect(stored!.length).toBeLessThan(canonicalJson(parsed).length);
        expect(canonicalJson(eventBody("source", "k", stored!))).toBe(canonicalJson(parsed));
      }),
    );
  });
});

describe("a short body's borrowed tail", () => {
  /** What SQL rebuilds: the head, then the whole body's last `tail` code points. */
  const rebuilt = (whole: string, { head, tail }: { head: string; tail: number }) => head + (tail === 0 ? "" : [...whole].slice(-tail).join(""));

  it("borrows what both end with, counted in code points", () => {
    expect(borrowedTail('{"a":["u1"],"text":"hi 😀"}', '{"author":{"id":"u1"},"text":"hi 😀"}')).toEqual({ head: '{"a":["u1"]', tail: 15 });
    expect(borrowedTail("abc", "abc")).toEqual({ head: "", tail: 3 });
    expect(borrowedTail("abc", "xyz")).toEqual({ head: "abc", tail: 0 });
    expect(borrowedTail("", "xyz")).toEqual({ head: "", tail: 0 });
    expect(borrowedTail("bc", "abc")).toEqual({ head: "", tail: 2 });
    expect(borrowedTail("abc", "bc")).toEqual({ head: "a", tail: 2 });
  });

  it("never splits a surrogate pair: two characters that share their low half are not a common tail", () => {
    // U+1F600 (\uD83D\uDE00) and U+10600 (\uD801\uDE00) share their low surrogate, not their high one.
    expect(borrowedTail("a\u{1F600}b", "c\u{10600}b")).toEqual({ head: "a\u{1F600}", tail: 1 });
    expect(borrowedTail("\u{1F600}", "\u{10600}")).toEqual({ head: "\u{1F600}", tail: 0 });
    // A pair borrowed whole counts one: the lowest and the highest low surrogate.
    expect(borrowedTail("x\u{10000}", "y\u{10000}")).toEqual({ head: "x", tail: 1 });
    expect(borrowedTail("x\u{103FF}", "y\u{103FF}")).toEqual({ head: "x", tail: 1 });
  });

  it("rebuilds the short body exactly, for any pair of strings", () => {
    const text = fc.string({ unit: "grapheme", maxLength: 20 });
    fc.assert(
      fc.property(text, text, text, (a, b, common) => {
        const short = a + common;
        const whole = b + common;
        const borrowed = borrowedTail(short, whole);
        expect(rebuilt(whole, borrowed)).toBe(short);
        expect(borrowed.tail).toBeGreaterThanOrEqual([...common].length);
      }),
    );
  });
});
