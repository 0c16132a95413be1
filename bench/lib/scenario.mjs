// The main Worker's scenarios (§1–§8): one agent/compactor pair per conversation, the synthetic
// replay each one is fed, and the bookkeeping that lets the baselines be computed on exactly the
// replay that was sent. The sections in bench/sections/ measure on what this sets up.
import { Api, LogFollower, waitForCatchUp } from "./api.mjs";
import { groupStream, probeEvent, userChars } from "./conversation.mjs";

export const DEFAULT_POLICY = { trigger: 80_000, retain: 40_000, maxSummaryChars: 8_000 };
export const DUP_POLICY = { triggerInputChars: 8_000, retainInputChars: 4_000, maxFrozenChars: 8_000 };
/** Appends per batch request: 33 groups of source + proposal + delivery (the API allows 100). */
export const GROUPS_PER_BATCH = 33;
export const PROBE_FILLER = "shuttle at 9?";
export const FAKE_SUMMARY_CHARS = 1_600;

/** 2000000 → "2M", 200000 → "200k". @param {number} chars */
export const short = (chars) => (chars >= 1_000_000 ? `${chars / 1_000_000}M` : chars >= 1_000 ? `${chars / 1_000}k` : String(chars));

export const fmt = (/** @type {number} */ n) => Math.round(n).toLocaleString("en-US");

/**
 * What was appended to one conversation, with the sequence numbers Foldline assigned.
 */
export class Ledger {
  constructor() {
    /** @type {{ seq: number, userChars: number, replyChars: number }[]} one entry per source, in order */
    this.sources = [];
    this.chars = 0;
    this.groups = 0;
  }

  /** @param {number} seq @param {number} user @param {number} reply */
  add(seq, user, reply) {
    this.sources.push({ seq, userChars: user, replyChars: reply });
    this.chars += user + reply;
    if (reply > 0) this.groups += 1;
  }

  /** Conversation characters of every group whose source seq is ≤ `seq`. */
  charsThrough(/** @type {number} */ seq) {
    let total = 0;
    for (const s of this.sources) {
      if (s.seq > seq) break;
      total += s.userChars + s.replyChars;
    }
    return total;
  }
}

/**
 * The scenarios, each registered as its own agent/compactor pair serving only its own
 * conversation (a pair whose sources matched every conversation would preflight all of them).
 * Each has its own model name, so the fake model attributes every request to its scenario.
 * @param {Api} api @param {(line: string) => void} log
 */
export async function registerScenarios(api, log) {
  const C = (/** @type {string} */ name) => `api:bench:${name}`;
  const agents = {
    zero: { id: "b-zero", conversation: C("zero") },
    small: { id: "b-small", conversation: C("small") },
    mid: { id: "b-mid", conversation: C("mid") },
    big: { id: "b-big", conversation: C("big") },
    prefix: { id: "b-prefix", conversation: C("prefix") },
    dup: { id: "b-dup", conversation: C("dup") },
    meter: { id: "b-meter", conversation: C("meter") },
  };
  for (const [name, a] of Object.entries(agents)) {
    await api.registerAgent({
      agentId: a.id,
      sources: [a.conversation],
      model: name === "dup" ? "bench-flaky" : `bench-${name}`,
      policy: name === "dup" ? DUP_POLICY : {},
    });
  }
  // §1's parallel appends: fresh conversations under one pattern, one pair for all of them.
  const parallel = { id: "b-par", conversationOf: (/** @type {number} */ i) => C(`par:${i}`) };
  await api.registerAgent({ agentId: parallel.id, sources: [C("par:*")], model: "bench-par" });
  log(`registered ${Object.keys(agents).length + 1} agent/compactor pairs (default policy 80,000 / 40,000 except b-dup)`);

  /** @type {Record<keyof typeof agents, Ledger>} */
  const ledgers = /** @type {any} */ (Object.fromEntries(Object.keys(agents).map((k) => [k, new Ledger()])));
  /** @type {Record<keyof typeof agents, ReturnType<typeof groupStream>>} */
  const streams = /** @type {any} */ (Object.fromEntries(Object.entries(agents).map(([k, a], i) => [k, groupStream({ seed: 1_000 + i, agentId: a.id })])));
  /** @type {Record<keyof typeof agents, LogFollower>} */
  const followers = /** @type {any} */ (Object.fromEntries(Object.entries(agents).map(([k, a]) => [k, new LogFollower(api, a.conversation)])));
  return { agents, parallel, ledgers, streams, followers };
}

