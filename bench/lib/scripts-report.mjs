// The report's scripts section (§14): the cost of one append by script and by length
// (lib/scripts-phase.mjs), its table, the judged ratios and their verdicts, all from the run's numbers.

/** A Chinese append at most twice a Latin one of the same length. */
const SCRIPT_RATIO_TARGET = 2;
/** From 1,000 to 4,096 characters, an append's cost grows no faster than its length. */
const GROWTH_TARGET = 4.096;

const n = (/** @type {number | null | undefined} */ v, digits = 0) =>
  v === null || v === undefined || !Number.isFinite(v) ? "–" : v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const verdict = (/** @type {number | null | undefined} */ ratio, /** @type {number} */ target) => (ratio === null || ratio === undefined ? "not measured" : ratio <= target ? "**met**" : "**not met**");

/** @param {string[]} header @param {(string | number)[][]} rows */
const table = (header, rows) => [`| ${header.join(" | ")} |`, `| ${header.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");

/** @param {any} s the scripts metrics @param {string} id */
const caseOf = (s, id) => s?.cases.find((/** @type {any} */ c) => c.id === id);
/** Mean rows read + written per append. @param {any} c */
const rowsOf = (c) => (c?.rowsRead ?? NaN) + (c?.rowsWritten ?? NaN);
/** Why a ratio has no value: the case that did not complete its appends. @param {any} s @param {{ of: string[] }} ratio */
const missing = (s, ratio) => {
  const incomplete = ratio.of.map((id) => caseOf(s, id)).filter((c) => c === undefined || !c.complete);
  return `not measured: ${incomplete.map((c) => (c === undefined ? "a case is missing" : `${c.id} failed at append ${c.failure.append} (${c.failure.message})`)).join("; ")}`;
};

/**
 * A ratio's cell: its value and what it divides, on p50 latency or on rows read + written.
 * @param {any} s @param {{ of: string[], p50: number | null, rows: number | null }} ratio @param {"p50" | "rows"} on
 */
function measured(s, ratio, on) {
  if (ratio[on] === null) return missing(s, ratio);
  const [top, bottom] = ratio.of.map((id) => caseOf(s, id));
  return on === "p50" ? `${n(ratio.p50, 2)} (${n(top.p50Ms, 1)} ÷ ${n(bottom.p50Ms, 1)} ms)` : `${n(ratio.rows, 2)} (${n(rowsOf(top), 1)} ÷ ${n(rowsOf(bottom), 1)} rows)`;
}

/**
 * The section's rows of the Targets table: (a) Chinese against Latin at 4,096 characters, target
 * ≤ 2; (b) 4,096 against 1,000 characters for Chinese and for Latin, target ≤ 4.096 (no worse than
 * linear in the length); each on p50 latency and on D1 rows read + written.
 * @param {any} s the scripts metrics, or undefined when the section did not run
 * @returns {string[][]}
 */
export function scriptsTargets(s) {
  if (s === undefined) {
    return [
      [`append cost by script (§14): a 4,096-character Chinese append ≤ ${SCRIPT_RATIO_TARGET}× a Latin one (p50 latency; rows read + written)`, "–", "not measured"],
      [`append cost by length (§14): 4,096 ÷ 1,000 characters ≤ ${GROWTH_TARGET} (p50 latency; rows read + written), Chinese and Latin`, "–", "not measured"],
    ];
  }
  const r = s.ratios;
  const both = (/** @type {"p50" | "rows"} */ on) => `Chinese ${measured(s, r.chineseGrowth, on)}; Latin ${measured(s, r.latinGrowth, on)}`;
  const bothVerdicts = (/** @type {"p50" | "rows"} */ on) => `Chinese ${verdict(r.chineseGrowth[on], GROWTH_TARGET)}; Latin ${verdict(r.latinGrowth[on], GROWTH_TARGET)}`;
  return [
    [`append cost by script (§14): p50 latency of a 4,096-character Chinese append ÷ a Latin one ≤ ${SCRIPT_RATIO_TARGET}`, measured(s, r.chineseToLatin4096, "p50"), verdict(r.chineseToLatin4096.p50, SCRIPT_RATIO_TARGET)],
    [`append cost by script (§14): D1 rows read + written per append, Chinese ÷ Latin at 4,096 characters ≤ ${SCRIPT_RATIO_TARGET} (deterministic)`, measured(s, r.chineseToLatin4096, "rows"), verdict(r.chineseToLatin4096.rows, SCRIPT_RATIO_TARGET)],
    [`append cost by length (§14): p50 latency at 4,096 ÷ 1,000 characters ≤ ${GROWTH_TARGET} (at most linear)`, both("p50"), bothVerdicts("p50")],
    [`append cost by length (§14): D1 rows read + written at 4,096 ÷ 1,000 characters ≤ ${GROWTH_TARGET} (deterministic)`, both("rows"), bothVerdicts("rows")],
  ];
}

/**
 * What the D1 figures themselves say, from the run: whether rows written differ between cases at all
 * (when they do not, the scripts differ in what an append reads, the index's triggers' reads among
 * them), and whether the appends met warm objects (an append to a warm object takes 1–2 round trips).
 * @param {any} s
 * @returns {string[]}
 */
function rowsNotes(s) {
  const measured = s.cases.filter((/** @type {any} */ c) => c.samples > 0);
  const written = [...new Set(measured.map((/** @type {any} */ c) => c.rowsWritten))];
  const trips = Math.max(...measured.map((/** @type {any} */ c) => c.roundTrips ?? NaN));
  const statements = Math.max(...measured.map((/** @type {any} */ c) => c.statements ?? NaN));
  const round = s.seconds / (s.warmupAppends + s.samplesPerCase);
  const notes = [];
  if (written.length === 1) notes.push(`Rows written, as D1 reports them, were ${n(written[0], 1)} per append in every case: the scripts differ in the rows an append reads, which count what is read inside its statements, the index's triggers included.`);
  if (Number.isFinite(trips)) {
    notes.push(
      trips <= 2
        ? `Every case's appends took at most ${n(trips, 1)} D1 round trips on average: each met an object kept warm by the appends before it.`
        : `Appends took up to ${n(trips, 1)} D1 round trips (${n(statements, 1)} statements) on average, against 1 (5) for an append that follows another within seconds` +
            (round >= 10
              ? `: a round of the cases took about ${n(round)} s, the objects had been dropped between rounds, and a woken object still reads part of its state back during the append. Its latency includes that; when appends are fast, rounds are short and the objects stay warm.`
              : ": the appends did not find their objects warm, and their latencies include reading part of the objects' state back."),
    );
  }
  return notes.length === 0 ? [] : [notes.join(" "), ""];
}

