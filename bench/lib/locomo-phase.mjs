// The LoCoMo section: does the memory Foldline serves an agent find the evidence for questions about
// long real conversations? The LoCoMo conversations (bench/data/locomo, CC BY-NC 4.0; conv-26 and
// conv-30 are held out for acceptance and are not there) are replayed through the real Telegram
// webhook into a Worker of its own (no model key: the offline compactor and the offline extractor
// run), one Telegram group per conversation, session by session with compaction caught up after each.
// Then each question is asked, and the report counts the questions for which at least one of their
// evidence turns is in what each approach gives the agent:
//   served      `GET …/context?agent=&query=<question>`: the boundary, the memory envelope and the exact tail
//   search      `GET …/memory/search?q=<question>&limit=50`, results in order within the memory budget
//   BM25        plain BM25 over every raw turn, top turns within the memory budget (computed in Node)
//   BM25 + tail plain BM25 over the turns older than the served tail, within the budget, + that tail
// and, on the same Worker afterwards, how recall's latency moves when the measured conversation's
// shard also holds 200 other conversations.
//
// This module runs the section: its Worker, the replay through the webhook, the questions and the
// result. The data set is read by lib/locomo-data.mjs, a question is scored by
// lib/locomo-questions.mjs, the latency under load is lib/locomo-latency.mjs's, and
// lib/locomo-report.mjs writes it up.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { Api, LogFollower, sleep, waitForCatchUp } from "./api.mjs";
import { CATEGORIES, loadLocomo, sessionStart, turnText } from "./locomo-data.mjs";
import { d1BytesByPart } from "./d1-parts.mjs";
import { logFloor } from "./log-floor.mjs";
import { d1BytesInUse, openShardNames, pickShard, placementsOf, recallLatency } from "./locomo-latency.mjs";
import { DEFAULT_MEMORY_BUDGET, SEARCH_LIMIT, askAll, summarize } from "./locomo-questions.mjs";
import { MEMORY_POLICY } from "./memory-phase.mjs";
import { round } from "./stats.mjs";
import { HELD_OUT } from "../data/locomo/prepare.mjs";
import { applyMigrations, createToken, freePort, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";
import { INSTRUMENTED_MAIN } from "./instrumented.mjs";

/** No real bot's id: any digits work locally. */
const BOT = "4200000777";
const AGENT = "b-locomo";
const MODEL = "bench-locomo";
/** Seconds between consecutive turns of a session (the dataset gives one date-time per session). */
const SECONDS_PER_TURN = 5;
/** Conversations whose questions are asked at once (each asks its own one at a time). */
const ASK_CONCURRENCY = 2;

/** @typedef {import("./locomo-data.mjs").Locomo} Locomo */
/** @typedef {import("./locomo-data.mjs").Turn} Turn */
/** @typedef {{ n: number, data: Locomo, conversation: string, turns: Turn[], byDia: Map<string, Turn>, follower: LogFollower, seconds: number }} Replayed */

/**
 * Starts the section's own Worker (fresh state; no OPENAI_API_KEY, so the offline compactor and the
 * offline extractor run; the webhook secret of its bot in the env file), measures, stops it.
 * @param {{ root: string, appDir: string, workDir: string, fake: { baseUrl: string, calls: { model: string }[] }, log: (line: string) => void, quick: boolean }} o
 */
export async function runLocomoPhase({ root, appDir, workDir, fake, log, quick }) {
  const persistDir = join(workDir, "locomo-state");
  const envFile = join(workDir, "locomo.env");
  applyMigrations(root, appDir, persistDir);
  // Telegram conversations and the latency load's API conversations: every conversation, every agent.
  const token = createToken(root, appDir, persistDir, ["*", "agent:*"], "bench-locomo");
  const secret = randomBytes(24).toString("base64url");
  await writeEnvFile(envFile, {
    OPENAI_BASE_URL: fake.baseUrl, // counted if any code called a model without a key
    QUEUE_RETRY_BASE_SECONDS: "0",
    COMPACTION_BACKOFF_BASE_SECONDS: "1",
    D1_METER: "on",
    [`TELEGRAM_WEBHOOK_SECRET_${BOT}`]: secret,
  });
  const worker = await startWorker({ root, appDir, persistDir, envFile, port: await freePort(8793), logPath: join(workDir, "wrangler-locomo.log"), log, main: INSTRUMENTED_MAIN });
  /** @type {Record<string, any>} */
  let metrics;
  try {
    metrics = await measure({ api: new Api(worker.url, token), secret, log, quick, shardNames: openShardNames(appDir), storedBytes: () => d1BytesInUse(persistDir), storedTables: async () => (await d1BytesByPart(persistDir)).tables, storedFloor: () => logFloor(persistDir) });
  } finally {
    await worker.stop();
  }
  metrics.latency.placementsRead = await placementsOf(persistDir, [metrics.latency.conversation, ...metrics.latency.otherConversations]);
  const measuredShard = metrics.latency.placementsRead?.[metrics.latency.conversation] ?? null;
  metrics.latency.verifiedOnShard = measuredShard === null ? null : metrics.latency.otherConversations.filter((/** @type {string} */ c) => metrics.latency.placementsRead[c] === measuredShard).length;
  metrics.latency.verifiedShard = measuredShard;
  delete metrics.latency.placementsRead;
  metrics.modelCalls = fake.calls.filter((c) => c.model === MODEL).length;
  return metrics;
}

/**
 * @param {{ api: Api, secret: string, log: (line: string) => void, quick: boolean, shardNames: string[], storedBytes: () => Promise<number>, storedTables: () => Promise<Record<string, number>>, storedFloor: () => Promise<{ events: number, bytes: number, hashes: number, skippedRuns: number }> }} o
 */
async function measure({ api, secret, log, quick, shardNames, storedBytes, storedTables, storedFloor }) {
  await api.registerAgent({ agentId: AGENT, sources: [`telegram:${BOT}:*`], model: MODEL, policy: MEMORY_POLICY });
  const bytesBefore = await storedBytes();
  const tablesBefore = await storedTables();
  const conversations = loadLocomo(quick);
  const totalTurns = conversations.reduce((n, c) => n + c.data.sessions.reduce((k, s) => k + s.turns.length, 0), 0);
  log(`[locomo] ${conversations.length} LoCoMo conversations (${conversations.map((c) => c.data.id).join(", ")}), ${totalTurns.toLocaleString("en-US")} turns, ${conversations.reduce((n, c) => n + c.data.qa.length, 0).toLocaleString("en-US")} questions; replayed through POST /telegram/${BOT}/webhook`);

  // Replay: one Telegram group per conversation, session by session, compaction caught up after each.
  const updates = { next: 1 };
  const started = Date.now();
  /** @type {(Replayed & { shard: string | undefined })[]} */
  const replayed = [];
  for (const { n, data } of conversations) {
    const c = await replayLocomo({ api, secret, bot: BOT, agent: AGENT, n, data, updates, log });
    replayed.push({ ...c, shard: pickShard(c.conversation, shardNames) });
    log(`  ${data.id}: ${c.turns.length} turns in ${data.sessions.length} sessions replayed in ${c.seconds.toFixed(1)} s, ${c.follower.plannedRuns().length} compactions (${replayed.length}/${conversations.length}, ${((Date.now() - started) / 1000).toFixed(0)} s so far)`);
  }
  const ingestSeconds = (Date.now() - started) / 1000;
  const pages = await settledPages(api, log, replayed.map((c) => c.conversation));
  // What the replay left stored, compactions and extraction settled, before any question is asked.
  // Where they are, table by table (its indexes and full-text shadow tables with it; whole pages).
  const tablesAfter = await storedTables();
  const tables = Object.fromEntries(
    Object.entries(tablesAfter)
      .map(([table, bytes]) => /** @type {[string, number]} */ ([table, bytes - (tablesBefore[table] ?? 0)]))
      .filter(([, bytes]) => bytes > 0)
      .sort(([, a], [, b]) => b - a),
  );
  // The floor the log's guarantees set for the same events (the databases held none before the replay).
  const stored = { tables, floor: await storedFloor(), bytes: (await storedBytes()) - bytesBefore, messages: replayed.reduce((n, c) => n + c.turns.length, 0), chars: replayed.reduce((n, c) => n + c.turns.reduce((k, t) => k + t.text.length, 0), 0) };
  log(`[locomo] stored ${stored.bytes.toLocaleString("en-US")} bytes of D1 for ${stored.messages.toLocaleString("en-US")} messages of ${stored.chars.toLocaleString("en-US")} characters`);
  log(`[locomo] replayed in ${ingestSeconds.toFixed(1)} s; ${pages.extracted} pages under extracted/ (${pages.where}; settled after ${pages.waitSeconds} s); asking the questions`);

  // The questions, ASK_CONCURRENCY conversations at a time (the calls only read).
  /** @type {Awaited<ReturnType<typeof askAll>>[]} */
  const asked = [];
  const askStarted = Date.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < replayed.length; i = next++) {
      const c = /** @type {(typeof replayed)[number]} */ (replayed[i]);
      const result = await askAll(api, AGENT, c);
      asked[i] = result;
      const r = result.summary;
      log(`  ${c.data.id}: ${r.questions} questions: served ${pctText(r.rows.served.share)}, search ${pctText(r.rows.search.share)}, BM25 ${pctText(r.rows.bm25.share)}, BM25+tail ${pctText(r.rows.bm25Tail.share)}${r.refusals.length > 0 ? `; ${r.refusals.length} refusals` : ""} (context p50 ${r.contextMsP50} ms, search p50 ${r.searchMsP50} ms; ${((Date.now() - askStarted) / 1000).toFixed(0)} s)`);
    }
  };
  await Promise.all(Array.from({ length: ASK_CONCURRENCY }, worker));
  const perConversation = asked.map((r) => r.summary);
  const all = asked.flatMap((r) => r.questions);
  const askSeconds = (Date.now() - askStarted) / 1000;
  const totals = summarize(all);
  const byCategory = Object.fromEntries(Object.entries(CATEGORIES).map(([k, name]) => [k, { name, ...summarize(all.filter((q) => q.category === Number(k))) }]));

  // Recall latency: one conversation, before and after 200 others land on its shard. Measured: the
  // first conversation of those whose shard holds the fewest LoCoMo conversations (alone on it, when
  // one is); the control: the first on another shard, timed alongside, whose shard gets nothing.
  const onShard = (/** @type {string | undefined} */ shard) => replayed.filter((c) => c.shard === shard).length;
  const measured = [...replayed].sort((a, b) => onShard(a.shard) - onShard(b.shard))[0];
  if (measured === undefined) throw new Error("no conversation replayed");
  const control = replayed.find((c) => c.shard !== measured.shard);
  const latency = await recallLatency({ api, agent: AGENT, log, measured, control, others: replayed.filter((c) => c !== measured), shardNames });

  return {
    agent: AGENT,
    bot: BOT,
    policy: { ...MEMORY_POLICY, memoryBudgetChars: perConversation[0]?.memoryBudgetChars ?? DEFAULT_MEMORY_BUDGET, searchLimit: SEARCH_LIMIT },
    dataset: {
      conversations: conversations.map((c) => c.data.id),
      heldOut: [...HELD_OUT],
      turns: totalTurns,
      questions: all.length,
      droppedQuestions: conversations.reduce((n, c) => n + c.data.dropped.questions.length, 0),
      droppedEvidenceIds: conversations.flatMap((c) => c.data.dropped.evidenceIds.map((id) => `${c.data.id} ${id}`)),
      repairedEvidenceIds: conversations.reduce((n, c) => n + c.data.dropped.repairedIds.length, 0),
      splitEvidenceStrings: conversations.reduce((n, c) => n + c.data.dropped.splitStrings.length, 0),
    },
    ingest: { seconds: round(ingestSeconds, 1), webhookUpdates: updates.next - 1, pagesExtracted: pages.extracted, pagesListed: pages.where, pagesSettleSeconds: pages.waitSeconds },
    // D1 bytes in use after the replay (compactions and extraction settled) over before it, against the text said.
    storage: { ...stored, bytesPer1000Messages: Math.round((stored.bytes / stored.messages) * 1000), bytesPerChar: round(stored.bytes / stored.chars, 2) },
    askSeconds: round(askSeconds, 1),
    perConversation,
    totals,
    byCategory,
    latency,
  };
}

