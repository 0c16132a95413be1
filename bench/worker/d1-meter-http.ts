import { conversationStub } from "../../src/durable/stub";
import { mapDatabases } from "./databases";
import type { D1Reads } from "./d1-meter";
import { addReads, D1_METER_HEADER, D1_READS_HEADER, D1Meter, d1MeterEnabled, formatReads, meteredD1, NO_READS } from "./d1-meter";
import { USAGE_HEADER, usageMeterEnabled, usageSnapshot } from "./usage-meter";

/** What the object's share of a metered request is: armed on the conversation's object, taken after. */
interface ObjectMeter {
  armD1Meter(): Promise<void> | void;
  takeD1Reads(): Promise<D1Reads> | D1Reads;
}

const CONVERSATION_PATH = /^\/v1\/conversations\/([^/]+)\//;

/**
 * The D1 meter over one request to `/v1` or `/mcp`: with `D1_METER = "on"` and the request header
 * `x-foldline-d1-meter: on`, the answer carries `x-foldline-d1-reads` with what the Worker and the
 * conversation's object (for a `/v1/conversations/{c}/…` path) read from D1 to answer it, and, with
 * `USAGE_METER = "on"`, `x-foldline-usage`. Any other request passes through untouched.
 */
export async function meteredFetch(request: Request, env: Env, handle: (env: Env) => Promise<Response>): Promise<Response> {
  const url = new URL(request.url);
  if (!d1MeterEnabled(env) || request.headers.get(D1_METER_HEADER) !== "on" || !(url.pathname.startsWith("/v1/") || url.pathname === "/mcp")) return handle(env);
  const meter = new D1Meter();
  meter.arm();
  const conversation = CONVERSATION_PATH.exec(url.pathname)?.[1];
  const object = conversation === undefined ? undefined : (conversationStub(env, decodeURIComponent(conversation)) as unknown as ObjectMeter);
  await object?.armD1Meter();
  const answered = await handle(mapDatabases(env, (db, name) => meteredD1(db, meter, name)));
  const response = new Response(answered.body, answered);
  response.headers.set(D1_READS_HEADER, formatReads(addReads(meter.take(), object === undefined ? NO_READS : await object.takeD1Reads())));
  if (usageMeterEnabled(env)) response.headers.set(USAGE_HEADER, JSON.stringify(usageSnapshot()));
  return response;
}
