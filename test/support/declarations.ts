import { call } from "../integration/helpers";

export interface PairOptions {
  readonly agentId: string;
  readonly sources: readonly string[];
  readonly trigger?: number;
  readonly retain?: number;
  readonly outputMode?: "projection" | "plain";
  readonly model?: string;
  readonly historyAgents?: readonly string[];
  readonly admitSensitive?: boolean;
  readonly prompt?: string;
  readonly maxSummaryChars?: number;
  readonly documentBudgetChars?: number;
  readonly profile?: string;
  readonly maxAmendmentChars?: number;
  /** The agent's message cap (400): a small one makes the chain due, and its window bound, small. */
  readonly maxMessages?: number;
  readonly memorySharing?: "conversation" | "agent";
  readonly documents?: readonly { readonly name: string; readonly hash: string }[];
}

/** A reciprocal agent + compactor declaration pair, small enough to compact in a test. */
export function pair(options: PairOptions) {
  const shared = {
    enabled: true,
    provider: { profile: options.profile ?? "default", model: options.model ?? "test-model" },
    sources: [...options.sources],
    admitSensitive: options.admitSensitive ?? false,
    historyAgents: [...(options.historyAgents ?? [options.agentId])],
    documents: [...(options.documents ?? [])],
    documentBudgetChars: options.documentBudgetChars ?? 4_000,
  };
  const trigger = options.trigger ?? 2_000;
  return {
    agent: {
      id: options.agentId,
      compactorId: `${options.agentId}.compactor`,
      ...shared,
      context: {
        maxChars: 120_000,
        maxMessages: options.maxMessages ?? 400,
        maxAmendmentChars: options.maxAmendmentChars ?? 16_000,
        ...(options.memorySharing === undefined ? {} : { memorySharing: options.memorySharing }),
      },
    },
    compactor: {
      id: `${options.agentId}.compactor`,
      targetId: options.agentId,
      ...shared,
      policy: {
        triggerInputChars: trigger,
        retainInputChars: options.retain ?? Math.floor(trigger / 2),
        maxFrozenEvents: 2_000,
        maxFrozenChars: trigger * 2,
        maxSummaryChars: options.maxSummaryChars ?? 1_500,
      },
      outputMode: options.outputMode ?? "projection",
      ...(options.prompt === undefined ? {} : { prompt: options.prompt }),
    },
  };
}

export async function register(token: string, options: PairOptions): Promise<Response> {
  return call("PUT", `/v1/agents/${options.agentId}`, { token, body: pair(options) });
}

/**
 * A declaration row for `agentId` older than anything a storage test writes, for tests that call
 * the memory store directly: a person's page is read and served only once its agent was declared
 * (`VOUCHED`, src/storage/control/memory-pages.ts). The row holds no real registration: nothing but that
 * rule reads it.
 */
export async function declareForStorage(db: D1Database, agentId: string): Promise<void> {
  await db
    .prepare(
      `INSERT INTO declarations (agent_id, revision, compactor_id, compactor_version, fingerprint, epoch_id, registration, prompt, prompt_hash, created_at)
       VALUES (?1, 1, ?1 || '.compactor', 'storage-test', ?2, 'storage-test', '{}', '', ?2, '2000-01-01T00:00:00.000Z')`,
    )
    .bind(agentId, "0".repeat(64))
    .run();
}
