import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AgentDeclaration, CompactorDeclaration, Registration } from "../../src/core/declarations";
import {
  COMPACTOR_VERSION,
  canonicalRegistration,
  compactionPolicySchema,
  epochOf,
  pairMismatches,
  registrationSchema,
} from "../../src/core/declarations";
import { sha256Hex } from "../../src/core/hash";

const RUNS = { numRuns: 150 };

const DOC_SOUL = { name: "soul.md", hash: sha256Hex("soul") };
const DOC_PEOPLE = { name: "people.md", hash: sha256Hex("people") };
const DOC_RULES = { name: "rules.md", hash: sha256Hex("rules") };

/** The fields both declarations must agree on, as one reciprocal pair would carry them. */
const SHARED = {
  enabled: true,
  provider: { profile: "default", model: "test-model" },
  sources: ["api:acme:*", "telegram:7001:-100123", "api:solo"],
  admitSensitive: false,
  historyAgents: ["helper", "notes-bot", "scribe"],
  documents: [DOC_SOUL, DOC_PEOPLE, DOC_RULES],
  documentBudgetChars: 4_000,
};

/** A reciprocal pair, parsed so defaults are filled in exactly as registration fills them. */
function reciprocalPair(): Registration {
  return registrationSchema.parse({
    agent: { id: "helper", compactorId: "helper.compactor", ...structuredClone(SHARED) },
    compactor: { id: "helper.compactor", targetId: "helper", ...structuredClone(SHARED) },
  });
}

const fieldsOf = (agent: AgentDeclaration, compactor: CompactorDeclaration): string[] =>
  pairMismatches(agent, compactor).map((m) => m.field);

// ---------------------------------------------------------------------------------------------

interface Flip {
  readonly field: string;
  readonly agent?: (a: AgentDeclaration) => AgentDeclaration;
  readonly compactor?: (c: CompactorDeclaration) => CompactorDeclaration;
}

/** One disagreement per contract item, each made from either side where that side carries the field. */
const FLIPS: readonly Flip[] = [
  { field: "compactorId", agent: (a) => ({ ...a, compactorId: "other.compactor" }), compactor: (c) => ({ ...c, id: "other.compactor" }) },
  { field: "targetId", agent: (a) => ({ ...a, id: "other-agent" }), compactor: (c) => ({ ...c, targetId: "other-agent" }) },
  { field: "enabled", agent: (a) => ({ ...a, enabled: false }), compactor: (c) => ({ ...c, enabled: false }) },
  {
    field: "provider.profile",
    agent: (a) => ({ ...a, provider: { ...a.provider, profile: "backup" } }),
    compactor: (c) => ({ ...c, provider: { ...c.provider, profile: "backup" } }),
  },
  {
    field: "provider.model",
    agent: (a) => ({ ...a, provider: { ...a.provider, model: "bigger-model" } }),
    compactor: (c) => ({ ...c, provider: { ...c.provider, model: "bigger-model" } }),
  },
  { field: "sources", agent: (a) => ({ ...a, sources: [...a.sources, "api:extra"] }), compactor: (c) => ({ ...c, sources: c.sources.slice(1) }) },
  { field: "admitSensitive", agent: (a) => ({ ...a, admitSensitive: true }), compactor: (c) => ({ ...c, admitSensitive: true }) },
  {
    field: "historyAgents",
    agent: (a) => ({ ...a, historyAgents: [...a.historyAgents, "intruder"] }),
    compactor: (c) => ({ ...c, historyAgents: [] }),
  },
  {
    field: "documents",
    // Same names, one different hash: a document is subscribed by its exact content.
    agent: (a) => ({ ...a, documents: a.documents.map((d) => (d.name === "soul.md" ? { ...d, hash: sha256Hex("soul v2") } : d)) }),
    compactor: (c) => ({ ...c, documents: c.documents.slice(0, 2) }),
  },
  { field: "documentBudgetChars", agent: (a) => ({ ...a, documentBudgetChars: 4_001 }), compactor: (c) => ({ ...c, documentBudgetChars: 0 }) },
];

