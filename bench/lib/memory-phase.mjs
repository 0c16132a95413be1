// The memory section: does what the agent is served still hold the facts of a long group chat after
// compaction? A generated multi-session conversation (lib/memory-conversation.mjs) is replayed into a
// Worker of its own that compacts with the offline compactor (no model key), session by session,
// with compaction caught up after each; then every planted fact's question is asked at the end, and
// the report counts the questions whose latest value is in what each approach serves.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { Api, LogFollower, sleep, waitForCatchUp } from "./api.mjs";
import { bm25Index, newestWithin, packRanked } from "./memory-baselines.mjs";
import { memoryConversation, memoryEvents, renderedTurn } from "./memory-conversation.mjs";
import { max, mean, round } from "./stats.mjs";
import { applyMigrations, createToken, freePort, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";
import { INSTRUMENTED_MAIN } from "./instrumented.mjs";

export const MEMORY_POLICY = { triggerInputChars: 20_000, retainInputChars: 10_000 };
/** The context policy's memory budget when the served manifest does not say (the contract's default). */
const DEFAULT_MEMORY_BUDGET = 4_000;
const SEED = 15;
const AGENT = "b-memory";
const MODEL = "bench-memory";
const CONVERSATION = "api:bench:memory";
const MAX_BATCH_EVENTS = 100;
const MEMORY_ENVELOPE = '<untrusted-history-summary kind="memory">';

/** @typedef {{ role: string, content: string }} Message */

/**
 * Starts the memory section's own Worker (its own D1/R2/queue state; no OPENAI_API_KEY, so the
 * offline compactor and the offline extractor run), measures, stops it, and returns the metrics.
 * @param {{ root: string, appDir: string, workDir: string, fake: { baseUrl: string, calls: { model: string }[] }, log: (line: string) => void, quick: boolean }} o
 */
export async function runMemoryPhase({ root, appDir, workDir, fake, log, quick }) {
  const persistDir = join(workDir, "memory-state");
  const envFile = join(workDir, "memory.env");
  applyMigrations(root, appDir, persistDir);
  const token = createToken(root, appDir, persistDir, ["api:*", "agent:*"], "bench-memory");
  // The fake stays the base URL so that a model call, if any code made one without a key, would be counted.
  await writeEnvFile(envFile, { OPENAI_BASE_URL: fake.baseUrl, QUEUE_RETRY_BASE_SECONDS: "0", COMPACTION_BACKOFF_BASE_SECONDS: "1", D1_METER: "on" });
  const worker = await startWorker({ root, appDir, persistDir, envFile, port: await freePort(8792), logPath: join(workDir, "wrangler-memory.log"), log, main: INSTRUMENTED_MAIN });
  /** @type {Record<string, any>} */
  let metrics;
  try {
    metrics = await measure(new Api(worker.url, token), log, quick);
  } finally {
    await worker.stop();
  }
  metrics.extraction = { ...metrics.extraction, ...(await storedRows(persistDir, metrics.ingest.messages)) };
  const calls = fake.calls.filter((c) => c.model === MODEL).length;
  metrics.extraction.modelCalls = calls;
  metrics.extraction.modelCallsPer1000Messages = round((calls / metrics.ingest.messages) * 1000, 2);
  metrics.extraction.extractor = "offline (the memory Worker has no OPENAI_API_KEY, so compaction and extraction run Foldline's offline code; model calls are the fake's count of requests for this agent's model)";
  return metrics;
}

/** @param {Api} api @param {(line: string) => void} log @param {boolean} quick */
async function measure(api, log, quick) {
  await api.registerAgent({ agentId: AGENT, sources: [CONVERSATION], model: MODEL, policy: MEMORY_POLICY });
  const conversation = memoryConversation({ seed: SEED, targetChars: quick ? 150_000 : 520_000 });
  const { turns, facts } = conversation;
  log(`[memory] ${conversation.chars.toLocaleString("en-US")} chars, ${turns.length} turns in ${conversation.sessions} sessions, ${facts.length} planted facts (${facts.filter((f) => f.updated).length} updated, ${facts.filter((f) => f.restated).length} restated)`);

  // Ingest session by session, every batch through the D1 meter; compaction catches up between sessions.
  const follower = new LogFollower(api, CONVERSATION);
  const path = `${Api.conversationPath(CONVERSATION)}/events/batch`;
  const appendD1 = { roundTrips: 0, statements: 0, rowsRead: 0, rowsWritten: 0 };
  const started = Date.now();
  for (let s = 0; s < conversation.sessions; s++) {
    const events = memoryEvents(turns.filter((t) => t.session === s), AGENT);
    for (let i = 0; i < events.length; i += MAX_BATCH_EVENTS) {
      const { d1 } = await api.metered("memory batch append", [200, 201], "POST", path, { events: events.slice(i, i + MAX_BATCH_EVENTS) });
      for (const key of Object.keys(appendD1)) appendD1[/** @type {keyof typeof appendD1} */ (key)] += d1[/** @type {keyof typeof appendD1} */ (key)];
    }
    await waitForCatchUp({ api, follower, agentId: AGENT, trigger: MEMORY_POLICY.triggerInputChars, onWait: (w) => log(`  session ${s + 1}: ${w}`) });
    if ((s + 1) % 10 === 0) log(`  ${s + 1}/${conversation.sessions} sessions in, ${follower.plannedRuns().length} compactions`);
  }
  const ingestSeconds = (Date.now() - started) / 1000;
  const pages = await settledPages(api, log);
  // What extraction kept, whatever recall then serves: the facts whose latest value is on a live page.
  const pageText = [];
  for (const page of pages.extracted) {
    const url = `${Api.conversationPath(CONVERSATION)}/memory/pages/${page.path.split("/").map(encodeURIComponent).join("/")}?agent=${encodeURIComponent(AGENT)}`;
    pageText.push((await api.expect("extracted page", [200], "GET", url)).json().content);
  }
  const onPages = facts.map((f) => pageText.some((text) => text.includes(f.expected)));
  const messages = turns.filter((t) => t.role === "user").length;
  log(`[memory] ingested in ${ingestSeconds.toFixed(1)} s; ${follower.plannedRuns().length} compactions; ${pages.extracted.length} pages under extracted/`);

  // What each approach serves for each question.
  const chainResponse = (await api.context(CONVERSATION, AGENT)).json();
  const chain = served(chainResponse.messages);
  const policy = chainResponse.manifest.policy ?? {};
  const memoryBudget = typeof policy.memoryBudgetChars === "number" ? policy.memoryBudgetChars : DEFAULT_MEMORY_BUDGET;
  const rendered = turns.map(renderedTurn);
  const tailMessages = chainResponse.messages.filter((/** @type {Message} */ m) => !isEnvelope(m.content));
  const tailStart = turns.length - tailMessages.length;
  const tail = served(tailMessages);
  const index = bm25Index(rendered.slice(0, tailStart));
  const truncationBudget = MEMORY_POLICY.triggerInputChars + memoryBudget;

  /** @type {Record<string, { answered: boolean[], chars: number[] }>} */
  const rows = { truncation: row(), chain: row(), bm25: row(), chainBm25: row(), search: row(), recall: row() };
  const truncated = newestWithin(rendered, truncationBudget);
  /** @type {{ status: number, body: string }[]} */
  const refusals = [];
  /** @type {{ status: number, body: string }[]} */
  const searchRefusals = [];
  let memoryEnvelopes = 0;
  /** @type {number[]} */
  const envelopeChars = [];
  /** @type {number[]} */
  const servedOverTrigger = [];
  for (const fact of facts) {
    const expected = fact.expected;
    rows.truncation.answered.push(truncated.text.includes(expected));
    rows.truncation.chars.push(truncated.chars);
    rows.chain.answered.push(chain.text.includes(expected));
    rows.chain.chars.push(chain.chars);
    const recalled = packRanked(index.rank(fact.question), (i) => rendered[i]?.length ?? 0, memoryBudget);
    const bm25Text = recalled.chosen.map((i) => rendered[i]).join("\n");
    rows.bm25.answered.push(bm25Text.includes(expected) || tail.text.includes(expected));
    rows.bm25.chars.push(recalled.chars + tail.chars);
    rows.chainBm25.answered.push(bm25Text.includes(expected) || chain.text.includes(expected));
    rows.chainBm25.chars.push(recalled.chars + chain.chars);

    // Recall's own search, its results packed within the memory budget beside the same tail: what
    // the search finds, whether or not the Worker serves it yet.
    const search = await api.request("GET", `${Api.conversationPath(CONVERSATION)}/memory/search?agent=${encodeURIComponent(AGENT)}&q=${encodeURIComponent(fact.question)}&limit=20`);
    if (search.status !== 200) searchRefusals.push({ status: search.status, body: search.text.slice(0, 300) });
    else {
      const results = /** @type {{ content: string }[]} */ (search.json().results ?? []);
      const packed = packRanked(results.map((_, i) => i), (i) => results[i]?.content.length ?? 0, memoryBudget);
      rows.search.answered.push(packed.chosen.some((i) => results[i]?.content.includes(expected)) || tail.text.includes(expected));
      rows.search.chars.push(packed.chars + tail.chars);
    }

    const response = await api.request("GET", `${Api.conversationPath(CONVERSATION)}/context?agent=${encodeURIComponent(AGENT)}&query=${encodeURIComponent(fact.question)}`);
    if (response.status !== 200) {
      refusals.push({ status: response.status, body: response.text.slice(0, 300) });
      continue;
    }
    const messagesServed = /** @type {Message[]} */ (response.json().messages);
    const view = served(messagesServed);
    const envelope = messagesServed.find((m) => m.content.startsWith(MEMORY_ENVELOPE));
    if (envelope !== undefined) {
      memoryEnvelopes += 1;
      envelopeChars.push(envelope.content.length);
    }
    // The target: boundary, amendment and tail stay under the trigger; the memory envelope comes on top.
    servedOverTrigger.push(view.chars - (envelope?.content.length ?? 0) - MEMORY_POLICY.triggerInputChars);
    rows.recall.answered.push(view.text.includes(expected));
    rows.recall.chars.push(view.chars);
  }
  /** @type {string | null} */
  let recallNotMeasured = null;
  if (refusals.length > 0) recallNotMeasured = `${refusals.length} of ${facts.length} \`GET …/context?query=\` calls were refused (first: HTTP ${refusals[0]?.status} ${refusals[0]?.body})`;
  else if (memoryEnvelopes === 0) recallNotMeasured = `no \`kind="memory"\` envelope in any of ${facts.length} \`GET …/context?agent=&query=<question>\` responses: this Worker does not serve recall`;

  const summarize = (/** @type {{ answered: boolean[], chars: number[] }} */ r) => ({
    answered: r.answered.filter(Boolean).length,
    questions: r.answered.length,
    share: r.answered.length === 0 ? null : round(r.answered.filter(Boolean).length / r.answered.length, 4),
    updatedShare: shareOf(r.answered, facts, (f) => f.updated),
    notUpdatedShare: shareOf(r.answered, facts, (f) => !f.updated),
    meanChars: r.chars.length === 0 ? null : round(mean(r.chars), 0),
    maxChars: r.chars.length === 0 ? null : max(r.chars),
    byAttribute: Object.fromEntries([...new Set(facts.map((f) => f.attribute))].map((attribute) => [attribute, shareOf(r.answered, facts, (f) => f.attribute === attribute)])),
    missed: facts.filter((_, i) => r.answered[i] === false).map((f) => f.id),
  });
  const runs = follower.plannedRuns();
  const chainAudit = await api.chain(CONVERSATION, AGENT);
  return {
    seed: SEED,
    policy: { ...MEMORY_POLICY, memoryBudgetChars: memoryBudget, memoryBudgetFromManifest: typeof policy.memoryBudgetChars === "number" },
    conversation: {
      chars: conversation.chars,
      turns: turns.length,
      messages,
      sessions: conversation.sessions,
      speakers: new Set(turns.filter((t) => t.role === "user").map((t) => t.author?.id)).size,
      facts: facts.length,
      updated: facts.filter((f) => f.updated).length,
      restated: facts.filter((f) => f.restated).length,
      factsInServedTail: facts.filter((f) => f.turns.some((t) => t >= tailStart)).length,
    },
    ingest: { seconds: round(ingestSeconds, 1), messages, compactions: runs.length, completed: runs.filter((r) => r.completed !== undefined).length, boundaries: chainAudit.boundaries.length, d1: appendD1 },
    served: {
      boundaryEnvelopeChars: chainResponse.manifest.boundary?.envelopeChars ?? null,
      compactor: chainResponse.manifest.boundary?.model ?? null,
      tailTurns: tailMessages.length,
      tailChars: tail.chars,
      truncationBudget,
      truncationTurns: truncated.turns,
    },
    approaches: {
      truncation: summarize(rows.truncation),
      chain: summarize(rows.chain),
      bm25: summarize(rows.bm25),
      chainBm25: summarize(rows.chainBm25),
      search: searchRefusals.length === 0 ? summarize(rows.search) : { notMeasured: `${searchRefusals.length} of ${facts.length} \`GET …/memory/search\` calls were refused (first: HTTP ${searchRefusals[0]?.status} ${searchRefusals[0]?.body})` },
      recall: recallNotMeasured === null ? summarize(rows.recall) : { notMeasured: recallNotMeasured },
    },
    recall: {
      responsesWithMemoryEnvelope: memoryEnvelopes,
      memoryEnvelopeMaxChars: envelopeChars.length === 0 ? null : max(envelopeChars),
      memoryEnvelopeMeanChars: envelopeChars.length === 0 ? null : round(mean(envelopeChars), 0),
      maxCharsOverTriggerWithoutMemory: servedOverTrigger.length === 0 ? null : max(servedOverTrigger),
    },
    extraction: {
      factsOnPages: onPages.filter(Boolean).length,
      factsOnPagesShare: round(onPages.filter(Boolean).length / facts.length, 4),
      updatedFactsOnPagesShare: shareOf(onPages, facts, (f) => f.updated),
      pages: pages.all.length, extractedPages: pages.extracted.length, extractedVersions: pages.extracted.reduce((n, p) => n + p.version, 0), settleWaitSeconds: pages.waitSeconds },
  };
}

const row = () => ({ answered: /** @type {boolean[]} */ ([]), chars: /** @type {number[]} */ ([]) });
const isEnvelope = (/** @type {string} */ content) => content.startsWith("<untrusted-history-summary ");
/** What the agent reads: every message's content; its size is their total length. @param {Message[]} messages */
export const served = (messages) => ({ text: messages.map((m) => m.content).join("\n"), chars: messages.reduce((n, m) => n + m.content.length, 0) });

/** @template {{ updated: boolean }} F @param {boolean[]} answered @param {F[]} facts @param {(f: F) => boolean} keep */
function shareOf(answered, facts, keep) {
  const picked = answered.filter((_, i) => facts[i] !== undefined && keep(facts[i]));
  return picked.length === 0 ? null : round(picked.filter(Boolean).length / picked.length, 4);
}

/**
 * The agent's pages once extraction (a queue job after each settled boundary) has finished: the
 * pages people wrote for the agent and the conversation's extracted pages (kept with it, listed
 * through it), polled until the listing is the same four times in a row, a second apart, or 90 s
 * have passed.
 * @param {Api} api @param {(line: string) => void} log
 */
async function settledPages(api, log) {
  const started = Date.now();
  let previous = "";
  let same = 0;
  const listings = [`/v1/agents/${AGENT}/memory?`, `${Api.conversationPath(CONVERSATION)}/memory/pages?agent=${encodeURIComponent(AGENT)}&`];
  for (;;) {
    /** @type {{ path: string, version: number }[]} */
    const all = [];
    for (const listing of listings) {
      for (let after = ""; ; ) {
        const page = (await api.expect("memory pages", [200], "GET", `${listing}limit=500&after=${encodeURIComponent(after)}`)).json();
        all.push(...page.pages);
        if (page.nextAfter === null) break;
        after = page.nextAfter;
      }
    }
    const key = JSON.stringify(all.map((p) => [p.path, p.version]));
    same = key === previous ? same + 1 : 0;
    previous = key;
    const waited = (Date.now() - started) / 1000;
    if (same >= 3 || waited > 90) {
      if (same < 3) log(`  memory pages still changing after ${waited.toFixed(0)} s; measuring as they are`);
      return { all, extracted: all.filter((p) => p.path.startsWith("extracted/")), waitSeconds: round(waited, 1) };
    }
    await sleep(1_000);
  }
}

/**
 * Rows stored in the memory Worker's D1 after the run, by table (read from its local database file
 * once the Worker has stopped): what extraction (pages, versions, provenance) and the turn index
 * keep per 1,000 messages. Queue-consumer writes never pass through the request meter, so they are
 * counted where they end up.
 * @param {string} persistDir @param {number} messages
 */
async function storedRows(persistDir, messages) {
  // Loaded here, not at the top: node:sqlite warns that it is experimental when it is imported.
  const { DatabaseSync } = await import("node:sqlite");
  const dir = join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  // One file per D1 database: the control database and each shard. Rows are added up by table.
  const files = readdirSync(dir).filter((f) => f.endsWith(".sqlite"));
  if (files.length === 0) return { rowsByTable: null, rowsNote: `no D1 database file in ${dir}` };
  /** @type {Record<string, number>} */
  const rowsByTable = {};
  for (const file of files) {
    const db = new DatabaseSync(join(dir, file), { readOnly: true });
    try {
      const tables = /** @type {{ name: string, sql: string }[]} */ (db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'").all());
      const virtual = tables.filter((t) => /^CREATE VIRTUAL/i.test(t.sql)).map((t) => t.name);
      for (const t of tables) {
        if (virtual.includes(t.name) || virtual.some((v) => t.name.startsWith(`${v}_`))) continue; // FTS shadow tables
        rowsByTable[t.name] = (rowsByTable[t.name] ?? 0) + Number(/** @type {{ n: number }} */ (db.prepare(`SELECT count(*) AS n FROM "${t.name.replaceAll('"', '""')}"`).get()).n);
      }
    } finally {
      db.close();
    }
  }
  const rowsIn = (/** @type {string[]} */ names) => names.reduce((n, name) => n + (rowsByTable[name] ?? 0), 0);
  const extractionTables = Object.keys(rowsByTable).filter((name) => /^memory_|provenance|memory_sources|extract/.test(name));
  // Recall's index of the log's turns (kept on the append path), apart from what extraction writes.
  const turnIndexTables = Object.keys(rowsByTable).filter((name) => /^turn_|^turns$/.test(name));
  return {
    rowsByTable,
    extractionTables,
    extractionRows: rowsIn(extractionTables),
    extractionRowsPer1000Messages: round((rowsIn(extractionTables) / messages) * 1000, 1),
    turnIndexTables,
    turnIndexRowsPer1000Messages: round((rowsIn(turnIndexTables) / messages) * 1000, 1),
  };
}
