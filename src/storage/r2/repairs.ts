import { z } from "zod";
import type { RepairTurn } from "../../core/compactor-input";
import { repairDocumentKey, repairDocumentPrefix } from "./keys";

/**
 * Repair turns in R2, beside the packet they belong to. When a compactor reply cannot be used,
 * the consumer records the reply and the reason under the run, one immutable object per failed
 * attempt (`storage/r2/keys`); the run's next attempt reads the newest and tells the
 * model what went wrong. The packet itself never changes, so every attempt still reads the same
 * packet bytes; the repair is the only thing a retry adds.
 */

const REPAIR_FORMAT = "foldline.compaction-repair@1";

const repairSchema = z.strictObject({
  format: z.literal(REPAIR_FORMAT),
  runId: z.string(),
  packetHash: z.string(),
  attempt: z.number().int().positive(),
  code: z.string(),
  problem: z.string(),
  reply: z.string(),
});


export interface RepairRecord {
  readonly runId: string;
  readonly packetHash: string;
  readonly attempt: number;
  readonly code: string;
  readonly problem: string;
  readonly reply: string;
}

export async function putRepair(bucket: R2Bucket, packetKey: string, record: RepairRecord): Promise<void> {
  await bucket.put(repairDocumentKey(packetKey, record.attempt), JSON.stringify({ format: REPAIR_FORMAT, ...record }), {
    httpMetadata: { contentType: "application/json; charset=utf-8" },
  });
}

/** The newest repair recorded for this run and packet before `attempt`, if any. */
export async function latestRepair(bucket: R2Bucket, packetKey: string, runId: string, packetHash: string, attempt: number): Promise<RepairTurn | undefined> {
  const listed = await bucket.list({ prefix: repairDocumentPrefix(packetKey) });
  const keys = listed.objects.map((o) => o.key).filter((key) => key < repairDocumentKey(packetKey, attempt)).sort();
  for (const key of keys.reverse()) {
    const object = await bucket.get(key);
    if (object === null) continue;
    let value: unknown;
    try {
      value = JSON.parse(await object.text());
    } catch {
      continue;
    }
    const parsed = repairSchema.safeParse(value);
    if (parsed.success && parsed.data.runId === runId && parsed.data.packetHash === packetHash) return { reply: parsed.data.reply, problem: parsed.data.problem };
  }
  return undefined;
}
