import type { StoredEvent } from "../core/events";
import { appendBatchRequestSchema, appendEventRequestSchema, reservedForFoldline } from "../core/events";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { composeRequestSchema } from "../core/compose";
import type { ContextSelection } from "../core/context-manifest";
import { appendToConversation, contextFor } from "../durable/stub";
import { compose } from "./compose";
import { listEvents } from "../storage/shard/events";
import type { appendedBatchSchema, appendedEventSchema, eventPageSchema, storedEventSchema, Wire } from "./responses";
import { validate } from "./validation";
import type { ScopedConversationId } from "./access";
import { contextQuery, pageQuery } from "./queries";

/**
 * The conversation operations every transport offers: ingest, the log, context and compose. Each
 * takes the already-authorized conversation and the caller's input as plain data (a parsed JSON
 * body, a query object), validates it here, and returns a `Result` — HTTP maps it to a status once,
 * RPC returns it.
 * A failed operation changes nothing: validation and reserved-key checks run before the append.
 */

/** The wire form of a stored event (the `StoredEvent` response component). */
export function eventView(event: StoredEvent) {
  return {
    conversationId: event.conversationId,
    seq: event.seq,
    kind: event.kind,
    idempotencyKey: event.idempotencyKey,
    sensitive: event.sensitive,
    body: event.body,
    hash: event.hash,
    recordedAt: event.recordedAt,
  } satisfies Wire<typeof storedEventSchema>;
}

export type EventView = ReturnType<typeof eventView>;

/** One appended event; `duplicate` is a replay of the same key and payload (HTTP 200, not 201). */
export interface IngestedEvent {
  readonly event: EventView;
  readonly duplicate: boolean;
}

/** A batch appended all or none, in order; `lastSeq` is the conversation's head afterwards. */
export interface IngestedBatch {
  readonly results: IngestedEvent[];
  readonly lastSeq: number;
}

/** `{ kind, idempotencyKey, sensitive?, expectedSeq?, body }`: one event. */
export async function ingestEvent(env: Env, conversationId: ScopedConversationId, input: unknown): Promise<Result<IngestedEvent>> {
  const request = validate(appendEventRequestSchema, input);
  if (!request.ok) return request;
  const { expectedSeq, ...event } = request.value;
  const reserved = reservedForFoldline(event);
  if (reserved !== undefined) return fail("forbidden", reserved);
  const appended = await appendToConversation(env, { conversationId, events: [event], expectedSeq });
  if (!appended.ok) return appended;
  const [result] = appended.value.results;
  if (result === undefined) return fail("internal", "append returned no result");
  return ok({ event: eventView(result.event), duplicate: result.duplicate } satisfies Wire<typeof appendedEventSchema>);
}

/** `{ events, expectedSeq? }`: up to the batch limit, all or none; one reserved event refuses all. */
export async function ingestBatch(env: Env, conversationId: ScopedConversationId, input: unknown): Promise<Result<IngestedBatch>> {
  const request = validate(appendBatchRequestSchema, input);
  if (!request.ok) return request;
  for (const [index, event] of request.value.events.entries()) {
    const reserved = reservedForFoldline(event);
    if (reserved !== undefined) return fail("forbidden", `events.${index}: ${reserved}`, { index });
  }
  const appended = await appendToConversation(env, {
    conversationId,
    events: request.value.events,
    expectedSeq: request.value.expectedSeq,
  });
  if (!appended.ok) return appended;
  const { results, lastSeq } = appended.value;
  return ok({ results: results.map((r) => ({ event: eventView(r.event), duplicate: r.duplicate })), lastSeq } satisfies Wire<typeof appendedBatchSchema>);
}

/** `{ after?, limit? }`: the log in sequence order, every event as stored, paged by sequence. */
export async function listConversationEvents(db: D1Database, conversationId: ScopedConversationId, query: unknown): Promise<Result<Wire<typeof eventPageSchema>>> {
  const parsed = validate(pageQuery, query);
  if (!parsed.ok) return parsed;
  const { after, limit } = parsed.value;
  const events = await listEvents(db, conversationId, after, limit);
  const last = events.at(-1);
  return ok({ events: events.map(eventView), nextAfter: events.length === limit && last ? last.seq : null });
}

/**
 * `{ agent, query? }`: the agent's verified context (boundary envelope, amendments, exact tail,
 * manifest); with a query, the memory recalled for it between the amendment and the tail, as far
 * as a caller holding `scopes` may be served it (core/memory-privacy).
 */
export async function selectContext(env: Env, conversationId: ScopedConversationId, query: unknown, scopes: readonly string[]): Promise<Result<ContextSelection>> {
  const parsed = validate(contextQuery, query);
  if (!parsed.ok) return parsed;
  return contextFor(env, conversationId, parsed.value.agent, undefined, parsed.value.query, scopes);
}

export type Composed = Extract<Awaited<ReturnType<typeof compose>>, { ok: true }>["value"];

/**
 * `{ agent, prompt: { text, images? }, query? }`: one provider request over the agent's verified
 * context, with the memory recalled for `query` (by default the prompt's text; none for a prompt
 * of images only).
 */
export async function composeRequest(env: Env, conversationId: ScopedConversationId, input: unknown, scopes: readonly string[]): Promise<Result<Composed>> {
  const request = validate(composeRequestSchema, input);
  if (!request.ok) return request;
  const query = request.value.query ?? (request.value.prompt.text === "" ? undefined : request.value.prompt.text);
  const selected = await contextFor(env, conversationId, request.value.agent, undefined, query, scopes);
  if (!selected.ok) return selected;
  return compose(env, request.value, selected.value);
}
