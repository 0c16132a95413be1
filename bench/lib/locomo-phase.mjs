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
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Api, LogFollower, sleep, waitForCatchUp } from "./api.mjs";
import { prng } from "./conversation.mjs";
import { bm25Index, packRanked, terms } from "./memory-baselines.mjs";
import { MEMORY_POLICY, served } from "./memory-phase.mjs";
import { max, mean, percentile, round } from "./stats.mjs";
import { HELD_OUT } from "../data/locomo/prepare.mjs";
import { d1BindingsOf } from "../../scripts/lib/d1-bindings.mjs";
import { applyMigrations, createToken, freePort, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";

const DATA_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "data", "locomo");
/** No real bot's id: any digits work locally. */
const BOT = "4200000777";
const AGENT = "b-locomo";
const MODEL = "bench-locomo";
/** The context policy's memory budget when the served manifest does not say (the contract's default). */
const DEFAULT_MEMORY_BUDGET = 4_000;
const SEARCH_LIMIT = 50;
/** Seconds between consecutive turns of a session (the dataset gives one date-time per session). */
const SECONDS_PER_TURN = 5;
const MEMORY_ENVELOPE = '<untrusted-history-summary kind="memory">';
/** The message an extracted-page entry cites, at the end of its line (src/core/fact-merge.ts, recall-rank.ts entriesOf). */
const ENTRY_SOURCE = /\(msg ([^,()\s]+)(?:, seq \d+)?(?:, ref [0-9a-f]{12})?\)$/gm;
export const CATEGORIES = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial" };
/** The recall-latency measure: questions timed, rounds over them, other conversations added, messages each. */
const LATENCY = { questions: 50, rounds: 1, warmup: 5, others: 200, messagesEach: 100 };
const LOAD_PREFIX = "api:bench:locomo-load:";
/** Conversations whose questions are asked at once (each asks its own one at a time). */
const ASK_CONCURRENCY = 2;
const MAX_BATCH_EVENTS = 100;

/** @typedef {{ speaker: string, dia_id: string, text: string, blip_caption?: string }} RawTurn */
/** @typedef {{ id: string, speaker_a: string, speaker_b: string, sessions: { session: number, date_time: string, turns: RawTurn[] }[], qa: { question: string, evidence: string[], category: number }[], dropped: { questions: unknown[], evidenceIds: string[], repairedIds: unknown[], splitStrings: string[] } }} Locomo */
/** @typedef {{ diaId: string, session: number, speaker: string, text: string, rendered: string, messageId: string, seq: number, index: number }} Turn */

/** The prepared conversations, in id order; a held-out id is refused, never read. @param {boolean} quick */
export function loadLocomo(quick) {
  const files = readdirSync(DATA_DIR)
    .map((name) => /^conv-(\d+)\.json$/.exec(name))
    .filter((m) => m !== null)
    .map((m) => ({ id: `conv-${Number(m[1])}`, file: m[0], n: Number(m[1]) }))
    .sort((a, b) => a.n - b.n);
  const held = files.filter((f) => HELD_OUT.has(f.id));
  if (held.length > 0) throw new Error(`bench/data/locomo holds ${held.map((f) => f.id).join(", ")}, held out for acceptance: remove it`);
  if (files.length === 0) throw new Error(`no conv-<n>.json in ${DATA_DIR}: run bench/data/locomo/prepare.mjs`);
  return files.slice(0, quick ? 2 : files.length).map((f) => ({ n: f.n, data: /** @type {Locomo} */ (JSON.parse(readFileSync(join(DATA_DIR, f.file), "utf8"))) }));
}

const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

/** "11:01 am on 17 December, 2022" → Unix seconds (read as UTC). @param {string} text */
export function sessionStart(text) {
  const m = /^(\d{1,2}):(\d{2})\s*(am|pm) on (\d{1,2}) ([A-Za-z]+),? (\d{4})$/i.exec(text.trim());
  const month = m === null ? -1 : MONTHS.indexOf(String(m[5]).toLowerCase());
  if (m === null || month < 0) throw new Error(`unreadable LoCoMo session date-time ${JSON.stringify(text)}`);
  const hour = (Number(m[1]) % 12) + (String(m[3]).toLowerCase() === "pm" ? 12 : 0);
  return Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2])) / 1000;
}