/**
 * The section's lines.
 * @param {any} s the scripts metrics, or undefined when the section did not run
 * @returns {string[]}
 */
export function scriptsSection(s) {
  if (s === undefined) return ["Not run."];
  const latin = new Map(s.cases.filter((/** @type {any} */ c) => c.id.startsWith("latin-")).map((/** @type {any} */ c) => [c.chars, c]));
  const against = (/** @type {any} */ c, /** @type {(c: any) => number} */ value) => {
    const base = latin.get(c.chars);
    return base === undefined || base === c || !c.complete || !base.complete ? "–" : n(value(c) / value(base), 2);
  };
  const rows = s.cases.map((/** @type {any} */ c) => [
    `${c.script}, ${n(c.chars)}`,
    `${c.work} (\`${c.fixture}\`)`,
    c.complete ? c.samples : `${c.samples} (failed at append ${c.failure.append})`,
    c.warmupMs.map((/** @type {number} */ v) => n(v)).join(" / ") || "–",
    n(c.p50Ms, 1),
    n(c.p90Ms, 1),
    n(c.maxMs, 1),
    n(c.rowsRead, 1),
    n(c.rowsWritten, 1),
    `${n(c.statements, 1)} (${n(c.roundTrips, 1)})`,
    against(c, (x) => x.p50Ms),
    against(c, rowsOf),
  ]);
  const failed = s.cases.filter((/** @type {any} */ c) => !c.complete);
  /** @type {(number | null)[]} */
  const planned = s.cases.map((/** @type {any} */ c) => c.plannedRuns);
  const r = s.ratios;
  return [
    `One agent on a Worker of its own (fresh D1, no model key; policy trigger ${n(s.policy.triggerInputChars)} / retain ${n(s.policy.retainInputChars)}${s.context === undefined ? "" : `, agent caps ${n(s.context.maxChars)} characters / ${n(s.context.maxMessages)} messages`}, so no compaction runs: ${planned.every((p) => p === 0) ? "none was planned in any case's conversation" : `**planned runs per case: ${planned.map((p) => p ?? "unread").join(", ")}**`}). ` +
      "Each case is a conversation of its own receiving real text, one `source` event per `POST …/events`: message *i* is the *i*-th consecutive slice of exactly the case's length (JavaScript characters) of a public-domain work in `bench/data/scripts/` (README.md there names each source). " +
      `The cases were appended **round-robin, one append of each in turn**, so background load lands on all alike: ${s.warmupAppends} unmeasured warm-up appends each (their latencies are shown), then ${s.samplesPerCase} measured. ` +
      "Before each append after the first, the conversation's object is woken by an untimed `GET …/context`: the local runtime drops an object idle for about 10 s, and an append that finds it gone rebuilds it from D1 first. " +
      "Latency is the client's, send → last byte of the 201; rows read, rows written, statements and round trips are the D1 meter's for that same request (`x-foldline-d1-meter: on`: every statement the Worker and the conversation's object ran, with D1's `meta.rows_read` / `rows_written`), deterministic whatever else the machine is doing. " +
      `A request not answered in ${n(s.requestTimeoutMs / 1000)} s fails its case, which is not appended to again. ${n(s.seconds)} s in all; load average ${s.loadAverageAtStart.join(" / ")} at the start, ${s.loadAverageAtEnd.join(" / ")} at the end.`,
    "",
    table(["case (script, characters)", "text", "samples", "warm-up ms (1st / 2nd)", "p50 ms", "p90 ms", "max ms", "rows read", "rows written", "statements (round trips)", "p50 ÷ Latin of that length", "rows r+w ÷ Latin of that length"], rows),
    "",
    `Judged (Targets): **(a)** Chinese ÷ Latin at 4,096 characters: p50 ${measured(s, r.chineseToLatin4096, "p50")}, ${verdict(r.chineseToLatin4096.p50, SCRIPT_RATIO_TARGET)}; rows read + written ${measured(s, r.chineseToLatin4096, "rows")}, ${verdict(r.chineseToLatin4096.rows, SCRIPT_RATIO_TARGET)} (target ≤ ${SCRIPT_RATIO_TARGET}). ` +
      `**(b)** 4,096 ÷ 1,000 characters: Chinese p50 ${measured(s, r.chineseGrowth, "p50")}, ${verdict(r.chineseGrowth.p50, GROWTH_TARGET)}, rows ${measured(s, r.chineseGrowth, "rows")}, ${verdict(r.chineseGrowth.rows, GROWTH_TARGET)}; ` +
      `Latin p50 ${measured(s, r.latinGrowth, "p50")}, ${verdict(r.latinGrowth.p50, GROWTH_TARGET)}, rows ${measured(s, r.latinGrowth, "rows")}, ${verdict(r.latinGrowth.rows, GROWTH_TARGET)} (target ≤ ${GROWTH_TARGET}: no worse than linear in the length).`,
    "",
    ...rowsNotes(s),
    ...(failed.length === 0 ? [] : [`**Failed:** ${failed.map((/** @type {any} */ c) => `${c.id} at append ${c.failure.append} (${c.failure.message})`).join("; ")}. A case that failed has only the samples before it, and its ratios are not measured.`, ""]),
    "Read the latencies as this machine's, beside one another (the same Worker, the same minutes); the rows are the figures that do not move from run to run. " +
      "The warm-up column is the first two appends to each conversation: a cost that grows with the conversation's messages shows as a measured p50 well above them.",
  ];
}
