// The scale section (§13): what each operation costs on a long conversation against a short one.
// Every read the service makes on a request is meant to follow its own work (a page, a slice, a
// trigger's worth of turns), never the history before it: this section puts that to the test on
// one Worker, with two conversations that differ only in length.
//
// On a Worker of its own (fresh D1, no model key: the offline compactor and extractor). One agent
// serves every conversation of the section from the start, with a small trigger, so each long
// conversation is a real one: its sources preflighted one by one (a skipped run each), its chain
// compacted as it grew. Each conversation is loaded through `POST …/events/batch` (100 short
// messages a request), compaction is waited out, then each operation is measured a few times with
// the D1 meter (statements, rows read, bytes read by the Worker and the conversation's object) and
// timed at the client. The rows are what the report judges: they say deterministically what an
// operation read, whatever else the machine was doing; the times are this machine's.
import { readFile, writeFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import { Api, LogFollower, waitForCatchUp } from "./api.mjs";
import { probeEvent } from "./conversation.mjs";
import { mean, percentile, round } from "./stats.mjs";
import { applyMigrations, createToken, freePort, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";
import { INSTRUMENTED_MAIN } from "./instrumented.mjs";

const AGENT = "b-scale";
const PREFIX = "api:bench:scale:";
// At most a trigger's worth frozen a run: a link's slice is the same size whether the compactor kept
// up with the appends (a chat's pace) or fell behind them (a bulk load, 100 messages a request),
// so the two lengths compare the history's cost, not the slices' (the default cap, 160,000
// characters, let a plan made behind a bulk load freeze eight times what one made in step does).
const POLICY = { triggerInputChars: 20_000, retainInputChars: 10_000, maxFrozenChars: 20_000 };
/** The long chain's agent: a boundary every dozen or so messages, however far behind the compactor is. */
const CHAIN_AGENT = "b-chain";
const CHAIN_PREFIX = "api:bench:chain:";
const CHAIN_POLICY = { triggerInputChars: 1_000, retainInputChars: 500, maxFrozenChars: 1_000 };
/** Sources per batch request (each also writes its skipped run: two events a source). */
const BATCH = 100;
/** Samples per operation and length. */
const SAMPLES = 5;
/** New agents activated per length (each activation happens once, so each is one sample). */
const ACTIVATIONS = 3;
/** What recall is asked, a question the messages answer. */
const QUERY = "which hotel did the team book for the offsite in Porto";

/** @param {number} i */
const text = (i) => `Message ${i}: the offsite in ${i % 2 === 0 ? "Lisbon" : "Porto"}, hotel ${i % 97}, budget ${1_000 + (i % 500)} euros.`;

/**
 * Starts the section's own Worker, measures both lengths, stops it.
 * @param {{ root: string, appDir: string, workDir: string, fake: { baseUrl: string }, log: (line: string) => void, quick: boolean, events: number, chainBoundaries: number }} o
 */
export async function runScalePhase({ root, appDir, workDir, fake, log, quick, events, chainBoundaries }) {
  const persistDir = join(workDir, "scale-state");
  const envFile = join(workDir, "scale.env");
  // A chain's runs follow one another, each a queue job that local Queues hold for the consumers'
  // batch timeout (1 s) when it arrives alone: 0 on this section's copy of the app, so a chain of
  // a thousand links builds in minutes. It changes when a job starts, not what it reads.
  const config = join(appDir, "wrangler.toml");
  await writeFile(config, (await readFile(config, "utf8")).replaceAll(/^max_batch_timeout = \d+$/gm, "max_batch_timeout = 0"));
  applyMigrations(root, appDir, persistDir);
  const token = createToken(root, appDir, persistDir, ["api:*", "agent:*"], "bench-scale");
  await writeEnvFile(envFile, { OPENAI_BASE_URL: fake.baseUrl, QUEUE_RETRY_BASE_SECONDS: "0", COMPACTION_BACKOFF_BASE_SECONDS: "1", D1_METER: "on" });
  const worker = await startWorker({ root, appDir, persistDir, envFile, port: await freePort(8799), logPath: join(workDir, "wrangler-scale.log"), log, main: INSTRUMENTED_MAIN });
  try {
    const api = new Api(worker.url, token);
    await api.registerAgent({ agentId: AGENT, sources: [`${PREFIX}*`], model: "bench-scale", policy: POLICY });
    const sizes = [1_000, quick ? Math.min(events, 10_000) : events];
    const loadAverageAtStart = loadavg().map((v) => round(v, 2));
    const lengths = [];
    for (const size of sizes) lengths.push(await measureLength(api, log, size));
    // The long chain: as many boundaries as asked for, against a short chain of the same policy.
    await api.registerAgent({ agentId: CHAIN_AGENT, sources: [`${CHAIN_PREFIX}*`], model: "bench-scale", policy: CHAIN_POLICY });
    const chain = [await measureChain(api, log, quick ? 10 : 40), await measureChain(api, log, quick ? Math.min(chainBoundaries, 200) : chainBoundaries)];
    return {
      policy: POLICY,
      samples: SAMPLES,
      activations: ACTIVATIONS,
      loadAverageAtStart,
      loadAverageAtEnd: loadavg().map((v) => round(v, 2)),
      lengths,
      ratios: ratiosOf(lengths),
      chain: { policy: CHAIN_POLICY, lengths: chain, ratios: ratiosOf(chain) },
    };
  } finally {
    await worker.stop();
  }
}

/** @typedef {{ ms: number, statements: number, rowsRead: number, bytesRead: number }} Sample */

/**
 * `count` more sources appended to `conversation` in batches, numbered from `from`.
 * @param {Api} api @param {(line: string) => void} log @param {string} conversation @param {number} from @param {number} count @param {number} started
 */
async function appendSources(api, log, conversation, from, count, started) {
  for (let sources = from; sources < from + count; ) {
    const batch = Array.from({ length: Math.min(BATCH, from + count - sources) }, (_, k) => probeEvent(`s-${sources + k}`, text(sources + k)));
    await api.appendBatch(conversation, batch);
    sources += batch.length;
    if (sources % 10_000 === 0) log(`[scale] ${conversation}: ${sources.toLocaleString("en-US")} sources in ${Math.round((Date.now() - started) / 1000)} s`);
  }
}

/**
 * One conversation of about `size` events, loaded, caught up and measured.
 * @param {Api} api @param {(line: string) => void} log @param {number} size
 */
async function measureLength(api, log, size) {
  const conversation = `${PREFIX}${size}`;
  const started = Date.now();
  // Two events a source (the source and its skipped run), a few more for each compaction.
  const sources = Math.ceil(size / 2);
  await appendSources(api, log, conversation, 0, sources, started);
  const follower = new LogFollower(api, conversation);
  await waitForCatchUp({ api, follower, agentId: AGENT, trigger: POLICY.triggerInputChars, timeoutMs: 1_800_000, onWait: (state) => log(`[scale] ${conversation}: waiting for compaction: ${state}`) });
  const loadSeconds = round((Date.now() - started) / 1000, 1);
  const boundaries = (await api.chain(conversation, AGENT)).boundaries.length;
  log(`[scale] ${conversation}: ${follower.lastSeq.toLocaleString("en-US")} events, ${boundaries} boundaries, loaded and caught up in ${loadSeconds} s`);
  const operations = await measureOperations(api, log, { conversation, agentId: AGENT, events: follower.lastSeq, boundaries, activate: true });
  return { conversation, events: follower.lastSeq, sources, boundaries, loadSeconds, operations };
}

/**
 * A conversation whose chain reaches `target` boundaries (the chain agent's small trigger and
 * frozen cap: a boundary every dozen or so messages), loaded a round at a time, each round sized by
 * the messages a boundary took so far and waited out, then measured; the long one is also verified
 * whole through its paged form (`verifyAllPages`).
 * @param {Api} api @param {(line: string) => void} log @param {number} target
 */
async function measureChain(api, log, target) {
  const conversation = `${CHAIN_PREFIX}${target}`;
  const started = Date.now();
  const follower = new LogFollower(api, conversation);
  let sources = 0;
  let boundaries = 0;
  while (boundaries < target) {
    const perBoundary = boundaries === 0 ? CHAIN_POLICY.maxFrozenChars / text(0).length : sources / boundaries;
    const count = Math.max(BATCH, Math.ceil((target - boundaries) * perBoundary));
    await appendSources(api, log, conversation, sources, count, started);
    sources += count;
    await waitForQuiet(api, log, follower);
    boundaries = (await api.chain(conversation, CHAIN_AGENT)).boundaries.length;
    log(`[scale] ${conversation}: ${sources.toLocaleString("en-US")} sources, ${boundaries.toLocaleString("en-US")} boundaries in ${Math.round((Date.now() - started) / 1000)} s`);
  }
  const loadSeconds = round((Date.now() - started) / 1000, 1);
  const operations = await measureOperations(api, log, { conversation, agentId: CHAIN_AGENT, events: follower.lastSeq, boundaries, activate: false });
  const whole = await api.request("GET", `${Api.conversationPath(conversation)}/verify?agent=${encodeURIComponent(CHAIN_AGENT)}`);
  return { conversation, events: follower.lastSeq, sources, boundaries, loadSeconds, operations, wholeVerifyStatus: whole.status, paged: await verifyAllPages(api, conversation) };
}

/**
 * Waits until the chain agent's compaction has caught up: no planned run open and none planned for
 * a few polls. (`waitForCatchUp` judges the served context against the trigger, which a summary
 * alone can pass at a trigger this small.)
 * @param {Api} api @param {(line: string) => void} log @param {LogFollower} follower
 */
async function waitForQuiet(api, log, follower) {
  const deadline = Date.now() + 14_400_000;
  let planned = -1;
  let quiet = 0;
  let lastReport = Date.now();
  while (quiet < 3) {
    if (Date.now() > deadline) throw new Error(`compaction of ${follower.conversation} did not catch up within four hours`);
    // The context call is serialized with the object's writes: it waits out a settlement in progress.
    // A chain loaded far faster than it compacts falls behind its log (HOT_WINDOW_EVENTS) and
    // answers 409 compaction_behind until it caught up.
    const response = await api.expect(`context of ${follower.conversation}`, [200, 409], "GET", `${Api.conversationPath(follower.conversation)}/context?agent=${encodeURIComponent(CHAIN_AGENT)}`);
    if (response.status === 409 && response.json().error?.code !== "compaction_behind") throw new Error(`context of ${follower.conversation}: ${response.text.slice(0, 300)}`);
    await follower.poll();
    const now = follower.plannedRuns().length;
    quiet = follower.openRuns().length === 0 && now === planned ? quiet + 1 : 0;
    planned = now;
    if (Date.now() - lastReport > 30_000) {
      lastReport = Date.now();
      log(`[scale] ${follower.conversation}: ${now.toLocaleString("en-US")} runs planned, ${follower.openRuns().length} open`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * The whole current epoch verified through `GET …/verify/links`, 50 links a page (its largest), following
 * `nextAfter`: pages, whether every one was valid, and the most any page cost.
 * @param {Api} api @param {string} conversation
 */
async function verifyAllPages(api, conversation) {
  const path = `${Api.conversationPath(conversation)}/verify/links?agent=${encodeURIComponent(CHAIN_AGENT)}&limit=50`;
  const started = Date.now();
  let pages = 0;
  let links = 0;
  let valid = true;
  let maxStatements = 0;
  let maxRowsRead = 0;
  for (let after = 0; after !== null; ) {
    const { response, d1 } = await api.metered("verify page", [200], "GET", `${path}&after=${after}`);
    const page = response.json();
    pages += 1;
    links += page.links.length;
    valid &&= page.valid === true;
    maxStatements = Math.max(maxStatements, d1.statements);
    maxRowsRead = Math.max(maxRowsRead, d1.rowsRead);
    after = page.nextAfter;
  }
  return { pages, links, valid, maxStatements, maxRowsRead, seconds: round((Date.now() - started) / 1000, 1) };
}

/**
 * Each operation on one loaded conversation, `SAMPLES` times, and a new agent's activation
 * `ACTIVATIONS` times when asked.
 * @param {Api} api @param {(line: string) => void} log
 * @param {{ conversation: string, agentId: string, events: number, boundaries: number, activate: boolean }} o
 */
async function measureOperations(api, log, { conversation, agentId, events, boundaries, activate }) {
  const path = Api.conversationPath(conversation);
  const agent = encodeURIComponent(agentId);
  const middle = Math.max(1, Math.floor(boundaries / 2));
  /** @type {Record<string, () => Promise<Sample>>} */
  const operations = {
    append: () => sample(api, "append", [201], "POST", `${path}/events`, probeEvent(`probe-${crypto.randomUUID()}`, "One more message about the offsite.")),
    context: () => sample(api, "context", [200], "GET", `${path}/context?agent=${agent}`),
    recall: () => sample(api, "recall", [200], "GET", `${path}/context?agent=${agent}&query=${encodeURIComponent(QUERY)}`),
    search: () => sample(api, "search", [200], "GET", `${path}/memory/search?agent=${agent}&q=${encodeURIComponent(QUERY)}`),
    eventsPage: () => sample(api, "events page", [200], "GET", `${path}/events?after=${Math.floor(events / 2)}&limit=100`),
    chainPage: () => sample(api, "chain page", [200], "GET", `${path}/chain?agent=${agent}&limit=1`),
    verifyFirstPage: () => sample(api, "verify first page", [200], "GET", `${path}/verify/links?agent=${agent}&after=0&limit=1`),
    verifyMiddlePage: () => sample(api, "verify middle page", [200], "GET", `${path}/verify/links?agent=${agent}&after=${middle}&limit=1`),
    verifyLastPage: () => sample(api, "verify last page", [200], "GET", `${path}/verify/links?agent=${agent}&after=${Math.max(0, boundaries - 1)}&limit=1`),
  };
  /** @type {Record<string, ReturnType<typeof summary>>} */
  const measured = {};
  for (const [name, run] of Object.entries(operations)) {
    /** @type {Sample[]} */
    const samples = [];
    for (let i = 0; i < SAMPLES; i++) samples.push(await run());
    measured[name] = summary(samples);
  }
  // A new agent's first message activates its epoch on this history (the frontier is read once).
  /** @type {Sample[]} */
  const activations = [];
  for (let i = 0; activate && i < ACTIVATIONS; i++) {
    const newAgent = `b-scale-new-${events}-${i}`;
    await api.registerAgent({ agentId: newAgent, sources: [conversation], model: "bench-scale", policy: POLICY });
    activations.push(await sample(api, "activation", [201], "POST", `${path}/events`, probeEvent(`activate-${newAgent}`, "A message the new agent is the first to see.")));
  }
  if (activate) measured["activation"] = summary(activations);
  log(`[scale] ${conversation}: ${Object.entries(measured).map(([name, s]) => `${name} ${s.rowsRead} rows`).join(", ")}`);
  return measured;
}

/** @param {Api} api @param {string} what @param {number[]} ok @param {string} method @param {string} path @param {unknown} [body] @returns {Promise<Sample>} */
async function sample(api, what, ok, method, path, body) {
  const { response, d1 } = await api.metered(what, ok, method, path, body);
  return { ms: response.ms, statements: d1.statements, rowsRead: d1.rowsRead, bytesRead: d1.bytesRead };
}

/** @param {Sample[]} samples */
function summary(samples) {
  const of = (/** @type {keyof Sample} */ key) => samples.map((s) => s[key]);
  return { p50Ms: round(percentile(of("ms"), 50), 1), statements: round(mean(of("statements")), 1), rowsRead: round(mean(of("rowsRead")), 1), bytesRead: Math.round(mean(of("bytesRead"))), maxRowsRead: Math.max(...of("rowsRead")) };
}

/**
 * Each operation's cost at the long length over the short one: statements and rows read (the
 * report judges them against 2), and p50 time (reported, not judged: the machine's).
 * @param {Awaited<ReturnType<typeof measureLength>>[]} lengths
 */
function ratiosOf(lengths) {
  const [short, long] = lengths;
  if (short === undefined || long === undefined) return {};
  /** @type {Record<string, { statements: number, rowsRead: number, p50Ms: number }>} */
  const ratios = {};
  for (const [name, a] of Object.entries(long.operations)) {
    const b = short.operations[name];
    if (b === undefined) continue;
    ratios[name] = { statements: round(a.statements / b.statements, 2), rowsRead: round(a.rowsRead / Math.max(1, b.rowsRead), 2), p50Ms: round(a.p50Ms / b.p50Ms, 2) };
  }
  return ratios;
}
