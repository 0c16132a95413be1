import type { Exchange, Target } from "./harness";
import { Run, firstDifference, is2xx, normalize } from "./harness";
import type { FaultKind } from "./faulty-bindings";
import type { Fixtures, Incident, Operation, RunState } from "./operations";
import { incidents } from "./operations";
import type { ModelScript } from "./model-script";

/**
 * The matrix of one operation: a clean run first (twice: the two must agree, or comparing a
 * faulted run with them would mean nothing), then one run per injection point: the k-th binding
 * call failing each way, for k from 1 until the operation completes untouched (at most `CAP`),
 * and for an operation that calls the model, the k-th model request failing. Each run retries as
 * a client would and is judged against the clean run; what it breaks is a `Violation`.
 */

/** Injection points per operation and fault kind: past this many calls an operation is not faulted further. */
export const CAP = 40;
/** Retries after the faulted attempt: a client's few, and fewer than the queue's `max_retries` (5). */
const RETRIES = 3;

export type Invariant =
  /** A fault a retry fixes answered 5xx other than 503, or 503 without Retry-After (a queue handler that threw). */
  | "transient-not-503"
  /** A transient fault answered as a refusal (4xx) where the clean run succeeded. */
  | "transient-as-refusal"
  /** The operation never succeeded again within the retries: the fault was not transient to the client. */
  | "no-progress"
  /** Something that cannot progress raised no incident, or several; or an incident was raised for a fault a retry fixed. */
  | "incident"
  /** A 2xx promised something that is not stored. */
  | "acknowledged-lost"
  /** Something stored more than once. */
  | "stored-twice"
  /** After the retries succeeded, the stored state differs from the clean run's. */
  | "state-differs"
  /** A 2xx read answered something else than the clean run's. */
  | "answer-differs"
  /** The next request on the same conversation (or agent) failed. */
  | "wedged";

export interface Violation {
  readonly operation: string;
  readonly edge: "binding" | "model";
  readonly k: number;
  readonly kind: FaultKind;
  /** Where the fault landed: `object DB_SHARD_1.batch (INSERT INTO log …)`. */
  readonly at: string;
  readonly invariant: Invariant;
  readonly detail: string;
}

export interface OperationReport {
  readonly operation: string;
  /** Binding calls of the clean request, and how many of them write. */
  readonly calls: number;
  readonly writes: number;
  readonly modelCalls: number;
  /** Injection points tried (runs with a fault armed), and every run including the clean ones. */
  readonly points: number;
  readonly runs: number;
  readonly violations: readonly Violation[];
  /** The clean request's calls, `1 worker DB.first (SELECT …)`, for reading a violation's k. */
  readonly trace: readonly string[];
}

interface Outcome {
  readonly run: Run;
  readonly state: RunState;
  readonly exchanges: readonly Exchange[];
  readonly stored: unknown;
  readonly answer: unknown;
  readonly violations: Omit<Violation, "operation" | "edge" | "k" | "kind" | "at">[];
}

const describeExchange = (x: Exchange): string => `${x.status}${x.code === null ? "" : ` ${x.code}`}${x.retryAfter === null ? "" : ` (Retry-After ${x.retryAfter})`}`;

/** A client retries what failed on the server's side (5xx), and a queue redelivers what was not acked. */
const retryable = (x: Exchange): boolean => x.status >= 500;

let counter = 0;

