// §3: context selection latency at 50k, 200k and 2M characters of history, and what each call
// reads from D1. Measured before §1's probes, which add hundreds of one-turn groups to the windows
// and would push the served context into the agent's maxMessages.
import { halves, latencySummary, mean, repetitions, round, roundSummary } from "../lib/stats.mjs";
import { fmt, short } from "../lib/scenario.mjs";

/** @param {any} context a context response body */
function contextShape(context) {
  const m = context.manifest;
  return {
    boundary: m.boundary === null ? null : { position: m.boundary.position, envelopeChars: m.boundary.envelopeChars },
    totalsChars: m.totals.chars,
    messages: m.totals.messages,
    tailTurns: m.tail.turns,
    omittedGroups: m.omitted.groups,
  };
}

/**
 * @param {{ api: import("../lib/api.mjs").Api, size: Record<string, number>, log: (line: string) => void } & import("../lib/scenario.mjs").Scenarios} ctx
 */
export async function measureContextLatency({ api, size, log, agents, ledgers }) {
  const points = [
    { key: "small", label: short(size.small) },
    { key: "mid", label: short(size.mid) },
    { key: "big", label: short(size.big) },
  ];
  /** @type {Record<string, { latencies: number[], bytes: number[], shape: ReturnType<typeof contextShape> | null }>} */
  const data = {};
  for (const p of points) {
    data[p.label] = { latencies: [], bytes: [], shape: null };
    for (let i = 0; i < 3; i++) await api.context(agents[p.key].conversation, agents[p.key].id); // warm-up
  }
  log(`[3 context latency] ${size.contextSamples} GET …/context per conversation, round-robin over the three, one at a time`);
  for (let i = 0; i < size.contextSamples; i++) {
    for (const p of points) {
      const response = await api.context(agents[p.key].conversation, agents[p.key].id);
      data[p.label].latencies.push(response.ms);
      data[p.label].bytes.push(response.bytes);
      data[p.label].shape = contextShape(response.json());
    }
  }
  // What selection reads: a separate pass with the D1 meter asked for (after the timed samples,
  // so none of them paid for it). The Worker's share (the token) and the object's (declaration,
  // head rows, tail) are both in it.
  /** @type {Record<string, { statements: number, rowsRead: number, bytesRead: number, bytes: number }>} */
  const reads = {};
  for (const p of points) {
    const samples = [];
    for (let i = 0; i < size.meteredContexts; i++) samples.push(await api.contextReads(agents[p.key].conversation, agents[p.key].id));
    const avg = (/** @type {(s: typeof samples[number]) => number} */ pick) => mean(samples.map(pick));
    reads[p.key] = { statements: avg((s) => s.statements), rowsRead: avg((s) => s.rowsRead), bytesRead: avg((s) => s.bytesRead), bytes: avg((s) => s.bytes) };
  }
  const readsOf = (/** @type {string} */ key) => {
    const r = reads[key];
    return {
      d1Statements: round(r.statements, 1),
      d1RowsRead: round(r.rowsRead, 1),
      d1BytesRead: round(r.bytesRead, 0),
      d1RowsReadPerKiBReturned: round(r.rowsRead / (r.bytes / 1024), 2),
      d1BytesReadPerByteReturned: round(r.bytesRead / r.bytes, 3),
    };
  };
  // The head's frozen slice: every call reads it back from the log to check the head against it,
  // so what a call reads follows that one slice (the policy bounds it), not the history before it.
  /** @type {Record<string, { events: number, chars: number } | null>} */
  const headSlice = {};
  for (const p of points) {
    const position = data[p.label].shape?.boundary?.position;
    const { boundaries } = position === undefined ? { boundaries: [] } : await api.chain(agents[p.key].conversation, agents[p.key].id);
    const current = boundaries.filter((/** @type {any} */ b) => b.current);
    const head = current.find((/** @type {any} */ b) => b.position === position);
    const before = current.find((/** @type {any} */ b) => b.position === position - 1)?.coveredThroughSeq ?? 0;
    headSlice[p.key] = head === undefined ? null : { events: head.coveredThroughSeq - before, chars: ledgers[p.key].charsThrough(head.coveredThroughSeq) - ledgers[p.key].charsThrough(before) };
  }
  const summary = Object.fromEntries(
    points.map((p) => [p.key, { label: p.label, historyChars: ledgers[p.key].chars, ...roundSummary(latencySummary(data[p.label].latencies)), ...halves(data[p.label].latencies), bytes: round(mean(data[p.label].bytes), 0), ...data[p.label].shape, headSlice: headSlice[p.key], ...readsOf(p.key) }]),
  );
  const metric = {
    points: summary,
    p50RatioBigToSmall: round(summary.big.p50 / summary.small.p50, 3),
    p99RatioBigToSmall: round(summary.big.p99 / summary.small.p99, 3),
    repetitions: repetitions(data[short(size.big)].latencies, data[short(size.small)].latencies),
  };
  for (const p of points) {
    const q = summary[p.key];
    const slice = q.headSlice === null ? "no head" : `head's slice ${fmt(q.headSlice.events)} events, ${fmt(q.headSlice.chars)} chars`;
    log(`  at ${p.label}: p50 ${q.p50} ms, p99 ${q.p99} ms, ${fmt(q.bytes)} bytes; D1: ${q.d1Statements} statements, ${q.d1RowsRead} rows and ${fmt(q.d1BytesRead)} bytes read (${q.d1BytesReadPerByteReturned} bytes read per byte returned); ${slice}`);
  }
  return metric;
}
