// The report's memory section (§9): the table, its verdicts and its prose, all computed from the
// run's numbers (lib/memory-phase.mjs); nothing here states a result the data did not give.

const n = (/** @type {number | null | undefined} */ v) => (v === null || v === undefined || !Number.isFinite(v) ? "–" : Math.round(v).toLocaleString("en-US"));
const pct = (/** @type {number | null | undefined} */ v) => (v === null || v === undefined ? "–" : `${(v * 100).toFixed(1)}%`);
const RECALL_TARGET = 0.85;

/** @param {any} a an approach's summary, or `{ notMeasured }` */
const measured = (a) => a !== undefined && a.notMeasured === undefined;

/**
 * The three targets of the section, each with what was measured and its verdict.
 * @param {any} m the memory metrics, or undefined when the section did not run
 * @returns {string[][]}
 */
export function memoryTargets(m) {
  const recall = m?.approaches.recall;
  const ok = measured(recall);
  const verdict = (/** @type {boolean} */ met) => (ok ? (met ? "**met**" : "**not met**") : "not measured");
  const why = ok ? "" : `not measured: ${recall?.notMeasured ?? "the section did not run"}`;
  const bm25 = m?.approaches.bm25;
  const chainBm25 = m?.approaches.chainBm25;
  return [
    [`memory (§9): ≥ ${RECALL_TARGET * 100}% of ${m?.conversation.facts ?? "the"} planted facts' questions answered by what boundary chain + recall serves`, ok ? `${pct(recall.share)} (${recall.answered}/${recall.questions})` : why, verdict(ok && recall.share >= RECALL_TARGET)],
    [
      "memory (§9): recall beats plain BM25 over the raw turns at the same memory budget",
      ok ? `recall ${pct(recall.share)} vs BM25 + tail ${pct(bm25.share)}, vs chain + BM25 ${pct(chainBm25.share)}` : why,
      verdict(ok && recall.share > bm25.share && recall.share > chainBm25.share),
    ],
    [
      `memory (§9): served context ≤ trigger (${n(m?.policy.triggerInputChars)}) + the memory envelope`,
      ok ? `largest boundary + amendment + tail ${n(m.policy.triggerInputChars + m.recall.maxCharsOverTriggerWithoutMemory)} chars; memory envelope ≤ ${n(m.recall.memoryEnvelopeMaxChars)} chars (budget ${n(m.policy.memoryBudgetChars)})` : why,
      verdict(ok && m.recall.maxCharsOverTriggerWithoutMemory <= 0),
    ],
  ];
}

/** @param {string[]} header @param {(string | number)[][]} rows */
const table = (header, rows) => [`| ${header.join(" | ")} |`, `| ${header.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");

/**
 * The section's lines.
 * @param {any} m the memory metrics
 * @returns {string[]}
 */
export function memorySection(m) {
  const c = m.conversation;
  const a = m.approaches;
  const s = m.served;
  const budget = `${n(m.policy.memoryBudgetChars)} chars (${m.policy.memoryBudgetFromManifest ? "the agent's `memoryBudgetChars`, from the served manifest" : "the contract's default: the served manifest names no `memoryBudgetChars`"})`;
  const line = (/** @type {string} */ label, /** @type {any} */ x) =>
    measured(x) ? [label, `**${pct(x.share)}** (${x.answered}/${x.questions})`, pct(x.updatedShare), pct(x.notUpdatedShare), n(x.meanChars), n(x.maxChars)] : [label, `not measured: ${x.notMeasured}`, "–", "–", "–", "–"];
  const rows = [
    line(`keep-the-newest truncation at ${n(s.truncationBudget)} chars (trigger + memory budget; computed from the turns)`, a.truncation),
    line("boundary chain alone (`GET …/context?agent=`; measured)", a.chain),
    line(`plain BM25 over the raw turns older than the tail, top turns within ${n(m.policy.memoryBudgetChars)} chars, + the same tail (computed)`, a.bm25),
    line(`boundary chain + plain BM25 turns within ${n(m.policy.memoryBudgetChars)} chars (computed over the measured chain context)`, a.chainBm25),
    line(`recall's search alone (\`GET …/memory/search?q=<question>\`, measured), results in rank order within ${n(m.policy.memoryBudgetChars)} chars + the same tail (not what is served)`, a.search),
    line("**boundary chain + recall** (`GET …/context?agent=&query=<question>`; measured)", a.recall),
  ];
  const x = m.extraction;
  const d1 = m.ingest.d1;
  const per1000 = (/** @type {number} */ v) => n((v / m.ingest.messages) * 1000);
  const tables = Object.entries(x.rowsByTable ?? {}).filter(([name]) => (x.extractionTables ?? []).includes(name));
  return [
    `A generated group chat (seed ${m.seed}): **${n(c.chars)} characters**, ${n(c.turns)} turns (${n(c.messages)} messages from ${c.speakers} people plus the agent's replies) in ${c.sessions} sessions, with **${c.facts} planted facts** — people's preferences, dates, venues, budgets, headcounts, hotels, flights, deadlines — each stated once, ${c.restated} restated later in other words and ${c.updated} updated later (the latest value is the truth). ` +
      "Every value is a string that occurs in no turn but its own fact's, so a question counts as answered when its latest value appears verbatim in what the agent is served for it. " +
      `Replayed through \`POST …/events/batch\` session by session into a Worker of its own with no model key (offline compactor), policy trigger ${n(m.policy.triggerInputChars)} / retain ${n(m.policy.retainInputChars)}, compaction caught up after each session: ${m.ingest.compactions} compactions, ${m.ingest.boundaries} boundaries${s.compactor ? ` by \`${s.compactor.provider}\`` : ""}, in ${m.ingest.seconds} s. ` +
      `Memory budget: ${budget}. ${c.factsInServedTail} of the ${c.facts} facts have a turn in the served tail (${s.tailTurns} turns, ${n(s.tailChars)} chars).`,
    "",
    table(["approach", "questions answered", "of updated facts", "of the rest", "mean served chars", "max served chars"], rows),
    "",
    ...prose(m),
    "",
    `**Extraction cost.** Model calls: **${x.modelCalls}** (${x.modelCallsPer1000Messages} per 1,000 messages) — ${x.extractor}. ` +
      (x.extractedPages === 0
        ? `**No page under \`extracted/\`**: this Worker extracted nothing (the agent has ${x.pages} pages in all). `
        : `Pages: ${x.extractedPages} under \`extracted/\` (${x.extractedVersions} versions in all; ${x.pages} pages of the agent), settled ${x.settleWaitSeconds} s after the last session` +
          `${x.rowsByTable?.extraction_runs === undefined ? "" : ` (${n(x.rowsByTable.extraction_runs)} extraction runs recorded for ${m.ingest.boundaries} boundaries)`}; ` +
          `their live versions hold the latest value of **${x.factsOnPages} of ${c.facts} facts (${pct(x.factsOnPagesShare)})**, of the updated ones ${pct(x.updatedFactsOnPagesShare)}. `) +
      (x.rowsByTable === null || x.rowsByTable === undefined
        ? `D1 rows stored: not measured (${x.rowsNote}).`
        : `D1 rows the memory keeps, counted in the database after the run (extraction writes from the queue consumer, which the request meter does not see): **${n(x.extractionRowsPer1000Messages)} per 1,000 messages** (${tables.map(([name, rowsIn]) => `\`${name}\` ${n(rowsIn)}`).join(", ") || "no extraction tables"})` +
          `${(x.turnIndexTables ?? []).length > 0 ? `; recall's turn index (${x.turnIndexTables.map((/** @type {string} */ t) => `\`${t}\``).join(", ")}) ${n(x.turnIndexRowsPer1000Messages)} per 1,000 messages` : ""}. `) +
      `The append path, through the D1 meter on every batch: ${per1000(d1.rowsWritten)} rows written, ${per1000(d1.statements)} statements and ${per1000(d1.roundTrips)} round trips per 1,000 messages (events, preflight records and whatever index the append maintains).`,
  ];
}

