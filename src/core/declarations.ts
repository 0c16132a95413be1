import { z } from "zod";
import { scopePatternSchema } from "./conversation-id";
import type { AppError } from "./errors";
import { agentIdSchema } from "./events";
import { hashCanonical } from "./hash";
import { isOutboundUrl } from "./outbound-url";

/**
 * Declarations: an ordinary agent and its reciprocal compactor, registered together. The compactor
 * is a consumer of its own (id, runs, accounting, failures) so its output can never pass for a reply.
 * The two must agree on everything the contract lists (`pairMismatches`); the pair's canonical form
 * plus the compactor prompt is the fingerprint, and version + fingerprint is the epoch.
 */

/** Version of the compactor implementation: part of every epoch, so upgrading it starts a new chain. */
export const COMPACTOR_VERSION = "foldline-compactor/1";

export const documentNameSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, "1–128 letters, digits, . _ -");
export const sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, "a lowercase hex SHA-256");

export const providerSchema = z.strictObject({
  /** A named provider configuration (`default` is the one the Worker's vars describe). */
  profile: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/),
  model: z.string().min(1).max(128),
});

/** A trusted identity/memory document, named together with the exact content hash subscribed to. */
export const documentRefSchema = z.strictObject({ name: documentNameSchema, hash: sha256Schema });

const sharedFields = {
  enabled: z.boolean(),
  provider: providerSchema,
  /** Conversation patterns this pair serves (same syntax as token scopes). */
  sources: z.array(scopePatternSchema).min(1).max(32),
  /** Whether sensitive events are admitted into the agent's (and so the compactor's) input. */
  admitSensitive: z.boolean(),
  /** Agents whose delivered replies count as conversation history. */
  historyAgents: z.array(agentIdSchema).max(64),
  documents: z.array(documentRefSchema).max(16),
  /** Characters of trusted documents and recalled memory pages one request may carry. */
  documentBudgetChars: z.number().int().min(0).max(200_000),
};

export const contextPolicySchema = z.strictObject({
  /** The agent's normal bound on history characters (boundary and amendment included). */
  maxChars: z.number().int().min(1_000).max(2_000_000).default(120_000),
  /** The agent's normal bound on history messages. */
  maxMessages: z.number().int().min(2).max(10_000).default(400),
  /** Largest covered-history amendment envelope served; a larger one fails closed, never cut. */
  maxAmendmentChars: z.number().int().min(500).max(200_000).default(16_000),
  /**
   * Characters of recalled memory (pages, then older turns) a context or compose call with a query
   * may serve, envelope included; 0 serves none. Absent means `DEFAULT_MEMORY_BUDGET_CHARS`
   * (core/recall): left unset rather than defaulted here so that declarations registered before
   * the field existed keep their canonical form, and so their epoch.
   */
  memoryBudgetChars: z.number().int().min(0).max(200_000).optional(),
  /**
   * Where a fact extracted from one of the agent's conversations may be served
   * (core/memory-privacy): only in the conversation it was said in (`conversation`), or in every
   * conversation the agent serves (`agent`), except a fact said in a direct chat, which never
   * leaves it, and never past the caller's scopes. Absent means `conversation`: left unset, like
   * `memoryBudgetChars`, so that declarations registered before the field keep their canonical form.
   */
  memorySharing: z.enum(["conversation", "agent"]).optional(),
});

/** Where an agent's extracted facts may be served (`memorySharing`). */
export type MemorySharing = NonNullable<z.infer<typeof contextPolicySchema>["memorySharing"]>;

export const compactionPolicySchema = z
  .strictObject({
    triggerInputChars: z.number().int().min(100).max(2_000_000).default(80_000),
    retainInputChars: z.number().int().min(0).max(2_000_000).default(40_000),
    /** Most events one frozen prefix may hold. */
    maxFrozenEvents: z.number().int().min(1).max(20_000).default(2_000),
    /** Most characters one frozen prefix may hold. */
    maxFrozenChars: z.number().int().min(100).max(4_000_000).default(160_000),
    /** Longest summary a compactor may return. */
    maxSummaryChars: z.number().int().min(100).max(100_000).default(8_000),
  })
  .refine((p) => p.retainInputChars < p.triggerInputChars, {
    message: "retainInputChars must be strictly less than triggerInputChars",
    path: ["retainInputChars"],
  })
  .refine((p) => p.maxFrozenChars >= p.triggerInputChars, {
    message: "maxFrozenChars must be at least triggerInputChars, or a natural prefix could never fit",
    path: ["maxFrozenChars"],
  });

