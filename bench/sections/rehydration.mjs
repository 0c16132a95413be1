// §8: Durable Object rehydration. An object cannot be evicted from outside `wrangler dev`, so the
// Worker is restarted on the same state and each conversation's first context call rebuilds it.
import { performance } from "node:perf_hooks";
import { sleep } from "../lib/api.mjs";
import { short } from "../lib/scenario.mjs";
import { percentile, round } from "../lib/stats.mjs";

/**
 * @param {{ api: import("../lib/api.mjs").Api, size: Record<string, number>, log: (line: string) => void, restart: () => Promise<import("../../scripts/lib/worker.mjs").RunningWorker> } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export async function measureRehydration({ api, size, log, restart, agents, ledgers }) {
  log("[8 rehydration] restarting wrangler dev on the same persist directory (Durable Objects cannot be evicted from outside)");
  const restartStarted = performance.now();
  const worker = await restart();
  const restartSeconds = (performance.now() - restartStarted) / 1000;
  api.baseUrl = worker.url;
  // Warm the Worker isolate and D1 (the token lookup and a declaration read) without touching
  // any conversation's object, so the first context call below times the object alone.
  await api.expect("healthz", [200], "GET", "/healthz");
  await api.expect("agent", [200], "GET", `/v1/agents/${agents.big.id}`);
  // The first Durable Object calls of a fresh process also initialise the namespace and compile
  // the code paths (with and without a boundary to verify); pay that on two conversations that
  // are not measured: the 0-history one and the prefix-stability one, which has boundaries.
  const namespaceWarmup = await api.context(agents.zero.conversation, agents.zero.id);
  const boundaryPathWarmup = await api.context(agents.prefix.conversation, agents.prefix.id);
  await sleep(500);
  const rssBefore = worker.workerdRssKiB();
  const points = [
    { key: "small", label: short(size.small) },
    { key: "mid", label: short(size.mid) },
    { key: "big", label: short(size.big) },
  ];
  const out = {};
  let rssPrevious = rssBefore;
  for (const p of points) {
    const cold = await api.context(agents[p.key].conversation, agents[p.key].id);
    const rssAfter = worker.workerdRssKiB();
    const warm = [];
    for (let i = 0; i < size.warmContexts; i++) warm.push((await api.context(agents[p.key].conversation, agents[p.key].id)).ms);
    const warmP50 = percentile(warm, 50);
    out[p.key] = {
      label: p.label,
      historyChars: ledgers[p.key].chars,
      firstContextMs: round(cold.ms, 1),
      warmContextP50Ms: round(warmP50, 1),
      rehydrationMs: round(cold.ms - warmP50, 1),
      warmSamples: warm.length,
      workerdRssDeltaKiB: rssAfter === null || rssPrevious === null ? null : rssAfter - rssPrevious,
    };
    rssPrevious = worker.workerdRssKiB();
    log(`  ${p.label}: first context ${out[p.key].firstContextMs} ms, warm p50 ${out[p.key].warmContextP50Ms} ms`);
  }
  return { restartSeconds: round(restartSeconds, 1), namespaceWarmupMs: round(namespaceWarmup.ms, 1), boundaryPathWarmupMs: round(boundaryPathWarmup.ms, 1), workerdRssAfterWarmupKiB: rssBefore, points: out };
}
