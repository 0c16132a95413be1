import { WorkerEntrypoint } from "cloudflare:workers";
import type { z } from "zod";
import type { ScopedConversationId } from "../api/access";
import { agentInScope, authenticate, conversationInScope } from "../api/access";
import type { Registered } from "../api/agents";
import { registerAgent } from "../api/agents";
import type { ChainAudit, ChainListing, VerifiedLinkPage } from "../api/chain";
import { listChain, verifyChain, verifyLinks } from "../api/chain";
import type { Composed, IngestedBatch, IngestedEvent } from "../api/conversations";
import { composeRequest, ingestBatch, ingestEvent, selectContext } from "../api/conversations";
import type { IncidentPage } from "../api/incidents";
import { isolateTokens } from "../api/token-cache";
import { searchMemory } from "../api/recall";
import type { memorySearchSchema, Wire } from "../api/responses";
import { listIncidents } from "../api/incidents";
import { maxBodyBytes } from "../config";
import type { composeRequestSchema } from "../core/compose";
import type { ErrorCode, ErrorDetail, Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { describeThrown } from "../core/thrown";
import { unavailableError } from "../core/transient";
import { attachMetrics, logger } from "../logger";
import type { appendBatchRequestSchema, appendEventRequestSchema } from "../core/events";
import type { registrationSchema } from "../core/declarations";
import type { ContextSelection } from "../core/context-manifest";
import type { ApiPrincipal } from "../storage/control/tokens";

/**
 * Foldline over Workers RPC, for bots that run as Workers themselves. Bind it with a service
 * binding (`services = [{ binding = "FOLDLINE", service = "foldline", entrypoint = "FoldlineRpc" }]`)
 * and call `env.FOLDLINE.context(token, conversationId, agentId)`.
 *
 * A service binding is not a trust boundary Foldline can see (any Worker of the account may hold
 * one), so every call carries an API token and gets exactly the HTTP API's checks: the token is
 * authenticated like a bearer header, the conversation must be inside its scopes, and each input is
 * validated by the same operation (`src/api/`) the HTTP route calls, reserved keys included.
 *
 * Every method resolves to a plain `{ ok: true, value }` or `{ ok: false, error: { code, message,
 * …details } }` — the HTTP error body's shape — and never rejects for bad input: an exception
 * would cross the binding as an opaque error the caller could not branch on. A value is the body
 * the matching HTTP route answers with.
 */

/** The HTTP error body's `error` object: code and message, with the details flattened beside them. */
export interface RpcError {
  readonly code: ErrorCode;
  readonly message: string;
  readonly [detail: string]: ErrorDetail;
}

export type RpcResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: RpcError };

/** One event (`POST …/events`) or a batch `{ events, expectedSeq? }` (`POST …/events/batch`). */
export type IngestInput = z.input<typeof appendEventRequestSchema> | z.input<typeof appendBatchRequestSchema>;
export type ComposeInput = z.input<typeof composeRequestSchema>;
/** `registerAgent`: the declaration pair, as `PUT /v1/agents/{agent}` takes it. */
export type RegistrationInput = z.input<typeof registrationSchema>;
export interface IncidentOptions {
  readonly after?: number;
  readonly limit?: number;
}
/** `context`: free text to recall memory for (`GET …/context?query=`). */
export interface ContextOptions {
  readonly query?: string;
}
/** `searchMemory`: at most `limit` results (1–50, default 10). */
export interface SearchOptions {
  readonly limit?: number;
}
/** `verifyLinks`: an epoch other than the current one, the last position already read, the page size. */
export interface LinkPageOptions {
  readonly epoch?: string;
  readonly after?: number;
  readonly limit?: number;
}

/** The one place an operation's Result becomes an RPC result: the same shape `problem()` sends over HTTP. */
function toRpc<T>(result: Result<T>): RpcResult<T> {
  if (result.ok) return result;
  const { code, message, details } = result.error;
  return { ok: false, error: { ...details, code, message } };
}

/**
 * An RPC argument as the HTTP route would have received it: the JSON text of the value, size-capped
 * like a request body, then parsed. Structured clone carries more than JSON (dates, maps, cycles,
 * `undefined` members), and a value that hashes or validates differently from its JSON form would
 * let RPC store what HTTP cannot; after this round trip both transports validate the same data.
 */
function asJsonBody(env: Env, input: unknown): Result<unknown> {
  let text: string | undefined;
  try {
    text = JSON.stringify(input);
  } catch {
    return fail("invalid_json", "the input is not representable as JSON");
  }
  // `undefined` (a missing argument) has no JSON text; the schema refuses it as a missing body.
  if (text === undefined) return ok(undefined);
  const limit = maxBodyBytes(env);
  if (new TextEncoder().encode(text).byteLength > limit) return fail("payload_too_large", `bodies are limited to ${limit} bytes`);
  return ok(JSON.parse(text) as unknown);
}

function isBatch(body: unknown): boolean {
  return typeof body === "object" && body !== null && !Array.isArray(body) && Object.hasOwn(body, "events");
}

export class FoldlineRpc extends WorkerEntrypoint<Env> {
  constructor(ctx: ExecutionContext, env: Env) {
    super(ctx, env);
    attachMetrics(env);
  }

