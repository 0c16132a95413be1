// Not a section of the report: the histories §1, §3, §4, §6 and §8 measure. 50k, 200k and 2M
// characters (400k with --quick) through `POST …/events/batch`, the long one with a context call
// after every batch (§6 reads those samples), then every conversation brought below its trigger
// with room for §1's probes, so no probe pays for compaction planning.
import { performance } from "node:perf_hooks";
import { userChars } from "../lib/conversation.mjs";
import { GROUPS_PER_BATCH, PROBE_FILLER, ensureHeadroom, fmt, ingest, short } from "../lib/scenario.mjs";

/** What the histories left for the sections: filled as they are built, so a failure midway leaves what was measured. */
export function emptyHistories() {
  return {
    /** Active context (served chars) of each conversation when its probes start. @type {Record<string, number>} */
    activeBeforeProbes: { zero: 0 },
    /** The long replay's context calls, one after each batch. @type {{ batch: number, chars: number, totalsChars: number, omittedChars: number, omittedGroups: number, at: number }[]} */
    bigSamples: [],
    bigIngestSeconds: 0,
  };
}

/** @typedef {ReturnType<typeof emptyHistories>} Histories */

/**
 * @param {{ api: import("../lib/api.mjs").Api, fake: { calls: { model: string, process: string }[] }, size: Record<string, number>, log: (line: string) => void, history: Histories } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export async function buildHistories({ api, fake, size, log, agents, ledgers, streams, followers, history }) {
  const probesPerConversation = size.appendSamples + 5;
  const probeChars = probesPerConversation * (userChars(`${PROBE_FILLER} (2M 99999)`) + 1);
  const { activeBeforeProbes, bigSamples } = history;

  log(`[histories] ${fmt(size.small)} chars into ${agents.small.conversation}`);
  await ingest(api, agents.small.conversation, streams.small, ledgers.small, size.small);
  log(`[histories] ${fmt(size.mid)} chars into ${agents.mid.conversation}`);
  await ingest(api, agents.mid.conversation, streams.mid, ledgers.mid, size.mid);
  log(`[histories] ${fmt(size.big)} chars into ${agents.big.conversation} (a context call after every batch of ${GROUPS_PER_BATCH} groups)`);
  const t0 = performance.now();
  await ingest(api, agents.big.conversation, streams.big, ledgers.big, size.big, async (batch) => {
    const context = (await api.context(agents.big.conversation, agents.big.id)).json();
    const m = context.manifest;
    bigSamples.push({ batch, chars: ledgers.big.chars, totalsChars: m.totals.chars, omittedChars: m.omitted.chars, omittedGroups: m.omitted.groups, at: Date.now() });
    if (batch % 25 === 0) log(`  ${fmt(ledgers.big.chars)} chars appended, served context ${fmt(m.totals.chars)} chars, ${fake.calls.filter((c) => c.model === "bench-big" && c.process === "compactor").length} compactor calls`);
  });
  history.bigIngestSeconds = (performance.now() - t0) / 1000;
  log(`[histories] appended ${fmt(ledgers.big.chars)} chars in ${history.bigIngestSeconds.toFixed(1)} s; waiting for compaction to catch up`);
  for (const key of /** @type {const} */ (["small", "mid", "big"])) {
    const a = agents[key];
    activeBeforeProbes[key] = await ensureHeadroom({ api, follower: followers[key], conversation: a.conversation, agentId: a.id, stream: streams[key], ledger: ledgers[key], needChars: probeChars, log });
  }
  log(`[histories] caught up: ${followers.big.plannedRuns().length} compactions on the ${short(size.big)} conversation, ${followers.mid.plannedRuns().length} on the ${short(size.mid)} one`);
}