/** A Worker binding or secret name as wrangler writes them; the declaration only ever names it. */
const bindingNameSchema = z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, "SCREAMING_SNAKE_CASE, 1–64 characters");

/** Where an `http` bot lives (`isOutboundUrl`): every context it is sent is signed, not encrypted. */
const botUrlSchema = z
  .string()
  .max(2_048)
  .refine(isOutboundUrl, { message: "an https URL (plain http only for 127.0.0.1 or localhost), without credentials" });

/**
 * The Worker secrets a declaration may name as an HMAC key: only `BOT_HMAC_<NAME>`. Model keys,
 * webhook secrets and bot tokens live outside this namespace, so no declaration can have one of
 * them sent (as a signature key) to a URL it chose.
 */
const REPLY_SECRET_PREFIX = "BOT_HMAC_";
const REPLY_SECRET = /^BOT_HMAC_[A-Z0-9][A-Z0-9_]{0,54}$/;

export function isReplySecretName(name: string): boolean {
  return REPLY_SECRET.test(name);
}

/**
 * A new registration's reply secret outside the namespace. Checked when a declaration is written,
 * not by the stored shape, so a revision stored before the namespace existed still loads (and is
 * refused the secret when a reply is signed, src/external/bots.ts).
 */
export function replySecretRefusal(reply: ReplyMode): AppError | undefined {
  if (reply.mode !== "http" || isReplySecretName(reply.secret)) return undefined;
  return {
    code: "secret_outside_namespace",
    message: `agent.reply.secret: name a Worker secret ${REPLY_SECRET_PREFIX}<NAME> (A-Z, 0-9, _); model keys, webhook secrets and bot tokens can never be named`,
    details: { field: "agent.reply.secret" },
  };
}

export const DEFAULT_BOT_TIMEOUT_MS = 10_000;

/**
 * How the agent replies. `none`: an external bot reads context and posts its own proposals.
 * `builtin`: Foldline composes the context, asks the agent's model, and records the reply.
 * `service` and `http`: Foldline composes the context and hands it to the bot's own code — a
 * `WorkerEntrypoint` behind the service binding `binding` (`env[binding].reply(payload)`), or an
 * endpoint that receives the payload as a body signed with the Worker secret named `secret` — and
 * records the bot's answer exactly as it would the built-in model's (src/external/).
 */
export const replySchema = z.discriminatedUnion("mode", [
  z.strictObject({ mode: z.literal("none") }),
  z.strictObject({ mode: z.literal("builtin") }),
  z.strictObject({ mode: z.literal("service"), binding: bindingNameSchema }),
  z.strictObject({
    mode: z.literal("http"),
    url: botUrlSchema,
    /** The name of the Worker secret `BOT_HMAC_<NAME>` holding the shared HMAC key, never the key itself. */
    secret: bindingNameSchema,
    timeoutMs: z.number().int().min(1_000).max(30_000).default(DEFAULT_BOT_TIMEOUT_MS),
  }),
]);
export type ReplyMode = z.infer<typeof replySchema>;

export const agentDeclarationSchema = z.strictObject({
  id: agentIdSchema,
  compactorId: agentIdSchema,
  ...sharedFields,
  reply: replySchema.default({ mode: "none" }),
  context: contextPolicySchema.default({ maxChars: 120_000, maxMessages: 400, maxAmendmentChars: 16_000 }),
});

