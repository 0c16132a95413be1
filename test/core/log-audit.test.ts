import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../src/core/events";
import { auditLog, auditLogRange, LOG_FINDINGS_LISTED, missingIn, pageLogRange, withLogAudit } from "../../src/core/log-audit";
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

describe("missingIn", () => {
  it("lists each gap's numbers, oldest first, whatever order the gaps come in, at most a hundred", () => {
    expect(missingIn([])).toEqual([]);
    expect(missingIn([{ start: 9, next: 10 }, { start: 2, next: 5 }])).toEqual([2, 3, 4, 9]);
    expect(missingIn([{ start: 7, next: 7 }])).toEqual([]);
    const listed = missingIn([{ start: 1, next: 1_000_000 }]);
    expect(listed).toHaveLength(LOG_FINDINGS_LISTED);
    expect(listed.at(-1)).toBe(LOG_FINDINGS_LISTED);
  });
});

describe("pageLogRange", () => {
  const rows = [
    { epochId: "e", position: 1, coveredThroughSeq: 40 },
    { epochId: "e", position: 2, coveredThroughSeq: 90 },
    { epochId: "e", position: 3, coveredThroughSeq: 150 },
    { epochId: "other", position: 2, coveredThroughSeq: 500 },
  ];

  it("runs an epoch's first page from the log's first event, a later one from past the link before it, the last through the high-water mark", () => {
    expect(pageLogRange(rows, "e", 0, 1, false, 200)).toEqual({ fromSeq: 1, throughSeq: 40 });
    expect(pageLogRange(rows, "e", 1, 2, false, 200)).toEqual({ fromSeq: 41, throughSeq: 90 });
    expect(pageLogRange(rows, "e", 2, 3, true, 200)).toEqual({ fromSeq: 91, throughSeq: 200 });
    expect(pageLogRange(rows, "e", 0, 3, true, 200)).toEqual({ fromSeq: 1, throughSeq: 200 });
  });

  it("never reaches past the high-water mark, and a page with no link of its own answers for nothing before the last page", () => {
    expect(pageLogRange(rows, "e", 1, 2, false, 60)).toEqual({ fromSeq: 41, throughSeq: 60 });
    expect(pageLogRange(rows, "e", 1, 1, false, 200)).toEqual({ fromSeq: 41, throughSeq: 40 });
    // Past the epoch's last link: from past the newest link, through the mark.
    expect(pageLogRange(rows, "e", 5, 5, true, 200)).toEqual({ fromSeq: 151, throughSeq: 200 });
  });

  it("judges from the log's first event when the link before the page is not there to say where it ended", () => {
    expect(pageLogRange(rows.slice(2), "e", 1, 3, true, 200)).toEqual({ fromSeq: 1, throughSeq: 200 });
  });
});

describe("auditLogRange", () => {
  it("names the missing numbers inside its range only, and the altered events it read", () => {
    const range = { fromSeq: 3, throughSeq: 6 };
    const gaps = [{ start: 1, next: 4 }, { start: 6, next: 9 }];
    expect(auditLogRange(10, range, gaps, LOG)).toEqual({ ok: false, lastSeq: 10, missing: [3, 6], altered: [], range });
    expect(auditLogRange(10, range, [], LOG)).toEqual({ ok: true, lastSeq: 10, missing: [], altered: [], range });
    const second = LOG[1];
    if (second === undefined) throw new Error("fixture");
    const forged = [{ ...second, hash: "0".repeat(64) } as StoredEvent];
    expect(auditLogRange(10, range, [], forged)).toEqual({ ok: false, lastSeq: 10, missing: [], altered: [2], range });
  });
});
