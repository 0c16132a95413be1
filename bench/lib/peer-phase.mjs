// The peer section: the same replay through Foldline and through the peer a bot author would pick
// instead, the Cloudflare Agents SDK's Sessions (`agents/sessions`) with its own compaction and its
// own search, in one run on one Worker of its own. The peer is bench/worker/peer-sessions.ts, one
// object per conversation, bound as PEER_SESSIONS in the section's own copy of the snapshot (its
// wrangler.toml gains the binding and a sqlite migration; the deployed wrangler.toml is untouched).
// Both summarize with the loopback fake model: Foldline's compactor (OPENAI_API_KEY set to the fake;
// memory extraction offline, as in §12) and the peer's `summarize`.
//
// Replayed through both, message by message: LoCoMo's eight conversations (each turn through the
// Telegram webhook as §12 sends it, then appended to the peer: speaker_a as a user message,
// speaker_b as an assistant message, the text as `<speaker>: <text>` since a message has no author)
// and §10's generated group chat (each event through `POST …/events` as §10 sends it; on the peer, a
// person's message as a user message `<name>: <text>`, the agent's reply as an assistant message).
// Measured: storage and rows written per 1,000 messages, append and context p50, evidence recall
// within one budget (lib/peer-recall.mjs), and what each can prove (lib/peer-proofs.mjs);
// lib/peer-report.mjs writes it up.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { Api, LogFollower, waitForCatchUp } from "./api.mjs";
import { loadLocomo } from "./locomo-data.mjs";
import { replayLocomo } from "./locomo-phase.mjs";
import { memoryConversation, memoryEvents } from "./memory-conversation.mjs";
import { MEMORY_POLICY } from "./memory-phase.mjs";
import { askBoth, contextLatency } from "./peer-recall.mjs";
import { editAfterCompaction, forgeFoldline, forgePeer, servedAfterForgery, verifyCoverage } from "./peer-proofs.mjs";
import { latencySummary, round, roundSummary } from "./stats.mjs";
import { UsageLedger, per1000 } from "./usage-ledger.mjs";
import { INSTRUMENTED_MAIN, snapshotWithConfig } from "./instrumented.mjs";
import { applyMigrations, createToken, freePort, startWorker, writeEnvFile } from "../../scripts/lib/worker.mjs";

const BOT = "4200000888";
const AGENT = "b-peer";
/** Foldline's compactor model and the peer's (bench/worker/peer-sessions.ts): the fake's calls are counted by name. */
const MODEL = "bench-peer-foldline";
const PEER_MODEL = "bench-peer";
const CHAT = "api:bench:peer-chat";
/** §10's chat: the same seed and length. */
const CHAT_SEED = 16;
/** LoCoMo's conversations replayed: all eight (the first two, in id order, with --quick). */
const LOCOMO_CONVERSATIONS = 8;

/**
 * The snapshot's wrangler.toml plus the peer's object: a binding and the sqlite migration that
 * creates its class, only in this section's copy.
 * @param {string} toml
 */
export const withPeerObject = (toml) =>
  `${toml}\n# The bench's peer section only (bench/lib/peer-phase.mjs): the Agents SDK's Sessions, one object per conversation.\n` +
  `[[durable_objects.bindings]]\nname = "PEER_SESSIONS"\nclass_name = "PeerSessions"\n\n[[migrations]]\ntag = "bench-peer-v1"\nnew_sqlite_classes = ["PeerSessions"]\n`;

/** The peer's objects, through the section Worker's bench route (bench/worker/peer-route.ts). */
export class Peer {
  /** @param {Api} api */
  constructor(api) {
    this.api = api;
  }

  /** @param {string} object @param {string} call @param {Record<string, unknown>} [body] @returns {Promise<{ ms: number, body: any }>} */
  async call(object, call, body = {}) {
    const response = await this.api.request("POST", `/bench/peer/${encodeURIComponent(object)}/${call}`, body);
    if (response.status !== 200) throw new Error(`peer ${call} on ${object}: HTTP ${response.status} ${response.text.slice(0, 300)}`);
    return { ms: response.ms, body: response.json() };
  }

