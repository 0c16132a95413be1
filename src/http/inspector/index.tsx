import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { describeThrown } from "../../core/thrown";
import { logger } from "../../logger";
import { requireSession } from "./auth";
import { inspectorHeaders } from "./headers";
import { fleetRoutes } from "./fleet";
import { loginRoutes } from "./login";
import { pageRoutes } from "./pages";
import { rawJsonRoutes } from "./raw-json";
import type { InspectorEnv } from "./types";
import { ErrorPage } from "./views/error-page";

/**
 * The operator inspector, mounted at /inspector: server-rendered pages over the same operations
 * and the same token scopes as the API. Login and logout are open; every other path needs a
 * session (cookie) or a bearer header.
 */
export const inspector = new Hono<InspectorEnv>();

inspector.use("*", inspectorHeaders);
inspector.route("/", loginRoutes);
inspector.use("/", requireSession);
inspector.use("/conversations/*", requireSession);
inspector.use("/fleet", requireSession);
inspector.route("/", pageRoutes);
inspector.route("/", fleetRoutes);
inspector.route("/", rawJsonRoutes);

inspector.onError((error, c) => {
  // hono/csrf refuses a cross-site post by throwing a 403.
  if (error instanceof HTTPException && error.status === 403) {
    return c.html(<ErrorPage status={403} code="forbidden" message="this form can only be posted from the inspector's own pages" signedIn={false} />, 403);
  }
  if (error instanceof HTTPException) return error.getResponse();
  logger.error("unhandled", { surface: "inspector", outcome: "internal", code: describeThrown(error).code });
  return c.html(<ErrorPage status={500} code="internal" message="internal error; nothing was changed" signedIn={false} />, 500);
});
