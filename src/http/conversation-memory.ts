import { OpenAPIHono } from "@hono/zod-openapi";
import { conversationMemoryListQuery, conversationMemoryPageQuery, listConversationMemory, readConversationMemory } from "../api/conversation-memory";
import { memoryPageListSchema, memoryPageSchema } from "../api/responses";
import { scopedConversation } from "./auth";
import { problem } from "./errors";
import { pagePath } from "./memory";
import { BEARER, operation, pathParameter, queryParameters } from "./openapi/operation";
import { problems, QUERY_CODES, SCOPED_CODES } from "./openapi/problem";
import { jsonResponse } from "./openapi/schemas";
import type { AppEnv } from "./types";

/**
 * A conversation's extracted memory, under `/v1/conversations` (`api/conversation-memory`): the
 * pages extraction kept with the conversation, read through it. Each route needs the conversation
 * scope and `agent:<id>`; the agent must currently serve the conversation.
 */

const conversation = pathParameter("conversation");

const AGENT_NOTE = "the agent whose extracted memory of this conversation is read; the token needs `agent:<id>`";

const listConversationMemoryRoute = operation({
  method: "get",
  path: "/{conversation}/memory/pages",
  operationId: "listConversationMemoryPages",
  tags: ["memory"],
  summary: "List a conversation's extracted pages",
  description:
    "The pages memory extraction wrote from this conversation's settled history for the agent, ordered by path, without their content. " +
    "The token needs the conversation and `agent:<id>`; an agent that does not (or no longer) serve the conversation is `not_found`.",
  security: BEARER,
  parameters: [
    conversation,
    ...queryParameters(conversationMemoryListQuery, { agent: AGENT_NOTE, after: "the last path already read; empty reads from the start", limit: "most pages listed" }),
  ],
  responses: { 200: jsonResponse("a page of the listing", "MemoryPageList", memoryPageListSchema), ...problems(["not_found"], SCOPED_CODES, QUERY_CODES) },
});

const getConversationMemoryRoute = operation({
  method: "get",
  path: "/{conversation}/memory/pages/*",
  operationId: "getConversationMemoryPage",
  tags: ["memory"],
  summary: "Read a conversation's extracted page",
  description:
    "One extracted page of the conversation (current or a past version). With `provenance=1`, each fact on it with the messages " +
    "of this conversation it came from (message id, seq, event hash, extraction run, the version that set it).",
  security: BEARER,
  parameters: [
    conversation,
    pathParameter("path"),
    ...queryParameters(conversationMemoryPageQuery, {
      agent: AGENT_NOTE,
      version: "a past version; omitted: the current one",
      provenance: "1: add each fact's sources",
    }),
  ],
  responses: { 200: jsonResponse("the page", "MemoryPage", memoryPageSchema), ...problems(["not_found"], SCOPED_CODES, QUERY_CODES) },
});

export const conversationMemory = new OpenAPIHono<AppEnv>()
  .openapi(listConversationMemoryRoute, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const pages = await listConversationMemory(c.env, c.get("principal"), scoped.value, c.req.query());
    return pages.ok ? c.json(pages.value) : problem(c, pages.error);
  })
  .openapi(getConversationMemoryRoute, async (c) => {
    const scoped = scopedConversation(c);
    if (!scoped.ok) return problem(c, scoped.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const page = await readConversationMemory(c.env, c.get("principal"), scoped.value, path.value, c.req.query());
    return page.ok ? c.json(page.value) : problem(c, page.error);
  });
