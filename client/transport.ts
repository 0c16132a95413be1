import type { Method } from "./paths.js";
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

export type QueryValue = string | number | boolean | undefined;

/** One HTTP request to Foldline: the answer's JSON body (a string for HTML, undefined for none), or a thrown `FoldlineError`. */
export type Send = (method: Method, path: string, query?: Readonly<Record<string, QueryValue>>, body?: unknown) => Promise<unknown>;

/**
 * What the client needs of a way to reach Foldline, once per transport (`http.ts`, `binding.ts`):
 * each call is one attempt that answers the route's body or throws a `FoldlineError`; retrying is
 * the client's (`retry.ts`), the same over both.
 */
export interface Transport {
  append(conversation: string, event: AppendEventRequest): Promise<AppendedEvent>;
  appendBatch(conversation: string, batch: AppendBatchRequest): Promise<AppendedBatch>;
  context(conversation: string, agent: string, query: string | undefined): Promise<ContextResponse>;
  compose(conversation: string, request: ComposeRequest): Promise<ComposeResponse>;
  searchMemory(conversation: string, agent: string, q: string, limit: number | undefined): Promise<MemorySearch>;
  registerAgent(id: string, pair: Registration): Promise<RegisteredAgent>;
  /** Any route of the HTTP API; undefined over a binding given no HTTP fetcher. */
  readonly send: Send | undefined;
}
