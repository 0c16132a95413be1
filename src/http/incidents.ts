import { OpenAPIHono } from "@hono/zod-openapi";
import { listIncidents } from "../api/incidents";
import { pageQuery } from "../api/queries";
import { incidentPageSchema } from "../api/responses";
import { scopedConversation } from "./auth";
import { problem } from "./errors";
import { BEARER, operation, pathParameter, queryParameters } from "./openapi/operation";
import { problems, QUERY_CODES, SCOPED_CODES } from "./openapi/problem";
import { jsonResponse } from "./openapi/schemas";
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
const listIncidentsRoute = operation({
  method: "get",
  path: "/{conversation}/incidents",
  operationId: "listIncidents",
  tags: ["chain"],
  summary: "Incident rows",
  description:
    "Private incident rows (compactor, plan, resolver, agent and delivery failures), oldest first, paged by incident id, " +
    "so a new incident always lands behind the cursor.",
  security: BEARER,
  parameters: [
    pathParameter("conversation"),
    ...queryParameters(pageQuery, { after: "the last incident id already read; 0 reads from the start", limit: "most incidents in the page (1–500)" }),
  ],
  responses: { 200: jsonResponse("a page of incidents", "IncidentPage", incidentPageSchema), ...problems(SCOPED_CODES, QUERY_CODES) },
});

export const incidentRoutes = new OpenAPIHono<AppEnv>().openapi(listIncidentsRoute, async (c) => {
  const conversation = scopedConversation(c);
  if (!conversation.ok) return problem(c, conversation.error);
  const page = await listIncidents(c.env, conversation.value, c.req.query());
  if (!page.ok) return problem(c, page.error);
  return c.json(page.value);
});