/** The text a turn is sent as: its text, and the shared photo's caption when there is one. @param {RawTurn} t */
const turnText = (t) => (t.blip_caption === undefined ? t.text : `${t.text} [photo: ${t.blip_caption}]`);

/**
 * Undoes `escapeEnvelopeText` (src/core/render.ts): `&lt;` `&gt;` `&amp;`, the ampersand last; and
 * the tab a Worker that indents an item's continuation lines puts after each line break.
 * @param {string} s
 */
const unescapeEnvelope = (s) => s.replaceAll("\n\t", "\n").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");

/** The sequence number of a turn id (`s<seq>` for a message, `p<seq>` for a reply), or null. @param {string | null} id */
const seqOf = (id) => (id === null ? null : Number(/^[sp](\d+)$/.exec(id)?.[1] ?? Number.NaN));

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
    COMPACTION_RETRY_BASE_SECONDS: "0",
    COMPACTION_BACKOFF_BASE_SECONDS: "1",
    D1_METER: "on",
    [`TELEGRAM_WEBHOOK_SECRET_${BOT}`]: secret,
  });
  const worker = await startWorker({ root, appDir, persistDir, envFile, port: await freePort(8793), logPath: join(workDir, "wrangler-locomo.log"), log });
  /** @type {Record<string, any>} */
  let metrics;
  try {
    metrics = await measure({ api: new Api(worker.url, token), secret, log, quick, shardNames: openShardNames(appDir) });
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

/** The shards a new conversation may land on (src/storage/shards.ts openShards): every DB_SHARD_<n> of the snapshot's wrangler.toml, in number order, minus SHARDS_CLOSED. @param {string} appDir */
function openShardNames(appDir) {
  const toml = readFileSync(join(appDir, "wrangler.toml"), "utf8");
  const closed = new Set((/^SHARDS_CLOSED\s*=\s*"([^"]*)"/m.exec(toml)?.[1] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== ""));
  return d1BindingsOf(join(appDir, "wrangler.toml"))
    .filter((name) => /^DB_SHARD_\d+$/.test(name) && !closed.has(name))
    .sort((a, b) => Number(a.slice(9)) - Number(b.slice(9)));
}

/** Where a new conversation is placed (src/core/placement.ts pickShard): 48 bits of its id's SHA-256 modulo the open shards. @param {string} id @param {string[]} open */
function pickShard(id, open) {
  return open[Number.parseInt(createHash("sha256").update(id, "utf8").digest("hex").slice(0, 12), 16) % open.length];
}

/**
 * @param {{ api: Api, secret: string, log: (line: string) => void, quick: boolean, shardNames: string[] }} o
 */
async function measure({ api, secret, log, quick, shardNames }) {
  await api.registerAgent({ agentId: AGENT, sources: [`telegram:${BOT}:*`], model: MODEL, policy: MEMORY_POLICY });
  const conversations = loadLocomo(quick);
  const totalTurns = conversations.reduce((n, c) => n + c.data.sessions.reduce((k, s) => k + s.turns.length, 0), 0);
  log(`[locomo] ${conversations.length} LoCoMo conversations (${conversations.map((c) => c.data.id).join(", ")}), ${totalTurns.toLocaleString("en-US")} turns, ${conversations.reduce((n, c) => n + c.data.qa.length, 0).toLocaleString("en-US")} questions; replayed through POST /telegram/${BOT}/webhook`);

  // Replay: one Telegram group per conversation, session by session, compaction caught up after each.
  let updateId = 1;
  const started = Date.now();
  /** @type {{ n: number, data: Locomo, conversation: string, turns: Turn[], byDia: Map<string, Turn>, follower: LogFollower, seconds: number, shard: string | undefined }[]} */
  const replayed = [];
  for (const { n, data } of conversations) {
    const chatId = -(1_000_000_000 + n);
    const conversation = `telegram:${BOT}:${chatId}`;
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
        const update = { update_id: updateId++, message: { message_id: messageId, date: start + i * SECONDS_PER_TURN, chat, from, text } };
        const response = await api.request("POST", `/telegram/${BOT}/webhook`, update, { "x-telegram-bot-api-secret-token": secret });
        const body = response.status === 200 ? response.json() : null;
        if (body === null || typeof body.seq !== "number") throw new Error(`telegram webhook for ${data.id} ${raw.dia_id}: HTTP ${response.status} ${response.text.slice(0, 300)}`);
        turns.push({ diaId: raw.dia_id, session: session.session, speaker: raw.speaker, text, rendered: `${raw.speaker}: ${text}`, messageId: String(messageId), seq: body.seq, index: turns.length });
      }
      await waitForCatchUp({ api, follower, agentId: AGENT, trigger: MEMORY_POLICY.triggerInputChars, onWait: (w) => log(`  ${data.id} session ${session.session}: ${w}`) });
    }
    const seconds = (Date.now() - t0) / 1000;
    replayed.push({ n, data, conversation, turns, byDia: new Map(turns.map((t) => [t.diaId, t])), follower, seconds, shard: pickShard(conversation, shardNames) });
    log(`  ${data.id}: ${turns.length} turns in ${data.sessions.length} sessions replayed in ${seconds.toFixed(1)} s, ${follower.plannedRuns().length} compactions (${replayed.length}/${conversations.length}, ${((Date.now() - started) / 1000).toFixed(0)} s so far)`);
  }
  const ingestSeconds = (Date.now() - started) / 1000;
  const pages = await settledPages(api, log, replayed.map((c) => c.conversation));
  log(`[locomo] replayed in ${ingestSeconds.toFixed(1)} s; ${pages.extracted} pages under extracted/ (${pages.where}; settled after ${pages.waitSeconds} s); asking the questions`);

  // The questions, ASK_CONCURRENCY conversations at a time (the calls only read).
  /** @type {Awaited<ReturnType<typeof askAll>>[]} */
  const asked = [];
  const askStarted = Date.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < replayed.length; i = next++) {
      const c = /** @type {(typeof replayed)[number]} */ (replayed[i]);
      const result = await askAll(api, c);
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
  const latency = await recallLatency({ api, log, measured, control, others: replayed.filter((c) => c !== measured), shardNames });

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
    ingest: { seconds: round(ingestSeconds, 1), webhookUpdates: updateId - 1, pagesExtracted: pages.extracted, pagesListed: pages.where, pagesSettleSeconds: pages.waitSeconds },
    askSeconds: round(askSeconds, 1),
    perConversation,
    totals,
    byCategory,
    latency,
  };
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

