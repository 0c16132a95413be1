import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { classifyThrown } from "../../src/core/transient";
import { appendToConversation, conversationStub } from "../../src/durable/stub";
import { logRows } from "../integration/helpers";
import { FaultPlan, InjectedFault, PLATFORM_MESSAGES, faultyD1, faultyEnv, faultyR2 } from "./faulty-bindings";

/**
 * The injection itself, against the real local bindings: a matrix whose faults did not land where
 * it says, or did something else than it says, would report nothing true.
 */

/** A table of this test's own (storage is shared by the file's tests). */
async function probeTable(): Promise<{ table: string; rows: () => Promise<number> }> {
  const table = `faults_probe_${crypto.randomUUID().replaceAll("-", "")}`;
  await env.DB.prepare(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, note TEXT NOT NULL)`).run();
  return { table, rows: async () => (await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table}`).first<{ n: number }>())?.n ?? 0 };
}

describe("FaultPlan over D1", () => {
  it("fails exactly the k-th call while armed, once, and counts nothing while disarmed", async () => {
    const { table, rows } = await probeTable();
    const plan = new FaultPlan({ k: 2, kind: "throw" });
    const db = faultyD1(env.DB, "DB", plan, "worker");
    await db.prepare(`SELECT 1`).first(); // disarmed: not counted
    plan.arm();
    await db.prepare(`SELECT COUNT(*) FROM ${table}`).first();
    await expect(db.prepare(`INSERT INTO ${table} (note) VALUES (?)`).bind("a").run()).rejects.toBeInstanceOf(InjectedFault);
    await db.prepare(`INSERT INTO ${table} (note) VALUES (?)`).bind("b").run();
    expect(plan.trace.map((c) => [c.index, c.method, c.write])).toEqual([
      [1, "first", false],
      [2, "run", true],
      [3, "run", true],
    ]);
    expect(plan.fired?.index).toBe(2);
    expect(await rows()).toBe(1); // the thrown call did no work
  });

  it("a lost response commits, then throws; on a read it does not fire", async () => {
    const { table, rows } = await probeTable();
    const onRead = new FaultPlan({ k: 1, kind: "lost_response" });
    onRead.arm();
    await faultyD1(env.DB, "DB", onRead, "worker").prepare(`SELECT COUNT(*) FROM ${table}`).all();
    expect(onRead.fired).toBeUndefined();

    const plan = new FaultPlan({ k: 1, kind: "lost_response" });
    plan.arm();
    const db = faultyD1(env.DB, "DB", plan, "object");
    await expect(db.batch([db.prepare(`INSERT INTO ${table} (note) VALUES ('x')`), db.prepare(`SELECT 1`)])).rejects.toThrow(/Network connection lost/);
    expect(await rows()).toBe(1);
    expect(plan.fired).toMatchObject({ side: "object", method: "batch", write: true });
  });

  it("a hang is the deadline's own error at once, with no work done", async () => {
    const { table, rows } = await probeTable();
    const plan = new FaultPlan({ k: 1, kind: "hang" });
    plan.arm();
    await expect(faultyD1(env.DB, "DB", plan, "worker").prepare(`INSERT INTO ${table} (note) VALUES ('h')`).run()).rejects.toThrow(/exceeded timeout/);
    expect(await rows()).toBe(0);
  });

  // If the product did not read an injected fault as transient, the matrix would report the
  // wording of the injection, not the product's behaviour.
  it("the product's classifier (core/transient) reads every injected fault as transient", () => {
    const call = { index: 1, side: "worker", binding: "DB", method: "run", write: true, detail: "" } as const;
    const messages = Object.values(PLATFORM_MESSAGES).flatMap((family) => Object.values(family));
    expect(messages).toHaveLength(8);
    for (const message of messages) expect({ message, kind: classifyThrown(new InjectedFault(message, call, "throw")).kind }).toEqual({ message, kind: "transient" });
  });
});

describe("FaultPlan over R2", () => {
  it("counts reads and writes, and a lost put is stored", async () => {
    const key = `faults-probe/${crypto.randomUUID()}`;
    const plan = new FaultPlan({ k: 2, kind: "lost_response" });
    plan.arm();
    const bucket = faultyR2(env.DOCUMENTS, "DOCUMENTS", plan, "worker");
    expect(await bucket.head(key)).toBeNull();
    await expect(bucket.put(key, "kept")).rejects.toThrow(/10001/);
    expect(await (await env.DOCUMENTS.get(key))?.text()).toBe("kept");
    expect(plan.trace.map((c) => `${c.method}:${c.write}`)).toEqual(["head:false", "put:true"]);
  });
});

describe("FaultPlan over a conversation's object (the Worker's calls into it)", () => {
  const source = (key: string) => ({ kind: "source", idempotencyKey: key, sensitive: false, body: { messageId: key, author: { id: "u1" }, text: `note ${key}` } }) as const;

  it("a thrown call never reaches the object; a lost answer comes after the object did the work; a read's lost answer does not fire", async () => {
    const conversationId = `api:faults-object-${crypto.randomUUID()}`;
    const thrown = new FaultPlan({ k: 1, kind: "throw" });
    thrown.arm();
    await expect(appendToConversation(faultyEnv(env, thrown, "worker"), { conversationId, events: [source("a")] })).rejects.toThrow(/Durable Object reset/);
    expect(await logRows(conversationId)).toEqual([]);

    const lost = new FaultPlan({ k: 1, kind: "lost_response" });
    lost.arm();
    await expect(appendToConversation(faultyEnv(env, lost, "worker"), { conversationId, events: [source("b")] })).rejects.toThrow(/Durable Object reset/);
    expect((await logRows(conversationId)).map((r) => r.idempotency_key)).toEqual(["b"]);
    expect(lost.fired).toMatchObject({ binding: "CONVERSATION", method: "append", write: true, detail: "" });

    const read = new FaultPlan({ k: 1, kind: "lost_response" });
    read.arm();
    const stub = conversationStub(faultyEnv(env, read, "worker"), conversationId);
    expect(await stub.describeChain(conversationId, "nobody")).toBeUndefined();
    expect(read.fired).toBeUndefined();
    expect(read.trace.map((c) => `${c.binding}.${c.method}:${c.write}`)).toEqual(["CONVERSATION.describeChain:false"]);
  });

  it("the object's own env never faults its calls into objects (only the Worker's side does)", () => {
    const plan = new FaultPlan({ k: 1, kind: "throw" });
    expect(faultyEnv(env, plan, "object").CONVERSATION).toBe(env.CONVERSATION);
    expect(faultyEnv(env, plan, "worker").CONVERSATION).not.toBe(env.CONVERSATION);
  });
});
