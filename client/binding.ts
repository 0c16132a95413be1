import { networkFailure, rpcFailure } from "./errors.js";
import type { Send, Transport } from "./transport.js";
import type {
  AppendBatchRequest,
  AppendedBatch,
  AppendedEvent,
  AppendEventRequest,
  ComposeRequest,
  ComposeResponse,
  ContextResponse,
  MemorySearch,
  RegisteredAgent,
  Registration,
} from "./types.js";

/** Every FoldlineRpc method answers this instead of rejecting, so a caller can branch on the code. */
export type RpcAnswer<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } };

/**
 * The part of Foldline's RPC entrypoint (`FoldlineRpc`, src/rpc/entrypoint.ts) the client calls,
 * as a service binding to it exposes it (`services = [{ binding = "FOLDLINE", service = "foldline",
 * entrypoint = "FoldlineRpc" }]`). Declared here rather than imported, so that the client's types
 * do not pull in the Worker's; test/client/binding.test.ts checks that the real entrypoint has
 * this shape. The inputs are `/openapi.json`'s request bodies, which the entrypoint's own input
 * types accept; the answers are left `unknown` here because the Worker types a stored event
 * loosely (`Wire`'s `Merged`, src/api/responses.ts): the client reads each value as the body the
 * matching HTTP route answers, which the entrypoint answers by contract (test/integration/rpc.test.ts).
 */
export interface FoldlineBinding {
  ingest(token: string, conversationId: string, input: AppendEventRequest | AppendBatchRequest): Promise<RpcAnswer<unknown>>;
  context(token: string, conversationId: string, agentId: string, options?: { readonly query?: string }): Promise<RpcAnswer<unknown>>;
  compose(token: string, conversationId: string, request: ComposeRequest): Promise<RpcAnswer<unknown>>;
  searchMemory(token: string, conversationId: string, agentId: string, query: string, options?: { readonly limit?: number }): Promise<RpcAnswer<unknown>>;
  /** Answers `{ created, agent }`: `agent` is the body `PUT /v1/agents/{agent}` answers. */
  registerAgent(token: string, agentId: string, pair: Registration): Promise<RpcAnswer<unknown>>;
}

/** An RPC answer's value, or its error thrown as a `FoldlineError`; a rejected call (the binding itself failed) is `network`. */
async function unwrap<T>(call: () => Promise<RpcAnswer<T>>): Promise<T> {
  let answer: RpcAnswer<T>;
  try {
    answer = await call();
  } catch (error) {
    throw networkFailure(error);
  }
  if (answer.ok) return answer.value;
  throw rpcFailure(answer.error);
}

/**
 * Foldline over a service binding: the RPC entrypoint's methods, each carrying the API token (the
 * entrypoint authenticates and scopes every call exactly as HTTP does). Any other route of the
 * HTTP API (`request`) goes over `send`, an HTTP fetcher, when one is given.
 */
export function bindingTransport(binding: FoldlineBinding, token: string, send: Send | undefined): Transport {
  return {
    send,
    append: (conversation, event) => unwrap(() => binding.ingest(token, conversation, event)) as Promise<AppendedEvent>,
    appendBatch: (conversation, batch) => unwrap(() => binding.ingest(token, conversation, batch)) as Promise<AppendedBatch>,
    context: (conversation, agent, query) => unwrap(() => binding.context(token, conversation, agent, query === undefined ? {} : { query })) as Promise<ContextResponse>,
    compose: (conversation, request) => unwrap(() => binding.compose(token, conversation, request)) as Promise<ComposeResponse>,
    searchMemory: (conversation, agent, q, limit) =>
      unwrap(() => binding.searchMemory(token, conversation, agent, q, limit === undefined ? {} : { limit })) as Promise<MemorySearch>,
    registerAgent: async (id, pair) => ((await unwrap(() => binding.registerAgent(token, id, pair))) as { readonly agent: RegisteredAgent }).agent,
  };
}