/**
 * @typedef {{ conversation: string, question: string, category: number, refused: boolean, served: boolean, envelopeOnly: boolean, withEntries: boolean, search: boolean, bm25: boolean, bm25Tail: boolean, servedBy: string[], servedChars: number | null, memoryEnvelopeChars: number | null, bm25TailChars: number, entriesCited: number, contextMs: number, searchMs: number }} QuestionResult
 */

/**
 * Every question of one replayed conversation, four ways.
 * @param {Api} api
 * @param {{ data: Locomo, conversation: string, turns: Turn[], byDia: Map<string, Turn>, follower: LogFollower, seconds: number, shard: string | undefined }} c
 */
async function askAll(api, c) {
  const path = Api.conversationPath(c.conversation);
  const plain = (await api.context(c.conversation, AGENT)).json();
  const policy = plain.manifest.policy ?? {};
  const budget = typeof policy.memoryBudgetChars === "number" ? policy.memoryBudgetChars : DEFAULT_MEMORY_BUDGET;
  const tailFirst = plain.manifest.tail.turns === 0 ? Number.POSITIVE_INFINITY : seqOf(plain.manifest.tail.firstTurnId) ?? Number.NaN;
  const tailLast = seqOf(plain.manifest.tail.lastTurnId) ?? Number.NEGATIVE_INFINITY;
  if (Number.isNaN(tailFirst) || Number.isNaN(tailLast)) throw new Error(`${c.data.id}: the manifest's tail turn ids ${plain.manifest.tail.firstTurnId} … ${plain.manifest.tail.lastTurnId} are not s<seq>/p<seq>`);
  const tailStart = c.turns.findIndex((t) => t.seq >= tailFirst);
  const olderCount = tailStart < 0 ? c.turns.length : tailStart;
  const rendered = c.turns.map((t) => t.rendered);
  const index = bm25Index(rendered);
  const olderIndex = bm25Index(rendered.slice(0, olderCount));
  /** @type {QuestionResult[]} */
  const questions = [];
  /** @type {{ status: number, body: string }[]} */
  const refusals = [];
  let tailDiffers = 0;
  for (const qa of c.data.qa) {
    const evidence = qa.evidence.map((id) => c.byDia.get(id)).filter((t) => t !== undefined);
    const evidenceIds = new Set(evidence.map((t) => t.messageId));
    const evidenceIndexes = new Set(evidence.map((t) => t.index));
    /** @type {QuestionResult} */
    const r = { conversation: c.data.id, question: qa.question, category: qa.category, refused: false, served: false, envelopeOnly: false, withEntries: false, search: false, bm25: false, bm25Tail: false, servedBy: [], servedChars: null, memoryEnvelopeChars: null, bm25TailChars: 0, entriesCited: 0, contextMs: 0, searchMs: 0 };

    // 1. What is served with the question as the query.
    const response = await api.request("GET", `${path}/context?agent=${encodeURIComponent(AGENT)}&query=${encodeURIComponent(qa.question)}`);
    r.contextMs = response.ms;
    if (response.status !== 200) {
      r.refused = true;
      refusals.push({ status: response.status, body: response.text.slice(0, 300) });
    } else {
      const { messages, manifest } = response.json();
      const first = manifest.tail.turns === 0 ? Number.POSITIVE_INFINITY : seqOf(manifest.tail.firstTurnId) ?? Number.NaN;
      const last = seqOf(manifest.tail.lastTurnId) ?? Number.NEGATIVE_INFINITY;
      if (first !== tailFirst || last !== tailLast) tailDiffers += 1;
      const memoryTurns = new Set((manifest.memory?.turns ?? []).map((/** @type {{ messageId: string }} */ t) => t.messageId));
      const memoryMessage = messages.find((/** @type {{ content: string }} */ m) => m.content.startsWith(MEMORY_ENVELOPE));
      const memoryText = unescapeEnvelope(memoryMessage?.content ?? "");
      const servedText = unescapeEnvelope(served(messages).text);
      // Extracted-page entries name the message they were taken from: `(msg <id>)`, or as a page
      // holds them `(msg <id>[, seq <n>], ref <12 hex>)`.
      const entryIds = new Set([...memoryText.matchAll(ENTRY_SOURCE)].map((m) => m[1]));
      const inTail = evidence.some((t) => t.seq >= first && t.seq <= last);
      const inMemoryTurns = evidence.some((t) => memoryTurns.has(t.messageId));
      const textInMemory = evidence.some((t) => memoryText.includes(t.text));
      const textServed = evidence.some((t) => servedText.includes(t.text));
      const byEntry = evidence.some((t) => entryIds.has(t.messageId));
      r.servedBy = [inTail ? "tail" : null, inMemoryTurns ? "memory turn" : null, textServed && !inTail && !inMemoryTurns ? "text" : null].filter((x) => x !== null);
      r.served = inTail || inMemoryTurns || textServed;
      r.envelopeOnly = inMemoryTurns || textInMemory;
      r.withEntries = r.served || byEntry;
      r.servedChars = served(messages).chars;
      r.memoryEnvelopeChars = memoryMessage?.content.length ?? 0;
      r.entriesCited = entryIds.size;
    }

    // 2. Recall's own search, its results in order within the memory budget.
    const search = await api.request("GET", `${path}/memory/search?agent=${encodeURIComponent(AGENT)}&q=${encodeURIComponent(qa.question)}&limit=${SEARCH_LIMIT}`);
    r.searchMs = search.ms;
    if (search.status !== 200) {
      r.refused = true;
      refusals.push({ status: search.status, body: search.text.slice(0, 300) });
    } else {
      const results = /** @type {{ type: string, content: string, sources?: { messageId: string }[] }[]} */ (search.json().results ?? []);
      const packed = packRanked(results.map((_, i) => i), (i) => results[i]?.content.length ?? 0, budget);
      r.search = packed.chosen.some((i) => {
        const hit = results[i];
        if (hit === undefined) return false;
        return (hit.type === "turn" && (hit.sources ?? []).some((s) => evidenceIds.has(s.messageId))) || evidence.some((t) => t.text === hit.content);
      });
    }

    // 3. Plain BM25 over every raw turn; 4. over the turns older than the tail, beside the tail.
    r.bm25 = packRanked(index.rank(qa.question), (i) => rendered[i]?.length ?? 0, budget).chosen.some((i) => evidenceIndexes.has(i));
    const older = packRanked(olderIndex.rank(qa.question), (i) => rendered[i]?.length ?? 0, budget);
    r.bm25Tail = older.chosen.some((i) => evidenceIndexes.has(i)) || evidence.some((t) => t.seq >= tailFirst && t.seq <= tailLast);
    r.bm25TailChars = older.chars + plain.manifest.tail.chars;
    questions.push(r);
  }
  const runs = c.follower.plannedRuns();
  return {
    questions,
    summary: {
      conversation: c.data.id,
      telegram: c.conversation,
      speakers: [c.data.speaker_a, c.data.speaker_b],
      sessions: c.data.sessions.length,
      turns: c.turns.length,
      chars: rendered.reduce((n, t) => n + t.length, 0),
      replaySeconds: round(c.seconds, 1),
      compactions: runs.length,
      completed: runs.filter((r) => r.completed !== undefined).length,
      shard: c.shard,
      boundaryEnvelopeChars: plain.manifest.boundary?.envelopeChars ?? null,
      compactor: plain.manifest.boundary?.model ?? null,
      tailTurns: plain.manifest.tail.turns,
      tailChars: plain.manifest.tail.chars,
      turnsOlderThanTail: olderCount,
      memoryBudgetChars: budget,
      responsesWithAnotherTail: tailDiffers,
      refusals,
      ...summarize(questions),
    },
  };
}

