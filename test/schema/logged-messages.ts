import type { DatabaseSync } from "node:sqlite";
import { expect } from "vitest";
import { eventHash, eventInputSchema } from "../../src/core/events";
import { insertEvents } from "../../src/storage/shard/log-writer";
import { d1Over } from "./sqlite-d1";

/** `n` messages of `conversation` in its log, through the log's own writer: their sequences and hashes, for sources to cite. */
export async function loggedMessages(db: DatabaseSync, conversation: string, n: number, at: string): Promise<{ seq: number; hash: string }[]> {
  const planned = [...Array(n).keys()].map((i) => {
    const input = eventInputSchema.parse({ kind: "source", idempotencyKey: `tg:update:${i}`, body: { messageId: String(7_000 + i), author: { id: "100000001", name: "Member 1" }, text: `message ${i}` } });
    return { input, hash: eventHash(conversation, input), seq: i + 1 };
  });
  expect((await insertEvents(d1Over(db), conversation, planned, at)).applied.every(Boolean)).toBe(true);
  return planned.map(({ seq, hash }) => ({ seq, hash }));
}
