// The report's scale section (§13): each operation's cost on a long conversation against a short
// one (lib/scale-phase.mjs), its table and the judged ratios, all from the run's numbers.

/** An operation on the long conversation costs at most this many times its cost on the short one. */
const SCALE_TARGET = 2;

const n = (/** @type {number | null | undefined} */ v, digits = 0) =>
  v === null || v === undefined || !Number.isFinite(v) ? "–" : v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** @param {string[]} header @param {(string | number)[][]} rows */
const table = (header, rows) => [`| ${header.join(" | ")} |`, `| ${header.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");

/** What each operation is. */
const OPERATIONS = /** @type {Record<string, string>} */ ({
  append: "`POST …/events`, one source (preflight and its skipped run)",
  context: "`GET …/context?agent=`",
  recall: "`GET …/context?agent=&query=` (memory envelope)",
  search: "`GET …/memory/search?agent=&q=`",
  eventsPage: "`GET …/events?after=&limit=100` (the middle of the log)",
  chainPage: "`GET …/chain?agent=&limit=1`",
  verifyFirstPage: "`GET …/verify/links`, the first link",
  verifyMiddlePage: "`GET …/verify/links`, a middle link",
  verifyLastPage: "`GET …/verify/links`, the last link (through the high-water mark)",
  activation: "a new agent's first message (its epoch activated on this history)",
});

/**
 * The section's row of the Targets table: every operation's statements and rows read at the long
 * length within 2× the short one's.
 * @param {any} s the scale metrics, or undefined when the section did not run
 */
export function scaleTargets(s) {
  if (s === undefined) return [];
  const [short, long] = s.lengths;
  const rows = [ratioTarget(`every operation (§13) at ${n(long?.events)} events within ${SCALE_TARGET}× its D1 statements and rows read at ${n(short?.events)}`, s.ratios)];
  if (s.chain === undefined) return rows;
  const [few, many] = s.chain.lengths;
  const paged = many.paged;
  return [
    ...rows,
    ratioTarget(`every operation (§13) on a chain of ${n(many.boundaries)} boundaries within ${SCALE_TARGET}× its cost on one of ${n(few.boundaries)}`, s.chain.ratios),
    [
      `the whole chain of ${n(many.boundaries)} boundaries verified through \`verify/links\` (the whole-chain call refuses it and names the paged one)`,
      `${n(paged.links)} links in ${n(paged.pages)} pages, ${paged.valid ? "every page valid" : "**a page not valid**"}, at most ${n(paged.maxStatements)} statements and ${n(paged.maxRowsRead)} rows a page; the whole call: ${many.wholeVerifyStatus}`,
      paged.valid && paged.links >= many.boundaries && many.wholeVerifyStatus === 413 ? "**met**" : "**not met**",
    ],
  ];
}

/** @param {string} what @param {Record<string, any>} ratios */
function ratioTarget(what, ratios) {
  const over = Object.entries(ratios).filter(([, r]) => r.statements > SCALE_TARGET || r.rowsRead > SCALE_TARGET);
  return [
    what,
    over.length === 0 ? "all within" : over.map(([name, r]) => `${name}: ${n(r.statements, 2)}× statements, ${n(r.rowsRead, 2)}× rows`).join("; "),
    over.length === 0 ? "**met**" : "**not met**",
  ];
}