/**
 * One LoCoMo conversation through the real webhook (`POST /telegram/<bot>/webhook`) as one Telegram
 * group, both speakers as users, session by session with the agent's compaction caught up after
 * each. `onTurn` runs after each turn is stored, with its webhook call's time (the peer section
 * appends the same turn to its peer there).
 * @param {{ api: Api, secret: string, bot: string, agent: string, n: number, data: Locomo, updates: { next: number }, log: (line: string) => void, onTurn?: (turn: Turn, ms: number) => Promise<void> }} o
 * @returns {Promise<Replayed>}
 */
export async function replayLocomo({ api, secret, bot, agent, n, data, updates, log, onTurn }) {
  const chatId = -(1_000_000_000 + n);
  const conversation = `telegram:${bot}:${chatId}`;
  const chat = { id: chatId, type: "group", title: `LoCoMo ${data.id}: ${data.speaker_a} and ${data.speaker_b}` };
  const people = new Map([data.speaker_a, data.speaker_b].map((name, i) => [name, { id: n * 1_000 + i + 1, is_bot: false, first_name: name }]));
  const follower = new LogFollower(api, conversation);
  /** @type {Turn[]} */
  const turns = [];
  // Message ids are sequential in each chat, from n × 10,000 + 1, so that one id names one message
  // across all the agent's chats (its extracted pages cite messages by id alone: `msg <id>`).
  let messageId = n * 10_000;
  const t0 = Date.now();
  for (const session of data.sessions) {
    const start = sessionStart(session.date_time);
    for (const [i, raw] of session.turns.entries()) {
      const from = people.get(raw.speaker);
      if (from === undefined) throw new Error(`${data.id} ${raw.dia_id}: speaker ${raw.speaker} is neither ${data.speaker_a} nor ${data.speaker_b}`);
      const text = turnText(raw);
      messageId += 1;
      const update = { update_id: updates.next++, message: { message_id: messageId, date: start + i * SECONDS_PER_TURN, chat, from, text } };
      const response = await api.request("POST", `/telegram/${bot}/webhook`, update, { "x-telegram-bot-api-secret-token": secret });
      const body = response.status === 200 ? response.json() : null;
      if (body === null || typeof body.seq !== "number") throw new Error(`telegram webhook for ${data.id} ${raw.dia_id}: HTTP ${response.status} ${response.text.slice(0, 300)}`);
      const turn = { diaId: raw.dia_id, session: session.session, speaker: raw.speaker, text, rendered: `${raw.speaker}: ${text}`, messageId: String(messageId), seq: body.seq, index: turns.length };
      turns.push(turn);
      if (onTurn !== undefined) await onTurn(turn, response.ms);
    }
    await waitForCatchUp({ api, follower, agentId: agent, trigger: MEMORY_POLICY.triggerInputChars, onWait: (w) => log(`  ${data.id} session ${session.session}: ${w}`) });
  }
  return { n, data, conversation, turns, byDia: new Map(turns.map((t) => [t.diaId, t])), follower, seconds: (Date.now() - t0) / 1000 };
}

