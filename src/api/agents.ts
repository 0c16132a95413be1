import { z } from "zod";
import { canonicalRegistration, documentNameSchema, epochOf, pairMismatches, registrationSchema, replySecretRefusal, sha256Schema } from "../core/declarations";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { sha256Hex } from "../core/hash";
import { compactorPrompt } from "../core/prompts";
import { registrationWarnings } from "../core/registration-warnings";
import { mayActOn } from "../core/agent-access";
import { currentDeclaration, idHolders, insertDeclaration } from "../storage/control/declarations";
import { documentExists, insertDocument } from "../storage/control/documents";
import { trustedDocumentKey } from "../storage/r2/keys";
import { putDocument, readDocument } from "../storage/r2/documents";
import type { ApiPrincipal } from "../storage/control/tokens";
import { agentInScope, agentNotFound } from "./access";
import type { currentAgentSchema, documentSummarySchema, registeredAgentSchema, trustedDocumentSchema, Wire } from "./responses";
import { validate } from "./validation";
import { shardsOf } from "../storage/shards";
import { publishRevision } from "../storage/control/declarations";
import { unavailableError } from "../core/transient";
import { describeThrown } from "../core/thrown";
import { logger } from "../logger";

/**
 * The agent operations: registering the declaration pair, reading it back, and the agent's
 * trusted identity/memory documents. Each takes an agent the caller is already scoped to
 * (`agentInScope`) and the caller's input as plain data, validates it here, and returns a `Result`.
 */

export const documentBodySchema = z.strictObject({ content: z.string().min(1).max(200_000).refine((s) => s.isWellFormed(), "unpaired surrogate") });

/** A stored registration and whether this call created it (201) or found it already stored (200). */
export interface Registered {
  readonly created: boolean;
  readonly agent: Wire<typeof registeredAgentSchema>;
}

/**
 * `PUT /v1/agents/{agent}`: the declaration pair, refused unless the caller's conversation scopes
 * also contain every source the new pair would serve, the two halves agree, their ids are free and
 * every subscribed document was uploaded. A concurrent registration of the same agent that was
 * stored first is a `declaration_conflict`, never a silent overwrite.
 */
export async function registerAgent(env: Env, principal: ApiPrincipal, agentId: string, input: unknown): Promise<Result<Registered>> {
  const db = env.DB;
  const request = validate(registrationSchema, input);
  if (!request.ok) return request;
  const registration = canonicalRegistration(request.value);
  if (registration.agent.id !== agentId) return fail("validation_failed", "agent.id must be the agent named in the path");
  // The pair check below makes the compactor's sources equal to these.
  const scoped = await agentInScope(db, principal, agentId, registration.agent.sources);
  if (!scoped.ok) return scoped;
  const secretRefused = replySecretRefusal(registration.agent.reply);
  if (secretRefused !== undefined) return { ok: false, error: secretRefused };
  const mismatches = pairMismatches(registration.agent, registration.compactor);
  if (mismatches.length > 0) {
    return fail("declaration_mismatch", `the agent and compactor declarations disagree on: ${mismatches.map((m) => m.field).join(", ")}`, {
      mismatches: mismatches.map((m) => ({ field: m.field, agent: JSON.stringify(m.agent), compactor: JSON.stringify(m.compactor) })),
    });
  }
  const ids = [registration.agent.id, registration.compactor.id];
  const holders = (await idHolders(db, ids)).filter((holder) => holder.agentId !== registration.agent.id);
  // Which agent holds it is never said. An id held by a declaration the caller could read anyway is
  // `id_in_use`; one held only by declarations it may not act on is the answer an agent it may not
  // act on gets (`agentNotFound`), so a taken id tells it no more than a refused agent does: not
  // whose it is, not which of the two ids, not whether as an agent or a compactor.
  if (holders.some((holder) => mayActOn(principal.scopes, holder))) return fail("id_in_use", `another declaration already uses one of ${ids.join(", ")}; choose other ids`);
  if (holders.length > 0) return { ok: false, error: agentNotFound() };
  for (const doc of registration.agent.documents) {
    if (!(await documentExists(db, scoped.value, doc.name, doc.hash))) {
      return fail("unknown_document", `document ${doc.name}@${doc.hash} was never uploaded for this agent`);
    }
  }
  const prompt = compactorPrompt(registration.compactor.outputMode, registration.compactor.prompt);
  const epoch = epochOf(registration, prompt);
  const written = await insertDeclaration(db, registration, epoch, prompt, sha256Hex(prompt), new Date().toISOString());
  if (written.kind === "conflict") {
    return fail("declaration_conflict", "another registration of this agent was stored while this one was decided; read the current declaration and retry", {
      currentRevision: written.current?.revision ?? null,
    });
  }
  const { declaration } = written;
  // Created or unchanged alike: every shard's copy of the revision is raised before the answer,
  // so a registration retried after a failure here still publishes what the first one wrote.
  const published = await publishedOrRefusal(env, declaration.revision);
  if (!published.ok) return published;
  return ok({
    created: written.kind === "created",
    agent: {
      agentId: declaration.agentId,
      revision: declaration.revision,
      epoch: declaration.epoch,
      promptHash: declaration.promptHash,
      registration: declaration.registration,
      warnings: registrationWarnings(declaration.registration),
    },
  });
}

