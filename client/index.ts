/**
 * `foldline/client`: Foldline for a bot, over HTTP (`createClient({ baseUrl, token })`, from Node
 * 20+, a Worker, Deno or Bun) or over a service binding to its RPC entrypoint (`createClient({
 * binding, token })`, from a Worker), with the same methods and the same typed errors either way;
 * and `verifySignature`, for a bot Foldline calls over HTTP. docs/CLIENT.md shows each.
 *
 * It imports nothing at run time but its own files, the service's error codes and its signature
 * module (.dependency-cruiser.cjs holds it to that): no Worker-only module, no dependency.
 */
import { bindingTransport } from "./binding.js";
import type { FoldlineBinding } from "./binding.js";
import { FoldlineError } from "./errors.js";
import { httpSend, httpTransport } from "./http.js";
import type { InitArgument, Method, OperationOf, PathOf, SuccessBody } from "./paths.js";
import { expandPath } from "./paths.js";
import type { RetryOptions, RetryPolicy } from "./retry.js";
import { retryPolicy, withRetries } from "./retry.js";
import type { QueryValue, Send, Transport } from "./transport.js";
import type {
  AppendedBatch,
  AppendedEvent,
  AppendEventRequest,
  BatchEvent,
  ComposeRequest,
  ComposeResponse,
  ContextResponse,
  MemorySearch,
  RegisteredAgent,
  Registration,
} from "./types.js";

export type { FoldlineBinding, RpcAnswer } from "./binding.js";
export type { ClientFailureCode, FoldlineErrorCode } from "./errors.js";
export { FoldlineError } from "./errors.js";
export type { components, operations, paths } from "./openapi.js";
export type { InitArgument, Method, OperationOf, PathOf, RequestInit, SuccessBody } from "./paths.js";
export type { RetryOptions } from "./retry.js";
export type * from "./types.js";
export type { SignatureCheck } from "../src/external/signature.js";
export { DEFAULT_TOLERANCE_SECONDS, SIGNATURE_HEADER, signBody, verifySignature } from "../src/external/signature.js";

interface CommonOptions {
  /** The API token (`npm run token`): every call carries it, over either transport. */
  readonly token: string;
  /** Retries of 429 and 503 (see `RetryOptions` for the defaults). */
  readonly retry?: RetryOptions;
}

export interface HttpClientOptions extends CommonOptions {
  /** Where Foldline answers, e.g. `https://foldline.example.workers.dev`. */
  readonly baseUrl: string;
  /** Default: the global `fetch`. */
  readonly fetch?: typeof globalThis.fetch;
  /** Each attempt is abandoned after this many milliseconds without an answer. Default 30,000. */
  readonly timeoutMs?: number;
}

/**
 * A service binding as `wrangler types` declares one to a Worker it cannot see (`Fetcher`): the RPC
 * methods are on the binding, not in its type. Accepted as is, so a bot need not cast its `env`.
 */
export interface ServiceBinding {
  fetch(input: never, init?: never): unknown;
}

export interface BindingClientOptions extends CommonOptions {
  /** A service binding to Foldline's RPC entrypoint (`entrypoint = "FoldlineRpc"`). */
  readonly binding: FoldlineBinding | ServiceBinding;
  /**
   * A service binding to Foldline's default entrypoint (its HTTP API), for what the RPC entrypoint
   * does not offer: `request`. Without it, `request` throws `unsupported`.
   */
  readonly fetcher?: { readonly fetch: typeof globalThis.fetch };
}

export type ClientOptions = HttpClientOptions | BindingClientOptions;

export interface ContextOptions {
  readonly agent: string;
  /** Free text to recall memory for: adds the memory envelope. */
  readonly query?: string;
}

export interface SearchOptions {
  readonly agent: string;
  readonly q: string;
  /** Most results, 1–50 (default 10). */
  readonly limit?: number;
}

