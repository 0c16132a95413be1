import { OpenAPIHono } from "@hono/zod-openapi";
import { fleetHealth, fleetIncidentQuery, fleetIncidents, opsHealthRefusal, opsRefusal } from "../api/ops";
import { fleetIncidentPageSchema, opsHealthSchema } from "../api/responses";
import { problem } from "./errors";
import { BEARER, operation, queryParameters } from "./openapi/operation";
import { problems, QUERY_CODES, SCOPED_CODES } from "./openapi/problem";
import { jsonResponse } from "./openapi/schemas";
import type { AppEnv } from "./types";

/**
 * The operator's routes, under `/v1/ops` (`api/ops`): the deployment's health and the incidents of
 * every shard. Both need a token with the `ops` scope (or `*`); a tenant's conversation scopes,
 * however wide, never reach them. `/healthz` stays the cheap liveness probe that touches nothing.
 */
const healthRoute = operation({
  method: "get",
  path: "/health",
  operationId: "opsHealth",
  tags: ["ops"],
  summary: "Deployment health",
  description:
    "Each D1 database (control and every shard) reachable and at the migration this Worker expects, the R2 bucket reachable, " +
    "the shards open to new conversations, the plan that has waited longest for its boundary, chains the resolver refuses now, " +
    "and incidents seen in the last hour. Every binding is probed at once, each under a deadline: one that hangs is reported, " +
    "not waited for. Answers 200 either way; `ok` says whether everything holds. Needs the `ops` scope (or `*`).",
  security: BEARER,
  parameters: [],
  responses: { 200: jsonResponse("the deployment's state", "OpsHealth", opsHealthSchema), ...problems(SCOPED_CODES) },
});

const incidentsRoute = operation({
  method: "get",
  path: "/incidents",
  operationId: "listFleetIncidents",
  tags: ["ops"],
  summary: "Incidents of every conversation",
  description:
    "Every shard's incidents in one list, newest seen first (an incident that repeats while open is one row, with its count, " +
    "and moves up when seen again), filtered by when last seen, agent and cause, paged by an opaque cursor. Needs the `ops` scope (or `*`).",
  security: BEARER,
  parameters: [
    ...queryParameters(fleetIncidentQuery, {
      since: "only incidents last seen at or after this time (ISO 8601)",
      agent: "only this agent's",
      cause: "only incidents of this kind",
      limit: "most incidents in the page (1–200)",
      cursor: "the `nextCursor` of the page before",
    }),
  ],
  responses: { 200: jsonResponse("a page of incidents", "FleetIncidentPage", fleetIncidentPageSchema), ...problems(SCOPED_CODES, QUERY_CODES) },
});

export const ops = new OpenAPIHono<AppEnv>()
  .openapi(healthRoute, async (c) => {
    const allowed = opsHealthRefusal(c.get("principal"));
    if (!allowed.ok) return problem(c, allowed.error);
    return c.json(await fleetHealth(c.env, new Date()));
  })
  .openapi(incidentsRoute, async (c) => {
    const allowed = opsRefusal(c.get("principal"));
    if (!allowed.ok) return problem(c, allowed.error);
    const page = await fleetIncidents(c.env, c.req.query());
    return page.ok ? c.json(page.value) : problem(c, page.error);
  });
