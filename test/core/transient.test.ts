import { describe, expect, it } from "vitest";
import { ShardConfigurationError } from "../../src/core/placement";
import type { ThrownFailure } from "../../src/core/transient";
import { classifyThrown, CONFIGURATION_RETRY_AFTER_SECONDS, TRANSIENT_RETRY_AFTER_SECONDS, unavailableError } from "../../src/core/transient";

/** A thrown value as it reaches the Worker from a conversation's object over RPC: a plain Error with the fields it had. */
function overRpc(error: Error, fields: Record<string, unknown> = {}): Error {
  const copy = new Error(error.message);
  Object.assign(copy, { remote: true, ...fields });
  if (Object.hasOwn(error, "name")) Object.assign(copy, { name: error.name });
  for (const key of ["reason", "shard"]) if (Object.hasOwn(error, key)) Object.assign(copy, { [key]: (error as unknown as Record<string, unknown>)[key] });
  return copy;
}

const transient = (source: string): ThrownFailure => ({ kind: "transient", source } as ThrownFailure);
const DEFECT: ThrownFailure = { kind: "defect" };

describe("classifyThrown", () => {
  const table: readonly [string, unknown, ThrownFailure][] = [
    // D1's retryable errors, as its binding words them.
    ["D1 lost connection", new Error("D1_ERROR: Network connection lost."), transient("network")],
    // What local D1 (wrangler dev) throws while another process holds the database's file locked.
    ["D1 database busy", new Error("D1_ERROR: database is locked: SQLITE_BUSY"), transient("d1")],
    ["D1 behind a runtime internal error", new Error("D1_ERROR: Failed to get session commit token: internal error; reference = bk5sku8m2c681a42b8up8ck3"), transient("network")],
    ["D1 reset (storage)", new Error("D1_ERROR: Internal error in D1 DB storage caused object to be reset."), transient("d1")],
    ["D1 storage timeout", new Error("D1_ERROR: D1 DB storage operation exceeded timeout which caused object to be reset."), transient("d1")],
    ["D1 overloaded (queued too long)", new Error("D1_ERROR: D1 DB is overloaded. Requests queued for too long."), transient("d1")],
    ["D1 overloaded (too many)", new Error("D1_ERROR: D1 DB is overloaded. Too many requests queued."), transient("d1")],
    ["D1 code update", new Error("D1_ERROR: D1 DB reset because its code was updated."), transient("d1")],
    ["D1 routing", new Error("D1_ERROR: Cannot resolve D1 DB due to transient issue on remote node."), transient("d1")],
    ["D1 timed out", new Error("D1_ERROR: the operation timed out"), transient("d1")],
    ["D1 error as the cause", new Error("D1_ERROR", { cause: new Error("Network connection lost.") }), transient("network")],
    // Durable Objects: the platform's marks, and its wording.
    ["DO retryable", Object.assign(new Error("Durable Object reset because its code was updated."), { retryable: true }), transient("durable_object")],
    ["DO overloaded", Object.assign(new Error("Durable Object is overloaded. Too many requests queued."), { overloaded: true }), transient("durable_object")],
    ["DO storage timeout", new Error("Durable Object storage operation exceeded timeout which caused object to be reset."), transient("durable_object")],
    ["DO error over RPC", overRpc(new Error("D1_ERROR: Network connection lost.")), transient("network")],
    // R2 and Queues.
    ["R2 internal error", new Error("put: We encountered an internal error. Please try again. (10001)"), transient("r2")],
    ["R2 timed out", new Error("The operation timed out. (10058)"), transient("r2")],
    ["queue send", new Error("Queue send failed: internal error"), transient("queue")],
    ["runtime internal", new Error("internal error; reference = 0123abcd"), transient("network")],
    ["a string thrown", "D1_ERROR: Network connection lost.", transient("network")],
    // Defects: the same request fails the same way, or the code is wrong.
    ["constraint", new Error("D1_ERROR: UNIQUE constraint failed: events.conversation_id, events.seq: SQLITE_CONSTRAINT"), DEFECT],
    ["missing table", new Error("D1_ERROR: no such table: events: SQLITE_ERROR"), DEFECT],
    ["syntax", new Error('D1_EXEC_ERROR: Error in line 1: INSERTZ: sql error: near "INSERTZ": syntax error'), DEFECT],
    ["type error", new TypeError("Cannot read properties of undefined (reading 'seq')"), DEFECT],
    ["our own error", new Error("conversation object used before it was bound to its conversation"), DEFECT],
    ["retryable mark on a constraint", Object.assign(new Error("UNIQUE constraint failed"), { retryable: true }), DEFECT],
    ["not an error", { message: 42 }, DEFECT],
    ["null", null, DEFECT],
    ["undefined", undefined, DEFECT],
    ["a cause chain past its bound", new Error("a", { cause: new Error("b", { cause: new Error("c", { cause: new Error("Network connection lost.") }) }) }), DEFECT],
  ];
  for (const [name, error, expected] of table) {
    it(name, () => expect(classifyThrown(error)).toEqual(expected));
  }

  it("knows a shard misconfiguration by its name and fields, also over RPC", () => {
    const unbound = new ShardConfigurationError('conversation "api:x" lives on DB_SHARD_7, which this Worker does not bind', { reason: "shard_unbound", shard: "DB_SHARD_7" });
    const closed = new ShardConfigurationError("no open shard", { reason: "no_open_shard" });
    for (const error of [unbound, overRpc(unbound)]) {
      expect(classifyThrown(error)).toEqual({ kind: "shard_configuration", reason: "shard_unbound", shard: "DB_SHARD_7", message: unbound.message });
    }
    for (const error of [closed, overRpc(closed)]) expect(classifyThrown(error)).toEqual({ kind: "shard_configuration", reason: "no_open_shard", shard: undefined, message: "no open shard" });
    expect(classifyThrown(new ShardConfigurationError("conversations placed on DB_SHARD_9"))).toEqual({ kind: "shard_configuration", reason: undefined, shard: undefined, message: "conversations placed on DB_SHARD_9" });
  });
});

describe("unavailableError", () => {
  it("answers a transient failure unavailable, to be retried in a few seconds", () => {
    expect(unavailableError(new Error("D1_ERROR: Network connection lost."))).toMatchObject({
      code: "unavailable",
      details: { reason: "storage", source: "network", retryAfterSeconds: TRANSIENT_RETRY_AFTER_SECONDS },
    });
  });

  it("names the shard of a misconfiguration", () => {
    const error = unavailableError(new ShardConfigurationError('conversation "api:x" lives on DB_SHARD_7, which this Worker does not bind', { reason: "shard_unbound", shard: "DB_SHARD_7" }));
    expect(error).toMatchObject({ code: "unavailable", details: { reason: "shard_unbound", shard: "DB_SHARD_7", retryAfterSeconds: CONFIGURATION_RETRY_AFTER_SECONDS } });
    expect(error?.message).toContain("DB_SHARD_7");
    expect(unavailableError(new ShardConfigurationError("no open shard", { reason: "no_open_shard" }))?.details).toEqual({ reason: "no_open_shard", retryAfterSeconds: CONFIGURATION_RETRY_AFTER_SECONDS });
  });

  it("leaves a defect to the caller (a logged internal error)", () => {
    expect(unavailableError(new TypeError("x is not a function"))).toBeUndefined();
    expect(unavailableError(new Error("D1_ERROR: UNIQUE constraint failed: SQLITE_CONSTRAINT"))).toBeUndefined();
  });
});
