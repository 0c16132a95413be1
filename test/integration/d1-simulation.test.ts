import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { simulatedD1, simulatedD1Env, simulatedStatementMs } from "../../src/storage/d1-simulation";
import { shardsOf } from "../../src/storage/shards";

/**
 * The benchmark's D1 simulation: each database a single writer with a fixed service time per
 * statement, calls served first come first served, databases independent of each other. The lower
 * bounds are exact (a call never ends before its turn); the upper bounds only tell parallel from
 * serial, with a wide margin for a busy machine.
 */

const MS = 40;
const envWith = (setting: string): Env => ({ ...env, D1_SIMULATED_STATEMENT_MS: setting }) as unknown as Env;

describe("simulatedD1Env", () => {
  it("leaves every binding untouched when off, and refuses a setting that is not a number of milliseconds", () => {
    const off = envWith("0");
    expect(simulatedD1Env(off)).toBe(off);
    expect(simulatedStatementMs(envWith("1.5"))).toBe(1.5);
    for (const bad of ["", "fast", "-1", "Infinity"]) expect(() => simulatedStatementMs(envWith(bad))).toThrow(/D1_SIMULATED_STATEMENT_MS/);
  });

  it("wraps the control database and every shard, and each answers as D1 does", async () => {
    const simulated = simulatedD1Env(envWith("1"));
    expect(simulated.DB).not.toBe(env.DB);
    const shards = shardsOf(simulated);
    expect(shards.map((s) => s.name)).toEqual(shardsOf(env).map((s) => s.name));
    for (const { db } of [{ db: simulated.DB }, ...shards]) {
      expect(await db.prepare("SELECT ? AS v").bind(7).first()).toEqual({ v: 7 });
      expect(await db.prepare("SELECT ? AS v").bind(8).first("v")).toBe(8);
      expect((await db.prepare("SELECT 1 AS one").all()).results).toEqual([{ one: 1 }]);
      expect(await db.prepare("SELECT 1 AS one, 2 AS two").raw()).toEqual([[1, 2]]);
      const batch = await db.batch([db.prepare("SELECT ? AS v").bind("a"), db.prepare("SELECT ? AS v").bind("b")]);
      expect(batch.map((r) => r.results)).toEqual([[{ v: "a" }], [{ v: "b" }]]);
    }
  });
});

describe("simulatedD1", () => {
  it("serves one database's calls one after another, each for its statements × the service time, in arrival order", async () => {
    const db = simulatedD1(env.DB_SHARD_0, "sim-test-one", MS);
    const order: string[] = [];
    const started = Date.now();
    const call = (label: string, statements: number) => {
      const done =
        statements === 1
          ? db.prepare("SELECT ? AS v").bind(label).first()
          : db.batch(Array.from({ length: statements }, (_, i) => db.prepare("SELECT ? AS v").bind(`${label}${i}`)));
      return done.then(() => {
        order.push(label);
        return Date.now() - started;
      });
    };
    // Three single statements and a batch of three: six statements on one writer.
    const ends = await Promise.all([call("a", 1), call("b", 3), call("c", 1), call("d", 1)]);
    expect(order).toEqual(["a", "b", "c", "d"]);
    expect(ends[0]).toBeGreaterThanOrEqual(MS);
    expect(ends[1]).toBeGreaterThanOrEqual(4 * MS);
    expect(ends[3]).toBeGreaterThanOrEqual(6 * MS);
  });

  it("shares one writer between wrappers of the same database, and lets two databases proceed in parallel", async () => {
    const k = 5;
    const calls = (db: D1Database) => Array.from({ length: k }, (_, i) => db.prepare("SELECT ? AS v").bind(i).first());

    // Two wrappers of one name (as the Worker and an object each wrap their env): one writer.
    let started = Date.now();
    await Promise.all([...calls(simulatedD1(env.DB_SHARD_1, "sim-test-shared", MS)), ...calls(simulatedD1(env.DB_SHARD_1, "sim-test-shared", MS))]);
    const shared = Date.now() - started;
    expect(shared).toBeGreaterThanOrEqual(2 * k * MS);

    // Two databases: each has its own writer, so both finish in about the time of one.
    started = Date.now();
    await Promise.all([...calls(simulatedD1(env.DB_SHARD_0, "sim-test-x", MS)), ...calls(simulatedD1(env.DB_SHARD_1, "sim-test-y", MS))]);
    const parallel = Date.now() - started;
    expect(parallel).toBeGreaterThanOrEqual(k * MS);
    expect(parallel).toBeLessThan(2 * k * MS * 0.8);
  });
});
