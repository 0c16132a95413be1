import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { routePath } from "hono/route";
import { z } from "zod";
import { deleteMemoryPage, listMemoryPages, memoryListQuery, memoryPagePath, memoryVersionQuery, readMemoryPage, writeMemoryPage } from "../api/memory";
import { memoryPageListSchema, memoryPageSchema, memoryPageWriteSchema } from "../api/responses";
import type { Result } from "../core/errors";
import { putMemoryPageSchema } from "../core/memory-path";
import { declaredAgentInScope } from "../api/access";
import { problem } from "./errors";
import { BEARER, operation, pathParameter, queryParameters } from "./openapi/operation";
import { BODY_CODES, problems, QUERY_CODES, SCOPED_CODES } from "./openapi/problem";
import { jsonBody, jsonResponse } from "./openapi/schemas";
import type { AppEnv } from "./types";
import { readJson } from "./validation";

const anyJson = z.unknown();

/**
 * The page path: the pathname after the route's `*`, split on "/" before decoding (`api/memory`).
 * (`.` and `..` segments, raw or encoded, never arrive: URL parsing resolves them before routing.)
 * The routes keep Hono's `*` rather than a `{path}` parameter for that reason; the document names
 * it `{path}` (`openapi/document.ts`).
 */
export function pagePath(c: Context<AppEnv>): Result<string> {
  const star = routePath(c).split("/").indexOf("*");
  return memoryPagePath(new URL(c.req.url).pathname.split("/").slice(star));
}

const page = [pathParameter("agent"), pathParameter("path")];

const listMemoryPagesRoute = operation({
  method: "get",
  path: "/{agent}/memory",
  operationId: "listMemoryPages",
  tags: ["memory"],
  summary: "List memory pages",
  description: "The pages people wrote for the agent (agent-wide, served in every conversation it serves), ordered by path, without their content. Extracted facts are each conversation's: `GET /v1/conversations/{conversation}/memory/pages?agent=`.",
  security: BEARER,
  parameters: [pathParameter("agent"), ...queryParameters(memoryListQuery, { after: "the last path already read; empty reads from the start", limit: "most pages listed" })],
  responses: { 200: jsonResponse("a page of the listing", "MemoryPageList", memoryPageListSchema), ...problems(["not_found"], SCOPED_CODES, QUERY_CODES) },
});

const putMemoryPage = operation({
  method: "put",
  path: "/{agent}/memory/*",
  operationId: "putMemoryPage",
  tags: ["memory"],
  summary: "Write a memory page",
  description:
    "Writes a new version of the page (indexed for recall, served in every conversation the agent serves); the same content as the current version changes nothing. " +
    "Only for a declared agent (404 `not_found` otherwise), by a token that may change it: `agent:<id>` and conversation scopes containing every source of its declaration. " +
    "Pages under `extracted/` are written by memory extraction only (403 `forbidden`).",
  security: BEARER,
  parameters: page,
  request: { body: jsonBody("MemoryPageBody", putMemoryPageSchema) },
  responses: {
    201: jsonResponse("a new version (`created: true`)", "MemoryPageWrite", memoryPageWriteSchema),
    200: jsonResponse("unchanged (`created: false`)", "MemoryPageWrite", memoryPageWriteSchema),
    ...problems(["not_found"], SCOPED_CODES, BODY_CODES),
  },
});

const getMemoryPage = operation({
  method: "get",
  path: "/{agent}/memory/*",
  operationId: "getMemoryPage",
  tags: ["memory"],
  summary: "Read a memory page",
  description:
    "A page a person wrote: its current version, or the version asked for (with `provenance=1`, an empty list of facts). " +
    "Paths under `extracted/` are refused (403 `forbidden`): extracted facts are read with their conversation, `GET /v1/conversations/{conversation}/memory/pages/{path}?agent=`.",
  security: BEARER,
  parameters: [...page, ...queryParameters(memoryVersionQuery, { version: "a past version; omitted: the current one", provenance: "1: add `facts` (always empty for a person's page)" })],
  responses: { 200: jsonResponse("the page", "MemoryPage", memoryPageSchema), ...problems(["not_found"], SCOPED_CODES, QUERY_CODES) },
});

const deleteMemoryPageRoute = operation({
  method: "delete",
  path: "/{agent}/memory/*",
  operationId: "deleteMemoryPage",
  tags: ["memory"],
  summary: "Delete a memory page",
  description: "Deletes the page; its past versions stay stored. Like a write: only for a declared agent, by a token that may change it; never under `extracted/`.",
  security: BEARER,
  parameters: page,
  responses: { 204: { description: "deleted" }, ...problems(["not_found"], SCOPED_CODES) },
});

/**
 * The pages people write for one agent, under `/v1/agents` (`api/memory`). Every route needs the
 * `agent:<id>` scope, conversation scopes containing the agent's sources, and the agent to be
 * declared (`declaredAgentInScope`): an id nobody declared answers as one the caller may not act
 * on, so a listing tells nobody whether an id is taken.
 */
export const memory = new OpenAPIHono<AppEnv>()
  .openapi(listMemoryPagesRoute, async (c) => {
    const agent = await declaredAgentInScope(c.env.DB, c.get("principal"), c.req.param("agent"));
    if (!agent.ok) return problem(c, agent.error);
    const pages = await listMemoryPages(c.env.DB, agent.value, c.req.query());
    return pages.ok ? c.json(pages.value) : problem(c, pages.error);
  })
  .openapi(putMemoryPage, async (c) => {
    const agent = await declaredAgentInScope(c.env.DB, c.get("principal"), c.req.param("agent"));
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const written = await writeMemoryPage(c.env.DB, agent.value, path.value, body.value);
    return written.ok ? c.json(written.value, written.value.created ? 201 : 200) : problem(c, written.error);
  })
  .openapi(getMemoryPage, async (c) => {
    const agent = await declaredAgentInScope(c.env.DB, c.get("principal"), c.req.param("agent"));
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const found = await readMemoryPage(c.env.DB, agent.value, path.value, c.req.query());
    return found.ok ? c.json(found.value) : problem(c, found.error);
  })
  .openapi(deleteMemoryPageRoute, async (c) => {
    const agent = await declaredAgentInScope(c.env.DB, c.get("principal"), c.req.param("agent"));
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const deleted = await deleteMemoryPage(c.env.DB, agent.value, path.value);
    return deleted.ok ? c.body(null, 204) : problem(c, deleted.error);
  });