/** What the table says, in words the numbers choose. @param {any} m @returns {string[]} */
function prose(m) {
  const a = m.approaches;
  const out = [];
  const chain = a.chain;
  out.push(
    `The boundary chain alone served ${pct(chain.share)} of the answers with a boundary envelope of ${n(m.served.boundaryEnvelopeChars)} chars: ` +
      (chain.share >= RECALL_TARGET
        ? "the boundaries themselves carry most facts."
        : `of the facts older than the tail, ${chain.answered === 0 ? "none" : chain.share >= 0.5 ? "many but not most" : "few"} survived ${m.ingest.boundaries} compactions of ${n(m.conversation.chars)} characters into the head boundary.`) +
      ` Keep-the-newest truncation at ${n(m.served.truncationBudget)} chars (${m.served.truncationBudget > chain.meanChars ? "more" : "no more"} than the chain's ${n(chain.meanChars)}) answered ${pct(a.truncation.share)}: it holds the last ${n(m.served.truncationTurns)} turns of ${n(m.conversation.turns)}.`,
  );
  out.push(
    `Plain BM25 over the raw turns with the question as the query answered ${pct(a.bm25.share)} beside the tail and ${pct(a.chainBm25.share)} beside the chain` +
      (a.bm25.updatedShare !== null && a.bm25.notUpdatedShare !== null && a.bm25.updatedShare < a.bm25.notUpdatedShare
        ? `; it does worse on updated facts (${pct(a.bm25.updatedShare)} against ${pct(a.bm25.notUpdatedShare)}), where the superseded statement competes with the update for the same budget.`
        : "."),
  );
  if (measured(a.search)) out.push(`Recall's search on its own (its results in rank order within the memory budget, beside the tail) held the latest value for ${pct(a.search.share)} (updated facts ${pct(a.search.updatedShare)}).`);
  if (measured(a.recall)) {
    const r = a.recall;
    const best = Math.max(a.truncation.share, chain.share, a.bm25.share, a.chainBm25.share);
    out.push(
      `With recall the agent was served the latest value for ${pct(r.share)} of the questions (updated facts ${pct(r.updatedShare)}), ` +
        (r.share > best ? `above every baseline (the best of them ${pct(best)})` : `**not above the best baseline** (${pct(best)})`) +
        `, at a mean of ${n(r.meanChars)} served chars (max ${n(r.maxChars)}); ${m.recall.responsesWithMemoryEnvelope} of ${r.questions} responses carried a memory envelope, at most ${n(m.recall.memoryEnvelopeMaxChars)} chars.`,
    );
    const weakest = Object.entries(r.byAttribute ?? {})
      .filter(([, share]) => share !== null && share < 1)
      .sort(([, x], [, y]) => x - y)
      .slice(0, 3);
    if (weakest.length > 0) out.push(`Recall missed most on ${weakest.map(([attribute, share]) => `${attribute} (${pct(share)} answered)`).join(", ")}; the missed questions are listed in the JSON (\`approaches.recall.missed\`).`);
  } else {
    out.push(`Boundary chain + recall: **not measured** — ${a.recall.notMeasured}.`);
  }
  return [out.join(" ")];
}