/**
 * The agent's pages once extraction (a queue job after each settled boundary) has finished: every
 * listing polled until all are the same four times in a row, a second apart, or 90 s have passed.
 * Listed where the Worker keeps them: the agent's own pages (`GET /v1/agents/<agent>/memory`) and,
 * where the Worker has the route, each conversation's extracted pages
 * (`GET /v1/conversations/<id>/memory/pages?agent=`; a listing that answers 404 is left out).
 * @param {Api} api @param {(line: string) => void} log @param {string[]} conversations
 */
async function settledPages(api, log, conversations) {
  const listings = [`/v1/agents/${AGENT}/memory?`, ...conversations.map((c) => `${Api.conversationPath(c)}/memory/pages?agent=${AGENT}&`)];
  const started = Date.now();
  let previous = "";
  let same = 0;
  for (;;) {
    /** @type {Record<string, [string, number][]>} */
    const all = {};
    for (const listing of listings) {
      for (let after = ""; ; ) {
        const response = await api.request("GET", `${listing}limit=500&after=${encodeURIComponent(after)}`);
        if (response.status === 404) break;
        if (response.status !== 200) throw new Error(`memory pages ${listing}: HTTP ${response.status} ${response.text.slice(0, 300)}`);
        const page = response.json();
        (all[listing] ??= []).push(...page.pages.map((/** @type {{ path: string, version: number }} */ p) => [p.path, p.version]));
        if (page.nextAfter === null) break;
        after = page.nextAfter;
      }
    }
    const key = JSON.stringify(all);
    same = key === previous ? same + 1 : 0;
    previous = key;
    const waited = (Date.now() - started) / 1000;
    if (same >= 3 || waited > 90) {
      if (same < 3) log(`  memory pages still changing after ${waited.toFixed(0)} s; measuring as they are`);
      const extracted = Object.values(all).flat().filter(([path]) => path.startsWith("extracted/")).length;
      const where = Object.keys(all).some((l) => l.includes("/memory/pages?")) ? "listed per conversation and for the agent" : "listed for the agent";
      return { extracted, where, waitSeconds: round(waited, 1) };
    }
    await sleep(1_000);
  }
}

const pctText = (/** @type {number | null} */ v) => (v === null ? "–" : `${(v * 100).toFixed(1)}%`);
