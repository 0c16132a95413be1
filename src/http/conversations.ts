import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { composeRequest, ingestBatch, ingestEvent, listConversationEvents, selectContext } from "../api/conversations";
import { contextQuery, pageQuery } from "../api/queries";
import { appendedBatchSchema, appendedEventSchema, composeResponseSchema, contextResponseSchema, eventPageSchema, memorySearchSchema, turnPageSchema } from "../api/responses";
import { listTurns, turnsQuery } from "../api/turns";
import { memorySearchQuery, searchMemory } from "../api/recall";
import { composeRequestSchema } from "../core/compose";
import { appendBatchRequestSchema, appendEventRequestSchema } from "../core/events";
import { scopedConversation } from "./auth";
import { problem } from "./errors";
import { BEARER, operation, pathParameter, queryParameters } from "./openapi/operation";
import { BODY_CODES, problems, QUERY_CODES, SCOPED_CODES } from "./openapi/problem";
import { jsonBody, jsonResponse } from "./openapi/schemas";
import type { AppEnv } from "./types";
import { readJson } from "./validation";
import { shardDatabaseOf } from "../storage/shards";

/**
 * The conversation routes, thin wrappers over `api/conversations` and `api/turns` (shared with the
 * RPC entrypoint): the route checks scope, reads the body, and maps the Result. The body is read as
 * any JSON here and validated by the operation, so both transports validate with the same schema in
 * the same order (scope, then media type and JSON, then shape).
 */

const anyJson = z.unknown();

const conversation = pathParameter("conversation");

const PAGE_NOTES = {
  after: "the last sequence number already read; 0 reads from the start",
  limit: "most events in the page (1–500)",
} as const;

/** What composing or serving a context can refuse with, beyond the route's own checks. */
const CONTEXT_CODES = ["not_found", "chain_invalid", "compaction_behind", "amendment_too_large", "context_budget_exceeded"] as const;

const appendEvent = operation({
  method: "post",
  path: "/{conversation}/events",
  operationId: "appendEvent",
  tags: ["events"],
  summary: "Append one event",
  description:
    "Appends one `source`, `correction`, `proposal`, `delivery` or `run` event. The idempotency key makes retries safe: " +
    "the same key with the same payload is a replay (200), with another payload `idempotency_conflict`. With `expectedSeq`, " +
    "a stale belief about the conversation's latest sequence is `sequence_conflict` (with `currentSeq`). Compactor runs and " +
    "the idempotency prefixes `run:`, `tg:`, `reply:` and `dispatch:` are reserved (`forbidden`). A failed request changes nothing.",
  security: BEARER,
  parameters: [conversation],
  request: { body: jsonBody("AppendEventRequest", appendEventRequestSchema) },
  responses: {
    201: jsonResponse("appended (`duplicate: false`)", "AppendedEvent", appendedEventSchema),
    200: jsonResponse("a replay of the same key and payload (`duplicate: true`)", "AppendedEvent", appendedEventSchema),
    ...problems(["idempotency_conflict", "sequence_conflict"], SCOPED_CODES, BODY_CODES),
  },
});

const appendBatch = operation({
  method: "post",
  path: "/{conversation}/events/batch",
  operationId: "appendBatch",
  tags: ["events"],
  summary: "Append a batch of events, all or none",
  description:
    "Appends up to 100 events in order, in one transaction: either every event is stored (or replayed) or none is. " +
    "One reserved event refuses the whole batch.",
  security: BEARER,
  parameters: [conversation],
  request: { body: jsonBody("AppendBatchRequest", appendBatchRequestSchema) },
  responses: {
    201: jsonResponse("at least one event was new", "AppendedBatch", appendedBatchSchema),
    200: jsonResponse("every event was a replay", "AppendedBatch", appendedBatchSchema),
    ...problems(["idempotency_conflict", "sequence_conflict"], SCOPED_CODES, BODY_CODES),
  },
});

const listEvents = operation({
  method: "get",
  path: "/{conversation}/events",
  operationId: "listEvents",
  tags: ["events"],
  summary: "Read the log",
  description: "The raw, immutable log, paged by sequence. `nextAfter` is the next cursor, or null once the page reached the end.",
  security: BEARER,
  parameters: [conversation, ...queryParameters(pageQuery, PAGE_NOTES)],
  responses: { 200: jsonResponse("a page of stored events", "EventPage", eventPageSchema), ...problems(SCOPED_CODES, QUERY_CODES) },
});

const getContext = operation({
  method: "get",
  path: "/{conversation}/context",
  operationId: "getContext",
  tags: ["context"],
  summary: "The agent's verified context",
  description:
    "Provider-ready `messages` (boundary envelope, amendment envelope, with a `query` the recalled-memory envelope, exact tail) " +
    "and a private `manifest` (boundary id, " +
    "hash and coverage, amendment items and hash, tail, omitted groups, reservations). The chain head is verified on every " +
    "request; when it cannot be, the answer is `chain_invalid` with a `reason` (`missing_link`, `fork`, `stale_declaration`, " +
    "`divergent_hash`, `wrong_route`, `fabricated_run`, `non_advancing`), a `cause` naming the exact condition (e.g. `body_mismatch`, " +
    "`packet_mismatch`, `anchor_mismatch`, `plan_mismatch`, `frozen_turns_mismatch`) and the `check`, `field`, `expected` and `found` behind it; nothing unverified is served. " +
    "When the agent's compactions have fallen so far behind that its object holds only the oldest part of the uncovered history (`HOT_WINDOW_EVENTS`), " +
    "the answer is `compaction_behind` with the `throughSeq` it holds and the head's `coveredThroughSeq`, never a context without its recent tail, until they catch up.",
  security: BEARER,
  parameters: [
    conversation,
    ...queryParameters(contextQuery, {
      agent: "the agent whose view is served",
      query:
        "free text to recall memory for: the matching current statements of the facts extracted from this conversation (pages a person wrote for the agent whole) " +
        "and its best turns older than the tail, taken in turn, nothing said twice, within its `memoryBudgetChars`",
    }),
  ],
  responses: {
    200: jsonResponse("the messages and their manifest", "ContextResponse", contextResponseSchema),
    ...problems(CONTEXT_CODES, SCOPED_CODES, QUERY_CODES),
  },
});

