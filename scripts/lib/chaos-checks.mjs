// What `npm run chaos` checks after its crashes, as functions of what it read back through the
// API: the log of each conversation, its incidents and its chain's audit. Pure, so the verdicts do
// not depend on how the state was fetched.

/**
 * Every acknowledged append stored exactly once, and the log gap-free.
 * @param {Set<string>} acked idempotency keys the service answered 200/201 for
 * @param {{ seq: number, idempotencyKey: string }[]} events the whole log, in order
 * @param {string} prefix the keys this run wrote (other events are the service's own)
 */
export function ledger(acked, events, prefix) {
  /** @type {Map<string, number>} */
  const stored = new Map();
  for (const event of events) if (event.idempotencyKey.startsWith(prefix)) stored.set(event.idempotencyKey, (stored.get(event.idempotencyKey) ?? 0) + 1);
  const lost = [...acked].filter((key) => !stored.has(key));
  const duplicated = [...stored.values()].reduce((n, count) => n + count - 1, 0);
  const gaps = events.filter((event, i) => event.seq !== i + 1).length;
  // A key stored without an ack is fine (the answer was lost in the crash, a retry would replay it).
  return { acked: acked.size, stored: stored.size, lost: lost.length, duplicated, gaps, lostKeys: lost.slice(0, 5) };
}

/**
 * Compaction plans still open: a `planned` compactor run with neither a `completed` run nor a
 * `compactor_abandoned` incident (what the conversation's object itself counts as open).
 * @param {{ kind: string, body: { runId?: string, role?: string, status?: string } }[]} events
 * @param {{ kind: string, runId: string | null }[]} incidents
 * @returns {string[]} the open run ids
 */
export function openPlans(events, incidents) {
  const planned = new Set();
  const closed = new Set(incidents.filter((i) => i.kind === "compactor_abandoned" && i.runId !== null).map((i) => i.runId));
  for (const { kind, body } of events) {
    if (kind !== "run" || body.role !== "compactor" || body.runId === undefined) continue;
    if (body.status === "planned") planned.add(body.runId);
    if (body.status === "completed") closed.add(body.runId);
  }
  return [...planned].filter((runId) => !closed.has(runId));
}

/**
 * The run's verdict. Every failure is named; an empty list is a pass.
 * @param {{ conversation: string, ledger: ReturnType<typeof ledger>, settledAfterMs: number | null, open: string[], verified: boolean, boundaries: number }[]} chains
 * @param {{ kills: number, killsPlanned: number }} run
 */
export function failures(chains, run) {
  const problems = [];
  if (run.kills < run.killsPlanned) problems.push(`only ${run.kills} of ${run.killsPlanned} kills happened`);
  for (const chain of chains) {
    const { conversation, ledger: l } = chain;
    if (l.lost > 0) problems.push(`${conversation}: ${l.lost} acknowledged event(s) lost (${l.lostKeys.join(", ")})`);
    if (l.duplicated > 0) problems.push(`${conversation}: ${l.duplicated} event(s) stored twice`);
    if (l.gaps > 0) problems.push(`${conversation}: the log's sequence has ${l.gaps} gap(s)`);
    if (chain.settledAfterMs === null) problems.push(`${conversation}: compaction never settled, open plan(s) ${chain.open.join(", ")}`);
    if (!chain.verified) problems.push(`${conversation}: the chain does not verify`);
    if (chain.boundaries === 0) problems.push(`${conversation}: no boundary was ever settled (compaction did not run)`);
  }
  return problems;
}
