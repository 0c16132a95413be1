import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/http/inspector/conversation-model";
import { formatDuration, runTiming } from "../../src/http/inspector/run-timing";

const run = (status: RunEvent["body"]["status"], recordedAt: string, detail?: RunEvent["body"]["detail"]): RunEvent => ({
  kind: "run",
  idempotencyKey: `run:r1:${status}`,
  sensitive: false,
  conversationId: "api:c",
  seq: 7,
  hash: "0".repeat(64),
  recordedAt,
  body: { runId: "r1", agentId: "cmp", role: "compactor", status, ...(detail === undefined ? {} : { detail }) },
});

const PLANNED = "2026-01-01T00:00:00.000Z";

describe("runTiming", () => {
  it.each([
    ["a settlement: from its plan", run("completed", "2026-01-01T00:00:01.500Z"), { plannedAt: PLANNED, abandonedAt: null }, { kind: "settled", ms: 1_500 }],
    ["a failed attempt: from its plan", run("failed", "2026-01-01T00:00:02.000Z"), { plannedAt: PLANNED, abandonedAt: null }, { kind: "failed", ms: 2_000 }],
    ["an abandoned plan: until its incident", run("planned", PLANNED), { plannedAt: PLANNED, abandonedAt: "2026-01-01T00:10:00.000Z" }, { kind: "abandoned", ms: 600_000 }],
    ["an open plan: nothing yet", run("planned", PLANNED), { plannedAt: PLANNED, abandonedAt: null }, { kind: "none" }],
    ["a run without a plan (an agent's reply)", run("completed", PLANNED), undefined, { kind: "none" }],
    ["a clock that went back: nothing, not a negative time", run("completed", "2025-12-31T23:59:59.000Z"), { plannedAt: PLANNED, abandonedAt: null }, { kind: "none" }],
    ["a preflight that did not plan: its reason", run("skipped", PLANNED, { reason: "below_trigger", activeChars: 10 }), undefined, { kind: "skipped", reason: "below_trigger" }],
    ["a skipped run without a recorded reason", run("skipped", PLANNED, { activeChars: 10 }), undefined, { kind: "none" }],
  ] as const)("%s", (_, event, span, expected) => {
    expect(runTiming(event, span)).toEqual(expected);
  });
});

describe("formatDuration", () => {
  it.each([
    [850, "850 ms"],
    [12_340, "12.3 s"],
    [245_000, "4 min 05 s"],
    [7_380_000, "2 h 03 min"],
  ])("%i ms reads %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
