import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  conversationIdSchema,
  scopeAllows,
  scopePatternSchema,
  scopesAllow,
  telegramConversationId,
} from "../../src/core/conversation-id";

describe("conversationIdSchema", () => {
  it.each([
    "telegram:7001:42",
    "telegram:7001:-1001234567890",
    "telegram:7001:-1001234567890:77",
    `telegram:${"9".repeat(20)}:-${"9".repeat(20)}:${"9".repeat(20)}`,
    "api:a",
    "api:acme:support:ticket-42",
    "api:Team_1.main-line",
    `api:${"k".repeat(200)}`,
  ])("accepts %s", (id) => {
    expect(conversationIdSchema.safeParse(id).success).toBe(true);
  });

  it.each([
    ["empty", ""],
    ["unknown source", "slack:T1:C1"],
    ["telegram without chat", "telegram:7001"],
    ["telegram non-numeric bot", "telegram:bot:42"],
    ["telegram non-numeric chat", "telegram:7001:chat"],
    ["telegram negative thread", "telegram:7001:-100:-5"],
    ["telegram extra segment", "telegram:7001:-100:5:6"],
    ["telegram 21-digit id", `telegram:${"1".repeat(21)}:42`],
    ["telegram trailing colon", "telegram:7001:42:"],
    ["api without key", "api:"],
    ["api key with space", "api:has space"],
    ["api key with slash", "api:a/b"],
    ["api key with star", "api:acme:*"],
    ["api key of 201 chars", `api:${"k".repeat(201)}`],
    ["upper-case prefix", "API:acme"],
    ["leading space", " api:acme"],
    ["trailing newline", "api:acme\n"],
  ])("rejects %s (%j)", (_name, id) => {
    expect(conversationIdSchema.safeParse(id).success).toBe(false);
  });

  it("builds telegram ids that the schema accepts", () => {
    expect(telegramConversationId("7001", -100123)).toBe("telegram:7001:-100123");
    expect(telegramConversationId("7001", -100123, 9)).toBe("telegram:7001:-100123:9");
    fc.assert(
      fc.property(
        fc.stringMatching(/^[1-9]\d{0,11}$/),
        fc.integer({ min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
        fc.option(fc.nat(), { nil: undefined }),
        (bot, chat, thread) => {
          expect(conversationIdSchema.safeParse(telegramConversationId(bot, chat, thread)).success).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe("scopePatternSchema", () => {
  it.each(["*", "api:*", "api:acme:*", "telegram:7001:*", "telegram:7001:-100123", "api:acme:support"])("accepts %s", (pattern) => {
    expect(scopePatternSchema.safeParse(pattern).success).toBe(true);
  });

  it.each(["", "api:*:support", "*api:acme", "telegram:*:42", "**", "api:a*b*", "x".repeat(257)])("rejects %j", (pattern) => {
    expect(scopePatternSchema.safeParse(pattern).success).toBe(false);
  });
});

describe("scopeAllows", () => {
  it.each([
    ["*", "api:anything", true],
    ["*", "telegram:7001:42:3", true],
    ["api:*", "api:acme", true],
    ["api:*", "telegram:7001:42", false],
    ["api:acme:*", "api:acme:support", true],
    ["api:acme:*", "api:acme", false],
    ["api:acme:*", "api:acme2:support", false],
    ["telegram:7001:*", "telegram:7001:-100123:9", true],
    ["telegram:7001:*", "telegram:70011:42", false],
    ["telegram:7001:-100123", "telegram:7001:-100123", true],
    ["telegram:7001:-100123", "telegram:7001:-100123:9", false],
    ["telegram:7001:-100123", "telegram:7001:-1001234", false],
    ["api:acme", "API:acme", false],
    // A `*` that is not last is literal, never a wildcard.
    ["api:*:support", "api:acme:support", false],
    ["api:*:support", "api:*:support", true],
  ])("%s allows %s: %s", (pattern, id, allowed) => {
    expect(scopeAllows(pattern, id)).toBe(allowed);
  });

  it("scopesAllow is true exactly when some pattern allows", () => {
    expect(scopesAllow([], "api:acme")).toBe(false);
    expect(scopesAllow(["api:other", "telegram:1:*"], "api:acme")).toBe(false);
    expect(scopesAllow(["api:other", "api:acme"], "api:acme")).toBe(true);
    expect(scopesAllow(["telegram:1:*", "api:*"], "api:acme")).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------

const telegramIdArb = fc
  .tuple(fc.stringMatching(/^\d{1,6}$/), fc.stringMatching(/^-?\d{1,6}$/), fc.option(fc.stringMatching(/^\d{1,3}$/), { nil: undefined }))
  .map(([bot, chat, thread]) => (thread === undefined ? `telegram:${bot}:${chat}` : `telegram:${bot}:${chat}:${thread}`));
const apiIdArb = fc.stringMatching(/^[A-Za-z0-9._:-]{1,12}$/).map((key) => `api:${key}`);
const conversationIdArb = fc.oneof(telegramIdArb, apiIdArb);

describe("scopes: properties", () => {
  it("generated ids are valid conversation ids", () => {
    fc.assert(
      fc.property(conversationIdArb, (id) => {
        expect(conversationIdSchema.safeParse(id).success).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it("a token scoped exactly to conversation A allows A and never any other id", () => {
    fc.assert(
      fc.property(conversationIdArb, conversationIdArb, (a, b) => {
        expect(scopePatternSchema.safeParse(a).success).toBe(true);
        expect(scopeAllows(a, a)).toBe(true);
        expect(scopesAllow([a], b)).toBe(a === b);
      }),
      { numRuns: 200 },
    );
  });

  it("a token scoped exactly to A never allows an id that merely extends A", () => {
    fc.assert(
      fc.property(conversationIdArb, fc.constantFrom(":1", "1", "-x", ".", ":*"), (a, suffix) => {
        expect(scopeAllows(a, a + suffix)).toBe(false);
      }),
      { numRuns: 100 },
    );
  });

  it("a trailing-* pattern allows exactly the ids that start with its prefix", () => {
    fc.assert(
      fc.property(conversationIdArb, conversationIdArb, fc.nat(), (a, b, cut) => {
        const prefix = a.slice(0, cut % (a.length + 1));
        expect(scopeAllows(`${prefix}*`, b)).toBe(b.startsWith(prefix));
        expect(scopeAllows(`${prefix}*`, a)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it("scopesAllow is the disjunction of scopeAllows", () => {
    const patternArb = fc.oneof(conversationIdArb, conversationIdArb.map((id) => `${id.slice(0, 6)}*`), fc.constant("*"));
    fc.assert(
      fc.property(fc.array(patternArb, { maxLength: 4 }), conversationIdArb, (patterns, id) => {
        expect(scopesAllow(patterns, id)).toBe(patterns.some((p) => scopeAllows(p, id)));
      }),
      { numRuns: 200 },
    );
  });
});
