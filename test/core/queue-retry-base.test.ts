import { describe, expect, it } from "vitest";
import { queueRetryBaseSeconds } from "../../src/config";

/** The queue's retry base is named for what it governs; a deployment that set the former name keeps its value. */
const env = (vars: Record<string, string>): Env => vars as unknown as Env;

describe("queueRetryBaseSeconds", () => {
  it("reads QUEUE_RETRY_BASE_SECONDS, and 5 when it is missing or not a whole number of seconds", () => {
    expect(queueRetryBaseSeconds(env({ QUEUE_RETRY_BASE_SECONDS: "7" }))).toBe(7);
    expect(queueRetryBaseSeconds(env({ QUEUE_RETRY_BASE_SECONDS: "0" }))).toBe(0);
    expect(queueRetryBaseSeconds(env({ QUEUE_RETRY_BASE_SECONDS: "-1" }))).toBe(5);
    expect(queueRetryBaseSeconds(env({ QUEUE_RETRY_BASE_SECONDS: "soon" }))).toBe(5);
    expect(queueRetryBaseSeconds(env({}))).toBe(5);
  });

  it("lets a deployment that still sets COMPACTION_RETRY_BASE_SECONDS keep its value over wrangler.toml's default", () => {
    expect(queueRetryBaseSeconds(env({ QUEUE_RETRY_BASE_SECONDS: "5", COMPACTION_RETRY_BASE_SECONDS: "0" }))).toBe(0);
    expect(queueRetryBaseSeconds(env({ COMPACTION_RETRY_BASE_SECONDS: "12" }))).toBe(12);
  });
});
