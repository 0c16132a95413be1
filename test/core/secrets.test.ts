import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { secretsEqual } from "../../src/core/secrets";

describe("secretsEqual", () => {
  it("is true exactly for equal strings", () => {
    expect(secretsEqual("test-webhook-secret", "test-webhook-secret")).toBe(true);
    expect(secretsEqual("", "")).toBe(true);
    expect(secretsEqual("test-webhook-secret", "test-webhook-secreT")).toBe(false);
    expect(secretsEqual("short", "short-and-longer")).toBe(false);
    expect(secretsEqual("", "x")).toBe(false);
    fc.assert(fc.property(fc.string(), fc.string(), (a, b) => secretsEqual(a, b) === (a === b)));
  });

  it("compares text, not code units: the same characters in another normalization differ", () => {
    expect(secretsEqual("caf\u00e9", "cafe\u0301")).toBe(false);
  });
});
