import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { routePath } from "hono/route";
import { z } from "zod";
import { deleteMemoryPage, listMemoryPages, memoryListQuery, memoryPagePath, memoryVersionQuery, readMemoryPage, writeMemoryPage } from "../api/memory";
import { memoryPageListSchema, memoryPageSchema, memoryPageWriteSchema } from "../api/responses";
import type { Result } from "../core/errors";
import { putMemoryPageSchema } from "../core/memory-path";
import { scopedAgent } from "./auth";
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
function pagePath(c: Context<AppEnv>): Result<string> {
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
  description: "The agent's current memory pages, ordered by path, without their content.",
  security: BEARER,
  parameters: [pathParameter("agent"), ...queryParameters(memoryListQuery, { after: "the last path already read; empty reads from the start", limit: "most pages listed" })],
  responses: { 200: jsonResponse("a page of the listing", "MemoryPageList", memoryPageListSchema), ...problems(SCOPED_CODES, QUERY_CODES) },
});

const putMemoryPage = operation({
  method: "put",
  path: "/{agent}/memory/*",
  operationId: "putMemoryPage",
  tags: ["memory"],
  summary: "Write a memory page",
  description: "Writes a new version of the page (indexed for recall); the same content as the current version changes nothing. Pages under `extracted/` are written by memory extraction only (403 `forbidden`).",
  security: BEARER,
  parameters: page,
  request: { body: jsonBody("MemoryPageBody", putMemoryPageSchema) },
  responses: {
    201: jsonResponse("a new version (`created: true`)", "MemoryPageWrite", memoryPageWriteSchema),
    200: jsonResponse("unchanged (`created: false`)", "MemoryPageWrite", memoryPageWriteSchema),
    ...problems(SCOPED_CODES, BODY_CODES),
  },
});

const getMemoryPage = operation({
  method: "get",
  path: "/{agent}/memory/*",
  operationId: "getMemoryPage",
  tags: ["memory"],
  summary: "Read a memory page",
  description: "The page's current version, or the version asked for. With `provenance=1`, an extracted page also lists each fact with the messages it came from.",
  security: BEARER,
  parameters: [...page, ...queryParameters(memoryVersionQuery, { version: "a past version; omitted: the current one", provenance: "1: add each extracted fact's sources (conversation, message id, seq, event hash, run)" })],
  responses: { 200: jsonResponse("the page", "MemoryPage", memoryPageSchema), ...problems(["not_found"], SCOPED_CODES, QUERY_CODES) },
});

const deleteMemoryPageRoute = operation({
  method: "delete",
  path: "/{agent}/memory/*",
  operationId: "deleteMemoryPage",
  tags: ["memory"],
  summary: "Delete a memory page",
  description: "Deletes the page; its past versions stay stored.",
  security: BEARER,
  parameters: page,
  responses: { 204: { description: "deleted" }, ...problems(["not_found"], SCOPED_CODES) },
});

/**
 * Memory pages of one agent, under `/v1/agents` (`api/memory`). Every route needs the
 * `agent:<id>` scope and conversation scopes containing the agent's sources.
 */
export const memory = new OpenAPIHono<AppEnv>()
  .openapi(listMemoryPagesRoute, async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const pages = await listMemoryPages(c.env.DB, agent.value, c.req.query());
    return pages.ok ? c.json(pages.value) : problem(c, pages.error);
  })
  .openapi(putMemoryPage, async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const written = await writeMemoryPage(c.env.DB, agent.value, path.value, body.value);
    return written.ok ? c.json(written.value, written.value.created ? 201 : 200) : problem(c, written.error);
  })
  .openapi(getMemoryPage, async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const found = await readMemoryPage(c.env.DB, agent.value, path.value, c.req.query());
    return found.ok ? c.json(found.value) : problem(c, found.error);
  })
  .openapi(deleteMemoryPageRoute, async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const deleted = await deleteMemoryPage(c.env.DB, agent.value, path.value);
    return deleted.ok ? c.body(null, 204) : problem(c, deleted.error);
  });
