import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { MemoryReader } from "../../src/core/memory-privacy";
import { agentReader, compactionReader, factRefusal, pageAuthor, pageRefusal, servingRefusal } from "../../src/core/memory-privacy";

const A = "api:acme:a";
const B = "api:acme:b";
const DIRECT = "telegram:7001:42";
const GROUP = "telegram:7001:-1001234";
const OTHER_TENANT = "api:globex:main";

const reader = (conversationId: string, scopes: readonly string[] | undefined = ["api:acme:*", "telegram:7001:*"], sources: readonly string[] = ["api:acme:*", "telegram:7001:*"]): MemoryReader => ({
  conversationId,
  sources,
  scopes,
  sharing: "conversation",
});
const sharing = (conversationId: string, scopes?: readonly string[], sources?: readonly string[]): MemoryReader => ({ ...reader(conversationId, scopes, sources), sharing: "agent" });

describe("pageAuthor", () => {
  it.each([
    ["extracted/people/u1", "extraction"],
    ["extracted/x", "extraction"],
    ["notes/extracted/x", "person"],
    ["extractedx/y", "person"],
    ["people/ada", "person"],
  ] as const)("%s → %s", (path, author) => {
    expect(pageAuthor(path)).toBe(author);
  });
});

describe("factRefusal", () => {
  it.each([
    ["said here, served here", reader(A), A, undefined],
    ["said in a sibling conversation", reader(B), A, { reason: "other_conversation", conversationId: A, servedIn: B }],
    ["a direct chat's fact in a group", reader(A), DIRECT, { reason: "other_conversation", conversationId: DIRECT, servedIn: A }],
    ["the agent no longer serves where it was said", reader(A, undefined, ["api:acme:a"]), B, { reason: "not_served", conversationId: B }],
    ["the agent no longer serves the conversation", reader(A, undefined, ["api:acme:b"]), A, { reason: "not_served", conversationId: A }],
    ["the caller may not read the conversation", reader(A, [B]), A, { reason: "not_readable", conversationId: A }],
    ["the service reads for the agent, within its sources", reader(A, undefined), A, undefined],
    ["another tenant's conversation", reader(A), OTHER_TENANT, { reason: "not_served", conversationId: OTHER_TENANT }],
    ["sharing: said in a sibling conversation", sharing(B), A, undefined],
    ["sharing: a group's fact in a direct chat", sharing(DIRECT), GROUP, undefined],
    ["sharing: a direct chat's fact in a group", sharing(GROUP), DIRECT, { reason: "direct_chat", conversationId: DIRECT, servedIn: GROUP }],
    ["sharing: a direct chat's fact in an API conversation", sharing(A), DIRECT, { reason: "direct_chat", conversationId: DIRECT, servedIn: A }],
    ["sharing: the caller may not read where it was said", sharing(B, [B]), A, { reason: "not_readable", conversationId: A }],
    ["sharing: the agent no longer serves where it was said", sharing(B, undefined, [B]), A, { reason: "not_served", conversationId: A }],
    ["sharing: another tenant's conversation", sharing(A), OTHER_TENANT, { reason: "not_served", conversationId: OTHER_TENANT }],
    ["sharing, read by the compactor: only its own conversation", compactionReader(B, ["api:acme:*"]), A, { reason: "other_conversation", conversationId: A, servedIn: B }],
  ] as const)("%s", (_, who, saidIn, expected) => {
    expect(factRefusal(who, saidIn)).toEqual(expected);
  });

  it("serves a fact only where it was said, whatever the scopes and sources", () => {
    const id = fc.constantFrom(A, B, DIRECT, OTHER_TENANT, "api:acme:c");
    const patterns = fc.array(fc.constantFrom("*", "api:*", "api:acme:*", A, B, DIRECT, "telegram:7001:*"), { maxLength: 4 });
    fc.assert(
      fc.property(id, id, patterns, fc.option(patterns, { nil: undefined }), (served, saidIn, sources, scopes) => {
        const refusal = factRefusal({ conversationId: served, sources, scopes, sharing: "conversation" }, saidIn);
        if (refusal === undefined) {
          expect(saidIn).toBe(served);
          expect(sources.some((p) => p === "*" || p === saidIn || (p.endsWith("*") && saidIn.startsWith(p.slice(0, -1))))).toBe(true);
        }
      }),
    );
  });

  it("shares a fact only out of a conversation that is not a direct chat, both within the sources and the scopes", () => {
    const id = fc.constantFrom(A, B, DIRECT, GROUP, OTHER_TENANT, "telegram:7001:77");
    const patterns = fc.array(fc.constantFrom("*", "api:*", "api:acme:*", A, B, DIRECT, GROUP, "telegram:7001:*"), { maxLength: 4 });
    const within = (list: readonly string[], conversation: string): boolean =>
      list.some((p) => p === "*" || p === conversation || (p.endsWith("*") && conversation.startsWith(p.slice(0, -1))));
    fc.assert(
      fc.property(id, id, patterns, fc.option(patterns, { nil: undefined }), (served, saidIn, sources, scopes) => {
        if (factRefusal({ conversationId: served, sources, scopes, sharing: "agent" }, saidIn) !== undefined) return;
        for (const conversation of [served, saidIn]) {
          expect(within(sources, conversation)).toBe(true);
          if (scopes !== undefined) expect(within(scopes, conversation)).toBe(true);
        }
        if (saidIn !== served) expect(saidIn === DIRECT || saidIn === "telegram:7001:77").toBe(false);
      }),
    );
  });

  it("reads the declaration's choice, sharing off when it says nothing", () => {
    const policy = { maxChars: 120_000, maxMessages: 400, maxAmendmentChars: 16_000 };
    expect(agentReader(A, { sources: ["api:*"], context: policy }, undefined).sharing).toBe("conversation");
    expect(agentReader(A, { sources: ["api:*"], context: { ...policy, memorySharing: "agent" } }, [A]).sharing).toBe("agent");
    expect(agentReader(A, { sources: ["api:*"], context: { ...policy, memorySharing: "agent" } }, [A])).toMatchObject({ conversationId: A, sources: ["api:*"], scopes: [A] });
  });
});

describe("pageRefusal", () => {
  it("serves a person's agent-wide page wherever the agent serves, an extracted page only with its conversation", () => {
    expect(pageRefusal(reader(A), { path: "people/ada" })).toBeUndefined();
    expect(pageRefusal(reader(OTHER_TENANT), { path: "people/ada" })).toEqual({ reason: "not_served", conversationId: OTHER_TENANT });
    expect(pageRefusal(reader(A), { path: "extracted/plans/x", conversationId: A })).toBeUndefined();
    expect(pageRefusal(reader(A), { path: "extracted/plans/x", conversationId: B })).toEqual({ reason: "other_conversation", conversationId: B, servedIn: A });
    // An extracted page kept agent-wide (as an older version did) names no conversation: served nowhere.
    expect(pageRefusal(reader(A), { path: "extracted/plans/x" })).toEqual({ reason: "unsourced" });
  });

  it("refuses everything in a conversation the agent does not serve", () => {
    expect(servingRefusal(reader(OTHER_TENANT))).toEqual({ reason: "not_served", conversationId: OTHER_TENANT });
    expect(servingRefusal(reader(A, [B]))).toEqual({ reason: "not_readable", conversationId: A });
  });
});