  /** Foldline's own object for `conversation`: its SQLite size. @param {string} conversation */
  async foldlineObjectBytes(conversation) {
    const response = await this.api.request("GET", `/bench/foldline-object/${encodeURIComponent(conversation)}`);
    if (response.status !== 200) throw new Error(`foldline object ${conversation}: HTTP ${response.status} ${response.text.slice(0, 300)}`);
    return Number(response.json().databaseBytes);
  }
}

/**
 * Starts the section's Worker (fresh state; the fake as the only model; usage ledger and D1 meter
 * on), measures, stops it; then forges Foldline's stored head in the stopped Worker's D1 and asks a
 * restarted one to serve it.
 * @param {{ root: string, appDir: string, workDir: string, fake: { baseUrl: string, calls: { model: string }[] }, log: (line: string) => void, quick: boolean }} o
 */
export async function runPeerPhase({ root, appDir, workDir, fake, log, quick }) {
  const app = join(workDir, "peer-app");
  snapshotWithConfig(appDir, app, withPeerObject);
  const persistDir = join(workDir, "peer-state");
  const envFile = join(workDir, "peer.env");
  applyMigrations(root, app, persistDir);
  const token = createToken(root, app, persistDir, ["*", "agent:*"], "bench-peer");
  const secret = randomBytes(24).toString("base64url");
  await writeEnvFile(envFile, {
    OPENAI_API_KEY: "bench-not-a-real-key",
    OPENAI_BASE_URL: fake.baseUrl,
    OPENAI_EXTRACTION: "offline",
    QUEUE_RETRY_BASE_SECONDS: "0",
    COMPACTION_BACKOFF_BASE_SECONDS: "1",
    D1_METER: "on",
    USAGE_METER: "on",
    [`TELEGRAM_WEBHOOK_SECRET_${BOT}`]: secret,
  });
  const options = { root, appDir: app, persistDir, envFile, port: await freePort(8797), logPath: join(workDir, "wrangler-peer.log"), log, main: INSTRUMENTED_MAIN };
  let worker = await startWorker(options);
  /** @type {Record<string, any>} */
  let metrics;
  try {
    const api = new Api(worker.url, token);
    metrics = await measure({ api, peer: new Peer(api), secret, log, quick });
  } finally {
    await worker.stop();
  }
  // (c) on Foldline: the head's summary rewritten in the stopped Worker's D1, its hash recomputed
  // (as addCompaction writes the peer's overlay: straight into storage), then a fork inserted beside
  // it; a restarted Worker is asked to serve and to verify the chain.
  const { conversation, boundaryId } = metrics.proofs.target;
  const tampered = await forgeFoldline(persistDir, boundaryId);
  worker = await startWorker(options);
  try {
    metrics.proofs.forgery.foldline = { ...tampered, ...(await servedAfterForgery(new Api(worker.url, token), AGENT, conversation)) };
  } finally {
    await worker.stop();
  }
  metrics.modelCalls = { foldline: fake.calls.filter((c) => c.model === MODEL).length, peer: fake.calls.filter((c) => c.model === PEER_MODEL).length };
  return metrics;
}

/**
 * @param {{ api: Api, peer: Peer, secret: string, log: (line: string) => void, quick: boolean }} o
 */
