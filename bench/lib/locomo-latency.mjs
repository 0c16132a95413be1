// The LoCoMo section's latency measure: recall (`GET …/context?agent=&query=`) for one replayed
// conversation, timed before and after 200 other conversations are placed on its shard, beside a
// control conversation on another shard; and where conversations land (the Worker's placement rule,
// re-derived here, and the control database read afterwards to check it). Changes with placement
// and shards.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Api } from "./api.mjs";
import { prng } from "./conversation.mjs";
import { terms } from "./memory-baselines.mjs";
import { max, mean, percentile, round } from "./stats.mjs";
import { d1BindingsOf } from "../../scripts/lib/d1-bindings.mjs";

/** The recall-latency measure: questions timed, rounds over them, other conversations added, messages each. */
const LATENCY = { questions: 50, rounds: 1, warmup: 5, others: 200, messagesEach: 100 };
const LOAD_PREFIX = "api:bench:locomo-load:";
const MAX_BATCH_EVENTS = 100;

/** @typedef {import("./locomo-data.mjs").Locomo} Locomo */
/** @typedef {import("./locomo-data.mjs").Turn} Turn */

/** The shards a new conversation may land on (src/storage/shards.ts openShards): every DB_SHARD_<n> of the snapshot's wrangler.toml, in number order, minus SHARDS_CLOSED. @param {string} appDir */
export function openShardNames(appDir) {
  const toml = readFileSync(join(appDir, "wrangler.toml"), "utf8");
  const closed = new Set((/^SHARDS_CLOSED\s*=\s*"([^"]*)"/m.exec(toml)?.[1] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== ""));
  return d1BindingsOf(join(appDir, "wrangler.toml"))
    .filter((name) => /^DB_SHARD_\d+$/.test(name) && !closed.has(name))
    .sort((a, b) => Number(a.slice(9)) - Number(b.slice(9)));
}

/** Where a new conversation is placed (src/core/placement.ts pickShard): 48 bits of its id's SHA-256 modulo the open shards. @param {string} id @param {string[]} open */
export function pickShard(id, open) {
  return open[Number.parseInt(createHash("sha256").update(id, "utf8").digest("hex").slice(0, 12), 16) % open.length];
}

/**
 * `GET …/context?agent=&query=` timed for one conversation's questions, with its shard as the
 * replay left it, then again once `LATENCY.others` other conversations (each `messagesEach` short
 * messages made of the measured conversation's words and speakers) have been placed on that shard.
 * A control conversation on another shard, if there is one, is timed in the same rounds (one call
 * each in turn), so what the machine's other work does to both shows in its ratio.
 * @param {{ api: Api, agent: string, log: (line: string) => void, measured: { data: Locomo, conversation: string, turns: Turn[] }, control: { data: Locomo, conversation: string, shard: string | undefined } | undefined, others: { data: Locomo, conversation: string, turns: Turn[], shard: string | undefined }[], shardNames: string[] }} o
 */
export async function recallLatency({ api, agent, log, measured, control, others, shardNames }) {
  const shard = pickShard(measured.conversation, shardNames);
  const sharing = others.filter((o) => o.shard === shard);
  const targets = [measured, ...(control === undefined ? [] : [control])].map((c) => ({
    path: `${Api.conversationPath(c.conversation)}/context?agent=${encodeURIComponent(agent)}&query=`,
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
export async function placementsOf(persistDir, ids) {
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

/**
 * The bytes the local D1 databases hold in use (pages less free pages, the write-ahead log
 * included), summed over every database but the runtime's own metadata: what D1 bills as storage.
 * @param {string} persistDir
 */
export async function d1BytesInUse(persistDir) {
  const { DatabaseSync } = await import("node:sqlite");
  const dir = join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  let bytes = 0;
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")) {
    const db = new DatabaseSync(join(dir, file), { readOnly: true });
    try {
      const row = /** @type {{ pages: number, free: number, size: number }} */ (
        db.prepare("SELECT (SELECT page_count FROM pragma_page_count()) AS pages, (SELECT freelist_count FROM pragma_freelist_count()) AS free, (SELECT page_size FROM pragma_page_size()) AS size").get()
      );
      bytes += (row.pages - row.free) * row.size;
    } finally {
      db.close();
    }
  }
  return bytes;
}