const flipCases = FLIPS.flatMap((flip) => [
  ...(flip.agent === undefined ? [] : [{ side: "agent", field: flip.field, flip }]),
  ...(flip.compactor === undefined ? [] : [{ side: "compactor", field: flip.field, flip }]),
]);

function applyFlips(flips: readonly Flip[], sides: readonly ("agent" | "compactor")[]): { agent: AgentDeclaration; compactor: CompactorDeclaration } {
  let { agent, compactor } = reciprocalPair();
  flips.forEach((flip, index) => {
    if (sides[index] === "agent" && flip.agent !== undefined) agent = flip.agent(agent);
    else if (flip.compactor !== undefined) compactor = flip.compactor(compactor);
  });
  return { agent, compactor };
}

describe("pairMismatches", () => {
  it("finds nothing to disagree on in a reciprocal pair", () => {
    const { agent, compactor } = reciprocalPair();
    expect(pairMismatches(agent, compactor)).toEqual([]);
  });

  it.each(flipCases)("reports exactly $field when the $side side changes it", ({ side, flip }) => {
    const { agent, compactor } = applyFlips([flip], [side === "agent" ? "agent" : "compactor"]);
    expect(fieldsOf(agent, compactor)).toEqual([flip.field]);
  });

  it("reports both sides' values for the disagreeing field", () => {
    const { agent, compactor } = reciprocalPair();
    const mismatches = pairMismatches(agent, { ...compactor, provider: { ...compactor.provider, model: "other-model" } });
    expect(mismatches).toEqual([{ field: "provider.model", agent: "test-model", compactor: "other-model" }]);
  });

  it("ignores the order of sources, history agents and documents", () => {
    const { agent, compactor } = reciprocalPair();
    const reordered: CompactorDeclaration = {
      ...compactor,
      sources: [...compactor.sources].reverse(),
      historyAgents: [...compactor.historyAgents].reverse(),
      documents: [...compactor.documents].reverse(),
    };
    expect(pairMismatches(agent, reordered)).toEqual([]);
  });

  it("property: any permutation of the list fields on either side agrees", () => {
    const { agent, compactor } = reciprocalPair();
    const permutation = <T>(items: readonly T[]) => fc.shuffledSubarray([...items], { minLength: items.length, maxLength: items.length });
    fc.assert(
      fc.property(
        fc.record({
          agentSources: permutation(agent.sources),
          agentHistory: permutation(agent.historyAgents),
          agentDocuments: permutation(agent.documents),
          compactorSources: permutation(compactor.sources),
          compactorHistory: permutation(compactor.historyAgents),
          compactorDocuments: permutation(compactor.documents),
        }),
        (p) => {
          const a = { ...agent, sources: p.agentSources, historyAgents: p.agentHistory, documents: p.agentDocuments };
          const c = { ...compactor, sources: p.compactorSources, historyAgents: p.compactorHistory, documents: p.compactorDocuments };
          expect(pairMismatches(a, c)).toEqual([]);
        },
      ),
      RUNS,
    );
  });

  it("does not treat a duplicated list entry as the same list", () => {
    const { agent, compactor } = reciprocalPair();
    expect(fieldsOf(agent, { ...compactor, historyAgents: [...compactor.historyAgents, "helper"] })).toEqual(["historyAgents"]);
  });

  it("property: reports exactly the set of flipped fields, whichever side each flip is on", () => {
    fc.assert(
      fc.property(
        fc.subarray([...FLIPS]),
        fc.array(fc.constantFrom("agent" as const, "compactor" as const), { minLength: FLIPS.length, maxLength: FLIPS.length }),
        (flips, sides) => {
          const { agent, compactor } = applyFlips(flips, sides);
          expect(new Set(fieldsOf(agent, compactor))).toEqual(new Set(flips.map((f) => f.field)));
        },
      ),
      RUNS,
    );
  });

  it("reports an agent whose compactor id is its own id, even when the pair is otherwise reciprocal", () => {
    const self = registrationSchema.parse({
      agent: { id: "helper", compactorId: "helper", ...structuredClone(SHARED) },
      compactor: { id: "helper", targetId: "helper", ...structuredClone(SHARED) },
    });
    expect(pairMismatches(self.agent, self.compactor)).toEqual([
      { field: "compactorId", agent: "helper", compactor: "must differ from the agent id" },
    ]);
  });
});