const compose = operation({
  method: "post",
  path: "/{conversation}/compose",
  operationId: "compose",
  tags: ["context"],
  summary: "Compose one provider request",
  description:
    "One OpenAI chat-completions body over the agent's verified context: its trusted documents as the only system content, " +
    "then the selected history, then the prompt (images as `image_url` parts). The history carries the memory envelope " +
    "recalled for `query`, by default the prompt's text.",
  security: BEARER,
  parameters: [conversation],
  request: { body: jsonBody("ComposeRequest", composeRequestSchema) },
  responses: {
    200: jsonResponse("the provider request and its manifest", "ComposeResponse", composeResponseSchema),
    ...problems(CONTEXT_CODES, ["unknown_document", "document_budget_exceeded"], SCOPED_CODES, BODY_CODES),
  },
});

const listTurnsRoute = operation({
  method: "get",
  path: "/{conversation}/turns",
  operationId: "listTurns",
  tags: ["events"],
  summary: "Read the effective turns",
  description:
    "The canonical reconstruction of the conversation (edits applied, deletions removed, delivered replies in the group " +
    "of the message they answer), paged by whole groups: a page may exceed `limit` to finish the group it stopped in.",
  security: BEARER,
  parameters: [
    conversation,
    ...queryParameters(turnsQuery, {
      after: "the last group already read; 0 reads from the start",
      limit: "turns in the page (1–500), exceeded only to finish a group",
      agents: "comma-separated agent ids whose delivered replies count as history; omitted: every agent",
      sensitive: "`include` adds sensitive turns",
    }),
  ],
  responses: { 200: jsonResponse("a page of effective turns", "TurnPage", turnPageSchema), ...problems(SCOPED_CODES, QUERY_CODES) },
});

const searchMemoryRoute = operation({
  method: "get",
  path: "/{conversation}/memory/search",
  operationId: "searchMemory",
  tags: ["memory"],
  summary: "Search the agent's memory and the conversation's turns",
  description:
    "Recall: the memory pages the agent may be served here (the pages people wrote for it, and the facts extracted from this conversation, never another's) " +
    "and the conversation's exact turns (edits applied, deletions removed), each bm25-ranked, " +
    "fused by rank into one list, each with a snippet of the match (matched terms between « and »), its whole content, and the messages it comes from. " +
    "Only what the agent could be served: replies of its admitted history agents, sensitive turns only if it admits them. " +
    "The query is free text, never search syntax. The token needs the conversation and the agent.",
  security: BEARER,
  parameters: [
    conversation,
    ...queryParameters(memorySearchQuery, {
      agent: "the agent whose memory and view of the conversation is searched",
      q: "what to look for, as free text",
      limit: "most results (1–50)",
    }),
  ],
  responses: {
    200: jsonResponse("the best matches, best first", "MemorySearch", memorySearchSchema),
    ...problems(["not_found"], SCOPED_CODES, QUERY_CODES),
  },
});

export const conversations = new OpenAPIHono<AppEnv>()
  .openapi(appendEvent, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const appended = await ingestEvent(c.env, scoped.value, body.value);
    if (!appended.ok) return problem(c, appended.error);
    return c.json(appended.value, appended.value.duplicate ? 200 : 201);
  })
  .openapi(appendBatch, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const appended = await ingestBatch(c.env, scoped.value, body.value);
    if (!appended.ok) return problem(c, appended.error);
    const created = appended.value.results.some((r) => !r.duplicate);
    return c.json(appended.value, created ? 201 : 200);
  })
  .openapi(listEvents, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const page = await listConversationEvents(await shardDatabaseOf(c.env, scoped.value), scoped.value, c.req.query());
    return page.ok ? c.json(page.value) : problem(c, page.error);
  })
  .openapi(getContext, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const selected = await selectContext(c.env, scoped.value, c.req.query(), c.get("principal").scopes);
    if (!selected.ok) return problem(c, selected.error);
    return c.json(selected.value);
  })
  .openapi(compose, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const composed = await composeRequest(c.env, scoped.value, body.value, c.get("principal").scopes);
    if (!composed.ok) return problem(c, composed.error);
    return c.json(composed.value);
  })
  .openapi(listTurnsRoute, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const page = await listTurns(await shardDatabaseOf(c.env, scoped.value), scoped.value, c.req.query());
    return page.ok ? c.json(page.value) : problem(c, page.error);
  })
  .openapi(searchMemoryRoute, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const found = await searchMemory(c.env, c.get("principal"), scoped.value, c.req.query());
    return found.ok ? c.json(found.value) : problem(c, found.error);
  });