/** @param {any} s the scale metrics @returns {string[]} */
export function scaleSection(s) {
  if (s === undefined) return ["Not run."];
  const [short, long] = s.lengths;
  const lengthLine = (/** @type {any} */ l) => `${n(l.events)} events (${n(l.sources)} sources, ${n(l.boundaries)} boundaries; loaded and caught up in ${n(l.loadSeconds, 1)} s)`;
  const rows = operationRows(short, long, s.ratios);
  return [
    `Two conversations on one Worker of their own (offline compactor and extractor), differing only in length: ${lengthLine(short)} and ${lengthLine(long)}. One agent serves both from their first message (trigger ${n(s.policy.triggerInputChars)}, retain ${n(s.policy.retainInputChars)}, at most ${n(s.policy.maxFrozenChars)} characters frozen a run, so a link's slice is the same size whether the compactor kept up or fell behind the load), so each source was preflighted and each chain compacted as it grew; each conversation was loaded through \`POST …/events/batch\`, 100 sources a request. Each operation ran ${s.samples} times on each (a new agent's activation ${s.activations} times, one agent each), through the D1 meter: statements, rows read and bytes read by the Worker and the conversation's object, means; time p50 at the client, this machine's (load average ${s.loadAverageAtStart.join(" / ")} at the start, ${s.loadAverageAtEnd.join(" / ")} at the end).`,
    "",
    table(["operation", "statements (short / long)", "rows read", "bytes read", "p50 ms", "long ÷ short (statements / rows)"], rows),
    "",
    `The target is ${SCALE_TARGET}× on statements and rows read: what an operation reads follows its own work (a page, a slice, a trigger's worth of turns), not the history before it.`,
    "",
    "What each reads: the context call and a verify page read their link's frozen slice through the first message after it that opens a group, with the events related to them up to the run's trigger (the log as the run saw it), not the messages appended between the slice and the trigger; the short conversation's middle link is its last. Recall reads each query term's matches newest first, at most 1,000 per term (`TERM_SCAN`), so it grows with the conversation only until every term reaches that.",
    ...chainSection(s.chain),
  ];
}

/** @param {any} short @param {any} long @param {Record<string, any>} ratios */
function operationRows(short, long, ratios) {
  return Object.keys(OPERATIONS)
    .filter((name) => short.operations[name] !== undefined && long.operations[name] !== undefined)
    .map((name) => {
      const a = short.operations[name];
      const b = long.operations[name];
      const r = ratios[name];
      return [OPERATIONS[name] ?? name, `${n(a.statements, 1)} / ${n(b.statements, 1)}`, `${n(a.rowsRead, 1)} / ${n(b.rowsRead, 1)}`, `${n(a.bytesRead)} / ${n(b.bytesRead)}`, `${n(a.p50Ms, 1)} / ${n(b.p50Ms, 1)}`, `${n(r.statements, 2)}× / ${n(r.rowsRead, 2)}×`];
    });
}

/** The long chain's part of the section. @param {any} chain */
function chainSection(chain) {
  if (chain === undefined) return [];
  const [few, many] = chain.lengths;
  const line = (/** @type {any} */ l) => `${n(l.boundaries)} boundaries (${n(l.events)} events, ${n(l.sources)} sources; loaded and caught up in ${n(l.loadSeconds, 1)} s)`;
  const paged = many.paged;
  return [
    "",
    `**A long chain.** A second agent compacts a boundary every dozen or so messages (trigger ${n(chain.policy.triggerInputChars)}, retain ${n(chain.policy.retainInputChars)}, at most ${n(chain.policy.maxFrozenChars)} characters frozen a run), on two conversations of its own: ${line(few)} and ${line(many)}, loaded a round at a time until the chain reached its length.`,
    "",
    table(["operation", "statements (short / long chain)", "rows read", "bytes read", "p50 ms", "long ÷ short (statements / rows)"], operationRows(few, many, chain.ratios)),
    "",
    `The whole chain verified a page at a time (\`GET …/verify/links?limit=50\`, following \`nextAfter\`): ${n(paged.links)} links in ${n(paged.pages)} pages, ${paged.valid ? "every page valid" : "**a page not valid**"}, at most ${n(paged.maxStatements)} D1 statements and ${n(paged.maxRowsRead)} rows read by a page, ${n(paged.seconds, 1)} s in all; \`GET …/verify\` (the whole chain in one call) answered ${many.wholeVerifyStatus}.`,
  ];
}
