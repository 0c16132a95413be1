import type { LogEvent, LogEvents, LogLevel } from "./core/log-line";
import { logLine } from "./core/log-line";

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
}

export const logger = {
  debug: <E extends LogEvent>(event: E, fields: LogEvents[E]): void => write("debug", event, fields),
  info: <E extends LogEvent>(event: E, fields: LogEvents[E]): void => write("info", event, fields),
  warn: <E extends LogEvent>(event: E, fields: LogEvents[E]): void => write("warn", event, fields),
  error: <E extends LogEvent>(event: E, fields: LogEvents[E]): void => write("error", event, fields),
};
