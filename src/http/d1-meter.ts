import { createMiddleware } from "hono/factory";
import { conversationStub } from "../durable/stub";
import type { D1Reads } from "../storage/d1-meter";
import { addReads, D1_METER_HEADER, D1_READS_HEADER, D1Meter, d1MeterEnabled, formatReads, meteredD1, NO_READS } from "../storage/d1-meter";
import { mapDatabases } from "../storage/shards";
import { USAGE_HEADER, usageMeterEnabled, usageSnapshot } from "../storage/usage-meter";
import type { AppEnv } from "./types";

/**
 * The benchmark's D1 meter (storage/d1-meter) on `/v1`: with `D1_METER = "on"` and the request
 * header `x-foldline-d1-meter: on`, the response carries `x-foldline-d1-reads` with what the
 * Worker and the conversation's object read from D1 to answer it. Any other request passes
 * through untouched.
 */
export const meterD1Reads = createMiddleware<AppEnv>(async (c, next) => {
  if (!d1MeterEnabled(c.env) || c.req.header(D1_METER_HEADER) !== "on") return next();
  const meter = new D1Meter();
  meter.arm();
  c.env = mapDatabases(c.env, (db, name) => meteredD1(db, meter, name));
  c.set("objectD1Reads", async () => NO_READS);
  await next();
  c.res.headers.set(D1_READS_HEADER, formatReads(addReads(meter.take(), await c.get("objectD1Reads")())));
  if (usageMeterEnabled(c.env)) c.res.headers.set(USAGE_HEADER, JSON.stringify(usageSnapshot()));
});

/**
 * The conversation's object's share, armed once the token is known to be valid (so a metered
 * request never wakes an object for an unauthenticated caller). It counts nothing of the
 * conversation's but how much was read.
 */
export const meterObjectD1Reads = createMiddleware<AppEnv>(async (c, next) => {
  const conversation = c.req.param("conversation");
  if (!d1MeterEnabled(c.env) || c.req.header(D1_METER_HEADER) !== "on" || conversation === undefined) return next();
  const stub = conversationStub(c.env, conversation);
  await stub.armD1Meter();
  c.set("objectD1Reads", (): Promise<D1Reads> => stub.takeD1Reads());
  await next();
});
