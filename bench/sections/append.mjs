// §1: append latency at 0, 200k and 2M characters of history (round-robin, one append at a time,
// every conversation below its trigger), and aggregate throughput of many conversations at once.
import { performance } from "node:perf_hooks";
import { probeEvent } from "../lib/conversation.mjs";
import { PROBE_FILLER, probeAppend, short } from "../lib/scenario.mjs";
import { halves, latencySummary, repetitions, round, roundSummary } from "../lib/stats.mjs";

/**
 * @param {{ api: import("../lib/api.mjs").Api, size: Record<string, number>, log: (line: string) => void, history: import("./histories.mjs").Histories } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export async function measureAppendLatency({ api, size, log, agents, ledgers, followers, history }) {
  const points = [
    { key: "zero", label: "0" },
    { key: "mid", label: short(size.mid) },
    { key: "big", label: short(size.big) },
  ];
  /** @type {Record<string, { latencies: number[], historyChars: number }>} */
  const data = {};
  for (const p of points) {
    data[p.label] = { latencies: [], historyChars: ledgers[p.key].chars };
    for (let i = 0; i < 5; i++) await probeAppend(api, agents[p.key].conversation, ledgers[p.key], `${p.label}-warm`); // warm-up, not counted
  }
  // Round-robin, one append at a time: whatever else the machine does at any moment lands on the
  // three history sizes alike, so their ratio is not an artefact of when each was measured.
  log(`[1 append latency] ${size.appendSamples} single-source appends per conversation, round-robin over the three, one at a time`);
  for (let i = 0; i < size.appendSamples; i++) {
    for (const p of points) data[p.label].latencies.push(await probeAppend(api, agents[p.key].conversation, ledgers[p.key], p.label));
  }
  // Nothing was planned during the probes (headroom), which the log can confirm.
  const planning = {};
  for (const p of points) {
    await followers[p.key].poll();
    planning[p.label] = followers[p.key].openRuns().length;
  }
  // Keyed by role (zero / mid / big); `label` is the history size.
  const summary = Object.fromEntries(
    points.map((p) => {
      const d = data[p.label];
      const sustained = (d.latencies.length / d.latencies.reduce((a, b) => a + b, 0)) * 1000;
      return [p.key, { label: p.label, historyChars: d.historyChars, activeCharsBefore: history.activeBeforeProbes[p.key] ?? null, ...roundSummary(latencySummary(d.latencies)), appendsPerSecond: round(sustained, 1), ...halves(d.latencies) }];
    }),
  );
  for (const p of points) log(`  at ${p.label}: p50 ${summary[p.key].p50} ms, p99 ${summary[p.key].p99} ms, ${summary[p.key].appendsPerSecond} appends/s`);
  return {
    points: summary,
    p99RatioBigToZero: round(summary.big.p99 / summary.zero.p99, 3),
    p50RatioBigToZero: round(summary.big.p50 / summary.zero.p50, 3),
    p99RatioBigToMid: round(summary.big.p99 / summary.mid.p99, 3),
    p50RatioBigToMid: round(summary.big.p50 / summary.mid.p50, 3),
    openRunsAfterProbes: planning,
    repetitions: repetitions(data[short(size.big)].latencies, data["0"].latencies),
  };
}

/**
 * @param {{ api: import("../lib/api.mjs").Api, size: Record<string, number>, log: (line: string) => void } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export async function measureParallelAppends({ api, size, log, parallel }) {
  const n = size.parallel;
  const conversations = Array.from({ length: n }, (_, i) => parallel.conversationOf(i));
  log(`[1 parallel] ${n} conversations × ${size.parallelEach} sequential appends each, all at once`);
  // Warm-up: each conversation's first append creates its object and activation (not counted).
  await Promise.all(conversations.map((c) => api.appendOne(c, probeEvent(`par-warm-${c}`, `${PROBE_FILLER} (warm)`))));
  /** @type {number[]} */
  const latencies = [];
  let failures = 0;
  const t0 = performance.now();
  await Promise.all(
    conversations.map(async (c) => {
      for (let i = 0; i < size.parallelEach; i++) {
        const response = await api.appendOne(c, probeEvent(`par-${c}-${i}`, `${PROBE_FILLER} (${i})`));
        if (response.status !== 201) failures += 1;
        latencies.push(response.ms);
      }
    }),
  );
  const wallMs = performance.now() - t0;
  const metric = {
    conversations: n,
    appendsEach: size.parallelEach,
    appends: latencies.length,
    failures,
    wallSeconds: round(wallMs / 1000, 2),
    aggregateAppendsPerSecond: round((latencies.length / wallMs) * 1000, 1),
    latency: roundSummary(latencySummary(latencies)),
  };
  log(`  ${metric.aggregateAppendsPerSecond} appends/s aggregate, p50 ${metric.latency.p50} ms, p99 ${metric.latency.p99} ms`);
  return metric;
}