  /** Appends one event or a batch (all or none); a replay of the same key and payload is `duplicate`. */
  async ingest(token: string, conversationId: string, input: IngestInput): Promise<RpcResult<IngestedEvent | IngestedBatch>> {
    return this.#scoped<IngestedEvent | IngestedBatch>(token, conversationId, async (conversation) => {
      const body = asJsonBody(this.env, input);
      if (!body.ok) return body;
      return isBatch(body.value) ? ingestBatch(this.env, conversation, body.value) : ingestEvent(this.env, conversation, body.value);
    });
  }

  /** The agent's verified context: provider-ready messages and the private manifest; with a `query`, recalled memory too. */
  async context(token: string, conversationId: string, agentId: string, options: ContextOptions = {}): Promise<RpcResult<ContextSelection>> {
    return this.#scoped(token, conversationId, (conversation, principal) => selectContext(this.env, conversation, { ...options, agent: agentId }, principal.scopes));
  }

  /** One chat-completions request body: trusted documents, the selected history, then the prompt. */
  async compose(token: string, conversationId: string, request: ComposeInput): Promise<RpcResult<Composed>> {
    return this.#scoped(token, conversationId, async (conversation, principal) => {
      const body = asJsonBody(this.env, request);
      if (!body.ok) return body;
      return composeRequest(this.env, conversation, body.value, principal.scopes);
    });
  }

  /** Recall: the agent's memory pages and the conversation's turns matching `query`, best first (`GET …/memory/search`). */
  async searchMemory(token: string, conversationId: string, agentId: string, query: string, options: SearchOptions = {}): Promise<RpcResult<Wire<typeof memorySearchSchema>>> {
    return this.#scoped(token, conversationId, (conversation, principal) => searchMemory(this.env, principal, conversation, { ...options, agent: agentId, q: query }));
  }

  /** The agent's boundary chain across epochs (previews only). */
  async chain(token: string, conversationId: string, agentId: string): Promise<RpcResult<ChainListing>> {
    return this.#scoped(token, conversationId, (conversation) => listChain(this.env, conversation, { agent: agentId }));
  }

  /** Every link of the agent's chain re-hashed from D1 and R2. */
  async verify(token: string, conversationId: string, agentId: string): Promise<RpcResult<ChainAudit>> {
    return this.#scoped(token, conversationId, (conversation) => verifyChain(this.env, conversation, { agent: agentId }));
  }

  /** One page of an epoch's links audited like `verify`, at the page's cost; follow `nextAfter`. */
  async verifyLinks(token: string, conversationId: string, agentId: string, options: LinkPageOptions = {}): Promise<RpcResult<VerifiedLinkPage>> {
    return this.#scoped(token, conversationId, (conversation) => verifyLinks(this.env, conversation, { ...options, agent: agentId }));
  }

  /** The conversation's incidents, oldest first, paged by id like `GET …/incidents`. */
  async incidents(token: string, conversationId: string, options: IncidentOptions = {}): Promise<RpcResult<IncidentPage>> {
    return this.#scoped(token, conversationId, (conversation) => listIncidents(this.env, conversation, options));
  }

  /**
   * Registers (or re-declares) an agent and its compactor, exactly as `PUT /v1/agents/{agent}`:
   * the token needs `agent:<id>` and conversation scopes containing every source the pair would
   * serve. `created` says whether the agent was new (HTTP's 201 rather than 200).
   */
  async registerAgent(token: string, agentId: string, pair: RegistrationInput): Promise<RpcResult<Registered>> {
    return this.#authenticated(token, async (principal) => {
      const named = await agentInScope(this.env.DB, principal, agentId);
      if (!named.ok) return named;
      const body = asJsonBody(this.env, pair);
      if (!body.ok) return body;
      return registerAgent(this.env, principal, named.value, body.value);
    });
  }

  /**
   * Authenticates, scopes, then runs the operation: the order of `requireToken` and
   * `scopedConversation` on every HTTP route. A private method, so it is not callable over RPC.
   */
  async #scoped<T>(
    token: unknown,
    conversationId: unknown,
    operation: (conversation: ScopedConversationId, principal: ApiPrincipal) => Promise<Result<T>>,
  ): Promise<RpcResult<T>> {
    return this.#authenticated(token, async (principal) => {
      const conversation = conversationInScope(principal, conversationId);
      if (!conversation.ok) return conversation;
      return operation(conversation.value, principal);
    });
  }

  /** Authenticates, then runs the operation; a thrown failure is `unavailable` or `internal`, never a rejection. */
  async #authenticated<T>(token: unknown, operation: (principal: ApiPrincipal) => Promise<Result<T>>): Promise<RpcResult<T>> {
    try {
      const principal = await authenticate(this.env.DB, token, isolateTokens);
      if (!principal.ok) return toRpc(principal);
      return toRpc(await operation(principal.value));
    } catch (error) {
      // HTTP's `onError`, for RPC: a failure a retry fixes is `unavailable` (core/transient), anything
      // else a typed `internal`; both are logged by the thrown value's code, never a rejected promise.
      const unavailable = unavailableError(error);
      const code = describeThrown(error).code;
      if (unavailable !== undefined) {
        logger.warn("unhandled", { surface: "rpc", outcome: "unavailable", code });
        return toRpc({ ok: false, error: unavailable });
      }
      logger.error("unhandled", { surface: "rpc", outcome: "internal", code });
      return toRpc(fail("internal", "internal error; nothing was acknowledged, retrying is safe"));
    }
  }
}
