import type { LogEvent, LogEvents, LogLevel } from "./core/log-line";
import { logLine } from "./core/log-line";
import type { MetricPoint } from "./core/metric-point";
import { metricPoint } from "./core/metric-point";

/** What the logger needs of a Workers Analytics Engine dataset. */
interface MetricsDataset {
  writeDataPoint(point: MetricPoint): void;
}

/**
 * The deployment's `METRICS` dataset, once an entry point has seen its env (`attachMetrics`):
 * bindings are the deployment's, the same for every request of the isolate. Absent (local dev,
 * where Analytics Engine is not simulated, or a deployment without the binding), points are not written.
 */
let metrics: MetricsDataset | undefined;

/** Called by every entry point with its env: keeps the `METRICS` binding when the deployment has one. */
export function attachMetrics(env: Env): void {
  const dataset = (env as unknown as { METRICS?: MetricsDataset }).METRICS;
  if (dataset !== undefined) metrics = dataset;
}

/**
 * The one place `src/` writes to the console, so every line is a `core/log-line` event. The console
 * method carries the level to Workers Logs and `wrangler tail` (and `error` lines to stderr in
 * `wrangler dev`); the line repeats it so a filter on the JSON alone sees it too. The console is
 * looked up on each call, not bound once, so a test that replaces a method sees every line.
 */

function write<E extends LogEvent>(level: LogLevel, event: E, fields: LogEvents[E]): void {
  const line = logLine(level, event, fields);
  if (level === "debug") console.debug(line);
  else if (level === "info") console.log(line);
  else if (level === "warn") console.warn(line);
  else console.error(line);
  const point = metrics === undefined ? undefined : metricPoint(event, fields);
  if (point === undefined) return;
  try {
    // Fire and forget (the platform buffers it); a chart missing a point never fails the work it measures.
    metrics?.writeDataPoint(point);
  } catch {
    // Nothing to do: the line above already says what happened.
  }
}

export const logger = {
  debug: <E extends LogEvent>(event: E, fields: LogEvents[E]): void => write("debug", event, fields),
  info: <E extends LogEvent>(event: E, fields: LogEvents[E]): void => write("info", event, fields),
  warn: <E extends LogEvent>(event: E, fields: LogEvents[E]): void => write("warn", event, fields),
  error: <E extends LogEvent>(event: E, fields: LogEvents[E]): void => write("error", event, fields),
};
