// The markdown report: every metric with what exactly it measured, targets first.
import { compactorInputSection, compactorInputTargets } from "./compactor-input-report.mjs";
import { costSection } from "./cost-report.mjs";
import { memorySection, memoryTargets } from "./memory-report.mjs";
import { ONLY } from "./only-report.mjs";
import { scriptsSection, scriptsTargets } from "./scripts-report.mjs";
import { shardSection } from "./shard-report.mjs";

const n = (/** @type {number | null | undefined} */ v, digits = 0) =>
  v === null || v === undefined || !Number.isFinite(v) ? "–" : v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (/** @type {number | null | undefined} */ v) => n(v, 1);
const pct = (/** @type {number | null | undefined} */ v, digits = 1) => (v === null || v === undefined ? "–" : `${(v * 100).toFixed(digits)}%`);
const signed = (/** @type {number | null | undefined} */ ratio) => (ratio === null || ratio === undefined ? "–" : `${ratio >= 1 ? "+" : "−"}${Math.abs((ratio - 1) * 100).toFixed(1)}%`);
const yes = (/** @type {boolean | undefined} */ ok) => (ok === undefined ? "not measured" : ok ? "**met**" : "**not met**");

/** 1 → "1st", 2 → "2nd", 3 → "3rd". @param {number} k */
const ordinal = (k) => `${k}${k % 10 === 1 && k % 100 !== 11 ? "st" : k % 10 === 2 && k % 100 !== 12 ? "nd" : k % 10 === 3 && k % 100 !== 13 ? "rd" : "th"}`;

/**
 * How `big` compares with `small`, in words the data decides: "the same" within ±`margin`,
 * otherwise which way and by how much.
 * @param {number} big @param {number} small @param {number} margin
 */
const compared = (big, small, margin = 0.2) => {
  if (!Number.isFinite(big) || !Number.isFinite(small) || small === 0) return "not comparable (missing data)";
  const ratio = big / small;
  if (Math.abs(ratio - 1) <= margin) return `within ${Math.round(margin * 100)}% (${signed(ratio)})`;
  return `${ratio > 1 ? "higher" : "lower"} by ${Math.abs((ratio - 1) * 100).toFixed(0)}%`;
};

