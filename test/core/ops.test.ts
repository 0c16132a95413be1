import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { FleetPosition } from "../../src/core/ops";
import { ageSeconds, compareFleet, continuation, decodeCursor, encodeCursor, mergeFleetPage, migrationCurrent, opsAllowed } from "../../src/core/ops";

const at = (minute: number): string => new Date(Date.UTC(2026, 11, 1, 12, minute)).toISOString();
const position = fc.record({ at: fc.integer({ min: 0, max: 5 }).map(at), shard: fc.integer({ min: 0, max: 3 }), id: fc.integer({ min: 1, max: 6 }) });

/** Whether a row of `shard` at `row` passes what `continuation` asks that shard for. */
function continues(row: FleetPosition, cursor: FleetPosition): boolean {
  const from = continuation(row.shard, cursor);
  if ("atOrBefore" in from) return row.at <= from.atOrBefore;
  if ("orAtWithIdBelow" in from) return row.at < from.before || (row.at === from.before && row.id < from.orAtWithIdBelow);
  return row.at < from.before;
}

describe("the fleet's incident order", () => {
  it("puts the newest seen first, then the lower shard, then the newer id", () => {
    expect(compareFleet({ at: at(2), shard: 1, id: 1 }, { at: at(1), shard: 0, id: 9 })).toBeLessThan(0);
    expect(compareFleet({ at: at(1), shard: 0, id: 1 }, { at: at(1), shard: 1, id: 9 })).toBeLessThan(0);
    expect(compareFleet({ at: at(1), shard: 0, id: 9 }, { at: at(1), shard: 0, id: 1 })).toBeLessThan(0);
    expect(compareFleet({ at: at(1), shard: 0, id: 1 }, { at: at(1), shard: 0, id: 1 })).toBe(0);
  });

  it("orders two positions of the same time by shard, whichever is given first", () => {
    expect(compareFleet({ at: at(1), shard: 1, id: 1 }, { at: at(2), shard: 0, id: 1 })).toBeGreaterThan(0);
    expect(compareFleet({ at: at(1), shard: 2, id: 5 }, { at: at(1), shard: 2, id: 5 })).toBe(0);
  });

  it("says there is more only when rows were left past the page", () => {
    const row = (id: number) => ({ position: { at: at(1), shard: 0, id } });
    expect(mergeFleetPage([[row(3), row(2)]], 2)).toEqual({ page: [row(3), row(2)], next: undefined });
    expect(mergeFleetPage([[row(3), row(2)], [{ position: { at: at(0), shard: 1, id: 9 } }]], 2)).toEqual({ page: [row(3), row(2)], next: row(2).position });
    expect(mergeFleetPage([[], []], 2)).toEqual({ page: [], next: undefined });
  });

  it("asks each shard for exactly the rows that come after a cursor", () => {
    fc.assert(
      fc.property(position, position, (row, cursor) => {
        expect(continues(row, cursor)).toBe(compareFleet(row, cursor) > 0);
      }),
    );
  });

  it("pages through every row once, in order, whatever the page size", () => {
    const rows = fc.uniqueArray(position, { selector: (p) => `${p.shard}:${p.id}`, maxLength: 30 });
    fc.assert(
      fc.property(rows, fc.integer({ min: 1, max: 7 }), (all, limit) => {
        const shards = [0, 1, 2, 3].map((s) => all.filter((p) => p.shard === s).sort(compareFleet));
        const read: FleetPosition[] = [];
        let cursor: FleetPosition | undefined;
        for (let pages = 0; pages <= all.length + 1; pages++) {
          const from = cursor;
          const lists = shards.map((list) => list.filter((p) => from === undefined || continues(p, from)).slice(0, limit + 1).map((p) => ({ position: p })));
          const { page, next } = mergeFleetPage(lists, limit);
          read.push(...page.map((p) => p.position));
          if (next === undefined) break;
          cursor = next;
        }
        expect(read).toEqual([...all].sort(compareFleet));
      }),
    );
  });
});

describe("cursors", () => {
  it("round-trips a position", () => {
    fc.assert(
      fc.property(position, (p) => {
        const text = encodeCursor(p);
        expect(text).toMatch(/^[0-9a-f]+$/);
        expect(decodeCursor(text)).toEqual(p);
      }),
    );
  });

  it("refuses a cursor with anything outside its alphabet around it, or half a byte", () => {
    const text = encodeCursor({ at: at(1), shard: 0, id: 1 });
    expect(decodeCursor(`!${text}`)).toBeUndefined();
    expect(decodeCursor(`${text}!`)).toBeUndefined();
    expect(decodeCursor(text.toUpperCase())).toBeUndefined();
    expect(decodeCursor(text.slice(0, -1))).toBeUndefined();
  });

  const hex = (value: unknown): string => [...new TextEncoder().encode(JSON.stringify(value))].map((b) => b.toString(16).padStart(2, "0")).join("");
  it.each([["", "empty"], ["not a cursor!", "outside the alphabet"], [hex({}), "not a position"], [hex(["yesterday", 0, 1]), "no time"], [hex([at(1), -1, 1]), "a negative shard"], ["ff".repeat(40), "not UTF-8"], ["ab".repeat(401), "too long"]])(
    "refuses %j (%s)",
    (text) => {
      expect(decodeCursor(text)).toBeUndefined();
    },
  );
});

describe("who may read the fleet", () => {
  it.each([
    [["ops"], true],
    [["*"], true],
    [["api:*", "telegram:*"], false],
    [["agent:*"], false],
    [["ops:x"], false],
  ] as const)("%j → %s", (scopes, allowed) => {
    expect(opsAllowed(scopes)).toBe(allowed);
  });
});

describe("health arithmetic", () => {
  it("calls a database current only at the expected migration", () => {
    expect(migrationCurrent("0019_x.sql", "0019_x.sql")).toBe(true);
    expect(migrationCurrent("0018_x.sql", "0019_x.sql")).toBe(false);
    expect(migrationCurrent(null, "0019_x.sql")).toBe(false);
  });

  it("counts whole seconds, never below zero", () => {
    const now = new Date(Date.UTC(2026, 11, 1, 12, 0, 10, 900));
    expect(ageSeconds(at(0), now)).toBe(10);
    expect(ageSeconds(at(1), now)).toBe(0);
  });
});
