#!/usr/bin/env node
// `npm run bench:window`: what one chain's hot window costs its conversation's object in memory,
// per event it holds and at the bound a chain whose compactions keep failing stops at
// (`HOT_WINDOW_EVENTS`, src/durable/hot-chain.ts `windowBound`). The events are LoCoMo's turns
// (bench/data/locomo, read by the LoCoMo section's reader, which refuses the held-out ones), in order, as sources of their
// speakers, repeated until there are enough. Each size runs in a Node process of its own (the
// pinned Node 22, whose V8 is workerd's engine too): the events are parsed from JSON as D1's
// answer is, and the heap is measured, after a full collection, before the parse and once the
// chain is built over them (the window, its running totals and their folded groups).
// Writes bench/results/window.md.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { loadLocomo } from "./lib/locomo-data.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SIZES = [1_024, 4_096, 16_384, 65_536];
const DEFAULT_BOUND = 16_384;

const ENTRY = `
import { hotChain } from "./src/durable/hot-chain";
import { storedDeclaration } from "./test/core/declaration-fixture";
import { source, storeAll } from "./test/core/event-builders";
import { readFileSync } from "node:fs";

const [turnsFile, size] = process.argv.slice(2);
const turns = JSON.parse(readFileSync(turnsFile, "utf8"));
const n = Number(size);
const inputs = Array.from({ length: n }, (_, i) => {
  const turn = turns[i % turns.length];
  return source("m" + i, turn.text, { author: { id: "u:" + turn.speaker.toLowerCase(), name: turn.speaker } });
});
const json = JSON.stringify(storeAll(inputs));
const declaration = storedDeclaration({});
const activation = { frontierId: "frn_x", frontierHash: "f".repeat(64), startSeq: 1, activatingSeq: 1 };
globalThis.gc();
const before = process.memoryUsage().heapUsed;
const window = JSON.parse(json);
const chain = hotChain({ declaration, activation, head: undefined, openPlan: undefined, windowStart: 0, window, backoffUntil: 0, provisional: false });
globalThis.gc();
const after = process.memoryUsage().heapUsed;
console.log(JSON.stringify({ events: chain.window.length, textChars: chain.heldChars, heapBytes: after - before }));
`;

const scratch = mkdtempSync(join(tmpdir(), "foldline-window-heap-"));
try {
  // The LoCoMo section's own reader: a held-out conversation's file is refused, never read.
  const turns = loadLocomo(false).flatMap(({ data }) => data.sessions.flatMap((s) => s.turns.map((t) => ({ speaker: t.speaker, text: t.text }))));
  const turnsFile = join(scratch, "turns.json");
  writeFileSync(turnsFile, JSON.stringify(turns));
  const bundle = join(scratch, "measure.mjs");
  await build({ stdin: { contents: ENTRY, resolveDir: ROOT, loader: "ts" }, bundle: true, platform: "node", format: "esm", outfile: bundle, logLevel: "warning" });
  const rows = SIZES.map((size) => JSON.parse(execFileSync(process.execPath, ["--expose-gc", bundle, turnsFile, String(size)], { encoding: "utf8" }).trim()));
  const mb = (bytes) => (bytes / 1_048_576).toFixed(1);
  const lines = [
    "# A chain's hot window in memory",
    "",
    `Run ${new Date().toISOString()} by \`npm run bench:window\` (Node ${process.versions.node}, V8 ${process.versions.v8}). One chain built over n source events, LoCoMo's ${turns.length.toLocaleString("en-US")} turns in order, repeated: the heap it takes (the events as parsed from D1's JSON, the window, its running totals and folded groups), after a full collection.`,
    "",
    "| events held | text (characters) | heap | per event |",
    "| --- | --- | --- | --- |",
    ...rows.map((r) => `| ${r.events.toLocaleString("en-US")} | ${r.textChars.toLocaleString("en-US")} | ${mb(r.heapBytes)} MB | ${Math.round(r.heapBytes / r.events).toLocaleString("en-US")} B |`),
    "",
    `At the default bound (\`HOT_WINDOW_EVENTS\` ${DEFAULT_BOUND.toLocaleString("en-US")}) a chain that fell behind holds ${mb(rows.find((r) => r.events === DEFAULT_BOUND)?.heapBytes ?? 0)} MB of the object's 128 MB, however long its compactions fail; without a bound the window grows by the per-event figure with every message.`,
    "",
  ];
  writeFileSync(join(ROOT, "bench/results/window.md"), lines.join("\n"));
  console.log(lines.join("\n"));
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
