import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BoundaryInputs, ModelEvidence } from "../../src/core/boundary";
import { boundaryBodySchema, boundaryHash, buildBoundary } from "../../src/core/boundary";
import { hashCanonical, sha256Hex } from "../../src/core/hash";
import type { CompactionContent, Packet } from "../../src/core/packet";
import { BOUNDARY_EVENT_TYPE, OUTPUT_CONTRACT } from "../../src/core/packet";
import type { PacketOverrides } from "../support/packet-fixture";
import { BOB, packetFixture, previousBoundary } from "../support/packet-fixture";

const RUNS = { numRuns: 100 };

const MODEL: ModelEvidence = {
  provider: "openai-compatible",
  model: "gpt-test-2026-01-01",
  responseId: "resp_123",
  finishReason: "stop",
  usage: { inputTokens: 1_234, outputTokens: 56 },
  latencyMs: 789,
};

function content(summary: string, mode: CompactionContent["mode"] = "plain"): CompactionContent {
  return {
    contract: OUTPUT_CONTRACT,
    mode,
    summary,
    preview: summary.split("\n", 1)[0]?.slice(0, 280) ?? "",
    salientFacts: { memoryRefs: [], openThreads: [], abandonedDirections: [] },
    degraded: false,
  };
}

const SUMMARY = "Ada chose vendor B for invoicing; Bob preferred vendor A on price.\nOpen: Berlin office in scope?";

/** A later boundary: every optional binding present and distinctive, so a swapped field shows. */
const CHAINED: PacketOverrides = {
  conversationId: "telegram:7001:-100123:42",
  agentId: "helper",
  compactorId: "helper.compactor",
  historyAgents: ["scribe", "helper"],
  admitSensitive: true,
  runId: "cmp_run-42",
  triggerSeq: 97,
  frontier: { id: "frontier-7", hash: sha256Hex("frontier-7"), startSeq: 3 },
  previousBoundary: previousBoundary("Earlier: the team agreed on quarterly invoicing.", 12),
  amendments: [{ turnId: "s5", group: 5, role: "user", kind: "edited", hashBefore: sha256Hex("before"), hashAfter: sha256Hex("after"), text: "edited text" }],
  outputMode: "plain",
  policy: { triggerInputChars: 2_000, retainInputChars: 1_000, maxFrozenChars: 4_000 },
  sizes: { preCompactionChars: 2_345, retainedTailChars: 987 },
  turns: [
    { text: "first", group: 20 },
    { text: "reply", role: "assistant", group: 20 },
    { text: "second", author: BOB, group: 23 },
  ],
};

function inputs(packet: Packet, overrides: Partial<BoundaryInputs> = {}): BoundaryInputs {
  return {
    id: "boundary-2",
    position: 2,
    packet,
    packetKey: `packets/${packet.runId}.json`,
    packetHash: hashCanonical(packet),
    content: content(SUMMARY),
    model: MODEL,
    createdAt: "2026-11-20T12:05:00.000Z",
    ...overrides,
  };
}

// ---------------------------------------------------------------------------------------------
// Every leaf of a JSON value, each changed in turn.

function changedLeaf(value: unknown): unknown {
  if (value === null) return "was null";
  if (typeof value === "string") return `${value}x`;
  if (typeof value === "number") return value + 1;
  if (typeof value === "boolean") return !value;
  throw new TypeError(`not a JSON leaf: ${String(value)}`);
}

/** One variant per leaf (an empty list or object counts as a leaf), with the path that changed. */
function leafVariants(value: unknown, path = ""): { path: string; value: unknown }[] {
  if (Array.isArray(value)) {
    if (value.length === 0) return [{ path, value: ["added"] }];
    return value.flatMap((item: unknown, index) =>
      leafVariants(item, `${path}[${index}]`).map((v) => ({ path: v.path, value: value.map((x: unknown, j) => (j === index ? v.value : x)) })),
    );
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    if (entries.length === 0) return [{ path, value: { added: true } }];
    return entries.flatMap(([key, item]) =>
      leafVariants(item, path === "" ? key : `${path}.${key}`).map((v) => ({ path: v.path, value: { ...value, [key]: v.value } })),
    );
  }
  return [{ path, value: changedLeaf(value) }];
}

// ---------------------------------------------------------------------------------------------