async function runOnce(op: Operation, fixtures: Fixtures, model: ModelScript, target: Target | undefined, clean: Outcome | undefined): Promise<Outcome> {
  const run = new Run(target);
  const n = counter++;
  const state = await op.setup(run, n, fixtures);
  const before = state.conversation === undefined ? [] : await incidents(state.conversation);
  if (op.callsModel) await model.reset(target?.edge === "model" ? { k: target.k, kind: target.kind } : undefined);

  run.plan.arm();
  const exchanges: Exchange[] = [await op.attempt(run, state, 1)];
  run.plan.disarm();
  if (target?.edge === "model") run.modelFired = (await model.requests()) >= target.k;
  if (target !== undefined && !run.fired) return { run, state, exchanges, stored: undefined, answer: undefined, violations: [] };

  for (let attempt = 2; attempt <= 1 + RETRIES; attempt++) {
    const last = exchanges.at(-1);
    if (last === undefined || !retryable(last)) break;
    exchanges.push(await op.attempt(run, state, attempt));
  }
  const final = exchanges.at(-1) as Exchange;
  const violations: Outcome["violations"] = [];
  const flag = (invariant: Invariant, detail: string) => violations.push({ invariant, detail });
  const progressed = is2xx(final);
  const names = state.names;

  const first = exchanges[0] as Exchange;
  const cleanFirst = clean?.exchanges[0];
  if (clean !== undefined && !is2xx(first)) {
    if (op.transport === "http" && first.status >= 500 && (first.status !== 503 || first.retryAfter === null)) {
      flag("transient-not-503", `answered ${describeExchange(first)}${progressed ? "; the retry succeeded" : ""}`);
    }
    if (op.transport === "queue" && first.status === 500) flag("transient-not-503", `the queue handler threw (the whole batch is retried): ${String(first.body).slice(0, 200)}`);
    if (first.status >= 400 && first.status < 500 && cleanFirst !== undefined && is2xx(cleanFirst)) flag("transient-as-refusal", `answered ${describeExchange(first)}: ${JSON.stringify(first.body).slice(0, 240)}`);
  }
  if (clean !== undefined && !progressed && final.status >= 500) flag("no-progress", `after ${exchanges.length} attempts: ${exchanges.map(describeExchange).join(", ")}`);

  for (const x of exchanges.filter(is2xx)) for (const lost of await op.lost(state, x)) flag("acknowledged-lost", lost);
  for (const twice of await op.duplicates(state)) flag("stored-twice", twice);

  const answer = progressed && op.answerIsProduct ? normalize(final.body, names) : undefined;
  if (clean !== undefined && op.answerIsProduct) {
    for (const x of exchanges.filter(is2xx)) {
      const answered = firstDifference(normalize(x.body, names), clean.answer);
      if (answered !== undefined) flag("answer-differs", answered);
    }
  }

  const refused = (await op.next(run, state, fixtures)).filter(({ exchange }) => !is2xx(exchange));
  const wedged = refused.length > 0;
  if (wedged) {
    // A client asks again; whether that clears it is part of the finding, and a condition that
    // repeats must still be one incident.
    const again = await op.next(run, state, fixtures);
    for (const { what, exchange } of refused) {
      const second = again.find((x) => x.what === what)?.exchange;
      const cleared = second === undefined ? "" : `; asked again: ${describeExchange(second)}`;
      flag("wedged", `${what} answered ${describeExchange(exchange)}${cleared}: ${JSON.stringify(exchange.body).slice(0, 200)}`);
    }
  }

  if (clean !== undefined && state.conversation !== undefined) {
    // Stuck: the operation never succeeded within the retries, or it left the conversation
    // refusing the next request. The operator is told once; a fault a retry fixed tells nobody.
    const stuck = wedged || (!progressed && final.status >= 500);
    const raised = (await incidents(state.conversation)).slice(before.length);
    // A compaction's failed attempt is evidence by design (one incident each, queue/consumer.ts).
    const failedDeliveries = exchanges.filter((x) => !is2xx(x)).length;
    const evidence = op.transport === "queue" ? raised.filter((i) => i.kind === "compactor_failure").slice(0, failedDeliveries) : [];
    const told = raised.filter((i) => !evidence.includes(i));
    if (stuck && told.length !== 1) flag("incident", `cannot progress and raised ${told.length} incidents${describeIncidents(told)}`);
    if (!stuck && told.length > 0) {
      const how = is2xx(first) ? "answered success despite the fault, and raised" : "a fault the retry fixed raised";
      flag("incident", `${how} ${told.length} incident(s)${describeIncidents(told)}`);
    }
  }

  // Read after the next requests, which a clean run makes too: what a failed step left for later
  // (bookkeeping the object catches up on its next call or its alarm) has had its chance to
  // converge, so only what stays different is reported.
  const stored = normalize(await op.stored(state), names);
  if (clean !== undefined && progressed && !wedged) {
    const differs = firstDifference(stored, clean.stored);
    if (differs !== undefined) flag("state-differs", differs);
  }
  return { run, state, exchanges, stored, answer, violations };
}

