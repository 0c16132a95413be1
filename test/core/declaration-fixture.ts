import type { Registration } from "../../src/core/declarations";
import { epochOf, registrationSchema } from "../../src/core/declarations";
import { sha256Hex } from "../../src/core/hash";

export const PROMPT = "Summarize the slice.";

/**
 * A stored declaration pair as the engine reads it from D1, for core tests of what the engine
 * derives from one: agent `agent-a` and its compactor, a small trigger, every history agent given.
 */
export function storedDeclaration(options: { readonly historyAgents?: readonly string[]; readonly admitSensitive?: boolean } = {}) {
  const shared = {
    enabled: true,
    provider: { profile: "default", model: "m" },
    sources: ["api:*"],
    admitSensitive: options.admitSensitive ?? true,
    historyAgents: [...(options.historyAgents ?? ["agent-c", "agent-a"])],
    documents: [],
    documentBudgetChars: 4_000,
  };
  const registration: Registration = registrationSchema.parse({
    agent: { id: "agent-a", compactorId: "agent-a.compactor", ...shared, context: { maxChars: 120_000, maxMessages: 400, maxAmendmentChars: 16_000 } },
    compactor: {
      id: "agent-a.compactor",
      targetId: "agent-a",
      ...shared,
      policy: { triggerInputChars: 1_000, retainInputChars: 400, maxFrozenEvents: 2_000, maxFrozenChars: 2_000, maxSummaryChars: 500 },
      outputMode: "projection",
    },
  });
  return { agentId: "agent-a", revision: 1, registration, epoch: epochOf(registration, PROMPT), prompt: PROMPT, promptHash: sha256Hex(PROMPT), createdAt: "2026-01-01T00:00:00.000Z" };
}
