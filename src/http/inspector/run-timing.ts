import type { PlanSpan } from "../../storage/shard/run-spans";
import type { RunEvent } from "./conversation-model";

/**
 * What the runs table says about a run's time or its absence: how long a compaction took from its
 * plan to this settlement or failed attempt, how long a plan stayed open before it was abandoned,
 * or why a preflight did not plan (the reason its content-dark `skipped` event records).
 */
export type RunTiming =
  | { readonly kind: "settled" | "failed" | "abandoned"; readonly ms: number }
  | { readonly kind: "skipped"; readonly reason: string }
  | { readonly kind: "none" };

const elapsed = (from: string, to: string): number | undefined => {
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
};

export function runTiming(run: RunEvent, span: PlanSpan | undefined): RunTiming {
  const { status, detail } = run.body;
  if (status === "skipped") {
    const reason = detail?.["reason"];
    return typeof reason === "string" ? { kind: "skipped", reason } : { kind: "none" };
  }
  if (span === undefined) return { kind: "none" };
  const to = status === "completed" || status === "failed" ? run.recordedAt : status === "planned" ? span.abandonedAt : null;
  const ms = to === null ? undefined : elapsed(span.plannedAt, to);
  if (ms === undefined) return { kind: "none" };
  return { kind: status === "completed" ? "settled" : status === "failed" ? "failed" : "abandoned", ms };
}

/** `850 ms`, `12.3 s`, `4 min 05 s`, `2 h 03 min`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1_000);
  if (seconds < 3_600) return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
  const minutes = Math.round(seconds / 60);
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min`;
}
