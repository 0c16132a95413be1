import { Hono } from "hono";
import { z } from "zod";
import { opsRefusal } from "../../api/ops";
import { validate } from "../../api/validation";
import { DEFAULT_WINDOW_HOURS, MAX_WINDOW_HOURS } from "../../core/fleet-series";
import { loadFleet } from "./fleet-model";
import { errorPage } from "./respond";
import type { InspectorEnv } from "./types";
import { FleetPage } from "./views/fleet-page";

const fleetQuery = z.object({
  /** How many hours the charts and the busiest list look back over, the current one included. */
  hours: z.coerce.number().int().min(1).max(MAX_WINDOW_HOURS).default(DEFAULT_WINDOW_HOURS),
});

/**
 * The fleet page, behind the login (`requireSession`) and, like `/v1/ops`, only for a token with
 * the `ops` scope (or `*`): it lists conversations of every tenant, so conversation scopes alone,
 * however wide, are refused with the API's `forbidden`.
 */
export const fleetRoutes = new Hono<InspectorEnv>().get("/fleet", async (c) => {
  const allowed = opsRefusal(c.get("principal"));
  if (!allowed.ok) return errorPage(c, allowed.error, true);
  const query = validate(fleetQuery, c.req.query());
  if (!query.ok) return errorPage(c, query.error, true);
  const model = await loadFleet(c.env, new Date(), query.value.hours);
  return c.html(<FleetPage model={model} />);
});
