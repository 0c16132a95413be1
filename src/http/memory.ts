import { Hono } from "hono";
import type { Context } from "hono";
import { routePath } from "hono/route";
import { z } from "zod";
import { deleteMemoryPage, listMemoryPages, memoryPagePath, readMemoryPage, writeMemoryPage } from "../api/memory";
import type { Result } from "../core/errors";
import { scopedAgent } from "./auth";
import { problem } from "./errors";
import type { AppEnv } from "./types";
import { readJson } from "./validation";

const anyJson = z.unknown();

/**
 * The page path: the pathname after the route's `*`, split on "/" before decoding (`api/memory`).
 * (`.` and `..` segments, raw or encoded, never arrive: URL parsing resolves them before routing.)
 */
function pagePath(c: Context<AppEnv>): Result<string> {
  const star = routePath(c).split("/").indexOf("*");
  return memoryPagePath(new URL(c.req.url).pathname.split("/").slice(star));
}

/**
 * Memory pages of one agent, under `/v1/agents` (`api/memory`). Every route needs the
 * `agent:<id>` scope and conversation scopes containing the agent's sources.
 */
export const memory = new Hono<AppEnv>()
  .get("/:agent/memory", async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const pages = await listMemoryPages(c.env.DB, agent.value, c.req.query());
    return pages.ok ? c.json(pages.value) : problem(c, pages.error);
  })
  .put("/:agent/memory/*", async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const body = await readJson(c, anyJson);
    if (!body.ok) return problem(c, body.error);
    const written = await writeMemoryPage(c.env.DB, agent.value, path.value, body.value);
    return written.ok ? c.json(written.value, written.value.created ? 201 : 200) : problem(c, written.error);
  })
  .get("/:agent/memory/*", async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const page = await readMemoryPage(c.env.DB, agent.value, path.value, c.req.query());
    return page.ok ? c.json(page.value) : problem(c, page.error);
  })
  .delete("/:agent/memory/*", async (c) => {
    const agent = await scopedAgent(c);
    if (!agent.ok) return problem(c, agent.error);
    const path = pagePath(c);
    if (!path.ok) return problem(c, path.error);
    const deleted = await deleteMemoryPage(c.env.DB, agent.value, path.value);
    return deleted.ok ? c.body(null, 204) : problem(c, deleted.error);
  });
