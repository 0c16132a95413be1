// The report's compactor-input section (§4) and its two targets: the compactor's input against the
// rendered slices it carried and against the alternatives, and how much of the memory extraction
// after each compaction a prompt cache of the compactor's request could serve; all computed from
// the run's numbers (sections/compactor-input.mjs, and §7's conversation for the paced rows).

const n = (/** @type {number | null | undefined} */ v, digits = 0) =>
  v === null || v === undefined || !Number.isFinite(v) ? "–" : v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const pct = (/** @type {number | null | undefined} */ v, digits = 1) => (v === null || v === undefined ? "–" : `${(v * 100).toFixed(digits)}%`);
const yes = (/** @type {boolean | undefined} */ ok) => (ok === undefined ? "not measured" : ok ? "**met**" : "**not met**");
const RENDERED_SLICE_TARGET = 1.06;
const EXTRACTOR_PREFIX_TARGET = 0.8;

/** @param {string[]} header @param {(string | number)[][]} rows */
function table(header, rows) {
  return [`| ${header.join(" | ")} |`, `| ${header.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

/**
 * The section's two targets, each with what was measured and its verdict.
 * @param {any} ci §4's metrics, or undefined when it did not run @param {any} p §7's, for the paced values
 * @returns {string[][]}
 */
export function compactorInputTargets(ci, p) {
  return [
    [
      `compactor input ÷ the rendered slices it carried ≤ ${RENDERED_SLICE_TARGET}: what a run adds beyond the contract's own slice lines (§4)`,
      ci?.ratioToRenderedSlice != null ? `${n(ci.ratioToRenderedSlice, 3)} (${n(ci.compactorInputChars)} ÷ ${n(ci.renderedSliceChars)} chars; at a conversational pace ${n(p?.compactorInput?.ratioToRenderedSlice, 3)})` : "–",
      yes(ci?.ratioToRenderedSlice != null ? ci.ratioToRenderedSlice <= RENDERED_SLICE_TARGET : undefined),
    ],
    [
      `memory extractor's request served by a cache of the compactor's request for the same slice ≥ ${pct(EXTRACTOR_PREFIX_TARGET, 0)} of its characters (§4)`,
      ci?.extractorPrefix?.share != null ? `${pct(ci.extractorPrefix.share)} (${n(ci.extractorPrefix.cacheableChars)} of ${n(ci.extractorPrefix.inputChars)} chars, ${ci.extractorPrefix.requests} requests; at a conversational pace ${pct(p?.compactorInput?.extractorPrefix?.share)})` : "–",
      yes(ci?.extractorPrefix?.share != null ? ci.extractorPrefix.share >= EXTRACTOR_PREFIX_TARGET : undefined),
    ],
  ];
}

/**
 * The section's text, tables included.
 * @param {any} ci §4's metrics @param {any} p §7's, for the paced values
 * @returns {string[]}
 */
