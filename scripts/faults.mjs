// `npm run faults`: the fault matrix (test/faults, vitest.faults.config.ts). Runs it, prints every
// invariant violation grouped by operation, invariant and what broke, and ends with one line:
//
//   fault matrix: <N> operations × <M> injection points, <R> runs, <V> invariant violations
//
// It exits non-zero when the harness itself failed (a clean run failed, the object was out of the
// plan's reach), and on violations only with --strict (or FAULTS_STRICT=1), as CI runs it; without
// it, a local run lists what it found and still exits 0.
//
//   npm run faults -- [--strict] [--json <file>] [-t <operation name filter>]
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { startVitest } from "vitest/node";

const { values } = parseArgs({
  options: { strict: { type: "boolean", default: false }, json: { type: "string" }, t: { type: "string" } },
});
const strict = values.strict || process.env.FAULTS_STRICT === "1";

const vitest = await startVitest("test", [], {
  config: "vitest.faults.config.ts",
  watch: false,
  ...(values.t === undefined ? {} : { testNamePattern: values.t }),
});
if (vitest === undefined) {
  console.error("fault matrix: vitest did not start");
  process.exit(1);
}

/** @param {any} task @returns {any[]} */
const reportsOf = (task) => [...(task.meta?.faultMatrix === undefined ? [] : [task.meta.faultMatrix]), ...(task.tasks ?? []).flatMap(reportsOf)];
/** @param {any} task @returns {boolean} */
const failed = (task) => task.result?.state === "fail" || (task.tasks ?? []).some(failed);
const files = vitest.state.getFiles();
const reports = files.flatMap(reportsOf);
const harnessFailed = files.length === 0 || files.some(failed);
await vitest.close();

console.log("");
console.log("operation     calls  writes  model  points  runs  violations");
for (const r of reports) {
  console.log(
    `${r.operation.padEnd(12)} ${String(r.calls).padStart(6)} ${String(r.writes).padStart(7)} ${String(r.modelCalls).padStart(6)} ${String(r.points).padStart(7)} ${String(r.runs).padStart(5)} ${String(r.violations.length).padStart(11)}`,
);
}

/** One line per operation, invariant and what broke; the points where it broke follow it. */
const groups = new Map();
for (const r of reports) {
  for (const v of r.violations) {
    // The same break at another point differs only in ids, hashes and counts.
    const what = v.detail.replace(/[0-9a-f]{8}-[0-9a-f-]*|[0-9a-f]{16,}/g, "…").replace(/\d+/g, "#");
    const key = `${v.operation}\u0000${v.invariant}\u0000${what}`;
    const group = groups.get(key) ?? { operation: v.operation, invariant: v.invariant, detail: v.detail, points: [] };
    group.points.push(`${v.edge === "model" ? "model " : ""}k=${v.k} ${v.kind} @ ${v.at.slice(0, 90)}`);
    groups.set(key, group);
  }
}
const violations = reports.reduce((n, r) => n + r.violations.length, 0);
if (groups.size > 0) {
  console.log("");
  console.log("violations (operation — invariant — what broke — where):");
  for (const g of groups.values()) {
    console.log(`- ${g.operation} — ${g.invariant} — ${g.detail}`);
    for (const point of g.points) console.log(`    ${point}`);
  }
}
if (values.json !== undefined) writeFileSync(values.json, `${JSON.stringify(reports, null, 2)}\n`);
if (harnessFailed) console.error("\nthe fault matrix itself failed (see the test output above): its counts are incomplete");

const points = reports.reduce((n, r) => n + r.points, 0);
const runs = reports.reduce((n, r) => n + r.runs, 0);
console.log(`fault matrix: ${reports.length} operations × ${points} injection points, ${runs} runs, ${violations} invariant violations`);
process.exit(harnessFailed || (strict && violations > 0) ? 1 : 0);
