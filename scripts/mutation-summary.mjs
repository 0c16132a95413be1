// `npm run mutation:summary`: the last mutation run's score per file of src/core and in total, as
// the Markdown table docs/TESTING.md shows, read from Stryker's JSON report
// (reports/mutation/mutation.json, written by `npm run mutation`).
// score = (killed + timed out) / (killed + timed out + survived + no coverage), Stryker's own.
import { readFileSync } from "node:fs";
import { relative, resolve } from "node:path";

const file = resolve(process.argv[2] ?? "reports/mutation/mutation.json");
/** @type {{ files: Record<string, { mutants: { status: string }[] }> }} */
const report = JSON.parse(readFileSync(file, "utf8"));
const COLUMNS = ["Killed", "Timeout", "Survived", "NoCoverage", "Ignored"];

/** @param {Record<string, number>} c */
const score = (c) => {
  const detected = (c.Killed ?? 0) + (c.Timeout ?? 0);
  const valid = detected + (c.Survived ?? 0) + (c.NoCoverage ?? 0);
  return valid === 0 ? "–" : `${((100 * detected) / valid).toFixed(1)}%`;
};
/** @param {Record<string, number>} c */
const row = (name, c) => `| ${name} | ${COLUMNS.map((k) => (c[k] ?? 0).toLocaleString("en-US")).join(" | ")} | ${score(c)} |`;

/** @type {Record<string, number>} */
const total = {};
const rows = Object.entries(report.files)
  .map(([path, { mutants }]) => {
    /** @type {Record<string, number>} */
    const counts = {};
    for (const m of mutants) {
      counts[m.status] = (counts[m.status] ?? 0) + 1;
      total[m.status] = (total[m.status] ?? 0) + 1;
    }
    return [relative(resolve("src/core"), resolve(path)), counts];
  })
  .sort(([a], [b]) => String(a).localeCompare(String(b)))
  .map(([name, counts]) => row(`\`${name}\``, /** @type {Record<string, number>} */ (counts)));

console.log(["| file | killed | timed out | survived | no coverage | ignored | score |", "| --- | --- | --- | --- | --- | --- | --- |", ...rows, row("**all of `src/core`**", total)].join("\n"));