async function measure({ api, peer, secret, log, quick }) {
  await api.registerAgent({ agentId: AGENT, sources: [`telegram:${BOT}:*`, CHAT], model: MODEL, policy: MEMORY_POLICY });
  // What an object holds before any message: the peer's with the SDK's tables and its search index
  // (built here before the first message, so every append maintains it), Foldline's as constructed.
  const opened = (await peer.call("empty", "open")).body;
  const emptyPeer = opened.databaseBytes;
  const emptyFoldline = await peer.foldlineObjectBytes("api:bench:peer-never-used");
  const ledger = new UsageLedger(api, AGENT);

  // 1. LoCoMo, turn by turn through both.
  const conversations = loadLocomo(quick).slice(0, LOCOMO_CONVERSATIONS);
  log(`[peer] ${conversations.length} LoCoMo conversations (${conversations.map((c) => c.data.id).join(", ")}) through Foldline's webhook and the peer's appendMessage, turn by turn`);
  const locomo = newTally();
  let before = await ledger.settled();
  ledger.reads = 0;
  const updates = { next: 1 };
  /** @type {(import("./locomo-phase.mjs").Replayed & { object: string })[]} */
  const replayed = [];
  for (const { n, data } of conversations) {
    const object = `locomo-${data.id}`;
    await peer.call(object, "open");
    const onTurn = async (/** @type {import("./locomo-data.mjs").Turn} */ turn, /** @type {number} */ ms) => {
      const role = turn.speaker === data.speaker_a ? "user" : "assistant";
      const { ms: peerMs, body } = await peer.call(object, "append", { message: { id: turn.messageId, role, text: turn.rendered } });
      locomo.count(turn.text.length, ms, peerMs, body.rowsWritten);
    };
    const c = await replayLocomo({ api, secret, bot: BOT, agent: AGENT, n, data, updates, log, onTurn });
    replayed.push({ ...c, object });
    log(`  ${data.id}: ${c.turns.length} turns through both in ${c.seconds.toFixed(1)} s; Foldline planned ${c.follower.plannedRuns().length} compactions`);
  }
  const after = await ledger.settled();
  const locomoStorage = await storageOf({ peer, ledger, before, after, tally: locomo, objects: replayed.map((c) => c.object), conversations: replayed.map((c) => c.conversation), emptyPeer, emptyFoldline });

  // 2. §10's group chat, event by event through Foldline, message by message through the peer.
  const chat = memoryConversation({ seed: CHAT_SEED, targetChars: quick ? 40_000 : 110_000 });
  const events = memoryEvents(chat.turns, AGENT);
  log(`[peer] §10's group chat (seed ${CHAT_SEED}): ${chat.turns.length} messages, ${events.length} events`);
  const group = newTally();
  // The LoCoMo figures' last read (storageOf's own, on a settled Worker) starts the chat's interval.
  before = await ledger.read();
  ledger.reads = 0;
  await peer.call("chat", "open");
  const follower = new LogFollower(api, CHAT);
  let next = 0;
  const started = Date.now();
  for (const turn of chat.turns) {
    const mine = events.slice(next, (next += turn.role === "user" ? 1 : 2));
    let ms = 0;
    for (const event of mine) ms += (await api.expect("peer chat append", [200, 201], "POST", `${Api.conversationPath(CHAT)}/events`, event)).ms;
    const text = turn.role === "user" ? `${turn.author?.name ?? "someone"}: ${turn.text}` : turn.text;
    const { ms: peerMs, body } = await peer.call("chat", "append", { message: { id: `mem-${turn.index}`, role: turn.role, text } });
    group.count(turn.text.length, ms, peerMs, body.rowsWritten, turn.role === "user");
  }
  await waitForCatchUp({ api, follower, agentId: AGENT, trigger: MEMORY_POLICY.triggerInputChars, onWait: (w) => log(`  chat: ${w}`) });
  const chatStorage = await storageOf({ peer, ledger, before, after: await ledger.settled(), tally: group, objects: ["chat"], conversations: [CHAT], emptyPeer, emptyFoldline });
  log(`[peer] chat through both in ${((Date.now() - started) / 1000).toFixed(1)} s; Foldline planned ${follower.plannedRuns().length} compactions`);

  // 3. Context reads, then the questions.
  const context = await contextLatency({ api, peer, agent: AGENT, targets: [...replayed.map((c) => ({ conversation: c.conversation, object: c.object })), { conversation: CHAT, object: "chat" }] });
  log(`[peer] context p50: Foldline ${context.foldline.p50} ms, peer ${context.peer.p50} ms; asking LoCoMo's questions of both`);
  const recall = await askBoth({ api, peer, agent: AGENT, replayed, log });

  // 4. What each can prove, on the first conversation.
  const first = replayed[0];
  if (first === undefined) throw new Error("no conversation replayed");
  const verify = await verifyCoverage({ api, peer, agent: AGENT, conversation: first.conversation, object: first.object });
  const edit = await editAfterCompaction({ api, peer, agent: AGENT, secret, bot: BOT, replayed: first });
  const forgery = { peer: await forgePeer({ peer, object: first.object }) };
  const head = (await api.context(first.conversation, AGENT)).json().manifest.boundary;

  return {
    agent: AGENT,
    policy: { foldline: MEMORY_POLICY, peer: opened.policy },
    emptyObjectBytes: { peer: emptyPeer, foldline: emptyFoldline },
    locomo: { conversations: conversations.map((c) => c.data.id), ...locomoStorage },
    chat: { seed: CHAT_SEED, chars: chat.chars, turns: chat.turns.length, events: events.length, foldlineCompactions: follower.plannedRuns().length, ...chatStorage },
    context,
    recall,
    proofs: { verify, edit, forgery, target: { conversation: first.conversation, boundaryId: head?.id ?? null } },
  };
}

