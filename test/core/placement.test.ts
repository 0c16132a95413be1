import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { closedShards, pickShard, shardNames, shardNumber } from "../../src/core/placement";

describe("shard names", () => {
  it("reads the number of DB_SHARD_<n> and nothing else", () => {
    expect(shardNumber("DB_SHARD_0")).toBe(0);
    expect(shardNumber("DB_SHARD_12")).toBe(12);
    expect(shardNumber("DB_SHARD_9999")).toBe(9999);
    for (const name of ["DB", "DB_SHARD_", "DB_SHARD_01", "DB_SHARD_10000", "DB_SHARD_1x", "xDB_SHARD_1", "DB_SHARD_-1", "db_shard_1", "DB_SHARD_1 "]) expect(shardNumber(name), name).toBeUndefined();
  });

  it("orders shards by number, not by name, and drops every other binding", () => {
    expect(shardNames(["DB_SHARD_10", "DB", "DOCUMENTS", "DB_SHARD_2", "DB_SHARD_0", "DB_SHARD_1"])).toEqual(["DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2", "DB_SHARD_10"]);
    expect(shardNames(["DB", "CONVERSATION"])).toEqual([]);
  });

  it("reads SHARDS_CLOSED as a comma-separated list, spaces and empty items ignored", () => {
    expect([...closedShards("")]).toEqual([]);
    expect([...closedShards(" DB_SHARD_0 , DB_SHARD_3,,")]).toEqual(["DB_SHARD_0", "DB_SHARD_3"]);
  });
});

describe("pickShard", () => {
  const open = ["DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_2"];

  it("places nothing when no shard is open", () => {
    expect(pickShard("api:x", [])).toBeUndefined();
  });

  it("depends only on the id and the open set: the same answer every time, one of the open shards", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 80 }), fc.integer({ min: 1, max: 16 }), (id, n) => {
        const shards = Array.from({ length: n }, (_, i) => `DB_SHARD_${i}`);
        const picked = pickShard(id, shards);
        expect(shards).toContain(picked);
        expect(pickShard(id, [...shards])).toBe(picked);
      }),
    );
  });

  it("is pinned: known ids go where they went before (a new rule would place new conversations differently from every running isolate)", () => {
    // Placements: the first 48 bits of SHA-256(id), modulo the number of open shards.
    expect(["api:a", "api:b", "api:c", "api:e", "telegram:1:3"].map((id) => pickShard(id, open))).toEqual(["DB_SHARD_0", "DB_SHARD_0", "DB_SHARD_2", "DB_SHARD_1", "DB_SHARD_1"]);
    expect(["api:a", "api:b", "api:c", "api:e", "telegram:1:3"].map((id) => pickShard(id, open.slice(0, 2)))).toEqual(["DB_SHARD_1", "DB_SHARD_1", "DB_SHARD_0", "DB_SHARD_1", "DB_SHARD_1"]);
  });

  it("spreads ids evenly: each of 3 shards gets a third of 6,000 ids, within 10%", () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 6_000; i++) {
      const shard = pickShard(`telegram:7001:-100${i}`, open) ?? "";
      counts.set(shard, (counts.get(shard) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(open);
    for (const n of counts.values()) expect(Math.abs(n - 2_000)).toBeLessThan(200);
  });

  it("spreads over exactly the open set: a closed shard is never picked", () => {
    const some = ["DB_SHARD_0", "DB_SHARD_2"];
    for (let i = 0; i < 500; i++) expect(some).toContain(pickShard(`api:c${i}`, some));
  });
});
