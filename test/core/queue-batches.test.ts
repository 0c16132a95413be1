import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MESSAGE_BYTES, SEND_BATCH_BYTES, SEND_BATCH_MESSAGES, messageBytes, sendBatches } from "../../src/core/queue-batches";

describe("sendBatches", () => {
  it("cuts at 100 messages, keeps order, and sends nothing for nothing", () => {
    const jobs = Array.from({ length: 251 }, (_, i) => ({ n: i }));
    const batches = sendBatches(jobs);
    expect(batches.map((b) => b.length)).toEqual([SEND_BATCH_MESSAGES, SEND_BATCH_MESSAGES, 51]);
    expect(batches.flat()).toEqual(jobs);
    expect(sendBatches([])).toEqual([]);
  });

  it("cuts before a batch would pass 256 KB, counting each message's envelope", () => {
    const big = { text: "x".repeat(60_000) };
    const batches = sendBatches([big, big, big, big, big]);
    expect(batches.map((b) => b.length)).toEqual([4, 1]);
    for (const batch of batches) expect(batch.reduce((sum, body) => sum + messageBytes(body) + 100, 0)).toBeLessThanOrEqual(SEND_BATCH_BYTES);
  });

  it("counts a body's UTF-8 bytes, not its characters", () => {
    expect(messageBytes({ t: "预算" })).toBe(JSON.stringify({ t: "" }).length + 6);
  });

  it("refuses a body no batch could hold", () => {
    expect(() => sendBatches([{ text: "x".repeat(MESSAGE_BYTES) }])).toThrow(/over the 131072-byte limit/);
  });

  it("never makes a batch over either limit, and loses or repeats no body", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 40_000 }), { maxLength: 300 }), (texts) => {
        const bodies = texts.map((text, i) => ({ i, text }));
        const batches = sendBatches(bodies);
        expect(batches.flat()).toEqual(bodies);
        for (const batch of batches) {
          expect(batch.length).toBeGreaterThan(0);
          expect(batch.length).toBeLessThanOrEqual(SEND_BATCH_MESSAGES);
          expect(batch.reduce((sum, body) => sum + messageBytes(body) + 100, 0)).toBeLessThanOrEqual(SEND_BATCH_BYTES);
        }
      }),
      { numRuns: 100, seed: 36 },
    );
  });
});
