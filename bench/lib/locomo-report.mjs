// The report's LoCoMo section (§12): its targets, tables and prose, all computed from the run's
// numbers (lib/locomo-phase.mjs); nothing here states a result the data did not give.

const n = (/** @type {number | null | undefined} */ v) => (v === null || v === undefined || !Number.isFinite(v) ? "–" : Math.round(v).toLocaleString("en-US"));
const pct = (/** @type {number | null | undefined} */ v) => (v === null || v === undefined ? "–" : `${(v * 100).toFixed(1)}%`);
const pts = (/** @type {number} */ v) => `${v >= 0 ? "+" : "−"}${Math.abs(v * 100).toFixed(1)} points`;
const SERVED_TARGET = 0.9;
const MARGIN = 0.05;
const FLAT = 0.2;

/** @param {string[]} header @param {(string | number)[][]} rows */
const table = (header, rows) => [`| ${header.join(" | ")} |`, `| ${header.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");

/**
 * The section's targets, each with what was measured and its verdict.
 * @param {any} m the LoCoMo metrics, or undefined when the section did not run
 * @returns {string[][]}
 */
export function locomoTargets(m) {
  if (m === undefined) return [["LoCoMo (§12)", "the section did not run", "not measured"]];
  const t = m.totals.rows;
  const verdict = (/** @type {boolean} */ met) => (met ? "**met**" : "**not met**");
  const l = m.latency;
  const flat = (/** @type {number} */ ratio) => ratio >= 1 - FLAT && ratio <= 1 + FLAT;
  return [
    [`LoCoMo (§12): served (boundary + memory envelope + exact tail) holds an evidence turn for ≥ ${SERVED_TARGET * 100}% of ${n(m.totals.questions)} questions`, `${pct(t.served.share)} (${n(t.served.found)}/${n(m.totals.questions)})`, verdict(t.served.share >= SERVED_TARGET)],
    [`LoCoMo (§12): served ≥ BM25 + tail + ${MARGIN * 100} points`, `served ${pct(t.served.share)} vs BM25 + tail ${pct(t.bm25Tail.share)} (${pts(t.served.share - t.bm25Tail.share)})`, verdict(t.served.share >= t.bm25Tail.share + MARGIN - 1e-9)],
    [`LoCoMo (§12): recall's search ≥ plain BM25 + ${MARGIN * 100} points (both within ${n(m.policy.memoryBudgetChars)} chars)`, `search ${pct(t.search.share)} vs BM25 ${pct(t.bm25.share)} (${pts(t.search.share - t.bm25.share)})`, verdict(t.search.share >= t.bm25.share + MARGIN - 1e-9)],
    [
      `LoCoMo (§12): recall latency (\`GET …/context?agent=&query=\`) flat within ±${FLAT * 100}% when ${n(l.load.conversations)} other conversations share the shard`,
      `p50 ${l.before.p50} → ${l.after.p50} ms (×${l.p50Ratio}); p95 ${l.before.p95} → ${l.after.p95} ms (×${l.p95Ratio})${l.control === null ? "" : `; control on the other shard ×${l.control.p50Ratio} / ×${l.control.p95Ratio}`}`,
      verdict(flat(l.p50Ratio) && flat(l.p95Ratio)),
    ],
  ];
}

/** The shares of one summary as table cells. @param {any} s */
const shares = (s) => [
  n(s.questions),
  `**${pct(s.rows.served.share)}**`,
  pct(s.rows.envelopeOnly.share),
  pct(s.rows.withEntries.share),
  pct(s.rows.search.share),
  pct(s.rows.bm25.share),
  pct(s.rows.bm25Tail.share),
];

const HEADER = ["questions", "served", "served, envelope only", "served incl. entries", "search", "BM25", "BM25 + tail"];

/**
 * The totals table (per conversation and in total), as the run's log prints it too.
 * @param {any} m
 */
export function locomoTotalsTable(m) {
  return table(
    ["conversation", ...HEADER, "mean served chars", "mean memory envelope chars"],
    [
      ...m.perConversation.map((/** @type {any} */ c) => [c.conversation, ...shares(c), n(c.meanServedChars), n(c.meanMemoryEnvelopeChars)]),
      ["**total**", ...shares(m.totals), n(m.totals.meanServedChars), n(m.totals.meanMemoryEnvelopeChars)],
    ],
  );
}

/**
 * The section's lines.
 * @param {any} m the LoCoMo metrics
 * @returns {string[]}
 */