/** @typedef {Awaited<ReturnType<typeof registerScenarios>>} Scenarios */

/**
 * Appends groups in batches until the conversation has at least `targetChars`.
 * @param {Api} api @param {string} conversation @param {ReturnType<typeof groupStream>} stream @param {Ledger} ledger
 * @param {number} targetChars @param {(batch: number) => Promise<void>} [afterBatch]
 */
export async function ingest(api, conversation, stream, ledger, targetChars, afterBatch) {
  let batch = 0;
  while (ledger.chars < targetChars) {
    const groups = [];
    let chars = ledger.chars;
    while (groups.length < GROUPS_PER_BATCH && chars < targetChars) {
      const group = stream.next();
      groups.push(group);
      chars += group.chars;
    }
    const response = (await api.appendBatch(conversation, groups.flatMap((g) => g.events))).json();
    const seqs = response.results.filter((/** @type {any} */ r) => r.event.kind === "source").map((/** @type {any} */ r) => r.event.seq);
    groups.forEach((group, i) => ledger.add(seqs[i], userChars(group.question), group.answer.length));
    batch += 1;
    if (afterBatch !== undefined) await afterBatch(batch);
  }
}

/**
 * Makes room for `needChars` of probes below the trigger: if the active context is too close to
 * it, appends whole groups until a compaction is planned, then waits for the chain to catch up
 * (the tail is cut back to ≤ retainInputChars). Probes then measure appends, never planning.
 * @param {{ api: Api, follower: LogFollower, conversation: string, agentId: string, stream: ReturnType<typeof groupStream>, ledger: Ledger, needChars: number, log: (line: string) => void }} o
 */
export async function ensureHeadroom({ api, follower, conversation, agentId, stream, ledger, needChars, log }) {
  for (let attempt = 0; attempt < 4; attempt++) {
    const context = await waitForCatchUp({ api, follower, agentId, trigger: DEFAULT_POLICY.trigger, onWait: (s) => log(`  waiting for ${conversation}: ${s}`) });
    const active = context.manifest.totals.chars + context.manifest.omitted.chars;
    if (active + needChars < DEFAULT_POLICY.trigger) return active;
    const planned = follower.plannedRuns().length;
    while (follower.plannedRuns().length === planned) {
      const group = stream.next();
      const response = (await api.appendBatch(conversation, group.events)).json();
      ledger.add(response.results[0].event.seq, userChars(group.question), group.answer.length);
      await follower.poll();
    }
  }
  throw new Error(`could not make ${needChars} characters of headroom below the trigger in ${conversation}`);
}

/**
 * One single-source append (`POST …/events`), timed; returns its latency in ms.
 * @param {Api} api @param {string} conversation @param {Ledger} ledger @param {string} label
 */
export async function probeAppend(api, conversation, ledger, label) {
  const key = `probe-${label}-${ledger.sources.length}`;
  const text = `${PROBE_FILLER} (${label} ${ledger.sources.length})`;
  const response = await api.appendOne(conversation, probeEvent(key, text));
  if (response.status !== 201) throw new Error(`probe append to ${conversation} answered ${response.status}: ${response.text.slice(0, 300)}`);
  ledger.add(response.json().event.seq, userChars(text), 0);
  return response.ms;
}
