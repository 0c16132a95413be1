import { FoldlineError, httpFailure, networkFailure } from "./errors.js";
import { expandPath, queryString } from "./paths.js";
import type { Send, Transport } from "./transport.js";
import type { AppendedBatch, AppendedEvent, ComposeResponse, ContextResponse, MemorySearch, RegisteredAgent } from "./types.js";

export interface HttpTransportOptions {
  /** Where Foldline answers, e.g. `https://foldline.example.workers.dev` (a path prefix is kept). */
  readonly baseUrl: string;
  readonly token: string;
  readonly fetch: typeof globalThis.fetch;
  /** Each attempt is abandoned after this long without an answer. */
  readonly timeoutMs: number;
  readonly now: () => number;
}

const conversationPath = (conversation: string, rest: string): string => expandPath(`/v1/conversations/{conversation}${rest}`, { conversation });

/** A 2xx answer's body: JSON when it says so, text otherwise, undefined when empty (204). */
async function successBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === "") return undefined;
  if (!/^application\/(?:[\w.+-]+\+)?json\b/i.test(response.headers.get("content-type") ?? "")) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new FoldlineError({ code: "unexpected_response", message: `HTTP ${response.status} with a body that is not JSON`, status: response.status });
  }
}

/** One request over `fetch`, with the bearer token; a non-2xx answer becomes its typed error. */
export function httpSend(options: HttpTransportOptions): Send {
  const base = options.baseUrl.replace(/\/+$/, "");
  return async (method, path, query, body) => {
    const headers: Record<string, string> = { authorization: `Bearer ${options.token}`, accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    try {
      response = await options.fetch(`${base}${path}${queryString(query)}`, {
        method: method.toUpperCase(),
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
    } catch (error) {
      throw networkFailure(error);
    }
    if (response.status >= 200 && response.status < 300) return successBody(response);
    throw httpFailure(response.status, await response.text().catch(() => ""), response.headers.get("retry-after"), options.now());
  };
}

/** Foldline over HTTP: every method is the route the README documents. */
export function httpTransport(options: HttpTransportOptions): Transport {
  const send = httpSend(options);
  return {
    send,
    append: async (conversation, event) => (await send("post", conversationPath(conversation, "/events"), undefined, event)) as AppendedEvent,
    appendBatch: async (conversation, batch) => (await send("post", conversationPath(conversation, "/events/batch"), undefined, batch)) as AppendedBatch,
    context: async (conversation, agent, query) => (await send("get", conversationPath(conversation, "/context"), { agent, query })) as ContextResponse,
    compose: async (conversation, request) => (await send("post", conversationPath(conversation, "/compose"), undefined, request)) as ComposeResponse,
    searchMemory: async (conversation, agent, q, limit) => (await send("get", conversationPath(conversation, "/memory/search"), { agent, q, limit })) as MemorySearch,
    registerAgent: async (id, pair) => (await send("put", expandPath("/v1/agents/{agent}", { agent: id }), undefined, pair)) as RegisteredAgent,
  };
}
