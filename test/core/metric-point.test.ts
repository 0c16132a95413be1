import { describe, expect, it } from "vitest";
import { metricPoint } from "../../src/core/metric-point";

describe("metricPoint", () => {
  it("charts an append by its path, outcome, duration and events", () => {
    expect(metricPoint("append", { conversationId: "api:a:b", path: "fast", events: 1, written: 1, outcome: "ok", ms: 12 })).toEqual({
      indexes: ["api:a:b"],
      blobs: ["append", "", "ok", "", "fast", "api:a:b"],
      doubles: [12, 0, 0, 0, 0, 1],
    });
  });

  it("charts a job's queue wait at its start and its model time and tokens at its end, indexed by agent", () => {
    expect(metricPoint("job.start", { job: "compaction", conversationId: "api:c", agentId: "bot", runId: "run_1", attempts: 2, deadLetter: false, queueWaitMs: 340 })?.doubles).toEqual([0, 340, 0, 0, 0, 2]);
    const end = metricPoint("job.end", { job: "compaction", conversationId: "api:c", agentId: "bot", runId: "run_1", attempts: 1, deadLetter: false, outcome: "retry", code: "model_timeout", ms: 900, modelMs: 800, inputTokens: 1200, outputTokens: 300 });
    expect(end).toEqual({ indexes: ["bot"], blobs: ["job", "bot", "retry", "model_timeout", "compaction", "api:c"], doubles: [900, 0, 800, 1200, 300, 0] });
  });

  it("charts settlements, extractions, recalls, dispatches and incidents, and nothing else", () => {
    const base = { conversationId: "api:c", agentId: "bot" };
    expect(metricPoint("job.start", { job: "extract", ...base, runId: "r", attempts: 1, deadLetter: false, queueWaitMs: 9 })?.blobs).toEqual(["job_start", "bot", "started", "", "extract", "api:c"]);
    expect(metricPoint("settlement", { ...base, runId: "r", outcome: "settled", ms: 5 })?.blobs).toEqual(["settlement", "bot", "settled", "", "", "api:c"]);
    expect(metricPoint("extraction", { ...base, runId: "r", outcome: "extracted", facts: 4, inputTokens: 10, outputTokens: 2, ms: 7 })).toEqual({
      indexes: ["bot"],
      blobs: ["extraction", "bot", "extracted", "", "", "api:c"],
      doubles: [7, 0, 0, 10, 2, 4],
    });
    expect(metricPoint("recall", { ...base, hits: 9, envelopeChars: 3900, ms: 3 })).toEqual({ indexes: ["bot"], blobs: ["recall", "bot", "ok", "", "", "api:c"], doubles: [3, 0, 0, 0, 0, 9] });
    expect(metricPoint("reply.dispatch", { ...base, outcome: "rate_limited", parts: 2, ms: 40 })?.blobs.slice(0, 3)).toEqual(["dispatch", "bot", "rate_limited"]);
    expect(metricPoint("incident", { ...base, agentId: null, runId: null, kind: "wake_failure", code: "catch_up" })).toEqual({
      indexes: ["api:c"],
      blobs: ["incident", "", "raised", "catch_up", "wake_failure", "api:c"],
      doubles: [0, 0, 0, 0, 0, 1],
    });
    expect(metricPoint("request.refused", { code: "not_found", status: 404 })).toBeUndefined();
    expect(metricPoint("preflight", { ...base, seq: 3, action: "skip", activeChars: 10 })).toBeUndefined();
  });

  it("writes an absent or empty string as empty, not as redacted", () => {
    expect(metricPoint("append", { conversationId: "", path: "batch", events: 3, written: 3, outcome: "ok", code: "", ms: 1 })?.blobs).toEqual(["append", "", "ok", "", "batch", ""]);
  });

  it("writes no string that is not an id or a code", () => {
    const point = metricPoint("append", { conversationId: "hello team, the vault code is 4471", path: "fast", events: 1, written: 1, outcome: "ok", code: "a b", ms: 1 });
    expect(point?.blobs).toEqual(["append", "", "ok", "redacted", "fast", "redacted"]);
    expect(point?.indexes).toEqual(["redacted"]);
  });
});
