import { describe, it } from "vitest";
import { logLine } from "../../src/core/log-line";

/** Type-level: checked by `vitest run` in its typecheck mode (the `types` project), so `npm test` fails when one does. */
describe("logLine", () => {
  it("refuses free text at compile time", () => {
    // @ts-expect-error -- `message` is no field of any event.
    logLine("info", "request.refused", { code: "not_found", status: 404, message: "no route for /private/thing" });
    // @ts-expect-error -- an event's own fields only: `path` belongs to `append`.
    logLine("info", "request.refused", { code: "not_found", status: 404, path: "fast" });
    // @ts-expect-error -- a closed set takes only its members.
    logLine("info", "append", { conversationId: "api:c", path: "sideways", events: 1, written: 1, outcome: "ok", ms: 1 });
  });
});
