import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { LogEvents } from "../../src/core/log-line";
import { logLine } from "../../src/core/log-line";
import { describeThrown } from "../../src/core/thrown";

const parsed = (line: string): Record<string, unknown> => JSON.parse(line) as Record<string, unknown>;

describe("logLine", () => {
  it("is one JSON object on one line: the event, its level, then its fields", () => {
    const line = logLine("info", "append", { conversationId: "api:team-7", path: "fast", events: 1, written: 1, outcome: "ok", lastSeq: 12, ms: 4 });
    expect(line).not.toContain("\n");
    expect(Object.keys(parsed(line)).slice(0, 2)).toEqual(["event", "level"]);
    expect(parsed(line)).toEqual({ event: "append", level: "info", conversationId: "api:team-7", path: "fast", events: 1, written: 1, outcome: "ok", lastSeq: 12, ms: 4 });
  });

  it("leaves out fields that are undefined and keeps ids that are null", () => {
    const line = parsed(logLine("warn", "incident", { conversationId: "telegram:7001:-100200", agentId: null, runId: null, kind: "wake_failure", code: "catch_up", count: undefined }));
    expect(line).toEqual({ event: "incident", level: "warn", conversationId: "telegram:7001:-100200", agentId: null, runId: null, kind: "wake_failure", code: "catch_up" });
  });

  it("writes a thrown value as its code, never its message", () => {
    const code = describeThrown(new TypeError("the user said: meet me at 5 behind the station")).code;
    expect(parsed(logLine("error", "unhandled", { surface: "http", outcome: "internal", code }))).toEqual({ event: "unhandled", level: "error", surface: "http", outcome: "internal", code: "uncaught_typeerror" });
  });

  it("redacts text that reached a string field: anything that is not an id or a code", () => {
    for (const text of ["meet me at 5", "a".repeat(257), "", "naïve", "line\nbreak", '{"event":"forged"}']) {
      expect(parsed(logLine("warn", "settlement", { conversationId: "api:c", agentId: "a", runId: "cmp_1", outcome: "refused", code: text, ms: 0 }))["code"]).toBe("redacted");
    }
  });

  it("writes booleans as they are, and redacts any other value forced past the types", () => {
    expect(parsed(logLine("info", "job.dropped", { deadLetter: false }))).toEqual({ event: "job.dropped", level: "info", deadLetter: false });
    expect(parsed(logLine("info", "job.dropped", { deadLetter: true }))).toEqual({ event: "job.dropped", level: "info", deadLetter: true });
    for (const forced of [{ text: "meet me at 5" }, ["meet me at 5"], 7n]) {
      const fields = { deadLetter: forced } as unknown as LogEvents["job.dropped"];
      expect(parsed(logLine("info", "job.dropped", fields))).toEqual({ event: "job.dropped", level: "info", deadLetter: "redacted" });
    }
  });

  it("writes no field outside the whitelist, even one forced past the types", () => {
    const forced = { conversationId: "api:c", updateId: 7, message: "hello there", event: "forged", level: "debug" } as unknown as LogEvents["webhook.conflict"];
    expect(parsed(logLine("warn", "webhook.conflict", forced))).toEqual({ event: "webhook.conflict", level: "warn", conversationId: "api:c", updateId: 7 });
  });

  it("always yields one parseable line whose strings are ids or codes", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.integer(), (agentId, code, seq) => {
        const line = logLine("debug", "plan", { conversationId: "api:c", agentId, runId: "cmp_x", seq, outcome: "failed", code });
        expect(line.split("\n")).toHaveLength(1);
        const fields = parsed(line);
        for (const value of Object.values(fields)) if (typeof value === "string") expect(value).toMatch(/^[A-Za-z0-9._:-]{1,256}$/);
      }),
    );
  });
});
