import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { describeThrown } from "../../core/thrown";
import { TRANSIENT_RETRY_AFTER_SECONDS, unavailableError } from "../../core/transient";
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
  // What the API answers 503 for (a storage call that failed, a shard this Worker does not bind),
  // the inspector does too, in the same words: a retry fixes it, nothing is wrong with the page.
  const unavailable = unavailableError(error);
  if (unavailable !== undefined) {
    logger.warn("unhandled", { surface: "inspector", outcome: "unavailable", code: describeThrown(error).code });
    const wait = unavailable.details?.["retryAfterSeconds"];
    c.header("Retry-After", String(typeof wait === "number" ? wait : TRANSIENT_RETRY_AFTER_SECONDS));
    return c.html(<ErrorPage status={503} code={unavailable.code} message={unavailable.message} signedIn={false} />, 503);
  }
  logger.error("unhandled", { surface: "inspector", outcome: "internal", code: describeThrown(error).code });
  return c.html(<ErrorPage status={500} code="internal" message="internal error; nothing was changed" signedIn={false} />, 500);
});