/** @param {string[]} header @param {(string | number)[][]} rows */
function table(header, rows) {
  return [`| ${header.join(" | ")} |`, `| ${header.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

/** @param {Record<string, any>} r the results object of run.mjs */
/** A repeated ratio as "median (min … max)", in signed percent. @param {{ median: number, min: number, max: number }} r */
const repeated = (r) => `${signedPct(r.median)} (${signedPct(r.min)} … ${signedPct(r.max)})`;
const signedPct = (/** @type {number} */ ratio) => `${ratio >= 1 ? "+" : "−"}${(Math.abs(ratio - 1) * 100).toFixed(1)}%`;

/**
 * The verdict of three repetitions of a ratio against [lo, hi]: met when every repetition is
 * within, not met when none is, and "inconclusive" when they disagree — the spread crosses the
 * target's margin, so the run cannot tell (the median's side is printed beside it).
 * @param {{ median: number, min: number, max: number }} r @param {number} lo @param {number} hi
 */
function judged(r, lo, hi) {
  const inside = (/** @type {number} */ v) => v >= lo && v <= hi;
  const sides = [r.min, r.median, r.max].map(inside);
  if (sides.every((s) => s)) return "**met**";
  if (sides.every((s) => !s)) return "**not met**";
  return `inconclusive (median ${inside(r.median) ? "within" : "outside"})`;
}

/**
 * §5's verdict, from counts any of which a duplicate or a loss would move: the batch replays
 * answered as replays (no other status, exactly one fresh result per event), one stored source per
 * group, every plan completed once into its own boundary, and model failures and failed attempts
 * equal to what the fake injected (a redelivery that collided would add a failed attempt).
 * @param {any} d
 */
function exactlyOnce(d) {
  const checks = [
    [d.statuses.other === 0 && d.eventResults.fresh === d.groupsSent * 3, `${d.eventResults.fresh} fresh of ${d.groupsSent * 3} events sent 4×`],
    [(d.storedEvents.source ?? 0) === d.groupsSent, `${d.storedEvents.source ?? 0}/${d.groupsSent} sources stored`],
    [d.completedRunEvents === d.compactionsPlanned && d.boundaries === d.compactionsPlanned && d.distinctPredecessors === d.boundaries, `${d.compactionsPlanned} plans → ${d.completedRunEvents} completed → ${d.boundaries} boundaries (${d.duplicateBoundaries} sharing a predecessor)`],
    [d.failedAttempts === d.injectedFailures && d.modelRequests === d.compactionsPlanned + d.injectedFailures, `${d.failedAttempts} failed attempts for ${d.injectedFailures} injected failures`],
    [d.chainValid === true && (d.bigChain?.duplicateBoundaries ?? 0) === 0, d.chainValid ? "chain valid" : "CHAIN INVALID"],
  ];
  return { met: checks.every(([ok]) => ok), measured: checks.map(([ok, text]) => (ok ? text : `**${text}**`)).join("; ") };
}

/** §3: D1 rows a context call read per event of the head's frozen slice, which it reads back. @param {{ d1RowsRead: number, headSlice: { events: number } }} point */
const rowsPerSliceEvent = (point) => point.d1RowsRead / point.headSlice.events;

export function renderMarkdown(r) {
  const env = r.environment;
  const m = r.metrics;
  const out = [];
  const failed = (/** @type {string} */ metric) => r.errors.find((/** @type {any} */ e) => e.metric === metric);
  const section = (/** @type {string} */ title, /** @type {string} */ metric, /** @type {() => string[]} */ body) => {
    out.push(`## ${title}`, "");
    const error = failed(metric);
    if (error !== undefined) out.push(`**Not measured in this run:** ${error.message}`, "");
    else {
      try {
        out.push(...body(), "");
      } catch (e) {
        out.push(`(no data: ${e instanceof Error ? e.message : String(e)})`, "");
      }
    }
  };

  out.push("# Foldline benchmark", "");
  if (env.quick) out.push("> **Quick smoke run (`--quick`)**: smaller histories and fewer samples than the benchmark; not the benchmark's numbers.", "");
  out.push(
    `Run ${env.date} by \`npm run bench\` in ${n(r.durationSeconds, 0)} s. **Absolute times are this machine's**: ${env.machine.cpu}, ${env.machine.cores} cores, ${n(env.machine.memoryGiB, 1)} GiB, ${env.machine.os}; ` +
      `the client, \`wrangler dev\` (workerd ${"with"} local D1/R2/Queues/Durable Objects, wrangler ${env.wrangler}), and the fake model all share those cores. ` +
      "**Ratios are measured within this one run** (same process, same database), and the targets are about ratios.",
    "",
    `Load average (1/5/15 min) before the bench started any process: ${env.loadAverageAtStart?.join(" / ")}; at the end: ${env.loadAverageAtEnd?.join(" / ") ?? "–"} (${env.machine.cores} cores). ` +
      "A value near or above the core count before the start means other work shared the CPU during the run, which mostly shows in the p99 columns; the per-point p99 of each half of the samples is printed as the noise floor.",
    "",
    `Code measured: ${env.source === "head" ? `the committed HEAD \`${env.git.commit?.slice(0, 12)}\`` : `the working tree at \`${env.git.commit?.slice(0, 12)}\` (${env.git.dirtyWorkerFiles} modified Worker file(s) at the time)`} — ${env.git.subject ?? ""}. ` +
      "The Worker's sources were copied at start, so edits during the run could not hot-reload into it. Node " +
      `${env.node}. Compactor: ${env.compactor}.`,
    "",
  );

  // The sections that run alone (`--only`): a note, their targets when they have any, their sections.
  const alone = ONLY[r.only];
  if (alone !== undefined) {
    out.push(`> ${alone.note}`, "");
    if (alone.targets !== undefined) out.push("## Targets", "", table(["target", "measured", "verdict"], alone.targets(m)), "");
    for (const [title, metric, body] of alone.sections) section(title, metric, () => body(m, env));
    if (r.errors.length > 0) out.push("## Errors", "", ...r.errors.map((/** @type {any} */ e) => `- ${e.metric}: ${e.message}`), "");
    return `${out.join("\n").trim()}\n`;
  }

  // Targets ---------------------------------------------------------------------------------------
  const a = m.appendLatency;
  const c = m.contextLatency;
  const ci = m.compactorInput;
  const p = m.prefixStability;
  const d = m.duplicates;
  out.push("## Targets", "");
  out.push(
    table(
      ["target", "measured", "verdict"],
      [
        [
          `append p99 at ${a?.points.big.label ?? "2M"} chars of history within +20% of p99 at 0 (median of ${a?.repetitions?.reps.length ?? "–"} repetitions)`,
          a ? `${repeated(a.repetitions.p99)}; whole run ${ms(a.points.big.p99)} vs ${ms(a.points.zero.p99)} ms (${signed(a.p99RatioBigToZero)}); p50 ${repeated(a.repetitions.p50)}` : "–",
          a ? judged(a.repetitions.p99, 0, 1.2) : yes(undefined),
        ],
        [
          `context selection within ±20% between ${c?.points.small.label ?? "50k"} and ${c?.points.big.label ?? "2M"} chars (median of ${c?.repetitions?.reps.length ?? "–"} repetitions)`,
          c ? `p50 ${repeated(c.repetitions.p50)}; p99 ${repeated(c.repetitions.p99)}; whole run p50 ${ms(c.points.big.p50)} vs ${ms(c.points.small.p50)} ms, p99 ${ms(c.points.big.p99)} vs ${ms(c.points.small.p99)} ms` : "–",
          c ? `p50 ${judged(c.repetitions.p50, 0.8, 1.2)}; p99 ${judged(c.repetitions.p99, 0.8, 1.2)}` : yes(undefined),
        ],
        ...compactorInputTargets(ci, p),
        ["prefix stability ≥ 90%", p ? `${pct(p.shareExtendingPrevious)} of responses extend the previous one; ${pct(p.cacheableCharShare)} of chars cacheable` : "–", yes(p ? p.shareExtendingPrevious >= 0.9 : undefined)],
        [
          "duplicated deliveries exactly once (§5): every event stored once, every plan settled into one boundary, no failure but the injected ones, chain valid",
          d ? exactlyOnce(d).measured : "–",
          yes(d ? exactlyOnce(d).met : undefined),
        ],
        [
          "≤ 2 D1 round trips per source append below the trigger (measured, §2: Worker and Durable Object, token check included)",
          m.d1PerAppend ? `mean ${n(m.d1PerAppend.perKind.source.roundTrips, 2)}, at most ${m.d1PerAppend.perKind.source.roundTripsMax} over ${m.d1PerAppend.perKind.source.n} appends` : "–",
          yes(m.d1PerAppend ? m.d1PerAppend.perKind.source.roundTripsMax <= 2 : undefined),
        ],
        ...memoryTargets(m.memory),
        ...scriptsTargets(m.scripts),
      ],
    ),
    "",
  );
  {
    // The p99 verdicts against the noise floor: how far p99 moved between the two halves of one point.
    const spread = (/** @type {any} */ point) => Math.abs(point.firstHalfP99 - point.secondHalfP99) / Math.min(point.firstHalfP99, point.secondHalfP99);
    const spreads = [...Object.values(a?.points ?? {}), ...Object.values(c?.points ?? {})].map(spread).filter((v) => Number.isFinite(v));
    if (spreads.length > 0) {
      out.push(
        `Read the p99 verdicts against the noise floor: within a single point (same conversation, nothing changed but time), the p99 of the first and second half of its samples differed by up to ${pct(Math.max(...spreads), 0)} in this run (§1, §3). The p50s are the stable signal.`,
        "",
      );
    }
  }

  // 1 -------------------------------------------------------------------------------------------------
  section("1. Append latency and throughput", "appendLatency", () => {
    const rows = Object.values(a.points).map((s) => [s.label, n(s.historyChars), n(s.activeCharsBefore), s.n, ms(s.p50), ms(s.p90), ms(s.p99), `${ms(s.firstHalfP99)} / ${ms(s.secondHalfP99)}`, ms(s.max), n(s.appendsPerSecond, 1)]);
    const samples = a.points.zero.n;
    const fromTop = samples - Math.ceil(samples * 0.99) + 1;
    const par = m.parallelAppends;
    return [
      "`POST …/events` of one short `source` message (≈30 characters), timed at the client from send to the last byte of the 201 response. " +
        "All three conversations were measured after every history was built (and after §3), **round-robin one append at a time** (0, mid, long, 0, mid, long, …), so background load lands on all three alike; 5 warm-up appends each are not counted. " +
        `Before the probes each conversation was brought below the trigger with room for all of them, so no sample includes compaction planning (open runs afterwards: ${JSON.stringify(a.openRunsAfterProbes)}). ` +
        "Sustained appends/s = samples ÷ the sum of their latencies (one client appending back to back).",
      "",
      table(["history", "chars before probes", "active (uncovered) chars", "samples", "p50 ms", "p90 ms", "p99 ms", "p99 of each half ms", "max ms", "appends/s"], rows),
      "",
      `p99 at ${a.points.big.label} ÷ p99 at 0 = **${n(a.p99RatioBigToZero, 3)}** (${signed(a.p99RatioBigToZero)}); p50 ${n(a.p50RatioBigToZero, 3)} (${signed(a.p50RatioBigToZero)}). ` +
        `Between ${a.points.mid.label} and ${a.points.big.label}, where the uncovered window is of the same order, p99 ${n(a.p99RatioBigToMid, 3)} (${signed(a.p99RatioBigToMid)}) and p50 ${n(a.p50RatioBigToMid, 3)} (${signed(a.p50RatioBigToMid)}). ` +
        `With ${samples} samples per point, p99 is the ${ordinal(fromTop)}-largest sample: a few scheduling hiccups move it.`,
      "",
      "What an append costs beside the write: every source append's preflight counts the active context (boundary and amendment envelopes plus the uncovered window's exact turns) from the chain's running totals (`src/core/tail-ledger.ts`), which the append updates by re-folding only the group it touches. " +
        `Measured: with ${n(a.points.big.activeCharsBefore)} uncovered characters (${a.points.big.label}) against ${n(a.points.zero.activeCharsBefore)} (0), the append's p50 was ${compared(a.points.big.p50, a.points.zero.p50)}` +
        (m.d1PerAppend ? `, and a source append read ${n(m.d1PerAppend.perKind.source.rowsRead, 1)} D1 rows (§2).` : "."),
      "",
      ...(par === undefined
        ? ["Parallel: not measured (see errors)."]
        : [
            `**${par.conversations} conversations in parallel** (each a fresh conversation with one warm-up append, then ${par.appendsEach} sequential appends; all ${par.conversations} clients at once): ` +
              `**${n(par.aggregateAppendsPerSecond, 1)} appends/s** aggregate over ${n(par.wallSeconds, 2)} s, latency p50 ${ms(par.latency.p50)} ms, p99 ${ms(par.latency.p99)} ms, ${par.failures} failures. ` +
              "Local workerd runs the Worker, every Durable Object and the local D1 in one process on this machine's cores, so this is that process's ceiling here (requests queue), not Cloudflare's, where each conversation's object may run elsewhere.",
          ]),
    ];
  });

  // 2 -------------------------------------------------------------------------------------------------
  section("2. D1 round trips and statements per append (measured)", "d1PerAppend", () => {
    const d1 = m.d1PerAppend;
    const row = (/** @type {string} */ label, /** @type {any} */ x) => [label, x.n, n(x.roundTrips, 2), x.roundTripsMax, n(x.statements, 2), n(x.rowsRead, 1), n(x.rowsWritten, 1)];
    const s = d1.perKind.source;
    return [
      "Every figure is counted by the Worker's D1 meter (`D1_METER = \"on\"` in the bench's worker, header `x-foldline-d1-meter: on`): each call that waits on D1 is a round trip (`all`/`run`/`first`, or one `batch` whatever it holds), each statement's `meta.rows_read` and `meta.rows_written` are summed, over the Worker and the conversation's Durable Object. " +
        `Case: a conversation with one agent/compactor pair, its object and chain warm, well below the trigger (${d1.plannedRuns} run(s) planned during the samples); each group appended as its three events one at a time, then an edit of its message; then one batch request. ` +
        "The token check is held by the Worker's isolate for 30 s after it read the token's row (`src/api/token-cache.ts`), so a request costs one round trip more when its isolate does not hold it (a token's first request there, or one every 30 s). " +
        "A source the object is warm for is preflighted from its chains' running totals before it is written and goes to D1 in one batch with its skipped runs, which are inserted only if the source was and the declarations' revision still matches the one the object holds its declarations at (a changed declaration falls back to reading them and preflighting after the write).",
      "",
      table(
        ["append", "samples", "round trips (mean)", "round trips (max)", "statements", "rows read", "rows written"],
        [
          row("source", d1.perKind.source),
          row("proposal", d1.perKind.proposal),
          row("delivery", d1.perKind.delivery),
          row("correction (edit)", d1.perKind.correction),
          row(`batch of ${d1.batch.events} events (${d1.batch.sources} sources)`, d1.batch),
        ],
      ),
      "",
      `A source append below the trigger cost ${n(s.roundTrips, 2)} D1 round trips (at most ${s.roundTripsMax}) and ${n(s.statements, 2)} statements; ` +
        `a proposal, delivery or correction, which skip preflight, ${n(d1.perKind.proposal.roundTrips, 2)}, ${n(d1.perKind.delivery.roundTrips, 2)} and ${n(d1.perKind.correction.roundTrips, 2)}. ` +
        `The batch of ${d1.batch.events} events (${d1.batch.sources} sources) cost ${n(d1.batch.roundTrips, 2)} round trips in all, ${d1.batch.roundTrips < d1.batch.sources * s.roundTrips ? `fewer than its sources would one at a time (${n(d1.batch.sources * s.roundTrips)})` : `**no fewer** than its sources one at a time (${n(d1.batch.sources * s.roundTrips)})`}: a batch's sources are preflighted from the running totals as of each source, and their skipped run events are written together. ` +
        `Rows read per source append: ${n(s.rowsRead, 1)}, rows written ${n(s.rowsWritten, 1)}, at one conversation length: whether they grow with history is what §1's latencies and §3's rows read per context call across lengths show.`,
      "",
    ];
  });

  // 3 -------------------------------------------------------------------------------------------------
  section("3. Context selection latency", "contextLatency", () => {
    const rows = Object.values(c.points).map((s) => [
      s.label,
      n(s.historyChars),
      s.n,
      ms(s.p50),
      ms(s.p99),
      `${ms(s.firstHalfP99)} / ${ms(s.secondHalfP99)}`,
      n(s.bytes),
      s.boundary === null ? "none" : `#${s.boundary.position}, ${n(s.boundary.envelopeChars)} chars`,
      n(s.totalsChars),
      s.messages,
    ]);
    return [
      "`GET …/context?agent=` on caught-up conversations (no compaction in flight), round-robin one call at a time over the three, 3 warm-up calls each, measured before the append probes of §1; bytes are the response body (messages + manifest). " +
        `The ${c.points.small.label} conversation is below the trigger, so it has no boundary to verify; the ${c.points.mid.label} and ${c.points.big.label} ones verify their head (one D1 batch + an R2 etag check) on every call.`,
      "",
      table(["history", "chars", "samples", "p50 ms", "p99 ms", "p99 of each half ms", "bytes returned", "boundary", "served chars", "messages"], rows),
      "",
      `${c.points.big.label} ÷ ${c.points.small.label}: p50 **${n(c.p50RatioBigToSmall, 3)}** (${signed(c.p50RatioBigToSmall)}), p99 ${n(c.p99RatioBigToSmall, 3)} (${signed(c.p99RatioBigToSmall)}).`,
      ...(c.points.small.d1RowsRead === undefined
        ? []
        : [
            "",
            "**What a context call reads from D1**, from a separate pass after the timed samples with the Worker's D1 meter asked for (`D1_METER = \"on\"` in the bench's worker, header `x-foldline-d1-meter: on`; `meta.rows_read` of every statement the Worker and the conversation's object ran, and the JSON size of the rows they got back), mean per call:",
            "",
            table(
              ["history", "D1 statements", "rows read", "bytes read", "bytes returned", "rows read per KiB returned", "bytes read per byte returned", "head's frozen slice: events / chars", "rows read per slice event"],
              Object.values(c.points).map((s) => [s.label, n(s.d1Statements, 1), n(s.d1RowsRead, 1), n(s.d1BytesRead), n(s.bytes), n(s.d1RowsReadPerKiBReturned, 2), n(s.d1BytesReadPerByteReturned, 3), s.headSlice ? `${n(s.headSlice.events)} / ${n(s.headSlice.chars)}` : "–", s.headSlice ? n(rowsPerSliceEvent(s), 2) : "–"]),
            ),
            "",
            "The statements are the token's row (the Worker), the agent's declaration by key, one batch that judges the head (the head boundary, its predecessor, the count of rows sharing its predecessor or position, its plan, its completed-run receipt, the log's anchor), and the head's frozen slice read back from the log with the events related to it, so the head is checked against the log on every call (a covered event deleted or rewritten refuses it); the exact tail comes from the object's memory, and with no boundary yet nothing of the head is read. " +
              `So what a call reads follows the head's slice, one run's worth (the policy's trigger less what it retains, more when appends outran the compactor), not the history before it. Rows read per call at ${c.points.big.label} against ${c.points.small.label}: ${n(c.points.big.d1RowsRead, 1)} vs ${n(c.points.small.d1RowsRead, 1)} (${n(c.points.big.historyChars / c.points.small.historyChars, 0)}× the characters)` +
              (c.points.big.headSlice && c.points.small.headSlice
                ? `; per event of the head's slice ${n(rowsPerSliceEvent(c.points.big), 2)} vs ${n(rowsPerSliceEvent(c.points.small), 2)}: ${Math.abs(rowsPerSliceEvent(c.points.big) / rowsPerSliceEvent(c.points.small) - 1) <= 0.2 ? "within 20%, so nothing read grows with history" : "**more than 20% apart: something read grows with history**"}.`
                : "."),
          ]),
    ];
  });

  // 4 -------------------------------------------------------------------------------------------------
  section(`4. Compactor input vs. the alternatives (${m.compactorInput ? n(m.compactorInput.conversationChars) : "long"}-character replay)`, "compactorInput", () => compactorInputSection(ci, p));

  // 5 -------------------------------------------------------------------------------------------------
  section("5. Compactions and duplicate boundaries under duplicated deliveries", "duplicates", () => [
    `A dedicated conversation with a small policy (trigger 8,000 / retain 4,000 / maxFrozenChars 8,000) and the model \`bench-flaky\`, which answers HTTP 500 to the first attempt at every slice, so the queue redelivers the same job (same packet) and the retry settles it. ` +
      `Every ingest batch was sent four times: twice in sequence, then twice concurrently.`,
    "",
    table(
      ["", "count"],
      [
        ["batch requests (201 created / 200 replayed / other)", `${d.batches} (${d.statuses.created} / ${d.statuses.replayed} / ${d.statuses.other})`],
        ["event results fresh / duplicate", `${d.eventResults.fresh} / ${d.eventResults.duplicate}`],
        ["groups sent / source events stored", `${d.groupsSent} / ${d.storedEvents.source ?? 0}`],
        ["compactions planned / completed run events", `${d.compactionsPlanned} / ${d.completedRunEvents}`],
        ["model requests / injected failures / failed-attempt run events", `${d.modelRequests} / ${d.injectedFailures} / ${d.failedAttempts}`],
        ["boundaries / distinct predecessors", `${d.boundaries} / ${d.distinctPredecessors}`],
        ["**duplicate boundaries** (boundaries sharing a predecessor)", `**${d.duplicateBoundaries}**`],
        [`${m.compactorInput ? n(m.compactorInput.conversationChars) : "long"}-char replay chain: boundaries / distinct predecessors / duplicates`, `${d.bigChain?.boundaries} / ${d.bigChain?.distinctPredecessors} / ${d.bigChain?.duplicateBoundaries}`],
        ["`GET …/verify`: links valid", `${d.linksValid} / ${d.links} (${d.chainValid ? "chain valid" : "CHAIN INVALID"}, ${n(d.verifyMs)} ms)`],
      ],
    ),
    "",
    "Not forced here: a redelivery of a job that already settled (consumer succeeded but its ack was lost). Local Queues offer no outside hook for it and the plan watchdog that re-sends jobs waits 15 minutes; the code answers it with `readBoundaryByRun` (a settled run returns its boundary) and the UNIQUE (conversation, agent, epoch, previous) constraint.",
  ]);

  // 6 -------------------------------------------------------------------------------------------------
  section("6. Compaction lag and the active context while a run is in flight", "compactionLag", () => {
    const l = m.compactionLag;
    const rows = [];
    for (const [name, v] of Object.entries(l)) {
      rows.push([v.conversation, v.runs, ms(v.lagMs.p50), ms(v.lagMs.p90), ms(v.lagMs.max), n(v.maxActiveCharsWhileInFlight), n(v.maxServedCharsWhileInFlight)]);
      void name;
    }
    const rp = l.replay;
    return [
      "Lag: the `planned` run event's `recordedAt` to the `completed` run event's `recordedAt` (plan written → boundary settled; includes the queue's `max_batch_timeout` of 1 s in wrangler.toml and the fake model's instant answer). " +
        "Active context while in flight: `detail.activeChars` of the preflight run events recorded with reason `compaction_in_flight` (the characters the agent would be served at that source, before its own maxChars cap), and the largest `manifest.totals.chars` of context calls made while a run was open.",
      "",
      table(["conversation", "runs", "lag p50 ms", "lag p90 ms", "lag max ms", "max active chars in flight", "max served chars in flight"], rows),
      "",
      ...(rp === undefined
        ? []
        : [
            `During the bulk replay (≈${n(m.compactorInput?.ingestCharsPerSecond)} chars/s, far faster than any chat) the active context peaked at ${n(rp.maxActiveCharsWhileInFlight)} chars while a run was in flight (${n(rp.preflightsWhileInFlight)} preflights saw one in flight); ` +
              `${rp.samplesWithOmittedGroups} of ${rp.contextSamples} context samples had groups omitted by the agent's own bounds (maxChars ${n(rp.agentMaxChars)}, maxMessages 400), the largest omission ${n(rp.maxOmittedCharsWhileInFlight)} chars (reported in \`manifest.omitted\`, never silent).`,
          ]),
    ];
  });

  // 7 -------------------------------------------------------------------------------------------------
  section("7. Prompt-prefix stability", "prefixStability", () => [
    `${p.responses} context responses on one conversation (default policy), one \`GET …/context\` after each appended group (source + reply + delivery); ${p.compactions} compactions happened during it. ` +
      "A response *extends* the previous one when its messages array begins with all of the previous response's messages, byte for byte. Cacheable characters: whole identical leading messages plus the common prefix of the first message that differs, ÷ the response's characters (what a provider prompt cache keyed on the previous request could serve; real caches also need a minimum prefix length and cover the system prompt, which is not counted).",
    "",
    table(
      ["", "all pairs", "pairs between compactions", "of which a compaction was in flight"],
      [
        ["pairs", p.pairs, p.pairs - p.pairsAcrossCompaction, p.pairsWhileInFlight ?? "–"],
        ["share extending the previous response", `**${pct(p.shareExtendingPrevious)}**`, pct(p.shareExtendingPreviousBetweenCompactions), pct(p.shareExtendingPreviousWhileInFlight)],
        ["share of characters cacheable", `**${pct(p.cacheableCharShare)}**`, pct(p.cacheableCharShareBetweenCompactions), pct(p.cacheableCharShareWhileInFlight)],
      ],
    ),
    "",
    `${p.pairsAcrossCompaction} pair(s) straddled a settled compaction (the boundary changed, so the prefix restarts), against ${p.compactions} compaction(s) during the run${p.pairsAcrossCompaction === p.compactions ? ": one per settled compaction, a count that follows from the conversation's content, not from timing" : ""}. ` +
      "How long a run stays in flight is timing, so the pairs whose second call came while a run was planned and not yet settled are counted apart: " +
      (p.pairsWhileInFlight > 0
        ? `${pct(p.shareExtendingPreviousWhileInFlight)} of them extended the previous response, against ${pct(p.shareExtendingPreviousBetweenCompactions)} of all pairs between compactions` +
          (p.shareExtendingPreviousWhileInFlight >= p.shareExtendingPreviousBetweenCompactions
            ? " — no worse: the compactor is planned at three quarters of the agent's own caps, and a cap that still bites trims a whole segment at a time, never one group per call"
            : " — **worse while a run is in flight**")
        : "none did in this run") +
      `${p.samplesWithOmittedGroups == null ? "" : ` (${p.samplesWithOmittedGroups} of ${p.responses} responses had groups omitted by the agent's caps)`}. Context latency here: p50 ${ms(p.contextLatency.p50)} ms, p99 ${ms(p.contextLatency.p99)} ms over ${p.contextLatency.n} calls.`,
  ]);

  // 8 -------------------------------------------------------------------------------------------------
  section("8. Durable Object rehydration after eviction", "rehydration", () => {
    const h = m.rehydration;
    return [
      "A Durable Object cannot be evicted from outside `wrangler dev`, so eviction was simulated by **stopping wrangler and starting it again on the same persist directory** " +
        `(restart took ${n(h.restartSeconds, 1)} s). After warming the Worker and D1 with \`/healthz\` and an authenticated \`GET /v1/agents/…\` (no conversation object touched), ` +
        "the first `GET …/context` on each conversation constructs its object and rebuilds its hot state from D1 and R2 (declarations, activation, head boundary, open plan, the events after the head's coverage, and a full SHA-256 re-verification of the head packet). " +
        `Rehydration = first call − warm p50 of the next calls on the same conversation. Memory: workerd's resident set (all objects of the process, not one object's heap), ${n(h.workerdRssAfterWarmupKiB)} KiB after the warm-up; the delta is measured around each first call.`,
      "",
      table(
        ["history", "chars", "first context ms", "warm p50 ms", "rehydration ms", "workerd RSS Δ KiB"],
        Object.values(h.points).map((s) => [s.label, n(s.historyChars), ms(s.firstContextMs), ms(s.warmContextP50Ms), ms(s.rehydrationMs), s.workerdRssDeltaKiB === null ? "–" : n(s.workerdRssDeltaKiB)]),
      ),
      "",
      `Before these, cold context calls on two unmeasured conversations — the 0-history one (${ms(h.namespaceWarmupMs)} ms) and the §7 one, which has boundaries (${ms(h.boundaryPathWarmupMs)} ms) — paid for what the restarted process initialises and compiles on first use, so the table times the objects' own rebuild.`,
    ];
  });

  if (m.verifyBig !== undefined) {
    out.push("## Chain audit", "", `\`GET …/verify\` on the long replay's conversation: ${m.verifyBig.linksValid} of ${m.verifyBig.links} links valid (${m.verifyBig.valid ? "chain valid" : "CHAIN INVALID"}) in ${n(m.verifyBig.ms)} ms (an operator's audit: it reads the whole log and every packet).`, "");
    const p = m.verifyBig.pages;
    if (p !== undefined) {
      out.push(
        `\`GET …/verify/links\`, one link per page: ${p.pages} pages, p50 ${n(p.p50Ms, 1)} ms, max ${n(p.maxMs, 1)} ms; p50 ${n(p.firstHalfP50Ms, 1)} ms over the older half of the chain and ${n(p.secondHalfP50Ms, 1)} ms over the newer half; ${n(p.totalMs)} ms in all. The pages ${p.agreesWithWholeAudit ? "report exactly the links of the whole audit" : "DO NOT report the links of the whole audit"}.`,
        "",
      );
    }
  }
  section("9. Memory: the facts of a long group chat after compaction", "memory", () => memorySection(m.memory));
  section("10. Cost: a group conversation on Cloudflare, per 1,000 messages and per month", "cost", () => costSection(m.cost));
  section("11. Shards: aggregate append throughput", "shards", () => shardSection(m.shards, env));
  section("14. Append cost by script and length", "scripts", () => scriptsSection(m.scripts));

  if (r.errors.length > 0) {
    out.push("## Errors", "", ...r.errors.map((/** @type {any} */ e) => `- ${e.metric}: ${e.message}`), "");
  }
  return `${out.join("\n").trim()}\n`;
}
