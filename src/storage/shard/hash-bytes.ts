import { bytesOfHex } from "../../core/hex";

/**
 * Hashes as the log stores them (migrations/shard/0031): each hex SHA-256 as its 32 bytes, one after
 * another, bound as one BLOB (a statement takes row `i`'s as `substr(?, 32 * i + 1, 32)`), so no
 * statement needs a function newer than SQLite's oldest in use to store or compare them.
 */
export function hashBytes(...hexes: readonly string[]): Uint8Array {
  const bytes = new Uint8Array(32 * hexes.length);
  for (const [i, hex] of hexes.entries()) {
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new TypeError("a hash is 64 lowercase hex digits");
    bytes.set(bytesOfHex(hex), 32 * i);
  }
  return bytes;
}
