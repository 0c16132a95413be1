/// <reference types="vite/client" />
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import snapshotText from "../../client/openapi.json?raw";

/**
 * The client's types are generated from client/openapi.json (client/openapi.ts); this keeps that
 * snapshot equal to what the routes serve, so a changed route, schema or description fails CI
 * until `npm run client:openapi` regenerates both (test/client/package.e2e.mjs checks that the
 * committed types are what the snapshot generates).
 */

/** Where two JSON values differ, as JSON pointers, at most `limit` of them: readable where a whole-document diff is not. */
function differences(expected: unknown, actual: unknown, at = "", found: string[] = [], limit = 20): string[] {
  if (found.length >= limit) return found;
  const bothObjects = typeof expected === "object" && expected !== null && typeof actual === "object" && actual !== null;
  if (!bothObjects || Array.isArray(expected) !== Array.isArray(actual)) {
    const [before, after] = [JSON.stringify(expected) ?? "undefined", JSON.stringify(actual) ?? "undefined"];
    if (before === after) return found;
    // From a little before the first character that differs, so a long description's change shows.
    let first = 0;
    while (before[first] === after[first]) first++;
    const from = Math.max(0, first - 20);
    found.push(`${at || "/"}: …${before.slice(from, from + 80)} → …${after.slice(from, from + 80)}`);
    return found;
  }
  const keys = new Set([...Object.keys(expected), ...Object.keys(actual)]);
  for (const key of keys) {
    differences((expected as Record<string, unknown>)[key], (actual as Record<string, unknown>)[key], `${at}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`, found, limit);
  }
  return found;
}

describe("client/openapi.json", () => {
  it("is the document /openapi.json serves (else run `npm run client:openapi`)", async () => {
    const response = await exports.default.fetch("https://foldline.test/openapi.json");
    expect(response.status).toBe(200);
    const live: unknown = await response.json();
    expect(differences(JSON.parse(snapshotText), live), "client/openapi.json (committed) → /openapi.json (served); run `npm run client:openapi`").toEqual([]);
  });

  it("can tell: a changed description is a difference", () => {
    const document = JSON.parse(snapshotText) as { info: { description: string } };
    const changed = { ...document, info: { ...document.info, description: "changed" } };
    expect(differences(document, changed)).toEqual([`/info/description: …${JSON.stringify(document.info.description).slice(0, 80)} → …"changed"`]);
    expect(differences({ a: [1, { b: "x".repeat(100) + "y" }] }, { a: [1, { b: "x".repeat(100) + "z" }] })).toEqual([`/a/1/b: …${"x".repeat(20)}y" → …${"x".repeat(20)}z"`]);
    expect(differences({ "a/b": 1 }, {})).toEqual(["/a~1b: …1 → …undefined"]);
  });
});