export function compactorInputSection(ci, p) {
  const b = ci.baselines;
  const k = ci.breakdown;
  return [
    `Replay: ${n(ci.conversationChars)} conversation characters (${n(ci.replies)} question/reply groups plus the latency probes), rendered as the agent is sent them. ` +
      `Foldline planned ${ci.compactions} compactions; the fake model received ${ci.modelRequests} compaction requests, and **every character of every request was counted at the model's edge**. ` +
      "Baselines are computed on the same replay and the same coverage points.",
    "",
    `**Compactor input ÷ the rendered slices it carried: ${n(ci.ratioToRenderedSlice, 3)}** (${n(ci.compactorInputChars)} chars sent for ${n(ci.renderedSliceChars)} chars of \`<slice>\` sections, each slice once; target ≤ ${RENDERED_SLICE_TARGET}). ` +
      "The slice's `[msgId] @handle (role):` lines are the contract's format (seed 001), so the slice as sent (those lines, escaped) is the denominator; the ratio is what a run adds beyond it: the system prompt and trusted documents, the previous boundary, amendments and recalled pages, the section framing, and any retry. " +
      `At a conversational pace (§7's conversation) it was ${n(p?.compactorInput?.ratioToRenderedSlice, 3)}. ` +
      `The ratio to the conversation's own characters, in the table, is no longer judged: the contract's markup alone adds ${pct(k.sliceMarkupOverhead)} to the frozen characters here (below), whatever a run adds.`,
    "",
    table(
      ["approach", "model input chars", "÷ conversation chars"],
      [
        ["**Foldline compactor** (previous boundary + new slice per run; measured)", n(ci.compactorInputChars), `**${n(ci.ratio, 3)}**`],
        [`Foldline, if every previous boundary were maxSummaryChars (${n(ci.maxSummaryChars)}) instead of the fake's ≤ ${n(ci.fakeSummaryChars)} (computed from the measured requests)`, n(ci.ifSummariesAtMaxChars), n(ci.ratioIfSummariesAtMax, 3)],
        ["Re-summarize the whole history at every trigger (same coverage points; native chars + system prompt, no markup)", n(b.resummarizeWholeHistoryChars), n(b.resummarizeRatio, 2)],
        ["No compaction: the whole history before every reply (the agent's model input)", n(b.noCompactionModelInputChars), n(b.noCompactionRatio, 1)],
      ],
    ),
    "",
    `Agent model input per reply: Foldline's active context was a mean of **${n(b.foldlineMeanPerReply)}** chars (max ${n(b.foldlineMaxPerReply)}; each source's preflight \`activeChars\`, ${n(b.foldlineRepliesMeasured)} replies) vs a mean of ${n(b.noCompactionMeanPerReply)} (last reply ${n(b.noCompactionLastReply)}) without compaction. ` +
      `The bulk replay inflates Foldline's figure (messages pile up while a run is in flight, §6); at one group at a time (§7) the served context averaged ${n(p?.servedCharsMean)} chars (max ${n(p?.servedCharsMax)}).`,
    "",
    `Where the compactor's characters go: system prompt ${n(k.systemPromptChars)}, previous boundaries ${n(k.previousBoundaryChars)}, slices ${n(k.sliceChars)} for ${n(k.frozenNativeChars)} native frozen chars (slice markup +${pct(k.sliceMarkupOverhead)}: the per-turn \`[id] @handle (role):\` line prefixes and any wrappers), other framing ${n(k.otherFramingChars)}. ` +
      `Per covered character the ratio is ${n(ci.ratioPerCoveredChar, 3)} (the uncompacted tail is in the denominator of the headline ratio, so shorter replays look better). ` +
      "The fixed cost of a run (system prompt, previous boundary, framing) is spread over its slice, so the ratio depends on how much each run freezes: the bulk replay's catch-up runs froze a mean of " +
      `${n(k.frozenNativeChars / ci.compactions)} chars` +
      (p?.compactorInput?.ratioPerCoveredChar != null
        ? `; at a conversational pace (§7's conversation, ${p.compactorInput.compactions} runs freezing a mean of ${n(p.compactorInput.meanFrozenChars)} chars, about trigger − retain) it was **${n(p.compactorInput.ratioPerCoveredChar, 3)} per covered character**, the value a long-lived chat converges to.`
        : "."),
    "",
    ...(ci.extractorPrefix === undefined
      ? []
      : [
          `**The memory extraction after each settled compaction** sent ${n(ci.extractionRequests)} requests on the same model (${n(ci.extractionInputChars)} characters, ${n(ci.extractionInputChars / ci.conversationChars, 3)} per conversation character; told apart by their last system message, not counted as compactor input). ` +
            `Each begins with the compactor's request for the same slice, message for message (the fewest whole leading messages shared: ${ci.extractorPrefix.minWholeLeadingMessages ?? "–"}), and adds its own instructions after it, so a provider's prompt cache holding the compactor's request could serve **${pct(ci.extractorPrefix.share)}** of the extractor's characters (${n(ci.extractorPrefix.cacheableChars)} of ${n(ci.extractorPrefix.inputChars)}; ${ci.extractorPrefix.pairedWithCompaction} of ${ci.extractorPrefix.requests} requests had a compactor request for their slice before them; ${pct(p?.compactorInput?.extractorPrefix?.share)} at a conversational pace). ` +
            "Counted as §7 counts: whole identical leading messages, then the common prefix of the first that differs; real caches also need a minimum prefix and serve it in blocks. " +
            `Not in that share: ${n(ci.extractorPrefix.withOtherSchema)} of the ${n(ci.extractorPrefix.requests)} extractions were held to another structured-output schema than their compaction (the facts schema beside the projection's or none), and a provider that caches the schema ahead of the messages, as OpenAI documents for \`response_format\`, would serve none of those.`,
        ]),
    "",
    `Ingest: ${n(ci.conversationChars)} chars in ${n(ci.ingestSeconds, 1)} s (${n(ci.ingestCharsPerSecond)} chars/s through \`POST …/events/batch\`, 33 groups per request, with a context call after each batch).`,
  ];
}
