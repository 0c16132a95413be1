import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import instrumented from "../../bench/worker/index";
import product from "../../src/index";
import { D1_METER_HEADER, D1_READS_HEADER, D1Meter, meteredD1, NO_READS } from "../../bench/worker/d1-meter";
import { shardOf } from "../support/shards";
import { call, eventsPath, freshConversation, sourceEvent, tokenFor } from "./helpers";

/**
 * The benchmark's D1 meter: a metered database answers exactly what the real one answers and adds
 * up what each statement read while armed; the instrumented Worker (bench/worker) reports it on
 * `/v1` only where the deployment turned it on and the request asked. The product's own Worker
 * (src/index.ts) never does.
 */

const parseReads = (header: string | null): Record<string, number> =>
  Object.fromEntries((header ?? "").split("; ").map((part) => {
    const [key = "", value = ""] = part.split("=");
    return [key, Number(value)];
  }));

describe("meteredD1", () => {
  it("answers as D1 does and counts statements, rows read and bytes returned while armed", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    for (let i = 0; i < 3; i++) {
      const res = await call("POST", eventsPath(conversation), { token, body: sourceEvent(`k${i}`, `${i}`, `message ${i}`) });
      expect(res.status).toBe(201);
    }
    const shard = await shardOf(conversation);
    const meter = new D1Meter();
    const db = meteredD1(shard, meter);
    const select = "SELECT seq, idempotency_key FROM log WHERE conversation_key = (SELECT id FROM conversation_keys WHERE conversation_id = ?) ORDER BY seq";

    // Unarmed: answers, counts nothing.
    expect((await db.prepare(select).bind(conversation).all()).results).toHaveLength(3);
    expect(meter.take()).toEqual(NO_READS);

    meter.arm();
    const all = await db.prepare(select).bind(conversation).all<{ seq: number; idempotency_key: string }>();
    const first = await db.prepare(select).bind(conversation).first<{ seq: number }>();
    const missing = await db.prepare(select).bind("api:nobody-here").first();
    const batch = await db.batch([db.prepare(select).bind(conversation), shard.prepare("SELECT 1 AS one")]);
    const reads = meter.take();

    expect(all.results).toEqual((await shard.prepare(select).bind(conversation).all()).results);
    expect(first).toEqual(await shard.prepare(select).bind(conversation).first());
    expect(missing).toBeNull();
    expect(batch.map((r) => r.results)).toEqual([all.results, [{ one: 1 }]]);
    expect(reads.statements).toBe(5);
    // all, first, first, and one batch of two: four calls that waited on D1.
    expect(reads.roundTrips).toBe(4);
    expect(reads.rowsWritten).toBe(0);
    expect(reads.rowsRead).toBeGreaterThanOrEqual(3 * 3);
    const returned = JSON.stringify(all.results).length;
    expect(reads.bytesRead).toBe(returned * 3 + JSON.stringify([{ one: 1 }]).length);
    // Writes are counted by the rows they wrote, a batch as one round trip.
    await shard.exec("CREATE TABLE IF NOT EXISTS meter_probe (id INTEGER PRIMARY KEY, v TEXT)");
    meter.arm();
    await db.prepare("INSERT INTO meter_probe (v) VALUES (?), (?)").bind("a", "b").run();
    await db.batch([db.prepare("INSERT INTO meter_probe (v) VALUES (?)").bind("c"), db.prepare("DELETE FROM meter_probe WHERE v = ?").bind("a")]);
    const written = meter.take();
    expect(written.roundTrips).toBe(2);
    expect(written.statements).toBe(3);
    expect(written.rowsWritten).toBe(4);
    // Taken: disarmed and reset.
    await db.prepare(select).bind(conversation).all();
    expect(meter.take()).toEqual(NO_READS);
  });
});

describe("the /v1 D1 meter", () => {
  it("reports the reads of a request that asks, only where D1_METER is on", async () => {
    const conversation = freshConversation();
    const token = await tokenFor(conversation);
    const request = (headers: Record<string, string>) => new Request(`http://foldline.test${eventsPath(conversation)}?limit=10`, { headers: { authorization: `Bearer ${token}`, ...headers } });
    const on = { ...env, D1_METER: "on" } as unknown as Env;
    const off = { ...env, D1_METER: "off" } as unknown as Env;
    const context = { waitUntil: () => undefined, passThroughOnException: () => undefined, props: {} } as unknown as ExecutionContext;
    type Incoming = Parameters<typeof instrumented.fetch>[0];
    const app = { fetch: (req: Request, e: Env) => instrumented.fetch(req as Incoming, e, context) };

    const metered = await app.fetch(request({ [D1_METER_HEADER]: "on" }), on);
    expect(metered.status).toBe(200);
    const reads = parseReads(metered.headers.get(D1_READS_HEADER));
    // The token's row and the page of the log, at least.
    expect(reads["statements"]).toBeGreaterThanOrEqual(2);
    expect(reads["round-trips"]).toBeGreaterThanOrEqual(2);
    expect(reads["rows-written"]).toBe(0);
    expect(reads["rows-read"]).toBeGreaterThanOrEqual(1);
    expect(reads["bytes-read"]).toBeGreaterThan(0);

    expect((await app.fetch(request({}), on)).headers.get(D1_READS_HEADER)).toBeNull();
    expect((await app.fetch(request({ [D1_METER_HEADER]: "on" }), off)).headers.get(D1_READS_HEADER)).toBeNull();
    // A request that is refused still answers as it would have, metered or not.
    const refused = await app.fetch(new Request(`http://foldline.test${eventsPath(conversation)}`, { headers: { [D1_METER_HEADER]: "on" } }), on);
    expect(refused.status).toBe(401);
    // The product itself carries no meter: the same request, asked the same way, reads the same and reports nothing.
    const unmetered = await product.fetch(request({ [D1_METER_HEADER]: "on" }) as Incoming, on, context);
    expect(unmetered.status).toBe(200);
    expect(unmetered.headers.get(D1_READS_HEADER)).toBeNull();
  });
});