describe("compactionPolicySchema", () => {
  it("defaults to the Stream policy: trigger at 80,000, retain 40,000", () => {
    expect(compactionPolicySchema.parse({})).toEqual({
      triggerInputChars: 80_000,
      retainInputChars: 40_000,
      maxFrozenEvents: 2_000,
      maxFrozenChars: 160_000,
      maxSummaryChars: 8_000,
    });
  });

  it("gives a compactor declaration without a policy the same defaults", () => {
    const { compactor } = reciprocalPair();
    expect(compactor.policy).toEqual(compactionPolicySchema.parse({}));
  });

  it.each([
    { name: "retain one below trigger", policy: { triggerInputChars: 1_000, retainInputChars: 999 }, ok: true },
    { name: "retain 0", policy: { triggerInputChars: 1_000, retainInputChars: 0 }, ok: true },
    { name: "retain equal to trigger", policy: { triggerInputChars: 1_000, retainInputChars: 1_000 }, ok: false, path: "retainInputChars" },
    { name: "retain above trigger", policy: { triggerInputChars: 1_000, retainInputChars: 1_001 }, ok: false, path: "retainInputChars" },
    { name: "retain at the default trigger", policy: { retainInputChars: 80_000 }, ok: false, path: "retainInputChars" },
    { name: "maxFrozenChars equal to trigger", policy: { triggerInputChars: 1_000, retainInputChars: 500, maxFrozenChars: 1_000 }, ok: true },
    {
      name: "maxFrozenChars one below trigger",
      policy: { triggerInputChars: 1_000, retainInputChars: 500, maxFrozenChars: 999 },
      ok: false,
      path: "maxFrozenChars",
    },
    // The default 160,000 frozen bound cannot hold a natural prefix of a larger trigger.
    { name: "a trigger above the default maxFrozenChars", policy: { triggerInputChars: 160_001 }, ok: false, path: "maxFrozenChars" },
    { name: "a trigger equal to the default maxFrozenChars", policy: { triggerInputChars: 160_000 }, ok: true },
  ] as { name: string; policy: Record<string, number>; ok: boolean; path?: string }[])("$name: ok=$ok", ({ policy, ok, path }) => {
    const result = compactionPolicySchema.safeParse(policy);
    expect(result.success).toBe(ok);
    if (!result.success) expect(result.error.issues.map((issue) => issue.path.join("."))).toContain(path);
  });

  it("property: accepts exactly when retain < trigger ≤ maxFrozenChars", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 5_000 }),
        fc.integer({ min: 0, max: 5_000 }),
        fc.integer({ min: 100, max: 5_000 }),
        (triggerInputChars, retainInputChars, maxFrozenChars) => {
          const result = compactionPolicySchema.safeParse({ triggerInputChars, retainInputChars, maxFrozenChars });
          expect(result.success).toBe(retainInputChars < triggerInputChars && maxFrozenChars >= triggerInputChars);
        },
      ),
      RUNS,
    );
  });
});

