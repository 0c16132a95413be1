import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../bench/worker/index";
import type { Usage } from "../../bench/worker/usage-meter";
import { countAlarm, countDeliveries, meteredEnv, USAGE_HEADER, usageSnapshot } from "../../bench/worker/usage-meter";
import { D1_METER_HEADER } from "../../bench/worker/d1-meter";
import { eventsPath, freshConversation, sourceEvent, tokenFor } from "./helpers";

/**
 * The benchmark's usage ledger (the cost table's source): with `USAGE_METER = "on"` every binding's
 * use is counted in this isolate — D1 statements and rows, R2 operations by billing class, queue
 * messages, calls into conversation objects — and a deployment without it gets its bindings back
 * untouched.
 */

const on = { ...env, D1_METER: "on", USAGE_METER: "on" } as unknown as Env;
const context = { waitUntil: () => undefined, passThroughOnException: () => undefined, props: {} } as unknown as ExecutionContext;

describe("the usage ledger", () => {
  it("leaves the bindings alone where the deployment does not meter", () => {
    expect(meteredEnv(env)).toBe(env);
    const before = usageSnapshot();
    countDeliveries(env, [{ attempts: 1 }]);
    countAlarm(env);
    expect(usageSnapshot()).toEqual(before);
  });

  it("counts D1 statements and rows, R2 operations by class and bytes put, queue messages and object requests", async () => {
    const metered = meteredEnv(on);
    const before = usageSnapshot();

    await metered.DB.prepare("SELECT 1 AS one").all();
    await metered.DB.batch([metered.DB.prepare("SELECT 1 AS one"), metered.DB.prepare("SELECT 2 AS two")]);
    const key = `usage-meter/${crypto.randomUUID()}`;
    await metered.DOCUMENTS.put(key, "hello, ledger");
    await metered.DOCUMENTS.get(key);
    await metered.DOCUMENTS.head(key);
    await metered.DOCUMENTS.delete(key);
    countDeliveries(on, [{ attempts: 1 }, { attempts: 3 }]);
    countAlarm(on);
    const conversation = freshConversation();
    await metered.CONVERSATION.get(metered.CONVERSATION.idFromName(conversation)).describeChain(conversation, "nobody");

    const after = usageSnapshot();
    expect(after.d1.roundTrips - before.d1.roundTrips).toBe(2);
    expect(after.d1.statements - before.d1.statements).toBe(3);
    expect(after.d1Bytes).toBeGreaterThan(0);
    expect(after.r2ClassA - before.r2ClassA).toBe(1);
    expect(after.r2ClassB - before.r2ClassB).toBe(2);
    expect(after.r2BytesPut - before.r2BytesPut).toBe("hello, ledger".length);
    expect(after.queueDelivered - before.queueDelivered).toBe(2);
    expect(after.queueRetried - before.queueRetried).toBe(1);
    expect(after.objectRequests - before.objectRequests).toBe(2);
  });

  it("reports the usage on a metered request through the Worker's entry, its own D1 work included", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json", [D1_METER_HEADER]: "on" };
    const append = (key: string, metered: boolean) =>
      worker.fetch(new Request(`http://foldline.test${eventsPath(conversation)}`, { method: "POST", headers: { ...headers, [D1_METER_HEADER]: metered ? "on" : "off" }, body: JSON.stringify(sourceEvent(key, key, `message ${key}`)) }), on, context);
    const before = usageSnapshot();
    const first = await append("1", true);
    expect(first.status).toBe(201);
    const second = await append("2", true);
    const [a, b] = [JSON.parse(first.headers.get(USAGE_HEADER) ?? "null"), JSON.parse(second.headers.get(USAGE_HEADER) ?? "null")] as [Usage, Usage];
    // The new token's row was read (the Worker's D1 statement) before the first snapshot was taken,
    // and each append is a call into the conversation's object.
    expect(a.d1.statements).toBeGreaterThan(before.d1.statements);
    expect(a.statements.some((s) => s.sql.includes("api_tokens"))).toBe(true);
    expect(a.objectRequests).toBeGreaterThan(before.objectRequests);
    expect(b.objectRequests).toBeGreaterThan(a.objectRequests);
    // A request that does not ask for the meter carries no usage.
    expect((await append("3", false)).headers.get(USAGE_HEADER)).toBeNull();
  });
});
