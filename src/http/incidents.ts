import { Hono } from "hono";
import { listIncidents } from "../api/incidents";
import { scopedConversation } from "./auth";
import { problem } from "./errors";
import type { AppEnv } from "./types";

/**
 * `GET /v1/conversations/{conversation}/incidents?after=&limit=` →
 * `{ incidents: [{ id, agentId, runId, kind, code, message, createdAt }], nextAfter }`.
 *
 * Oldest first, paged by incident id: `after` is the last id read (0 from the start), `limit` 1–500
 * (default 100), and `nextAfter` is the next cursor, or null once the page reached the end. The same
 * order as the event log, so a new incident always lands behind the cursor and is never skipped.
 * Scoped like every conversation route: a token sees only its conversations' incidents.
 */
export const incidentRoutes = new Hono<AppEnv>().get("/:conversation/incidents", async (c) => {
  const conversation = scopedConversation(c);
  if (!conversation.ok) return problem(c, conversation.error);
  const page = await listIncidents(c.env, conversation.value, c.req.query());
  if (!page.ok) return problem(c, page.error);
  return c.json(page.value);
});
