import { timingSafeEqual } from "node:crypto";
import { createHash } from "node:crypto";

/**
 * Compares two secrets in time independent of where they differ. Both sides are hashed first so
 * the comparison also does not reveal the expected secret's length.
 */
export function secretsEqual(presented: string, expected: string): boolean {
  const a = createHash("sha256").update(presented, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b);
}
