import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { maxBodyBytes } from "../config";
import { agents } from "./agents";
import { requireToken } from "./auth";
import { chainRoutes } from "./chain";
import { conversations } from "./conversations";
import { problem } from "./errors";
import { incidentRoutes } from "./incidents";
import { inspector } from "./inspector";
import { memory } from "./memory";
import type { healthSchema, serviceIndexSchema, Wire } from "../api/responses";
import { openApiRoutes } from "./openapi/routes";
import { telegram } from "./telegram";
import { meterD1Reads, meterObjectD1Reads } from "./d1-meter";
import type { AppEnv } from "./types";

export const app = new Hono<AppEnv>();

app.use("*", async (c, next) =>
  bodyLimit({
    maxSize: maxBodyBytes(c.env),
    onError: (ctx) => problem(ctx, { code: "payload_too_large", message: `bodies are limited to ${maxBodyBytes(c.env)} bytes` }),
  })(c, next),
);

app.get("/", (c) =>
  c.json({
    service: "foldline",
    about: "conversation compaction with provenance for persistent chat agents",
    endpoints: ["/healthz", "/v1/conversations/{conversation}/events", "/v1/conversations/{conversation}/turns", "/telegram/{bot}/webhook", "/openapi.json", "/reference", "/inspector"],
  } satisfies Wire<typeof serviceIndexSchema>),
);
app.get("/healthz", (c) => c.json({ ok: true } satisfies Wire<typeof healthSchema>));
app.route("/", openApiRoutes);

app.use("/v1/*", meterD1Reads);
app.use("/v1/*", requireToken);
app.use("/v1/conversations/:conversation/*", meterObjectD1Reads);
app.route("/v1/conversations", conversations);
app.route("/v1/conversations", chainRoutes);
app.route("/v1/conversations", incidentRoutes);
app.route("/v1/agents", memory);
app.route("/telegram", telegram);
app.route("/v1/agents", agents);
app.route("/inspector", inspector);

app.notFound((c) => problem(c, { code: "not_found", message: `no route for ${c.req.method} ${new URL(c.req.url).pathname}` }));
app.onError((error, c) => {
  console.error("unhandled error", error);
  return problem(c, { code: "internal", message: "internal error; nothing was acknowledged, retrying is safe" });
});