/**
 * Publishes the declarations' revision to every shard (`publishRevision`) for a registration that is
 * already stored. A failure here does not undo it: the declaration is current and serving, and what
 * lags is only how soon each shard's next source append sees it (within the objects' confirmation
 * window, `SERVING_CONFIRM_MS` in durable/chain-book, even if nothing else is done). So the answer
 * says that, rather than that the request failed: `unavailable` (503, `Retry-After`) with
 * `stored: true` when a retry will fix it, after which the same request finds its own registration
 * and answers 200; `internal` with the same facts when it will not (a defect: the same request would
 * fail the same way).
 */
async function publishedOrRefusal(env: Env, revision: number): Promise<Result<void>> {
  try {
    await publishRevision(env.DB, shardsOf(env).map((shard) => shard.db));
    return ok(undefined);
  } catch (error) {
    const stored = { stored: true, revision };
    const retryable = unavailableError(error);
    if (retryable !== undefined) {
      return fail(
        "unavailable",
        `the declaration is stored as revision ${revision} and in force, but not yet published to every shard (a conversation there sees it once its object next confirms the declarations); re-send the same request to finish publishing it`,
        { ...retryable.details, ...stored },
      );
    }
    logger.error("step.failed", { step: "publish_declaration", revision, code: describeThrown(error).code });
    return fail("internal", `the declaration is stored as revision ${revision} and in force, but publishing it to the shards failed; a conversation there sees it once its object next confirms the declarations`, stored);
  }
}

/** `GET /v1/agents/{agent}`: the current declaration pair. */
export async function readAgent(db: D1Database, agentId: string): Promise<Result<Wire<typeof currentAgentSchema>>> {
  const declaration = await currentDeclaration(db, agentId);
  if (declaration === undefined) return { ok: false, error: agentNotFound() };
  return ok({
    agentId: declaration.agentId,
    revision: declaration.revision,
    epoch: declaration.epoch,
    promptHash: declaration.promptHash,
    registration: declaration.registration,
    createdAt: declaration.createdAt,
  });
}

/** A document name from a path, checked before the body is read. */
export function documentName(name: unknown): Result<string> {
  const parsed = documentNameSchema.safeParse(name);
  return parsed.success ? ok(parsed.data) : fail("validation_failed", "name: 1–128 letters, digits, . _ -");
}

/** What an upload answers: the name, the content's SHA-256 and its length, all of them the request's own. */
export function documentReceipt(name: string, input: unknown): Result<Wire<typeof documentSummarySchema> & { readonly content: string }> {
  const request = validate(documentBodySchema, input);
  if (!request.ok) return request;
  const { content } = request.value;
  return ok({ name, hash: sha256Hex(content), chars: content.length, content });
}

/** `PUT /v1/agents/{agent}/documents/{name}`: an immutable document, stored under its content's SHA-256. */
export async function uploadDocument(env: Env, agentId: string, name: string, input: unknown): Promise<Result<Wire<typeof documentSummarySchema>>> {
  const receipt = documentReceipt(name, input);
  if (!receipt.ok) return receipt;
  const { content, hash } = receipt.value;
  const key = trustedDocumentKey(agentId, name, hash);
  await putDocument(env.DOCUMENTS, key, content);
  await insertDocument(env.DB, agentId, name, hash, key, content.length, new Date().toISOString());
  return ok({ name, hash, chars: content.length });
}

/** `GET /v1/agents/{agent}/documents/{name}/{hash}`: one version of a document, re-hashed on read. */
export async function readAgentDocument(env: Env, agentId: string, name: unknown, hash: unknown): Promise<Result<Wire<typeof trustedDocumentSchema>>> {
  const validName = documentNameSchema.safeParse(name);
  const validHash = sha256Schema.safeParse(hash);
  if (!validName.success || !validHash.success) return fail("validation_failed", "expected /documents/<name>/<sha256>");
  const read = await readDocument(env.DOCUMENTS, trustedDocumentKey(agentId, validName.data, validHash.data), validHash.data);
  if (!read.ok) return fail("not_found", `document ${validName.data}@${validHash.data} not found (${read.reason})`);
  return ok({ name: validName.data, hash: validHash.data, content: read.text });
}
