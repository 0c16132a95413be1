import type { LogEvent, LogEvents } from "./log-line";
import { idOrCode } from "./log-line";

/**
 * Numbers over time: the log events an operator charts become Workers Analytics Engine data points
 * (binding `METRICS`, optional; `src/logger.ts` writes them beside the line). One layout for every
 * point, so one SQL query shape reads them all (`docs/OPERATIONS.md` has the dashboards' queries):
 *
 * | column | holds |
 * | --- | --- |
 * | index1 | the agent, or the conversation for an event of no agent (the sampling key) |
 * | blob1 | the event (`append`, `job_start`, `job`, `settlement`, `extraction`, `recall`, `dispatch`, `incident`) |
 * | blob2 | the agent id, '' for none |
 * | blob3 | the outcome (`ok`, `done`, `settled`, `delivered`…) |
 * | blob4 | the code of a failure or refusal, '' for none |
 * | blob5 | what kind: an append's path, a job's type, an incident's kind |
 * | blob6 | the conversation id |
 * | double1 | duration in ms |
 * | double2 | queue wait in ms (jobs) |
 * | double3 | model time in ms (jobs) |
 * | double4 | model input tokens |
 * | double5 | model output tokens |
 * | double6 | a count: events appended, a job's attempts, facts extracted, items recalled, parts sent, an incident's occurrences |
 *
 * Like the log lines, points carry ids, codes and numbers, never text.
 */
export interface MetricPoint {
  readonly indexes: [string];
  readonly blobs: [string, string, string, string, string, string];
  readonly doubles: [number, number, number, number, number, number];
}

interface Parts {
  readonly name: string;
  readonly conversationId?: string | undefined;
  readonly agentId?: string | null | undefined;
  readonly outcome: string;
  readonly code?: string | undefined;
  readonly kind?: string | undefined;
  readonly ms?: number | undefined;
  readonly queueWaitMs?: number | undefined;
  readonly modelMs?: number | undefined;
  readonly inputTokens?: number | undefined;
  readonly outputTokens?: number | undefined;
  readonly count?: number | undefined;
}

/** The parts of the events that are charted; every other event is a log line only. */
function partsOf<E extends LogEvent>(event: E, fields: LogEvents[E]): Parts | undefined {
  // Each case narrows `fields` by the event it was given with.
  const f = fields as LogEvents[LogEvent];
  switch (event) {
    case "append": {
      const a = f as LogEvents["append"];
      return { name: "append", conversationId: a.conversationId, outcome: a.outcome, code: a.code, kind: a.path, ms: a.ms, count: a.events };
    }
    case "job.start": {
      const j = f as LogEvents["job.start"];
      return { name: "job_start", conversationId: j.conversationId, agentId: j.agentId, outcome: "started", kind: j.job, queueWaitMs: j.queueWaitMs, count: j.attempts };
    }
    case "job.end": {
      const j = f as LogEvents["job.end"];
      return { name: "job", conversationId: j.conversationId, agentId: j.agentId, outcome: j.outcome, code: j.code, kind: j.job, ms: j.ms, modelMs: j.modelMs, inputTokens: j.inputTokens, outputTokens: j.outputTokens };
    }
    case "settlement": {
      const s = f as LogEvents["settlement"];
      return { name: "settlement", conversationId: s.conversationId, agentId: s.agentId, outcome: s.outcome, code: s.code, ms: s.ms };
    }
    case "extraction": {
      const x = f as LogEvents["extraction"];
      return { name: "extraction", conversationId: x.conversationId, agentId: x.agentId, outcome: x.outcome, code: x.code, ms: x.ms, inputTokens: x.inputTokens, outputTokens: x.outputTokens, count: x.facts };
    }
    case "recall": {
      const r = f as LogEvents["recall"];
      return { name: "recall", conversationId: r.conversationId, agentId: r.agentId, outcome: "ok", ms: r.ms, count: r.hits };
    }
    case "reply.dispatch": {
      const d = f as LogEvents["reply.dispatch"];
      return { name: "dispatch", conversationId: d.conversationId, agentId: d.agentId, outcome: d.outcome, ms: d.ms, count: d.parts };
    }
    case "incident": {
      const i = f as LogEvents["incident"];
      return { name: "incident", conversationId: i.conversationId, agentId: i.agentId, outcome: "raised", code: i.code, kind: i.kind, count: i.count ?? 1 };
    }
    default:
      return undefined;
  }
}

/** The data point an event is charted as, or undefined for an event that is not charted. */
export function metricPoint<E extends LogEvent>(event: E, fields: LogEvents[E]): MetricPoint | undefined {
  const p = partsOf(event, fields);
  if (p === undefined) return undefined;
  // The same check as a log line's: a string that is not an id or a code is never written.
  const text = (value: string | null | undefined): string => (value === undefined || value === null || value === "" ? "" : idOrCode(value));
  const agent = text(p.agentId);
  const conversation = text(p.conversationId);
  return {
    indexes: [agent === "" ? conversation : agent],
    blobs: [p.name, agent, text(p.outcome), text(p.code), text(p.kind), conversation],
    doubles: [p.ms ?? 0, p.queueWaitMs ?? 0, p.modelMs ?? 0, p.inputTokens ?? 0, p.outputTokens ?? 0, p.count ?? 0],
  };
}
