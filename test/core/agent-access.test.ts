import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { agentAccess } from "../../src/core/agent-access";
import { patternContains, scopeAllows, scopesContain } from "../../src/core/conversation-id";

describe("patternContains", () => {
  it.each([
    ["telegram:*", "telegram:1:*", true],
    ["telegram:1:*", "telegram:*", false],
    ["*", "*", true],
    ["*", "telegram:1:*", true],
    ["*", "api:acme", true],
    ["api:acme:*", "*", false],
    ["api:acme", "api:acme", true],
    ["api:acme", "api:acme*", false],
    ["api:acme", "api:acme:x", false],
    ["api:acme:*", "api:acme:x", true],
    ["api:acme:*", "api:acme", false],
    ["api:acme:*", "api:acme2:*", false],
    ["api:tenantA:*", "api:tenantB:*", false],
    ["telegram:1:*", "telegram:10:*", false],
  ])("%s contains %s: %s", (outer, inner, expected) => {
    expect(patternContains(outer, inner)).toBe(expected);
  });

  it("scopesContain needs one scope that contains the whole pattern", () => {
    expect(scopesContain(["api:a:*", "telegram:*"], "telegram:1:*")).toBe(true);
    expect(scopesContain(["api:a:*", "api:b:*"], "api:*")).toBe(false);
    expect(scopesContain([], "api:a")).toBe(false);
  });
});

// Small alphabets so generated patterns often share prefixes, equal each other, or nest.
const idArb = fc.stringMatching(/^[ab:]{0,5}$/);
const patternArb = fc.oneof(idArb, idArb.map((p) => `${p}*`));

describe("patternContains: properties", () => {
  it("is sound: when outer contains inner, every id inner allows outer allows", () => {
    fc.assert(
      fc.property(patternArb, patternArb, idArb, (outer, inner, id) => {
        fc.pre(patternContains(outer, inner));
        if (scopeAllows(inner, id)) expect(scopeAllows(outer, id)).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it("is exact: when outer does not contain inner, some id inner allows is one outer refuses", () => {
    fc.assert(
      fc.property(patternArb, patternArb, (outer, inner) => {
        fc.pre(!patternContains(outer, inner));
        const base = inner.endsWith("*") ? inner.slice(0, -1) : inner;
        const witnesses = [base, `${base}a`, `${base}b`];
        expect(witnesses.some((id) => scopeAllows(inner, id) && !scopeAllows(outer, id))).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it("is reflexive and transitive, and `*` contains every pattern", () => {
    fc.assert(
      fc.property(patternArb, patternArb, patternArb, (a, b, c) => {
        expect(patternContains(a, a)).toBe(true);
        expect(patternContains("*", a)).toBe(true);
        if (patternContains(a, b) && patternContains(b, c)) expect(patternContains(a, c)).toBe(true);
      }),
      { numRuns: 1_000 },
    );
  });

  it("a narrower prefix never contains a wider one", () => {
    fc.assert(
      fc.property(idArb, fc.stringMatching(/^[ab:]{1,3}$/), (prefix, more) => {
        expect(patternContains(`${prefix}*`, `${prefix}${more}*`)).toBe(true);
        expect(patternContains(`${prefix}${more}*`, `${prefix}*`)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});

describe("agentAccess", () => {
  it("needs the agent scope before anything else", () => {
    expect(agentAccess(["*"], "a", undefined)).toBeUndefined();
    expect(agentAccess(["api:x:*"], "a", undefined, ["api:x:*"])).toEqual({ reason: "agent_scope", agentId: "a" });
    expect(agentAccess(["agent:b"], "a", undefined)).toEqual({ reason: "agent_scope", agentId: "a" });
  });

  it("refuses proposed sources outside the caller's scopes, naming only those", () => {
    expect(agentAccess(["agent:a"], "a", undefined, ["api:tenantB:*", "telegram:*"])).toEqual({
      reason: "proposed_sources",
      agentId: "a",
      outside: ["api:tenantB:*", "telegram:*"],
    });
    expect(agentAccess(["agent:a", "telegram:1:*"], "a", undefined, ["telegram:1:5", "telegram:*"])).toMatchObject({ outside: ["telegram:*"] });
    expect(agentAccess(["agent:a", "telegram:*"], "a", undefined, ["telegram:1:*"])).toBeUndefined();
  });

  it("refuses a caller whose scopes do not contain the sources the agent has now, whatever it proposes", () => {
    expect(agentAccess(["agent:a", "api:x:*"], "a", ["telegram:*"], ["api:x:*"])).toEqual({ reason: "stored_sources", agentId: "a" });
    expect(agentAccess(["agent:a", "api:x:*"], "a", ["telegram:*"])).toEqual({ reason: "stored_sources", agentId: "a" });
    expect(agentAccess(["agent:a", "api:x:*"], "a", ["api:x:1"], ["api:x:*"])).toBeUndefined();
  });
});
