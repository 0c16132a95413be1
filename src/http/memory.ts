import { Hono } from "hono";
import type { Context } from "hono";
import { routePath } from "hono/route";
import { z } from "zod";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { memoryPathSchema, putMemoryPageSchema } from "../core/memory-path";
import type { MemoryPage, MemoryPageSummary } from "../storage/memory-store";
import { deletePage, getPage, listPages, MAX_LIST_PAGES, putPage } from "../storage/memory-store";
import { scopedAgent } from "./auth";
import { problem } from "./errors";
import type { memoryPageListSchema, memoryPageSchema, memoryPageSummarySchema, memoryPageWriteSchema, Wire } from "../api/responses";
import type { AppEnv } from "./types";
import { readJson, validate } from "./validation";

export const listQuery = z.object({
  after: z.string().max(200).default(""),
  limit: z.coerce.number().int().min(1).max(MAX_LIST_PAGES).default(100),
});

export const versionQuery = z.object({
  version: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
});

const pathField = z.object({ path: memoryPathSchema });

/**
 * The page path: the pathname after the route's `*`, split on "/" before decoding so that each
 * segment is decoded once, on its own. An encoded slash (%2F) therefore stays inside its segment
 * and is refused, instead of quietly turning `a%2Fb` into the page `a/b`. (`.` and `..` segments,
 * raw or encoded, never arrive: URL parsing resolves them before routing.)
 */
function pagePath(c: Context<AppEnv>): Result<string> {
  const star = routePath(c).split("/").indexOf("*");
  const segments: string[] = [];
  for (const raw of new URL(c.req.url).pathname.split("/").slice(star)) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return fail("validation_failed", "path: malformed percent-encoding");
    }
    if (segment.includes("/")) return fail("validation_failed", "path: a segment cannot contain an encoded /");
    segments.push(segment);
  }
  const parsed = validate(pathField, { path: segments.join("/") });
  return parsed.ok ? ok(parsed.value.path) : parsed;
}

function pageView(page: MemoryPage) {
  return {
    path: page.path,
    version: page.version,
    contentHash: page.contentHash,
    chars: page.chars,
    content: page.content,
    createdAt: page.createdAt,
  } satisfies Wire<typeof memoryPageSchema>;
}

function summaryView(page: MemoryPageSummary) {
  return { path: page.path, version: page.version, contentHash: page.contentHash, chars: page.chars } satisfies Wire<typeof memoryPageSummarySchema>;
}

/**
 * Memory pages of one agent, under `/v1/agents`. Every route needs the `agent:<id>` scope and
 * conversation scopes containing the agent's sources: pages are extracted from its conversations
 * and recalled into their compactions.
 */
export const memory = new Hono<AppEnv>()
  .get("/:agent/memory", async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const query = validate(listQuery, c.req.query());
    if (!query.ok) return problem(c, query.error);
    const { after, limit } = query.value;
    const pages = await listPages(c.env.DB, agent.value, { after, limit });
    const last = pages.at(-1);
    return c.json({ pages: pages.map(summaryView), nextAfter: pages.length === limit && last ? last.path : null } satisfies Wire<typeof memoryPageListSchema>);
  })
  .put("/:agent/memory/*", async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const body = await readJson(c, putMemoryPageSchema);
    if (!body.ok) return problem(c, body.error);
    const put = await putPage(c.env.DB, agent.value, path.value, body.value.content, new Date());
    return c.json(
      { path: path.value, version: put.version, contentHash: put.contentHash, created: put.created } satisfies Wire<typeof memoryPageWriteSchema>,
      put.created ? 201 : 200,
    );
  })
  .get("/:agent/memory/*", async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const query = validate(versionQuery, c.req.query());
    if (!query.ok) return problem(c, query.error);
    const page = await getPage(c.env.DB, agent.value, path.value, query.value.version);
    if (page === undefined) {
      const which = query.value.version === undefined ? "" : ` at version ${query.value.version}`;
      return problem(c, { code: "not_found", message: `no memory page ${path.value}${which} (missing or deleted)` });
    }
    return c.json(pageView(page));
  })
  .delete("/:agent/memory/*", async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const deleted = await deletePage(c.env.DB, agent.value, path.value, new Date());
    if (deleted === undefined) return problem(c, { code: "not_found", message: `no memory page ${path.value} to delete` });
    return c.body(null, 204);
  });
