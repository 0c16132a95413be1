import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../src/core/events";
import { auditLog, LOG_FINDINGS_LISTED, withLogAudit } from "../../src/core/log-audit";
import { source, storeAll } from "./event-builders";

const LOG: StoredEvent[] = storeAll([source("m1", "one"), source("m2", "two"), source("m3", "three"), source("m4", "four")]);

describe("auditLog", () => {
  it("finds nothing in an intact log", () => {
    expect(auditLog(4, LOG.map((e) => e.seq), LOG)).toEqual({ ok: true, lastSeq: 4, missing: [], altered: [] });
  });

  it("names every sequence number at or below the mark that has no event, the newest included", () => {
    const held = LOG.filter((e) => e.seq !== 2 && e.seq !== 4);
    expect(auditLog(4, held.map((e) => e.seq), held)).toEqual({ ok: false, lastSeq: 4, missing: [2, 4], altered: [] });
    // Nothing past the mark is missing: an empty log with mark 0 is intact.
    expect(auditLog(0, [], [])).toEqual({ ok: true, lastSeq: 0, missing: [], altered: [] });
    expect(auditLog(1, [], []).missing).toEqual([1]);
  });

  it("names an event whose content no longer hashes to its stored hash, whatever field changed", () => {
    const [first, second, third, fourth] = LOG;
    if (first === undefined || second === undefined || third === undefined || fourth === undefined) throw new Error("fixture");
    const edited: StoredEvent[] = [
      first,
      { ...second, body: { ...second.body, text: "TWO" } } as StoredEvent,
      { ...third, sensitive: !third.sensitive },
      { ...fourth, idempotencyKey: `${fourth.idempotencyKey}x` },
    ];
    expect(auditLog(4, [4, 3, 2, 1], [...edited].reverse())).toEqual({ ok: false, lastSeq: 4, missing: [], altered: [2, 3, 4] });
  });

  it("lists at most the first hundred of each finding", () => {
    const many = LOG_FINDINGS_LISTED + 5;
    const audit = auditLog(many, [], []);
    expect(audit.missing).toHaveLength(LOG_FINDINGS_LISTED);
    expect(audit.missing[0]).toBe(1);
    expect(audit.missing.at(-1)).toBe(LOG_FINDINGS_LISTED);
    const forged = Array.from({ length: many }, (_, i) => ({ ...LOG[0], seq: many - i, hash: "0".repeat(64) }) as StoredEvent);
    const altered = auditLog(many, forged.map((e) => e.seq), forged).altered;
    expect(altered).toHaveLength(LOG_FINDINGS_LISTED);
    expect(altered.slice(0, 2)).toEqual([1, 2]);
  });
});

describe("withLogAudit", () => {
  it("keeps a valid report valid only when the log is intact", () => {
    const intact = auditLog(0, [], []);
    const broken = auditLog(1, [], []);
    expect(withLogAudit({ valid: true, name: "r" }, intact)).toEqual({ valid: true, name: "r", log: intact });
    expect(withLogAudit({ valid: true }, broken).valid).toBe(false);
    expect(withLogAudit({ valid: false }, intact).valid).toBe(false);
  });
});
