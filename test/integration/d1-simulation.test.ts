import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { simulatedD1, simulatedD1Env, simulatedStatementMs } from "../../bench/worker/d1-simulation";
import { shardsOf } from "../../src/storage/shards";

/**
 * The benchmark's D1 simulation: each database a single writer with a fixed service time per
 * statement, calls served first come first served, databases independent of each other. Its schedule
 * is read on a clock the test moves (the isolate's timers and Date, faked while the calls are
 * issued and their turns run out), with every real call the simulation lets through recorded, as it
 * starts, by a recording D1 at the binding edge: when each call was let through is then an exact
 * number of service times, however fast or loaded the machine is, and nothing is waited for.
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

/** `db` recording every call that reaches it, as it starts: the label bound to its (first) statement, and the clock's time. */
function recording(db: D1Database, log: string[], t0: () => number): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();
  const labels = new WeakMap<object, string>();
  const record = (label: string) => log.push(`${label}@${(Date.now() - t0()) / MS}`);
  const wrap = (statement: D1PreparedStatement, label: string): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, property) {
        if (property === "bind") return (...values: unknown[]) => wrap(target.bind(...values), String(values[0]));
        const value: unknown = Reflect.get(target, property, target);
        if ((property === "all" || property === "run" || property === "first" || property === "raw") && typeof value === "function") {
          return (...args: unknown[]) => {
            record(label);
            return Reflect.apply(value, target, args) as unknown;
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    real.set(proxy, statement);
    labels.set(proxy, label);
    return proxy;
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === "prepare") return (query: string) => wrap(target.prepare(query), "");
      if (property === "batch") {
        return (statements: D1PreparedStatement[]) => {
          record(labels.get(statements[0] ?? {}) ?? "");
          return target.batch(statements.map((s) => real.get(s) ?? s));
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A call of `statements` statements (one `first`, or a `batch`), labelled by its first bound value. */
function callOf(db: D1Database, label: string, statements: number): Promise<unknown> {
  return statements === 1
    ? db.prepare("SELECT ? AS v").bind(label).first()
    : db.batch(Array.from({ length: statements }, (_, i) => db.prepare("SELECT ? AS v").bind(i === 0 ? label : `${label}.${i}`)));
}

/**
 * Issues the calls `issue` makes at one instant of a faked clock, runs the clock until every turn is
 * over, and returns when each call was let through to D1, in service times from that instant. The
 * calls themselves then finish on real time (they are real D1 calls).
 */
async function schedule(issue: (wrap: (db: D1Database) => D1Database) => Promise<unknown>[]): Promise<string[]> {
  const log: string[] = [];
  let t0 = 0;
  vi.useFakeTimers({ toFake: ["Date", "setTimeout"] });
  let calls: Promise<unknown>[] = [];
  try {
    t0 = Date.now();
    calls = issue((db) => recording(db, log, () => t0));
    await vi.runAllTimersAsync();
  } finally {
    vi.useRealTimers();
  }
  await Promise.all(calls);
  return log;
}

describe("simulatedD1", () => {
  it("serves one database's calls one after another, each for its statements × the service time, in arrival order", async () => {
    const run = crypto.randomUUID();
    // Three single statements and a batch of three, arriving in this order: six statements on one writer.
    const log = await schedule((wrap) => {
      const db = simulatedD1(wrap(env.DB_SHARD_0), `sim-test-one-${run}`, MS);
      return [callOf(db, "a", 1), callOf(db, "b", 3), callOf(db, "c", 1), callOf(db, "d", 1)];
    });
    // Each is let through when its own statements are served, after everything that arrived before it.
    expect(log).toEqual(["a@1", "b@4", "c@5", "d@6"]);
  });

  it("shares one writer between wrappers of the same database", async () => {
    const run = crypto.randomUUID();
    // Two wrappers of one name (as the Worker and an object each wrap their env): one writer, so the
    // second's single statement waits for the first's batch of three.
    const log = await schedule((wrap) => [
      callOf(simulatedD1(wrap(env.DB_SHARD_1), `sim-test-shared-${run}`, MS), "batch", 3),
      callOf(simulatedD1(wrap(env.DB_SHARD_1), `sim-test-shared-${run}`, MS), "single", 1),
    ]);
    expect(log).toEqual(["batch@3", "single@4"]);
  });

  it("lets two databases proceed in parallel: neither waits for the other's turns", async () => {
    const run = crypto.randomUUID();
    // x's batch of three arrives first; y's single statement is served after one service time, not after x's three.
    const log = await schedule((wrap) => [
      callOf(simulatedD1(wrap(env.DB_SHARD_0), `sim-test-x-${run}`, MS), "batch", 3),
      callOf(simulatedD1(wrap(env.DB_SHARD_1), `sim-test-y-${run}`, MS), "single", 1),
    ]);
    expect(log).toEqual(["single@1", "batch@3"]);
  });
});