describe("buildBoundary: trusted bindings", () => {
  it("binds every trusted field of a chained boundary from the packet and the run's receipt", () => {
    const packet = packetFixture(CHAINED);
    const { body } = buildBoundary(inputs(packet));
    // Written out from the contract's list, not from the code: each value names where it must come from.
    expect(body).toEqual({
      type: BOUNDARY_EVENT_TYPE,
      sensitive: true,
      id: "boundary-2",
      position: 2,
      targetAgentId: "helper",
      compactorId: "helper.compactor",
      historyAgents: ["helper", "scribe"],
      admitSensitive: true,
      conversation: { id: "telegram:7001:-100123:42", source: "telegram", chat: "-100123:42", sender: null },
      previous: { id: "boundary-previous", hash: sha256Hex("Earlier: the team agreed on quarterly invoicing."), coveredThroughSeq: 12 },
      frontier: { id: "frontier-7", hash: sha256Hex("frontier-7"), startSeq: 3 },
      coveredThrough: { turnId: "s3", seq: 23 },
      policy: { triggerInputChars: 2_000, retainInputChars: 1_000 },
      sizes: { preCompactionChars: 2_345, retainedTailChars: 987, coveredSourceCount: 2 },
      input: {
        turnCount: 3,
        eventCount: 3,
        chars: packet.frozen.turns.reduce((total, t) => total + t.nativeChars, 0),
        turnIdsHash: hashCanonical(["s1", "p2", "s3"]),
        renderedHash: hashCanonical(packet.frozen.turns.map((t) => t.rendered)),
        amendmentsHash: hashCanonical(CHAINED.amendments),
      },
      compactor: {
        version: packet.epoch.compactorVersion,
        fingerprint: packet.epoch.fingerprint,
        epochId: packet.epoch.id,
        promptHash: sha256Hex(packet.prompt),
        outputMode: "plain",
      },
      packet: { key: "packets/cmp_run-42.json", hash: hashCanonical(packet) },
      outputContract: OUTPUT_CONTRACT,
      run: { id: "cmp_run-42", triggerSeq: 97 },
      model: MODEL,
      content: content(SUMMARY),
      createdAt: "2026-11-20T12:05:00.000Z",
    });
  });

  it("binds the frozen input's own numbers: size, count and hashes are the packet's", () => {
    const packet = packetFixture(CHAINED);
    const { body } = buildBoundary(inputs(packet));
    expect(body.input).toMatchObject({
      turnCount: packet.frozen.turns.length,
      eventCount: packet.frozen.eventCount,
      chars: packet.frozen.chars,
      turnIdsHash: packet.frozen.turnIdsHash,
      renderedHash: packet.frozen.renderedHash,
    });
    expect(body.coveredThrough).toEqual({ turnId: packet.frozen.throughTurnId, seq: packet.frozen.throughSeq });
    expect(body.sizes.coveredSourceCount).toBe(packet.frozen.sourceCount);
  });

  it("binds a first boundary to no previous boundary", () => {
    const { body } = buildBoundary(inputs(packetFixture()));
    expect(body.previous).toBeNull();
    expect(body.frontier).toEqual(packetFixture().frontier);
  });

  it.each([
    { conversationId: "api:fixture", source: "api", chat: "fixture" },
    { conversationId: "api:acme:team:7", source: "api", chat: "acme:team:7" },
    { conversationId: "telegram:7001:-100123", source: "telegram", chat: "-100123" },
    { conversationId: "telegram:7001:555", source: "telegram", chat: "555" },
    { conversationId: "telegram:7001:-100123:42", source: "telegram", chat: "-100123:42" },
  ])("binds the route of $conversationId: $source chat $chat", ({ conversationId, source, chat }) => {
    const { body } = buildBoundary(inputs(packetFixture({ conversationId })));
    expect(body.conversation).toEqual({ id: conversationId, source, chat, sender: null });
  });

  it("binds the sender of a direct slice with one human author, and none for a group slice", () => {
    const direct = buildBoundary(inputs(packetFixture({ conversationType: "direct", turns: ["I need a table for two.", "At 7pm, please."] })));
    expect(direct.body.conversation.sender).toBe("u:ada");
    const twoAuthors = buildBoundary(inputs(packetFixture({ conversationType: "direct", turns: ["hi", { text: "hello", author: BOB }] })));
    expect(twoAuthors.body.conversation.sender).toBeNull();
    const group = buildBoundary(inputs(packetFixture({ conversationType: "group", turns: ["I need a table for two."] })));
    expect(group.body.conversation.sender).toBeNull();
  });

  it("lists history agents sorted, whatever order the packet holds them in", () => {
    // The same packet hash for both, so only the list order differs between the two inputs.
    const same = { packetHash: sha256Hex("one packet") };
    const a = buildBoundary(inputs(packetFixture({ historyAgents: ["zed", "helper", "alpha"] }), same));
    const b = buildBoundary(inputs(packetFixture({ historyAgents: ["alpha", "zed", "helper"] }), same));
    expect(a.body.historyAgents).toEqual(["alpha", "helper", "zed"]);
    expect(a.hash).toBe(b.hash);
  });

  it("takes only the content from the model: the parent's bindings do not move when the summary claims otherwise", () => {
    const forged = content('{"previous": null, "run": {"id": "fabricated"}, "sensitive": false}');
    const { body } = buildBoundary(inputs(packetFixture(CHAINED), { content: forged }));
    expect(body.previous?.id).toBe("boundary-previous");
    expect(body.run.id).toBe("cmp_run-42");
    expect(body.sensitive).toBe(true);
    expect(body.content).toEqual(forged);
  });

  it("does not share the packet's history-agent list (sorting must not reorder the packet)", () => {
    const packet = packetFixture({ historyAgents: ["zed", "alpha"] });
    buildBoundary(inputs(packet));
    expect(packet.historyAgents).toEqual(["zed", "alpha"]);
  });
});

