import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { IncidentAlert } from "../../src/core/alerts";
import {
  ALERT_WINDOW_MS,
  ALERTS_PER_WINDOW,
  alertAllowed,
  alertBody,
  alertDeliveryId,
  alertSignature,
  alertTarget,
  alertWindowStart,
  suppressedBefore,
} from "../../src/core/alerts";
import { isOutboundUrl } from "../../src/core/outbound-url";

const alert: IncidentAlert = {
  deliveryId: alertDeliveryId("api:acme:42", 7),
  id: 7,
  conversationId: "api:acme:42",
  agentId: "concierge",
  runId: "cmp_1",
  kind: "compactor_failure",
  code: "model_timeout",
  createdAt: "2026-12-01T10:03:00.000Z",
  count: 1,
  suppressed: 0,
};

describe("where alerts may be sent", () => {
  it.each([
    ["https://ops.example.com/hooks/foldline", true],
    ["https://ops.example.com:8443/a?b=c", true],
    ["http://127.0.0.1:9000/alerts", true],
    ["http://localhost/alerts", true],
    ["http://ops.example.com/alerts", false],
    ["http://127.0.0.2/alerts", false],
    ["http://localhost.example.com/alerts", false],
    ["https://user:pass@ops.example.com/", false],
    ["https://token@ops.example.com/", false],
    ["ftp://ops.example.com/", false],
    ["javascript:alert(1)", false],
    ["ops.example.com/alerts", false],
    ["", false],
  ])("%s → %s", (url, allowed) => {
    expect(isOutboundUrl(url)).toBe(allowed);
  });

  it("is off without a URL, on with a usable URL and a secret, and misconfigured otherwise", () => {
    expect(alertTarget("", "s")).toEqual({ kind: "off" });
    expect(alertTarget("  ", undefined)).toEqual({ kind: "off" });
    expect(alertTarget(" https://ops.example.com/a ", "s")).toEqual({ kind: "on", url: "https://ops.example.com/a", secret: "s" });
    expect(alertTarget("http://ops.example.com/a", "s")).toEqual({ kind: "misconfigured", reason: "invalid_url" });
    expect(alertTarget("https://ops.example.com/a", undefined)).toEqual({ kind: "misconfigured", reason: "missing_secret" });
    expect(alertTarget("https://ops.example.com/a", "")).toEqual({ kind: "misconfigured", reason: "missing_secret" });
  });
});

describe("the alert body", () => {
  it("holds the incident's ids, codes, times and counts in a fixed order, and nothing else", () => {
    expect(alertBody(alert)).toBe(
      `{"event":"incident","deliveryId":"${alert.deliveryId}","id":7,"conversationId":"api:acme:42","agentId":"concierge","runId":"cmp_1",` +
        `"kind":"compactor_failure","code":"model_timeout","createdAt":"2026-12-01T10:03:00.000Z","count":1,"suppressed":0}`,
    );
  });

  it("never carries a field it was not built from, such as a message that reached the value", () => {
    const widened = { ...alert, message: "provider said: secret text", type: "alert" } as IncidentAlert;
    const parsed = JSON.parse(alertBody(widened)) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(["event", "deliveryId", "id", "conversationId", "agentId", "runId", "kind", "code", "createdAt", "count", "suppressed"]);
    expect(alertBody(widened)).not.toContain("secret text");
  });

  it("is the same bytes on every attempt, so a retry is signed and deduplicated like the first", () => {
    expect(alertBody({ ...alert })).toBe(alertBody(alert));
  });

  it("names one delivery per stored incident: stable for a (conversation, id), distinct otherwise", () => {
    expect(alertDeliveryId("api:acme:42", 7)).toMatch(/^alr_[0-9a-f]{32}$/);
    expect(alertDeliveryId("api:acme:42", 7)).toBe(alertDeliveryId("api:acme:42", 7));
    expect(alertDeliveryId("api:acme:42", 8)).not.toBe(alertDeliveryId("api:acme:42", 7));
    // Incident ids count per shard: the same id in another conversation is another incident.
    expect(alertDeliveryId("api:acme:43", 7)).not.toBe(alertDeliveryId("api:acme:42", 7));
  });

  it("signs as sha256=<hex>", () => {
    expect(alertSignature("ab".repeat(32))).toBe(`sha256=${"ab".repeat(32)}`);
  });
});

describe("the rate limit per kind", () => {
  it("puts an incident in the window its time falls in", () => {
    expect(ALERT_WINDOW_MS).toBe(600_000);
    expect(alertWindowStart("2026-12-01T10:00:00.000Z")).toBe("2026-12-01T10:00:00.000Z");
    expect(alertWindowStart("2026-12-01T10:09:59.999Z")).toBe("2026-12-01T10:00:00.000Z");
    expect(alertWindowStart("2026-12-01T10:10:00.000Z")).toBe("2026-12-01T10:10:00.000Z");
    expect(alertWindowStart("2026-12-01T12:13:00+02:00")).toBe("2026-12-01T10:10:00.000Z");
  });

  it("lets the first ALERTS_PER_WINDOW of a window out and holds back the rest", () => {
    expect(ALERTS_PER_WINDOW).toBe(10);
    const sent = Array.from({ length: 25 }, (_, i) => alertAllowed(i + 1)).filter(Boolean).length;
    expect(sent).toBe(ALERTS_PER_WINDOW);
    expect(alertAllowed(ALERTS_PER_WINDOW)).toBe(true);
    expect(alertAllowed(ALERTS_PER_WINDOW + 1)).toBe(false);
  });

  it("reports what earlier windows held back: every incident past the limit, once", () => {
    expect(suppressedBefore([])).toBe(0);
    expect(suppressedBefore([3, ALERTS_PER_WINDOW])).toBe(0);
    expect(suppressedBefore([ALERTS_PER_WINDOW + 2])).toBe(2);
    expect(suppressedBefore([ALERTS_PER_WINDOW + 2, 1, ALERTS_PER_WINDOW + 40])).toBe(42);
  });

  it("accounts for every incident: sent in their window, or reported as held back by a later alert", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 8 }), (windows) => {
        const sent = windows.reduce((n, count) => n + Array.from({ length: count }, (_, i) => alertAllowed(i + 1)).filter(Boolean).length, 0);
        expect(sent + suppressedBefore(windows)).toBe(windows.reduce((a, b) => a + b, 0));
      }),
    );
  });
});