export const compactorDeclarationSchema = z.strictObject({
  id: agentIdSchema,
  targetId: agentIdSchema,
  ...sharedFields,
  policy: compactionPolicySchema.default({
    triggerInputChars: 80_000,
    retainInputChars: 40_000,
    maxFrozenEvents: 2_000,
    maxFrozenChars: 160_000,
    maxSummaryChars: 8_000,
  }),
  outputMode: z.enum(["projection", "plain"]).default("projection"),
  /** Replaces the built-in prompt of the output mode; part of the fingerprint. */
  prompt: z.string().min(1).max(40_000).optional(),
});

export const registrationSchema = z.strictObject({
  agent: agentDeclarationSchema,
  compactor: compactorDeclarationSchema,
});

export type AgentDeclaration = z.infer<typeof agentDeclarationSchema>;
export type CompactorDeclaration = z.infer<typeof compactorDeclarationSchema>;
export type CompactionPolicy = z.infer<typeof compactionPolicySchema>;
export type Registration = z.infer<typeof registrationSchema>;

export interface PairMismatch {
  readonly field: string;
  readonly agent: unknown;
  readonly compactor: unknown;
}

const sorted = (values: readonly string[]): string[] => [...values].sort();

/** Every disagreement between the two declarations, field by field; empty when they are reciprocal. */
export function pairMismatches(agent: AgentDeclaration, compactor: CompactorDeclaration): PairMismatch[] {
  const checks: [string, unknown, unknown][] = [
    ["compactorId", agent.compactorId, compactor.id],
    ["targetId", agent.id, compactor.targetId],
    ["enabled", agent.enabled, compactor.enabled],
    ["provider.profile", agent.provider.profile, compactor.provider.profile],
    ["provider.model", agent.provider.model, compactor.provider.model],
    ["sources", sorted(agent.sources), sorted(compactor.sources)],
    ["admitSensitive", agent.admitSensitive, compactor.admitSensitive],
    ["historyAgents", sorted(agent.historyAgents), sorted(compactor.historyAgents)],
    ["documents", agent.documents.map((d) => `${d.name}@${d.hash}`).sort(), compactor.documents.map((d) => `${d.name}@${d.hash}`).sort()],
    ["documentBudgetChars", agent.documentBudgetChars, compactor.documentBudgetChars],
  ];
  const mismatches = checks
    .filter(([, a, c]) => hashCanonical(a) !== hashCanonical(c))
    .map(([field, a, c]) => ({ field, agent: a, compactor: c }));
  if (agent.id === agent.compactorId) mismatches.push({ field: "compactorId", agent: agent.id, compactor: "must differ from the agent id" });
  return mismatches;
}

/**
 * The registration in canonical form: lists whose order carries no meaning (sources, admitted
 * history agents, documents) sorted and de-duplicated, so re-registering the same pair in another
 * order is the same epoch rather than a retired chain.
 */
export function canonicalRegistration(registration: Registration): Registration {
  const sortedUnique = (values: readonly string[]): string[] => [...new Set(values)].sort();
  const documents = (docs: Registration["agent"]["documents"]) =>
    [...new Map(docs.map((d) => [`${d.name}@${d.hash}`, d])).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, d]) => d);
  const { agent, compactor } = registration;
  return {
    agent: { ...agent, sources: sortedUnique(agent.sources), historyAgents: sortedUnique(agent.historyAgents), documents: documents(agent.documents) },
    compactor: {
      ...compactor,
      sources: sortedUnique(compactor.sources),
      historyAgents: sortedUnique(compactor.historyAgents),
      documents: documents(compactor.documents),
    },
  };
}

export interface Epoch {
  readonly compactorVersion: string;
  readonly fingerprint: string;
  /** `version:fingerprint`, the key a chain lives under. */
  readonly id: string;
}

/** Fingerprint of the canonical pair plus the exact prompt the compactor will run with. */
export function epochOf(registration: Registration, prompt: string): Epoch {
  const { agent, compactor } = canonicalRegistration(registration);
  const fingerprint = hashCanonical({ agent, compactor, prompt });
  return { compactorVersion: COMPACTOR_VERSION, fingerprint, id: `${COMPACTOR_VERSION}:${fingerprint}` };
}