/** Shares of each approach over a set of questions. @param {QuestionResult[]} qs */
function summarize(qs) {
  const share = (/** @type {(q: QuestionResult) => boolean} */ f) => {
    const hit = qs.filter(f).length;
    return { found: hit, share: qs.length === 0 ? null : round(hit / qs.length, 4) };
  };
  const answered = qs.filter((q) => q.servedChars !== null);
  return {
    questions: qs.length,
    refused: qs.filter((q) => q.refused).length,
    rows: {
      served: share((q) => q.served),
      envelopeOnly: share((q) => q.envelopeOnly),
      withEntries: share((q) => q.withEntries),
      search: share((q) => q.search),
      bm25: share((q) => q.bm25),
      bm25Tail: share((q) => q.bm25Tail),
    },
    servedBy: {
      tail: qs.filter((q) => q.servedBy.includes("tail")).length,
      memoryTurn: qs.filter((q) => q.servedBy.includes("memory turn")).length,
      textOnly: qs.filter((q) => q.servedBy.length === 1 && q.servedBy[0] === "text").length,
    },
    meanServedChars: answered.length === 0 ? null : round(mean(answered.map((q) => q.servedChars ?? 0)), 0),
    maxServedChars: answered.length === 0 ? null : max(answered.map((q) => q.servedChars ?? 0)),
    meanMemoryEnvelopeChars: answered.length === 0 ? null : round(mean(answered.map((q) => q.memoryEnvelopeChars ?? 0)), 0),
    maxMemoryEnvelopeChars: answered.length === 0 ? null : max(answered.map((q) => q.memoryEnvelopeChars ?? 0)),
    responsesWithMemoryEnvelope: answered.filter((q) => (q.memoryEnvelopeChars ?? 0) > 0).length,
    responsesWithEntries: answered.filter((q) => q.entriesCited > 0).length,
    meanBm25TailChars: qs.length === 0 ? null : round(mean(qs.map((q) => q.bm25TailChars)), 0),
    // Wall time of each call while the questions were asked (two conversations at once): for orientation, not the latency measure.
    contextMsP50: qs.length === 0 ? null : round(percentile(qs.map((q) => q.contextMs), 50), 1),
    searchMsP50: qs.length === 0 ? null : round(percentile(qs.map((q) => q.searchMs), 50), 1),
  };
}

