import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { alreadyExists, deployPlan, deployResources, withDatabaseIds } from "../../scripts/lib/deploy-plan.mjs";

/** `npm run deploy`'s local half: what it reads of wrangler.toml, what it plans, and what it writes back. */

const toml = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");

describe("deployResources", () => {
  it("reads every D1 database, the bucket and the queues (dead letter too) from the repository's wrangler.toml", () => {
    const found = deployResources(toml);
    expect(found.d1.map((d) => [d.binding, d.name])).toEqual([
      ["DB", "foldline"],
      ["DB_SHARD_0", "foldline-shard-0"],
      ["DB_SHARD_1", "foldline-shard-1"],
    ]);
    expect(found.buckets).toEqual(["foldline-documents"]);
    expect(found.queues).toEqual(["foldline-compaction", "foldline-compaction-dlq", "foldline-replies", "foldline-replies-dlq"]);
  });
});

describe("deployPlan", () => {
  const resources = deployResources(toml);

  it("on an empty account creates every database, sets every id and ensures the bucket and queues", () => {
    expect(deployPlan(resources, [])).toEqual([
      { kind: "create_d1", name: "foldline" },
      { kind: "create_d1", name: "foldline-shard-0" },
      { kind: "create_d1", name: "foldline-shard-1" },
      { kind: "set_id", binding: "DB", name: "foldline" },
      { kind: "set_id", binding: "DB_SHARD_0", name: "foldline-shard-0" },
      { kind: "set_id", binding: "DB_SHARD_1", name: "foldline-shard-1" },
      { kind: "ensure_bucket", name: "foldline-documents" },
      { kind: "ensure_queue", name: "foldline-compaction" },
      { kind: "ensure_queue", name: "foldline-compaction-dlq" },
      { kind: "ensure_queue", name: "foldline-replies" },
      { kind: "ensure_queue", name: "foldline-replies-dlq" },
    ]);
  });

  it("run again once deployed, creates nothing and writes no id; a shard added since is created alone", () => {
    const account = [
      { name: "foldline", uuid: "11111111-1111-1111-1111-111111111111" },
      { name: "foldline-shard-0", uuid: "22222222-2222-2222-2222-222222222222" },
      { name: "foldline-shard-1", uuid: "33333333-3333-3333-3333-333333333333" },
    ];
    const deployed = withDatabaseIds(toml, new Map([["DB", account[0]?.uuid ?? ""], ["DB_SHARD_0", account[1]?.uuid ?? ""], ["DB_SHARD_1", account[2]?.uuid ?? ""]]));
    expect(deployPlan(deployResources(deployed), account).map((s) => s.kind)).toEqual(["ensure_bucket", "ensure_queue", "ensure_queue", "ensure_queue", "ensure_queue"]);
    const grown = `${deployed}\n[[d1_databases]]\nbinding = "DB_SHARD_2"\ndatabase_name = "foldline-shard-2"\ndatabase_id = "00000000-0000-0000-0000-000000000012"\nmigrations_dir = "migrations/shard"\n`;
    expect(deployPlan(deployResources(grown), account).filter((s) => s.kind === "create_d1" || s.kind === "set_id")).toEqual([
      { kind: "create_d1", name: "foldline-shard-2" },
      { kind: "set_id", binding: "DB_SHARD_2", name: "foldline-shard-2" },
    ]);
  });
});

describe("withDatabaseIds", () => {
  it("writes each binding's id and changes nothing else", () => {
    const written = withDatabaseIds(toml, new Map([["DB_SHARD_1", "33333333-3333-3333-3333-333333333333"]]));
    expect(deployResources(written).d1.map((d) => d.id)).toEqual(["00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000010", "33333333-3333-3333-3333-333333333333"]);
    const changed = written.split("\n").filter((line, i) => line !== toml.split("\n")[i]);
    expect(changed).toEqual(['database_id = "33333333-3333-3333-3333-333333333333"']);
  });
});

describe("alreadyExists", () => {
  it.each([
    ["The bucket you tried to create already exists, and you own it. [code: 10004]", true],
    ["A queue with name foldline-compaction already exists [code: 11009]", true],
    ["Authentication error [code: 10000]", false],
  ])("%s → %s", (output, expected) => {
    expect(alreadyExists(output)).toBe(expected);
  });
});
