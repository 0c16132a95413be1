import { createExecutionContext, createMessageBatch, getQueueResult, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index";
import { conversationStub } from "../../src/durable/stub";
import type { BindingCall, FaultKind } from "./faulty-bindings";
import { FaultPlan, faultStorage, faultyEnv } from "./faulty-bindings";

/**
 * One run of one operation: a fresh plan, the Worker's env under it, and the conversation
 * objects it touches put under it too (see README.md for why this reaches them). Every request of
 * the run goes through the Worker's real entry points (`fetch`, `queue`) with that env.
 */

const ORIGIN = "http://foldline.test";

/** What a client saw: the status, and the body when it was JSON. */
export interface Exchange {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: unknown;
  /** `error.code` of a problem body. */
  readonly code: string | null;
}

/** Where the k-th fault goes: a binding call, or the k-th request to the model (scripted at the fake). */
export type Target = { readonly edge: "binding"; readonly k: number; readonly kind: FaultKind } | { readonly edge: "model"; readonly k: number; readonly kind: Exclude<FaultKind, "lost_response"> };

export class Run {
  readonly plan: FaultPlan;
  readonly env: Env;
  /** Set when a model fault was scripted and the model saw that many requests (read back from the fake). */
  modelFired: boolean | undefined;

  constructor(readonly target?: Target) {
    this.plan = new FaultPlan(target?.edge === "binding" ? { k: target.k, kind: target.kind } : undefined);
    this.env = faultyEnv(env, this.plan, "worker");
  }

  /** Whether the fault this run was for happened (a clean run has none). */
  get fired(): boolean {
    if (this.target === undefined) return false;
    return this.target.edge === "binding" ? this.plan.fired !== undefined : this.modelFired === true;
  }

  get firedAt(): BindingCall | undefined {
    return this.plan.fired;
  }

  /**
   * Puts the conversation's object under this run's plan, before anything else reaches it: its
   * constructor has run and it has not yet bound its shard, so every binding it uses from here on
   * (its shard, the control database, R2, the queue) is this run's.
   */
  async adopt(conversationId: string): Promise<void> {
    await runInDurableObject(conversationStub(env, conversationId), (instance) => {
      const object = instance as unknown as { env: Env; ctx: DurableObjectState };
      object.env = faultyEnv(object.env, this.plan, "object");
      faultStorage(object.ctx.storage, this.plan);
    });
  }

  async fetch(method: string, path: string, token: string, body?: unknown): Promise<Exchange> {
    const headers = new Headers({ authorization: `Bearer ${token}` });
    if (body !== undefined) headers.set("content-type", "application/json");
    const ctx = createExecutionContext();
    const response = await worker.fetch(new Request(`${ORIGIN}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }), this.env, ctx);
    await waitOnExecutionContext(ctx);
    return exchange(response);
  }

  /**
   * One delivery of a queue message to the Worker's consumer, as the queue would make it: acked
   * is 200, a retry the consumer asked for is 503, a handler that threw (the queue then retries
   * the whole batch) is 500.
   */
  async deliver(queue: string, body: unknown, attempts: number): Promise<Exchange> {
    const batch = createMessageBatch(queue, [{ id: `msg-${attempts}`, timestamp: new Date(), attempts, body }]);
    const ctx = createExecutionContext();
    try {
      await worker.queue(batch, this.env);
    } catch (error) {
      return { status: 500, retryAfter: null, body: String(error), code: "queue_handler_threw" };
    }
    const result = await getQueueResult(batch, ctx);
    const retry = result.retryMessages[0];
    // Neither acked nor retried explicitly, a message the handler returned from is acked.
    if (retry === undefined && !result.retryBatch.retry) return { status: 200, retryAfter: null, body: null, code: null };
    const delay = retry?.delaySeconds ?? result.retryBatch.delaySeconds;
    return { status: 503, retryAfter: delay === undefined ? null : String(delay), body: null, code: "retry" };
  }
}

async function exchange(response: Response): Promise<Exchange> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text) as unknown;
  } catch {
    // Not JSON: kept as text.
  }
  const error = typeof body === "object" && body !== null && "error" in body ? (body as { error: { code?: unknown } }).error : undefined;
  return { status: response.status, retryAfter: response.headers.get("retry-after"), body, code: typeof error?.code === "string" ? error.code : null };
}

export const is2xx = (x: Exchange): boolean => x.status >= 200 && x.status < 300;

/**
 * A value as it compares across runs: each run works in names of its own (conversation, agent,
 * page), and ids, hashes and times differ from run to run, so they are replaced by what they are.
 * The names go first: a hash covers the conversation id, so it differs whatever else is equal.
 */
export function normalize(value: unknown, names: Readonly<Record<string, string>>): unknown {
  let text = JSON.stringify(value) ?? "null";
  for (const [name, placeholder] of Object.entries(names).sort((a, b) => b[0].length - a[0].length)) text = text.replaceAll(name, placeholder);
  text = text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>")
    .replace(/\b[0-9a-f]{64}\b/g, "<sha256>")
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z/g, "<time>")
    .replace(/"(latencyMs|recordedAt|createdAt)":\d+/g, '"$1":0')
    .replace(/chatcmpl-fake-[a-z0-9]+/g, "<response-id>");
  return JSON.parse(text) as unknown;
}

/** The first place two normalized values differ, as a path and both sides (short). */
export function firstDifference(a: unknown, b: unknown, path = "$"): string | undefined {
  if (JSON.stringify(a) === JSON.stringify(b)) return undefined;
  if (typeof a === "object" && a !== null && typeof b === "object" && b !== null) {
    if (Array.isArray(a) && Array.isArray(b) && a.length !== b.length) return `${path}: ${a.length} items, clean run has ${b.length}`;
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    for (const key of keys) {
      const found = firstDifference((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], `${path}.${key}`);
      if (found !== undefined) return found;
    }
  }
  const show = (v: unknown) => (JSON.stringify(v) ?? "undefined").slice(0, 120);
  return `${path}: ${show(a)}, clean run has ${show(b)}`;
}