const describeIncidents = (list: readonly Incident[]): string => (list.length === 0 ? "" : ` (${list.map((i) => `${i.kind}/${i.code}`).join(", ")})`);

export async function runOperation(op: Operation, fixtures: Fixtures, model: ModelScript): Promise<OperationReport> {
  const clean = await runOnce(op, fixtures, model, undefined, undefined);
  const again = await runOnce(op, fixtures, model, undefined, clean);
  for (const [what, outcome] of [["first", clean], ["second", again]] as const) {
    if (!outcome.exchanges.every(is2xx)) throw new Error(`${op.name}: the ${what} clean run failed: ${outcome.exchanges.map(describeExchange).join(", ")} ${JSON.stringify(outcome.exchanges.at(-1)?.body).slice(0, 300)}`);
  }
  // Two clean runs that differ would make every comparison below noise: that is the harness's bug.
  const unstable = firstDifference(again.stored, clean.stored) ?? firstDifference(again.answer, clean.answer);
  if (unstable !== undefined) throw new Error(`${op.name}: two clean runs differ after normalization: ${unstable}`);
  if (again.violations.length > 0) throw new Error(`${op.name}: a clean run broke an invariant: ${JSON.stringify(again.violations)}`);
  const trace = clean.run.plan.trace;
  if (op.usesObject && !trace.some((c) => c.side === "object")) {
    throw new Error(`${op.name}: no binding call came from the conversation's object: the object is not under the plan (README.md, "How faults reach the code")`);
  }

  const modelCalls = op.callsModel ? await model.requests() : 0;
  const violations: Violation[] = [];
  let points = 0;
  let runs = 2;
  const record = (outcome: Outcome, target: Target) => {
    points++;
    runs++;
    const at = target.edge === "model" ? `model request ${target.k}` : describeCall(outcome.run.firedAt);
    for (const v of outcome.violations) violations.push({ operation: op.name, edge: target.edge, k: target.k, kind: target.kind, at, ...v });
  };

  for (const kind of ["throw", "hang"] as const) {
    for (let k = 1; k <= CAP; k++) {
      const target: Target = { edge: "binding", k, kind };
      const outcome = await runOnce(op, fixtures, model, target, clean);
      record(outcome, target);
      // The operation completed untouched: it makes fewer than k calls.
      if (!outcome.run.fired) break;
    }
  }
  for (const call of trace.filter((c) => c.write && c.index <= CAP)) {
    const target: Target = { edge: "binding", k: call.index, kind: "lost_response" };
    record(await runOnce(op, fixtures, model, target, clean), target);
  }
  if (op.callsModel) {
    for (const kind of ["throw", "hang"] as const) {
      for (let k = 1; k <= CAP; k++) {
        const target: Target = { edge: "model", k, kind };
        const outcome = await runOnce(op, fixtures, model, target, clean);
        record(outcome, target);
        if (!outcome.run.fired) break;
      }
    }
  }
  return {
    operation: op.name,
    calls: trace.length,
    writes: trace.filter((c) => c.write).length,
    modelCalls,
    points,
    runs,
    violations,
    trace: trace.map((c) => `${c.index} ${describeCall(c)}${c.write ? " [write]" : ""}`),
  };
}

function describeCall(call: { side: string; binding: string; method: string; detail: string } | undefined): string {
  if (call === undefined) return "(not reached)";
  return `${call.side} ${call.binding}.${call.method}${call.detail === "" ? "" : ` (${call.detail})`}`;
}
