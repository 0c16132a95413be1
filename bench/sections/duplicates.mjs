// §5: exactly once under duplicated deliveries. Every batch is sent four times (twice in sequence,
// then twice at once) to a conversation whose model fails the first attempt at every slice, so the
// queue redelivers each compaction; every event must be stored once and every plan settle into one
// boundary. The long replay's chain is checked for duplicates too.
import { performance } from "node:perf_hooks";
import { Api, waitForCatchUp } from "../lib/api.mjs";
import { userChars } from "../lib/conversation.mjs";
import { DUP_POLICY, GROUPS_PER_BATCH, fmt } from "../lib/scenario.mjs";
import { round } from "../lib/stats.mjs";

/**
 * @param {{ api: Api, fake: { calls: any[] }, size: Record<string, number>, log: (line: string) => void } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export async function measureDuplicates({ api, fake, size, log, agents, ledgers, streams, followers }) {
  const a = agents.dup;
  const follower = followers.dup;
  log(`[5 duplicates] ${fmt(size.dupChars)} chars, every batch sent 4× (twice in sequence, then twice concurrently); the model fails every slice's first attempt`);
  const statuses = { created: 0, replayed: 0, other: 0 };
  const duplicateFlags = { fresh: 0, duplicate: 0 };
  const stream = streams.dup;
  while (ledgers.dup.chars < size.dupChars) {
    const groups = Array.from({ length: GROUPS_PER_BATCH }, () => stream.next());
    const events = groups.flatMap((g) => g.events);
    const path = `${Api.conversationPath(a.conversation)}/events/batch`;
    const first = await api.request("POST", path, { events });
    const second = await api.request("POST", path, { events });
    const concurrent = await Promise.all([api.request("POST", path, { events }), api.request("POST", path, { events })]);
    for (const response of [first, second, ...concurrent]) {
      if (response.status === 201) statuses.created += 1;
      else if (response.status === 200) statuses.replayed += 1;
      else statuses.other += 1;
      if (response.status === 200 || response.status === 201) {
        for (const r of response.json().results) duplicateFlags[r.duplicate ? "duplicate" : "fresh"] += 1;
      }
    }
    const seqs = first.json().results.filter((/** @type {any} */ r) => r.event.kind === "source").map((/** @type {any} */ r) => r.event.seq);
    groups.forEach((g, i) => ledgers.dup.add(seqs[i], userChars(g.question), g.answer.length));
  }
  await waitForCatchUp({ api, follower, agentId: a.id, trigger: DUP_POLICY.triggerInputChars, onWait: (s) => log(`  waiting: ${s}`) });
  const chain = await api.chain(a.conversation, a.id);
  const boundaries = chain.boundaries;
  const byPrevious = new Map();
  for (const b of boundaries) {
    const key = `${b.epochId}:${b.previous?.id ?? "(first)"}`;
    byPrevious.set(key, (byPrevious.get(key) ?? 0) + 1);
  }
  const duplicateBoundaries = [...byPrevious.values()].reduce((n, c) => n + (c - 1), 0);
  const runs = follower.plannedRuns();
  const calls = fake.calls.filter((c) => c.model === "bench-flaky" && c.process === "compactor");
  const verifyStarted = performance.now();
  const audit = await api.verify(a.conversation, a.id);
  const verifyMs = performance.now() - verifyStarted;
  const links = audit.epochs.flatMap((/** @type {any} */ e) => e.links);
  const metric = {
    batches: statuses.created + statuses.replayed + statuses.other,
    statuses,
    eventResults: duplicateFlags,
    storedEvents: follower.kinds,
    groupsSent: ledgers.dup.groups,
    compactionsPlanned: runs.length,
    completedRunEvents: runs.filter((r) => r.completed !== undefined).length,
    failedAttempts: runs.reduce((n, r) => n + r.failed.length, 0),
    modelRequests: calls.length,
    injectedFailures: calls.filter((c) => c.status !== 200).length,
    boundaries: boundaries.length,
    distinctPredecessors: byPrevious.size,
    duplicateBoundaries,
    chainValid: audit.valid,
    linksValid: links.filter((/** @type {any} */ l) => l.valid).length,
    links: links.length,
    verifyMs: round(verifyMs, 0),
  };
  // The 2M chain too: its boundaries and predecessors.
  const bigChain = await api.chain(agents.big.conversation, agents.big.id);
  const bigPrev = new Set(bigChain.boundaries.map((/** @type {any} */ b) => `${b.epochId}:${b.previous?.id ?? "(first)"}`));
  const bigChainCounts = { boundaries: bigChain.boundaries.length, distinctPredecessors: bigPrev.size, duplicateBoundaries: bigChain.boundaries.length - bigPrev.size };
  log(`  ${metric.boundaries} boundaries, ${metric.distinctPredecessors} distinct predecessors → ${metric.duplicateBoundaries} duplicates; ${metric.injectedFailures} injected model failures retried; chain ${metric.chainValid ? "verifies" : "DOES NOT verify"}`);
  return { ...metric, bigChain: bigChainCounts };
}
