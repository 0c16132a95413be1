import { createHash } from "node:crypto";
import { expect, it } from "vitest";
import { hashBytes } from "../../src/storage/shard/hash-bytes";

/** The log's hashes as it stores them: each hex SHA-256 as its 32 bytes, in order; anything else refused, never stored as zeros. */
it("spells each hash as its 32 bytes, one after another, and refuses what is not a hash", () => {
  const a = createHash("sha256").update("a").digest();
  const b = createHash("sha256").update("b").digest();
  expect(Buffer.from(hashBytes(a.toString("hex"), b.toString("hex")))).toEqual(Buffer.concat([a, b]));
  expect(hashBytes()).toHaveLength(0);
  for (const wrong of ["", "0".repeat(63), "0".repeat(65), "G".repeat(64), a.toString("hex").toUpperCase()]) expect(() => hashBytes(wrong)).toThrow(/64 lowercase hex/);
});