describe("epochOf", () => {
  const PROMPT = "Summarize the frozen prefix.";

  it("names the compactor version and a SHA-256 fingerprint, joined as the id", () => {
    const epoch = epochOf(reciprocalPair(), PROMPT);
    expect(epoch.compactorVersion).toBe(COMPACTOR_VERSION);
    expect(epoch.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(epoch.id).toBe(`${COMPACTOR_VERSION}:${epoch.fingerprint}`);
  });

  it("is deterministic: equal registrations and prompts give the same epoch", () => {
    expect(epochOf(reciprocalPair(), PROMPT)).toEqual(epochOf(reciprocalPair(), PROMPT));
  });

  it("does not depend on key order (the fingerprint is over canonical JSON)", () => {
    const { agent, compactor } = reciprocalPair();
    const reversedKeys = <T extends object>(value: T): T => Object.fromEntries(Object.entries(value).reverse()) as T;
    expect(epochOf({ compactor: reversedKeys(compactor), agent: reversedKeys(agent) }, PROMPT)).toEqual(epochOf(reciprocalPair(), PROMPT));
  });

  it("does not depend on whether defaults were written out or left to the schema", () => {
    const explicit = registrationSchema.parse({
      agent: { id: "helper", compactorId: "helper.compactor", ...structuredClone(SHARED), context: { maxChars: 120_000, maxMessages: 400 } },
      compactor: {
        id: "helper.compactor",
        targetId: "helper",
        ...structuredClone(SHARED),
        outputMode: "projection",
        policy: { triggerInputChars: 80_000, retainInputChars: 40_000, maxFrozenEvents: 2_000, maxFrozenChars: 160_000, maxSummaryChars: 8_000 },
      },
    });
    expect(epochOf(explicit, PROMPT)).toEqual(epochOf(reciprocalPair(), PROMPT));
  });

  it("changes with the prompt, by as little as one character", () => {
    const base = epochOf(reciprocalPair(), PROMPT);
    expect(epochOf(reciprocalPair(), `${PROMPT} `).fingerprint).not.toBe(base.fingerprint);
    expect(epochOf(reciprocalPair(), PROMPT.toLowerCase()).fingerprint).not.toBe(base.fingerprint);
  });

  const changes: { name: string; change: (r: Registration) => Registration }[] = [
    { name: "agent.id", change: (r) => ({ ...r, agent: { ...r.agent, id: "helper2" } }) },
    { name: "agent.compactorId", change: (r) => ({ ...r, agent: { ...r.agent, compactorId: "helper.c2" } }) },
    { name: "agent.enabled", change: (r) => ({ ...r, agent: { ...r.agent, enabled: false } }) },
    { name: "agent.provider.model", change: (r) => ({ ...r, agent: { ...r.agent, provider: { ...r.agent.provider, model: "m2" } } }) },
    { name: "agent.sources", change: (r) => ({ ...r, agent: { ...r.agent, sources: ["api:other"] } }) },
    { name: "agent.admitSensitive", change: (r) => ({ ...r, agent: { ...r.agent, admitSensitive: true } }) },
    { name: "agent.historyAgents", change: (r) => ({ ...r, agent: { ...r.agent, historyAgents: ["helper"] } }) },
    { name: "agent.documents", change: (r) => ({ ...r, agent: { ...r.agent, documents: [DOC_SOUL] } }) },
    { name: "agent.documentBudgetChars", change: (r) => ({ ...r, agent: { ...r.agent, documentBudgetChars: 4_001 } }) },
    { name: "agent.context.maxChars", change: (r) => ({ ...r, agent: { ...r.agent, context: { ...r.agent.context, maxChars: 120_001 } } }) },
    { name: "agent.context.maxMessages", change: (r) => ({ ...r, agent: { ...r.agent, context: { ...r.agent.context, maxMessages: 401 } } }) },
    { name: "compactor.id", change: (r) => ({ ...r, compactor: { ...r.compactor, id: "helper.c2" } }) },
    { name: "compactor.targetId", change: (r) => ({ ...r, compactor: { ...r.compactor, targetId: "helper2" } }) },
    { name: "compactor.enabled", change: (r) => ({ ...r, compactor: { ...r.compactor, enabled: false } }) },
    {
      name: "compactor.provider.profile",
      change: (r) => ({ ...r, compactor: { ...r.compactor, provider: { ...r.compactor.provider, profile: "backup" } } }),
    },
    { name: "compactor.documentBudgetChars", change: (r) => ({ ...r, compactor: { ...r.compactor, documentBudgetChars: 0 } }) },
    {
      name: "compactor.policy.triggerInputChars",
      change: (r) => ({ ...r, compactor: { ...r.compactor, policy: { ...r.compactor.policy, triggerInputChars: 80_001 } } }),
    },
    {
      name: "compactor.policy.retainInputChars",
      change: (r) => ({ ...r, compactor: { ...r.compactor, policy: { ...r.compactor.policy, retainInputChars: 39_999 } } }),
    },
    {
      name: "compactor.policy.maxFrozenEvents",
      change: (r) => ({ ...r, compactor: { ...r.compactor, policy: { ...r.compactor.policy, maxFrozenEvents: 1_999 } } }),
    },
    {
      name: "compactor.policy.maxFrozenChars",
      change: (r) => ({ ...r, compactor: { ...r.compactor, policy: { ...r.compactor.policy, maxFrozenChars: 160_001 } } }),
    },
    {
      name: "compactor.policy.maxSummaryChars",
      change: (r) => ({ ...r, compactor: { ...r.compactor, policy: { ...r.compactor.policy, maxSummaryChars: 8_001 } } }),
    },
    { name: "compactor.outputMode", change: (r) => ({ ...r, compactor: { ...r.compactor, outputMode: "plain" } }) },
    { name: "compactor.prompt (the declared override)", change: (r) => ({ ...r, compactor: { ...r.compactor, prompt: "custom" } }) },
  ];

  it.each(changes)("changes when $name changes", ({ change }) => {
    const base = epochOf(reciprocalPair(), PROMPT);
    const changed = change(reciprocalPair());
    // Every change here is still a registration the schema accepts: the epoch of a real declaration moves.
    expect(registrationSchema.safeParse(changed).success).toBe(true);
    const epoch = epochOf(changed, PROMPT);
    expect(epoch.fingerprint).not.toBe(base.fingerprint);
    expect(epoch.id).not.toBe(base.id);
    expect(epoch.compactorVersion).toBe(base.compactorVersion);
  });

  it("gives every one of those changes its own epoch", () => {
    const fingerprints = [reciprocalPair(), ...changes.map(({ change }) => change(reciprocalPair()))].map((r) => epochOf(r, PROMPT).fingerprint);
    expect(new Set(fingerprints).size).toBe(fingerprints.length);
  });

  it("property: any change to the budget or trigger moves the fingerprint; the same values restore it", () => {
    const base = reciprocalPair();
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 200_000 }), fc.integer({ min: 40_001, max: 160_000 }), (budget, trigger) => {
        const changed: Registration = {
          agent: { ...base.agent, documentBudgetChars: budget },
          compactor: { ...base.compactor, policy: { ...base.compactor.policy, triggerInputChars: trigger } },
        };
        const same = budget === base.agent.documentBudgetChars && trigger === base.compactor.policy.triggerInputChars;
        expect(epochOf(changed, PROMPT).fingerprint === epochOf(base, PROMPT).fingerprint).toBe(same);
        expect(epochOf(structuredClone(changed), PROMPT)).toEqual(epochOf(changed, PROMPT));
      }),
      RUNS,
    );
  });
});

describe("canonicalRegistration", () => {
  it("makes list order and duplicates irrelevant to the epoch", () => {
    const base = registrationSchema.parse({
      agent: { id: "a", compactorId: "a.c", enabled: true, provider: { profile: "default", model: "m" }, sources: ["api:x:*", "api:b:*"], admitSensitive: false, historyAgents: ["z", "a"], documents: [], documentBudgetChars: 0 },
      compactor: { id: "a.c", targetId: "a", enabled: true, provider: { profile: "default", model: "m" }, sources: ["api:b:*", "api:x:*"], admitSensitive: false, historyAgents: ["a", "z", "a"], documents: [], documentBudgetChars: 0 },
    });
    const reordered = { agent: { ...base.agent, sources: ["api:b:*", "api:x:*"], historyAgents: ["a", "z"] }, compactor: base.compactor };
    expect(epochOf(base, "p").id).toBe(epochOf(reordered, "p").id);
    expect(canonicalRegistration(base).compactor.historyAgents).toEqual(["a", "z"]);
    expect(epochOf(base, "p").id).not.toBe(epochOf(base, "q").id);
  });
});