/**
 * `GET …/context?agent=&query=` timed for one conversation's questions, with its shard as the
 * replay left it, then again once `LATENCY.others` other conversations (each `messagesEach` short
 * messages made of the measured conversation's words and speakers) have been placed on that shard.
 * A control conversation on another shard, if there is one, is timed in the same rounds (one call
 * each in turn), so what the machine's other work does to both shows in its ratio.
 * @param {{ api: Api, log: (line: string) => void, measured: { data: Locomo, conversation: string, turns: Turn[] }, control: { data: Locomo, conversation: string, shard: string | undefined } | undefined, others: { data: Locomo, conversation: string, turns: Turn[], shard: string | undefined }[], shardNames: string[] }} o
 */
async function recallLatency({ api, log, measured, control, others, shardNames }) {
  const shard = pickShard(measured.conversation, shardNames);
  const sharing = others.filter((o) => o.shard === shard);
  const targets = [measured, ...(control === undefined ? [] : [control])].map((c) => ({
    path: `${Api.conversationPath(c.conversation)}/context?agent=${encodeURIComponent(AGENT)}&query=`,
    questions: c.data.qa.slice(0, LATENCY.questions).map((q) => encodeURIComponent(q.question)),
  }));
  /** Every target's samples, the targets' calls alternating. */
  const time = async () => {
    for (let i = 0; i < LATENCY.warmup; i++) for (const t of targets) await api.expect("recall warm-up", [200], "GET", `${t.path}${t.questions[i] ?? "hello"}`, undefined);
    const ms = targets.map(() => /** @type {number[]} */ ([]));
    for (let pass = 0; pass < LATENCY.rounds; pass++) {
      for (let i = 0; i < LATENCY.questions; i++) {
        for (const [k, t] of targets.entries()) {
          const q = t.questions[i % t.questions.length];
          if (q !== undefined) ms[k]?.push((await api.expect("timed recall", [200], "GET", `${t.path}${q}`, undefined)).ms);
        }
      }
    }
    return ms;
  };
  const summary = (/** @type {number[]} */ ms) => ({ n: ms.length, p50: round(percentile(ms, 50), 1), p95: round(percentile(ms, 95), 1), mean: round(mean(ms), 1), max: round(max(ms), 1) });
  /** after ÷ before of a percentile. @param {number[]} after @param {number[]} before @param {number} p */
  const ratio = (after, before, p) => round(percentile(after, p) / percentile(before, p), 3);
  log(`[locomo latency] ${measured.data.id} on ${shard} (with ${sharing.length} other LoCoMo conversation(s) there)${control === undefined ? "" : `, control ${control.data.id} on ${control.shard}`}: ${LATENCY.rounds} × ${LATENCY.questions} recall calls each`);
  const [before = [], controlBefore = []] = await time();

  // Other conversations until LATENCY.others have landed on the measured one's shard.
  const random = prng(41);
  const words = measured.turns.map((t) => terms(t.text));
  const speakers = [measured.data.speaker_a, measured.data.speaker_b];
  /** @type {string[]} */
  const added = [];
  let skipped = 0;
  let chars = 0;
  const loadStarted = Date.now();
  for (let k = 0; added.length < LATENCY.others; k++) {
    const id = `${LOAD_PREFIX}${k}`;
    if (pickShard(id, shardNames) !== shard) {
      skipped += 1;
      continue;
    }
    const events = [];
    for (let i = 0; i < LATENCY.messagesEach; i++) {
      // A short message of the measured conversation's words: a few words of a random turn.
      const source = words[Math.floor(random() * words.length)] ?? [];
      const length = 4 + Math.floor(random() * 8);
      const picked = Array.from({ length }, () => source[Math.floor(random() * source.length)] ?? "hello");
      const text = `${picked.join(" ")}.`;
      chars += text.length;
      const speaker = speakers[i % 2] ?? "Someone";
      events.push({ kind: "source", idempotencyKey: `load-${k}-${i}`, body: { messageId: `load-${k}-${i}`, author: { id: `load-${k}-${i % 2}`, name: speaker }, text } });
    }
    for (let i = 0; i < events.length; i += MAX_BATCH_EVENTS) await api.appendBatch(id, events.slice(i, i + MAX_BATCH_EVENTS));
    added.push(id);
    if (added.length % 50 === 0) log(`  ${added.length}/${LATENCY.others} other conversations on ${shard} (${skipped} ids skipped for the other shard(s))`);
  }
  const loadSeconds = (Date.now() - loadStarted) / 1000;
  const [after = [], controlAfter = []] = await time();
  const b = summary(before);
  const a = summary(after);
  const result = {
    conversation: measured.conversation,
    locomo: measured.data.id,
    shard,
    openShards: shardNames,
    otherLocomoOnShard: sharing.map((o) => o.data.id),
    questions: LATENCY.questions,
    warmup: LATENCY.warmup,
    rounds: LATENCY.rounds,
    before: b,
    after: a,
    p50Ratio: ratio(after, before, 50),
    p95Ratio: ratio(after, before, 95),
    control:
      control === undefined
        ? null
        : (() => {
            const cb = summary(controlBefore);
            const ca = summary(controlAfter);
            return { locomo: control.data.id, conversation: control.conversation, shard: control.shard, before: cb, after: ca, p50Ratio: ratio(controlAfter, controlBefore, 50), p95Ratio: ratio(controlAfter, controlBefore, 95) };
          })(),
    load: { conversations: added.length, messagesEach: LATENCY.messagesEach, messages: added.length * LATENCY.messagesEach, chars, idsSkipped: skipped, seconds: round(loadSeconds, 1) },
    otherConversations: added,
  };
  log(`  before: p50 ${b.p50} ms, p95 ${b.p95} ms; after ${added.length} more conversations (${result.load.messages.toLocaleString("en-US")} messages) on ${shard}: p50 ${a.p50} ms, p95 ${a.p95} ms (×${result.p50Ratio} / ×${result.p95Ratio})`);
  if (result.control !== null) log(`  control ${result.control.locomo} on ${result.control.shard}: p50 ${result.control.before.p50} → ${result.control.after.p50} ms (×${result.control.p50Ratio}), p95 ×${result.control.p95Ratio}`);
  return result;
}

/**
 * The shard each conversation was placed on, read from the stopped Worker's control database
 * (`conversation_placements`), or null when it cannot be read.
 * @param {string} persistDir @param {string[]} ids
 * @returns {Promise<Record<string, string> | null>}
 */
async function placementsOf(persistDir, ids) {
  // Loaded here, not at the top: node:sqlite warns that it is experimental when it is imported.
  const { DatabaseSync } = await import("node:sqlite");
  const dir = join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite"))) {
    const db = new DatabaseSync(join(dir, file), { readOnly: true });
    try {
      if (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'conversation_placements'").get() === undefined) continue;
      const rows = /** @type {{ conversation_id: string, shard: string }[]} */ (db.prepare("SELECT conversation_id, shard FROM conversation_placements WHERE conversation_id IN (SELECT value FROM json_each(?))").all(JSON.stringify(ids)));
      return Object.fromEntries(rows.map((r) => [r.conversation_id, r.shard]));
    } finally {
      db.close();
    }
  }
  return null;
}
