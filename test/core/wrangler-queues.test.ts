import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * wrangler.toml names each queue's dead-letter queue twice: for the platform (the consumer's
 * `dead_letter_queue`) and for the consumer's code (`JOB_DEAD_LETTER_QUEUE`, which tells a dead
 * letter from a fresh job). A rename of one without the other would run every dead letter again as
 * a fresh job, or close fresh jobs as dead; this keeps them one name.
 */

type Table = Record<string, string>;

/** The tables of a wrangler.toml in the subset it uses (`[name]` and `[[name]]` headers, one `key = "value"` or number per line). */
function tables(toml: string): { name: string; values: Table }[] {
  const out: { name: string; values: Table }[] = [];
  for (const raw of toml.split("\n")) {
    const line = raw.trim();
    const header = /^\[\[?([^\]]+)\]\]?$/.exec(line);
    if (header?.[1] !== undefined) {
      out.push({ name: header[1], values: {} });
      continue;
    }
    const pair = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"?([^"]*)"?$/.exec(line);
    const current = out.at(-1);
    if (pair?.[1] !== undefined && pair[2] !== undefined && current !== undefined) current.values[pair[1]] = pair[2];
  }
  return out;
}

describe("wrangler.toml's queues", () => {
  const all = tables(readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8"));
  const consumers = all.filter((t) => t.name === "queues.consumers");
  const vars = all.find((t) => t.name === "vars");

  it.each([
    ["JOB_QUEUE", "JOB_DEAD_LETTER_QUEUE"],
    ["REPLY_QUEUE", "REPLY_DEAD_LETTER_QUEUE"],
  ])("names %s's dead-letter queue once: its consumer's dead_letter_queue is %s, and the Worker consumes it", (binding, variable) => {
    const producer = all.find((t) => t.name === "queues.producers" && t.values["binding"] === binding);
    expect(producer?.values["queue"]).toBeDefined();
    const main = consumers.find((c) => c.values["queue"] === producer?.values["queue"]);
    expect(main?.values["dead_letter_queue"]).toBeDefined();
    expect(vars?.values[variable]).toBe(main?.values["dead_letter_queue"]);
    expect(consumers.map((c) => c.values["queue"])).toContain(vars?.values[variable]);
  });

  it("keeps replies off the job queue: the two producers name two queues, each consumed with its own dead-letter queue", () => {
    const queues = all.filter((t) => t.name === "queues.producers").map((t) => t.values["queue"]);
    expect(new Set(queues).size).toBe(queues.length);
    const deadLetters = consumers.map((c) => c.values["dead_letter_queue"]).filter((q) => q !== undefined);
    expect(new Set(deadLetters).size).toBe(2);
  });
});