export function locomoSection(m) {
  const d = m.dataset;
  const t = m.totals;
  const l = m.latency;
  const per = m.perConversation;
  const compactions = per.reduce((/** @type {number} */ k, /** @type {any} */ c) => k + c.compactions, 0);
  const chars = per.reduce((/** @type {number} */ k, /** @type {any} */ c) => k + c.chars, 0);
  const refusals = per.flatMap((/** @type {any} */ c) => c.refusals);
  const tailDiffers = per.reduce((/** @type {number} */ k, /** @type {any} */ c) => k + c.responsesWithAnotherTail, 0);
  const budget = n(m.policy.memoryBudgetChars);
  const out = [
    `The LoCoMo conversations (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024; snap-research/locomo, CC BY-NC 4.0; the compact copy in \`bench/data/locomo\`): **${d.conversations.length} conversations** (${d.conversations.join(", ")}), ${n(d.turns)} turns (${n(chars)} characters as \`Speaker: text\`), **${n(d.questions)} questions** with their evidence turns. ${d.heldOut.join(" and ")} are held out for acceptance and are not in the copy. ` +
      `Preparing the copy dropped ${n(d.droppedQuestions)} question(s) left without evidence and ${d.droppedEvidenceIds.length} evidence id(s) that name no turn (${d.droppedEvidenceIds.join(", ") || "none"}); ${n(d.repairedEvidenceIds)} id(s) written with a stray colon or leading zeros were read as the turn they spell, and ${n(d.splitEvidenceStrings)} string(s) naming several ids were split.`,
    "",
    `Each conversation is one Telegram group replayed through the real webhook (\`POST /telegram/${m.bot}/webhook\`, ${n(m.ingest.webhookUpdates)} updates; both speakers as users, each turn a message dated from its session's date-time, a shared photo's caption appended as \`[photo: …]\`), session by session with compaction caught up after each, into a Worker of its own with no model key (offline compactor and offline extractor): one agent (\`${m.agent}\`, sources \`telegram:${m.bot}:*\`) serves all of them, policy trigger ${n(m.policy.triggerInputChars)} / retain ${n(m.policy.retainInputChars)}, memory budget ${budget} chars. ` +
      `${compactions} compactions in ${m.ingest.seconds} s; ${n(m.ingest.pagesExtracted)} pages under \`extracted/\` (settled ${m.ingest.pagesSettleSeconds} s after the last session); the questions took ${m.askSeconds} s.` +
      (m.storage === undefined
        ? ""
        : ` **Storage:** the replay left ${n(m.storage.bytes)} bytes of D1 in use (pages less free pages over every database, after over before; compactions and extraction settled, before any question) for ${n(m.storage.messages)} messages of ${n(m.storage.chars)} characters: ${n(m.storage.bytesPer1000Messages)} bytes per 1,000 messages, **${m.storage.bytesPerChar.toFixed(2)} bytes per character said** (the log with its hashes, the runs, boundaries, the turn index and extracted memory).` +
          (m.storage.tables === undefined
            ? ""
            : ` By table (its indexes and full-text shadow tables with it, whole pages), × the characters said: ${Object.entries(m.storage.tables)
                .map(([table, bytes]) => `\`${table}\` ${n(bytes)} (${(bytes / m.storage.chars).toFixed(2)}×)`)
                .join(", ")}.`) +
          (m.storage.floor === undefined
            ? ""
            : ` The floor the log's guarantees set (\`lib/log-floor.mjs\`, as in §10): the replay's ${n(m.storage.floor.events)} events spelled again as small as each guarantee allows take ${n(m.storage.floor.bytes)} bytes (${(m.storage.floor.bytes / m.storage.chars).toFixed(2)}× the characters said), of which the events' hashes ${(m.storage.floor.hashes / m.storage.chars).toFixed(2)}× and the skipped runs ${(m.storage.floor.skippedRuns / m.storage.chars).toFixed(2)}×; with the turn index as it is (\`turn_terms\` ${((m.storage.tables?.turn_terms ?? 0) / m.storage.chars).toFixed(2)}×), ${((m.storage.floor.bytes + (m.storage.tables?.turn_terms ?? 0)) / m.storage.chars).toFixed(2)}× before any summary or extracted page.`)),
    "",
    "A question counts as found when at least one of its evidence turns is in what the approach gives the agent:",
    "",
    `- **served**: \`GET …/context?agent=&query=<question>\` (boundary, amendment, memory envelope, exact tail). An evidence message is served when its message id is among the manifest's \`memory.turns\`, its sequence number is within the exact tail's, or its exact text is in the served messages (envelope escaping undone). **Envelope only**: the memory envelope alone (its turns, or the exact text in it). **Incl. entries**: served, or an extracted-page entry in the memory envelope names an evidence message (\`msg <id>\`; message ids are unique across the agent's chats).`,
    `- **search**: \`GET …/memory/search?q=<question>&limit=${m.policy.searchLimit}\`, results in order while their content fits ${budget} chars; found when a turn result's source is an evidence message (or a result's content is an evidence turn's text). Not what is served: what the search finds.`,
    `- **BM25**: plain BM25 (no stemming) over every raw turn of the conversation as \`Speaker: text\`, top turns within ${budget} chars (computed in Node).`,
    `- **BM25 + tail**: the same over the turns older than the served exact tail, within ${budget} chars, plus that tail (mean ${n(t.meanBm25TailChars)} chars).`,
    "",
    locomoTotalsTable(m),
    "",
    `Of the questions served, an evidence turn was in the exact tail for ${n(t.servedBy.tail)}, a recalled turn of the memory envelope for ${n(t.servedBy.memoryTurn)} (both for some), and only its exact text was served (in the boundary or an entry, not as its message) for ${n(t.servedBy.textOnly)}. ` +
      `${n(t.responsesWithMemoryEnvelope)} of ${n(t.questions - t.refused)} responses carried a memory envelope (mean ${n(t.meanMemoryEnvelopeChars)} chars, max ${n(t.maxMemoryEnvelopeChars)}), ${t.responsesWithEntries === undefined ? "–" : n(t.responsesWithEntries)} of them with extracted-page entries citing a message; served context mean ${n(t.meanServedChars)} chars, max ${n(t.maxServedChars)}.` +
      (refusals.length > 0 ? ` **${refusals.length} call(s) were refused** (counted as not found; first: HTTP ${refusals[0].status} ${refusals[0].body}).` : " No call was refused.") +
      (tailDiffers > 0 ? ` ${tailDiffers} response(s) served another tail than the plain context call.` : ""),
    "",
    "By LoCoMo category:",
    "",
    table(["category", ...HEADER], Object.entries(m.byCategory).map(([k, c]) => [`${k} ${/** @type {any} */ (c).name}`, ...shares(c)])),
    "",
    table(
      ["conversation", "turns", "sessions", "compactions", "boundary envelope chars", "exact tail (turns / chars)", "shard", "replay s"],
      per.map((/** @type {any} */ c) => [c.conversation, n(c.turns), n(c.sessions), `${c.completed}/${c.compactions}`, n(c.boundaryEnvelopeChars), `${n(c.tailTurns)} / ${n(c.tailChars)}`, c.shard ?? "–", c.replaySeconds]),
    ),
    "",
    `**Recall latency.** \`GET …/context?agent=&query=<question>\` for ${l.locomo} (\`${l.conversation}\`, the first conversation of those whose shard holds the fewest LoCoMo conversations: on ${l.shard} of ${l.openShards.join(", ")}, which held ${l.otherLocomoOnShard.length === 0 ? "no other conversation" : `also ${l.otherLocomoOnShard.join(", ")}`}), ${l.rounds === 1 ? "once" : `${l.rounds} rounds`} over its first ${l.questions} questions after a warm-up of ${l.warmup ?? 5}${l.control === null ? "" : `, alternating call by call with a control, ${l.control.locomo} on ${l.control.shard}, whose shard got nothing`}, then again after ${n(l.load.conversations)} other conversations were added to the same shard (\`POST …/events/batch\`, ${n(l.load.messagesEach)} short messages each, ${n(l.load.messages)} messages and ${n(l.load.chars)} characters in all, made of the measured conversation's words and speakers; ${n(l.load.idsSkipped)} candidate ids that hash to another shard were not used; placement checked in the stopped Worker's control database: ${l.verifiedOnShard === null ? "could not be read" : `${n(l.verifiedOnShard)} of ${n(l.load.conversations)} on ${l.verifiedShard}`}). Single samples on a shared 2-core machine: read the ratio with that noise.`,
    "",
    table(
      ["shard holds", "calls", "p50 ms", "p95 ms", "mean ms", "max ms"],
      [
        [`${l.locomo}${l.otherLocomoOnShard.length === 0 ? " alone" : ` + ${l.otherLocomoOnShard.length} LoCoMo`}`, n(l.before.n), l.before.p50, l.before.p95, l.before.mean, l.before.max],
        [`… + ${n(l.load.conversations)} other conversations`, n(l.after.n), l.after.p50, l.after.p95, l.after.mean, l.after.max],
        ["ratio", "", `×${l.p50Ratio}`, `×${l.p95Ratio}`, "", ""],
        ...(l.control === null
          ? []
          : [
              [`control: ${l.control.locomo} on ${l.control.shard}, before`, n(l.control.before.n), l.control.before.p50, l.control.before.p95, l.control.before.mean, l.control.before.max],
              [`control: ${l.control.locomo} on ${l.control.shard}, after`, n(l.control.after.n), l.control.after.p50, l.control.after.p95, l.control.after.mean, l.control.after.max],
              ["control ratio (the machine's drift)", "", `×${l.control.p50Ratio}`, `×${l.control.p95Ratio}`, "", ""],
            ]),
      ],
    ),
    "",
    `Model calls for the agent's model: ${n(m.modelCalls)} (the Worker has no key).`,
  ];
  return out;
}
