// The scripts section (§14): what one append costs by the script its text is written in and by its
// length. The full-text index of every message (the turn index, migrations/shard) is kept by the
// shard itself as messages are appended, and how much work that is depends on the text: scripts
// written without spaces (Han, kana, Thai) are indexed by their pairs of characters as well as by
// their words, so a long Chinese message is far more positions than a long English one. This section
// shows that cost beside Latin text, at several lengths (a short message, one of about 1,000 UTF-8
// bytes, where the log keeps a text apart from its row, and Telegram's longest), in one run.
//
// On a Worker of its own (fresh D1, no model key): one agent whose trigger and caps no case comes near (no
// compaction runs; each conversation's log is checked for a planned run afterwards), then per case a
// conversation of its own receiving real text (bench/data/scripts, public-domain works), one source
// event per `POST …/events`, the cases taken round-robin (one append of each in turn, so background
// load lands on all alike), each conversation's object woken just before its append (untimed), so
// that a slow round does not leave it to be rebuilt by the append. Each append is timed at the client
// (send → last byte) and asks the D1 meter what it cost (rows read and written, statements): the time says what a user
// waits, the rows say it deterministically, whatever else the machine is doing.
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Api, LogFollower } from "./api.mjs";
import { probeEvent } from "./conversation.mjs";
import { max, mean, percentile, round } from "./stats.mjs";
import { applyMigrations, createToken, freePort, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";
import { INSTRUMENTED_MAIN } from "./instrumented.mjs";

const AGENT = "b-scripts";
const MODEL = "bench-scripts";
const PREFIX = "api:bench:scripts:";
/** The largest trigger a declaration accepts (src/core/declarations.ts): no case appends 100,000 characters. */
const SCRIPTS_POLICY = { triggerInputChars: 2_000_000, retainInputChars: 1_000_000, maxFrozenChars: 2_000_000 };
/**
 * The agent's own caps at their largest (src/core/declarations.ts): a compaction is also planned at
 * three quarters of them (core/selection `capPressure`), which the default 120,000 characters put
 * at the 22nd append of 4,096.
 */
const SCRIPTS_CONTEXT = { maxChars: 2_000_000, maxMessages: 10_000 };
/** Unmeasured appends first in each conversation: an append's cost can grow over a conversation's first messages. */
const WARMUP_APPENDS = 2;
/** Measured appends per case. */
const SAMPLES = { full: 20, quick: 5 };
/** A 4,096-character Chinese append has taken about 40 s (15fe387): a request gets more than four times that. */
const REQUEST_TIMEOUT_MS = 180_000;
/** How far each lap of a fixture read as a loop starts after the previous lap, so no two messages are the same text. */
const LAP_SHIFT = 7;
const DATA_DIR = fileURLToPath(new URL("../data/scripts/", import.meta.url));

/** @typedef {{ id: string, script: string, fixture: string, work: string, chars: number }} ScriptCase */

/**
 * The cases, each a conversation of its own; the ratios the report judges compare them. The longest
 * message is 4,096 characters, Telegram's limit.
 * @type {ScriptCase[]}
 */
const SCRIPT_CASES = [
  { id: "latin-200", script: "Latin (English)", fixture: "english.txt", work: "Pride and Prejudice", chars: 200 },
  { id: "latin-1000", script: "Latin (English)", fixture: "english.txt", work: "Pride and Prejudice", chars: 1_000 },
  { id: "latin-4096", script: "Latin (English)", fixture: "english.txt", work: "Pride and Prejudice", chars: 4_096 },
  { id: "chinese-100", script: "Chinese", fixture: "chinese.txt", work: "红楼梦", chars: 100 },
  { id: "chinese-330", script: "Chinese", fixture: "chinese.txt", work: "红楼梦", chars: 330 },
  { id: "chinese-1000", script: "Chinese", fixture: "chinese.txt", work: "红楼梦", chars: 1_000 },
  { id: "chinese-4096", script: "Chinese", fixture: "chinese.txt", work: "红楼梦", chars: 4_096 },
  { id: "japanese-4096", script: "Japanese (kana and kanji)", fixture: "japanese.txt", work: "吾輩は猫である", chars: 4_096 },
  { id: "persian-4096", script: "Persian (Arabic script)", fixture: "persian.txt", work: "Divan of Hafez", chars: 4_096 },
  { id: "thai-4096", script: "Thai", fixture: "thai.txt", work: "โคบุตร (Sunthorn Phu)", chars: 4_096 },
];

/**
 * `count` messages of exactly `chars` characters (JavaScript string length): consecutive slices of
 * `text`, read as a loop when it is shorter than all of them (a fixture ends with a line break,
 * where its end joins its start), each lap starting `LAP_SHIFT` characters later than the one before.
 * @param {string} text @param {number} chars @param {number} count
 */
function messagesOf(text, chars, count) {
  if (text.length < chars) throw new Error(`a fixture of ${text.length} characters cannot give messages of ${chars}`);
  const messages = [];
  for (let i = 0; i < count; i++) {
    const at = i * chars;
    const start = (at + Math.floor(at / text.length) * LAP_SHIFT) % text.length;
    const message = (text.slice(start, start + chars) + text.slice(0, chars)).slice(0, chars);
    // A slice may not end inside a surrogate pair: the text must stay the same text once encoded.
    if (message.length !== chars || !message.isWellFormed()) throw new Error(`message ${i + 1} at ${start} is not ${chars} well-formed characters`);
    messages.push(message);
  }
  if (new Set(messages).size !== messages.length) throw new Error(`two of ${count} messages of ${chars} characters are the same text`);
  return messages;
}

/**
 * Starts the section's own Worker (D1_METER on, no OPENAI_API_KEY), measures, stops it.
 * @param {{ root: string, appDir: string, workDir: string, fake: { baseUrl: string }, log: (line: string) => void, quick: boolean }} o
 */
export async function runScriptsPhase({ root, appDir, workDir, fake, log, quick }) {
  const persistDir = join(workDir, "scripts-state");
  const envFile = join(workDir, "scripts.env");
  applyMigrations(root, appDir, persistDir);
  const token = createToken(root, appDir, persistDir, ["api:*", "agent:*"], "bench-scripts");
  await writeEnvFile(envFile, { OPENAI_BASE_URL: fake.baseUrl, QUEUE_RETRY_BASE_SECONDS: "0", COMPACTION_BACKOFF_BASE_SECONDS: "1", D1_METER: "on" });
  const worker = await startWorker({ root, appDir, persistDir, envFile, port: await freePort(8797), logPath: join(workDir, "wrangler-scripts.log"), log, main: INSTRUMENTED_MAIN });
  try {
    return await measureScripts(new Api(worker.url, token, { timeoutMs: REQUEST_TIMEOUT_MS }), log, quick ? SAMPLES.quick : SAMPLES.full);
  } finally {
    await worker.stop();
  }
}

/** @typedef {{ ms: number, rowsRead: number, rowsWritten: number, statements: number, roundTrips: number }} Append */

/** @param {Api} api @param {(line: string) => void} log @param {number} samples */
async function measureScripts(api, log, samples) {
  await api.registerAgent({ agentId: AGENT, sources: [`${PREFIX}*`], model: MODEL, policy: SCRIPTS_POLICY, context: SCRIPTS_CONTEXT });
  const total = WARMUP_APPENDS + samples;
  /** @type {Map<string, string>} */
  const fixtures = new Map();
  const runs = SCRIPT_CASES.map((c) => {
    const text = fixtures.get(c.fixture) ?? readFileSync(join(DATA_DIR, c.fixture), "utf8");
    fixtures.set(c.fixture, text);
    return {
      case: c,
      conversation: `${PREFIX}${c.id}`,
      messages: messagesOf(text, c.chars, total),
      /** @type {Append[]} */
      appends: [],
      /** @type {{ append: number, message: string } | null} */
      failure: null,
    };
  });
  const loadAverageAtStart = loadavg().map((v) => round(v, 2));
  const started = Date.now();
  for (let i = 0; i < total; i++) {
    for (const run of runs) {
      if (run.failure !== null) continue; // a case that failed is not appended to again: its conversation's state is unknown
      const event = probeEvent(`s-${run.case.id}-${i + 1}`, /** @type {string} */ (run.messages[i]));
      try {
        // The conversation's object is woken first, untimed: at a slow pace (a round of the cases takes
        // minutes while the index is slow) it sits idle longer than the local runtime keeps an object
        // (about 10 s), and an append that finds it gone rebuilds it from D1 (13 statements in 8 round
        // trips, against 5 in 1 right after another append). Woken by a context read, the object
        // leaves the append less to read back (9 in 4): the report prints each case's round trips.
        if (i > 0) await api.context(run.conversation, AGENT);
        const { response, d1 } = await api.metered(`${run.case.id} append ${i + 1}`, [201], "POST", `${Api.conversationPath(run.conversation)}/events`, event);
        run.appends.push({ ms: response.ms, rowsRead: d1.rowsRead, rowsWritten: d1.rowsWritten, statements: d1.statements, roundTrips: d1.roundTrips });
      } catch (error) {
        const timedOut = error instanceof Error && error.name === "TimeoutError";
        const message = timedOut ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : error instanceof Error ? error.message : String(error);
        run.failure = { append: i + 1, message };
        log(`  !! scripts: ${run.case.id} append ${i + 1} failed: ${message}`);
      }
    }
    const latest = runs.map((r) => `${r.case.id} ${r.appends.length === i + 1 ? `${Math.round(r.appends[i]?.ms ?? NaN).toLocaleString("en-US")} ms` : "failed"}`);
    log(`[scripts] append ${i + 1}/${total}${i < WARMUP_APPENDS ? " (warm-up)" : ""}: ${latest.join(", ")}`);
  }
  const seconds = (Date.now() - started) / 1000;
  const cases = [];
  for (const run of runs) cases.push({ ...summarize(run), plannedRuns: await plannedRuns(api, run.conversation) });
  return { policy: SCRIPTS_POLICY, context: SCRIPTS_CONTEXT, warmupAppends: WARMUP_APPENDS, samplesPerCase: samples, requestTimeoutMs: REQUEST_TIMEOUT_MS, seconds: round(seconds, 1), loadAverageAtStart, loadAverageAtEnd: loadavg().map((v) => round(v, 2)), cases, ratios: ratiosOf(cases) };
}

/**
 * Compaction runs planned in a conversation (the premise: none): null when its log cannot be read.
 * @param {Api} api @param {string} conversation
 */
async function plannedRuns(api, conversation) {
  try {
    const follower = new LogFollower(api, conversation);
    await follower.poll();
    return follower.plannedRuns().length;
  } catch {
    return null;
  }
}

/**
 * A case's figures: its measured appends' latency and mean D1 cost, and every append's raw figures.
 * @param {{ case: ScriptCase, conversation: string, appends: Append[], failure: { append: number, message: string } | null }} run
 */
function summarize(run) {
  const measured = run.appends.slice(WARMUP_APPENDS);
  const ms = measured.map((a) => a.ms);
  const meanOf = (/** @type {keyof Append} */ key, digits = 1) => round(mean(measured.map((a) => a[key])), digits);
  return {
    ...run.case,
    conversation: run.conversation,
    complete: run.failure === null,
    failure: run.failure,
    samples: measured.length,
    warmupMs: run.appends.slice(0, WARMUP_APPENDS).map((a) => round(a.ms, 1)),
    p50Ms: round(percentile(ms, 50), 1),
    p90Ms: round(percentile(ms, 90), 1),
    maxMs: round(max(ms), 1),
    meanMs: round(mean(ms), 1),
    rowsRead: meanOf("rowsRead"),
    rowsWritten: meanOf("rowsWritten"),
    statements: meanOf("statements", 2),
    roundTrips: meanOf("roundTrips", 2),
    // Every append in order, warm-ups first: the raw figures behind the means.
    appends: run.appends.map((a) => ({ ...a, ms: round(a.ms, 1) })),
  };
}

/**
 * The ratios the report judges (lib/scripts-report.mjs), on p50 latency and on mean rows read +
 * written per append; null where a case did not complete its appends (part of its samples would
 * compare other minutes of the run than the other case's).
 * @param {ReturnType<typeof summarize>[]} cases
 */
function ratiosOf(cases) {
  const byId = new Map(cases.map((c) => [c.id, c]));
  const rows = (/** @type {ReturnType<typeof summarize>} */ c) => (c.rowsRead ?? NaN) + (c.rowsWritten ?? NaN);
  const ratio = (/** @type {string} */ top, /** @type {string} */ bottom) => {
    const a = byId.get(top);
    const b = byId.get(bottom);
    if (a === undefined || b === undefined || !a.complete || !b.complete) return { of: [top, bottom], p50: null, rows: null };
    return { of: [top, bottom], p50: round((a.p50Ms ?? NaN) / (b.p50Ms ?? NaN), 3), rows: round(rows(a) / rows(b), 3) };
  };
  return {
    chineseToLatin4096: ratio("chinese-4096", "latin-4096"),
    chineseGrowth: ratio("chinese-4096", "chinese-1000"),
    latinGrowth: ratio("latin-4096", "latin-1000"),
  };
}