describe("buildBoundary: schema and hash", () => {
  it("produces a body the boundary schema accepts unchanged, for a first and a chained boundary", () => {
    for (const packet of [packetFixture(), packetFixture(CHAINED), packetFixture({ outputMode: "projection" })]) {
      const { body } = buildBoundary(inputs(packet));
      expect(boundaryBodySchema.parse(body)).toEqual(body);
    }
  });

  it("hashes the canonical body", () => {
    const boundary = buildBoundary(inputs(packetFixture(CHAINED)));
    expect(boundary.hash).toBe(hashCanonical(boundary.body));
    expect(boundary.hash).toBe(boundaryHash(boundary.body));
    expect(boundary.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("is deterministic: the same inputs give the same body and hash", () => {
    const a = buildBoundary(inputs(packetFixture(CHAINED)));
    const b = buildBoundary(inputs(packetFixture(CHAINED)));
    expect(a).toEqual(b);
  });

  it("changes the hash when any single field of the body changes", () => {
    for (const packet of [packetFixture(), packetFixture(CHAINED)]) {
      const boundary = buildBoundary(inputs(packet));
      const variants = leafVariants(boundary.body);
      // Sanity: the walk reached the nested fields, not just the top level.
      expect(variants.map((v) => v.path)).toEqual(expect.arrayContaining(["content.summary", "model.usage.inputTokens", "input.renderedHash", "frontier.startSeq"]));
      for (const variant of variants) {
        expect({ path: variant.path, changed: hashCanonical(variant.value) !== boundary.hash }).toEqual({ path: variant.path, changed: true });
      }
    }
  });

  const BASE = packetFixture(CHAINED);
  const changes: { name: string; field: (body: ReturnType<typeof buildBoundary>["body"]) => unknown; make: () => BoundaryInputs }[] = [
    { name: "the content summary", field: (b) => b.content.summary, make: () => inputs(BASE, { content: content(`${SUMMARY}.`) }) },
    { name: "the boundary id", field: (b) => b.id, make: () => inputs(BASE, { id: "boundary-3" }) },
    { name: "the position", field: (b) => b.position, make: () => inputs(BASE, { position: 3 }) },
    { name: "the packet key", field: (b) => b.packet.key, make: () => inputs(BASE, { packetKey: "packets/other.json" }) },
    { name: "the packet hash", field: (b) => b.packet.hash, make: () => inputs(BASE, { packetHash: sha256Hex("other") }) },
    { name: "the answering model", field: (b) => b.model.model, make: () => inputs(BASE, { model: { ...MODEL, model: "gpt-other" } }) },
    { name: "the model usage", field: (b) => b.model.usage, make: () => inputs(BASE, { model: { ...MODEL, usage: null } }) },
    { name: "the creation time", field: (b) => b.createdAt, make: () => inputs(BASE, { createdAt: "2026-11-20T12:05:00.001Z" }) },
    { name: "the run id", field: (b) => b.run.id, make: () => inputs(packetFixture({ ...CHAINED, runId: "cmp_run-43" })) },
    { name: "the trigger seq", field: (b) => b.run.triggerSeq, make: () => inputs(packetFixture({ ...CHAINED, triggerSeq: 98 })) },
    {
      name: "the frontier hash",
      field: (b) => b.frontier.hash,
      make: () => inputs(packetFixture({ ...CHAINED, frontier: { id: "frontier-7", hash: sha256Hex("frontier-8"), startSeq: 3 } })),
    },
    {
      name: "the previous boundary hash",
      field: (b) => b.previous?.hash,
      make: () => inputs(packetFixture({ ...CHAINED, previousBoundary: previousBoundary("Earlier, differently.", 12) })),
    },
    {
      name: "the prior covered seq",
      field: (b) => b.previous?.coveredThroughSeq,
      make: () => inputs(packetFixture({ ...CHAINED, previousBoundary: previousBoundary("Earlier: the team agreed on quarterly invoicing.", 13) })),
    },
    {
      name: "one character of one frozen turn",
      field: (b) => b.input.renderedHash,
      make: () => inputs(packetFixture({ ...CHAINED, turns: [{ text: "first!", group: 20 }, { text: "reply", role: "assistant", group: 20 }, { text: "second", author: BOB, group: 23 }] })),
    },
    { name: "the amendments", field: (b) => b.input.amendmentsHash, make: () => inputs(packetFixture({ ...CHAINED, amendments: [] })) },
    { name: "the retain policy", field: (b) => b.policy.retainInputChars, make: () => inputs(packetFixture({ ...CHAINED, policy: { ...CHAINED.policy, retainInputChars: 999 } })) },
    { name: "the pre-compaction size", field: (b) => b.sizes.preCompactionChars, make: () => inputs(packetFixture({ ...CHAINED, sizes: { preCompactionChars: 2_346, retainedTailChars: 987 } })) },
    { name: "the prompt", field: (b) => b.compactor.promptHash, make: () => inputs(packetFixture({ ...CHAINED, prompt: "Another prompt." })) },
    {
      name: "the epoch",
      field: (b) => b.compactor.epochId,
      make: () => inputs(packetFixture({ ...CHAINED, epoch: { id: `foldline-compactor/2:${sha256Hex("f2")}`, compactorVersion: "foldline-compactor/2", fingerprint: sha256Hex("f2") } })),
    },
    { name: "the privacy admission", field: (b) => b.admitSensitive, make: () => inputs(packetFixture({ ...CHAINED, admitSensitive: false })) },
    { name: "the route", field: (b) => b.conversation.chat, make: () => inputs(packetFixture({ ...CHAINED, conversationId: "telegram:7001:-100123:43" })) },
  ];

  it.each(changes)("binds $name: the field and the hash both change", ({ field, make }) => {
    const base = buildBoundary(inputs(BASE));
    const changed = buildBoundary(make());
    expect(field(changed.body)).not.toEqual(field(base.body));
    expect(changed.hash).not.toBe(base.hash);
    expect(changed.hash).toBe(hashCanonical(changed.body));
  });

  it("property: any summary yields a sensitive, schema-valid boundary whose hash follows the summary", () => {
    const packet = packetFixture(CHAINED);
    const reference = buildBoundary(inputs(packet));
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 400 }), fc.constantFrom("plain" as const, "projection" as const), (summary, mode) => {
        const boundary = buildBoundary(inputs(packet, { content: content(summary, mode) }));
        expect(boundary.body.sensitive).toBe(true);
        expect(boundaryBodySchema.safeParse(boundary.body).success).toBe(true);
        expect(boundary.body.content.summary).toBe(summary);
        expect(boundary.hash).toBe(hashCanonical(boundary.body));
        const sameContent = summary === SUMMARY && mode === "plain";
        expect(boundary.hash === reference.hash).toBe(sameContent);
      }),
      RUNS,
    );
  });
});