/** Per-message tallies of one replay: characters said, append times and the peer's rows written. */
function newTally() {
  const t = {
    messages: 0,
    chars: 0,
    peerRowsWritten: 0,
    /** @type {number[]} */ foldlineMs: [],
    /** @type {number[]} */ peerMs: [],
    /** @param {number} chars @param {number} foldlineMs @param {number} peerMs @param {number} rows @param {boolean} [timed] a person's message (the agent's replies are appended, not timed) */
    count(chars, foldlineMs, peerMs, rows, timed = true) {
      t.messages += 1;
      t.chars += chars;
      t.peerRowsWritten += rows;
      if (timed) {
        t.foldlineMs.push(foldlineMs);
        t.peerMs.push(peerMs);
      }
    },
  };
  return t;
}

/**
 * Both systems' storage for one replay, per 1,000 messages: Foldline's from the usage ledger as §10
 * reads it (D1 growth by `size_after`, R2 bytes put, D1 rows written) plus its objects' SQLite;
 * the peer's objects' SQLite size (`databaseSize`) over an empty object's, and the rows written
 * every append's statements reported.
 * @param {{ peer: Peer, ledger: UsageLedger, before: any, after: any, tally: ReturnType<typeof newTally>, objects: string[], conversations: string[], emptyPeer: number, emptyFoldline: number }} o
 */
async function storageOf({ peer, ledger, before, after, tally, objects, conversations, emptyPeer, emptyFoldline }) {
  const reads = ledger.reads;
  const one = await ledger.oneRead(after);
  const used = per1000(before, after, tally.messages, reads, one);
  let peerBytes = 0;
  for (const object of objects) peerBytes += (await peer.call(object, "stats")).body.databaseBytes - emptyPeer;
  let objectBytes = 0;
  for (const conversation of conversations) objectBytes += (await peer.foldlineObjectBytes(conversation)) - emptyFoldline;
  const per = (/** @type {number} */ v) => Math.round((v / tally.messages) * 1000);
  const foldlineBytesPer1000 = Math.round(used.d1Bytes + used.r2Bytes) + per(objectBytes);
  return {
    messages: tally.messages,
    chars: tally.chars,
    foldline: {
      d1BytesPer1000: used.d1Bytes,
      r2BytesPer1000: used.r2Bytes,
      objectBytesPer1000: per(objectBytes),
      bytesPer1000: foldlineBytesPer1000,
      bytesPerChar: round(foldlineBytesPer1000 / ((tally.chars / tally.messages) * 1000), 2),
      rowsWrittenPer1000: used.d1RowsWritten,
      usage: used,
      append: roundSummary(latencySummary(tally.foldlineMs)),
    },
    peer: {
      bytesPer1000: per(peerBytes),
      bytesPerChar: round(peerBytes / tally.chars, 2),
      rowsWrittenPer1000: round((tally.peerRowsWritten / tally.messages) * 1000, 1),
      append: roundSummary(latencySummary(tally.peerMs)),
    },
  };
}