export interface FoldlineClient {
  /** Appends one event; a resend of the same idempotency key and payload answers `duplicate: true`. */
  append(conversation: string, event: AppendEventRequest): Promise<AppendedEvent>;
  /** Appends up to 100 events in order, all or none. */
  appendBatch(conversation: string, events: readonly BatchEvent[], options?: { readonly expectedSeq?: number }): Promise<AppendedBatch>;
  /** The agent's verified context: provider-ready messages and the private manifest. */
  context(conversation: string, options: ContextOptions): Promise<ContextResponse>;
  /** One OpenAI chat-completions body: trusted documents, the selected history, then the prompt. */
  compose(conversation: string, request: ComposeRequest): Promise<ComposeResponse>;
  /** Recall: the agent's memory and the conversation's turns matching `q`, best first. */
  searchMemory(conversation: string, options: SearchOptions): Promise<MemorySearch>;
  /** Registers an agent and its reciprocal compactor (`PUT /v1/agents/{id}`). */
  registerAgent(id: string, pair: Registration): Promise<RegisteredAgent>;
  /**
   * Any route of `/openapi.json`, typed by it: `request("get", "/v1/conversations/{conversation}/turns",
   * { path: { conversation }, query: { limit: 50 } })`. Retried like the rest, except `delete`.
   */
  request<M extends Method, P extends PathOf<M>>(method: M, path: P, ...init: InitArgument<OperationOf<P, M>>): Promise<SuccessBody<OperationOf<P, M>>>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** Any origin reaches the Worker a service binding names; this one only makes the URL whole. */
const BINDING_ORIGIN = "https://foldline.internal";

function transportOf(options: ClientOptions): Transport {
  if ("binding" in options) {
    const fetcher = options.fetcher;
    const send =
      fetcher === undefined
        ? undefined
        : httpSend({ baseUrl: BINDING_ORIGIN, token: options.token, fetch: (input, init) => fetcher.fetch(input, init), timeoutMs: DEFAULT_TIMEOUT_MS, now: Date.now });
    // A `ServiceBinding` is typed by its fetch alone; bound to FoldlineRpc, it answers the entrypoint's methods.
    return bindingTransport(options.binding as FoldlineBinding, options.token, send);
  }
  const fetch = options.fetch ?? globalThis.fetch;
  return httpTransport({
    baseUrl: options.baseUrl,
    token: options.token,
    // Called as a plain function: the global `fetch` called as a method of another object throws in Workers ("Illegal invocation").
    fetch: (input, init) => fetch(input, init),
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    now: Date.now,
  });
}

function httpOnly(transport: Transport, what: string): Send {
  if (transport.send !== undefined) return transport.send;
  throw new FoldlineError({
    code: "unsupported",
    message: `${what} is HTTP only: Foldline's RPC entrypoint has no such method. Pass \`fetcher\` (a service binding to Foldline's default entrypoint) beside \`binding\`.`,
  });
}

export function createClient(options: ClientOptions): FoldlineClient {
  const transport = transportOf(options);
  const policy: RetryPolicy = retryPolicy(options.retry);
  const retried = <T>(call: () => Promise<T>): Promise<T> => withRetries(call, policy);

  return {
    append: (conversation, event) => retried(() => transport.append(conversation, event)),
    appendBatch: (conversation, events, batchOptions = {}) =>
      retried(() => transport.appendBatch(conversation, { events: [...events], ...(batchOptions.expectedSeq === undefined ? {} : { expectedSeq: batchOptions.expectedSeq }) })),
    context: (conversation, { agent, query }) => retried(() => transport.context(conversation, agent, query)),
    compose: (conversation, request) => retried(() => transport.compose(conversation, request)),
    searchMemory: (conversation, { agent, q, limit }) => retried(() => transport.searchMemory(conversation, agent, q, limit)),
    registerAgent: (id, pair) => retried(() => transport.registerAgent(id, pair)),
    request: async (method, path, ...[init]) => {
      const send = httpOnly(transport, "request");
      const parts = (init ?? {}) as { readonly path?: Readonly<Record<string, string | number | boolean>>; readonly query?: Readonly<Record<string, QueryValue>>; readonly body?: unknown };
      const call = () => send(method, expandPath(path, parts.path), parts.query, parts.body);
      // A DELETE whose first attempt committed would be answered `not_found` when resent (retry.ts).
      return (await (method === "delete" ? call() : retried(call))) as never;
    },
  };
}
