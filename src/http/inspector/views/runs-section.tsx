import type { FC } from "hono/jsx";
import { runBodySchema } from "../../../core/events";
import type { ConversationModel } from "../conversation-model";
import type { RunTiming } from "../run-timing";
import { formatDuration, runTiming } from "../run-timing";

const STATUSES = runBodySchema.shape.status.options;

/** In flight is amber, done green, failed red; a skipped run (content-dark preflight) is the plain badge. */
const STATUS_CLASS: Record<(typeof STATUSES)[number], string> = {
  skipped: "badge",
  planned: "badge warn",
  started: "badge warn",
  completed: "badge ok",
  failed: "badge bad",
};

/** A compaction's time from its plan, a plan's time until it was abandoned, or why a preflight did not plan. */
const Timing: FC<{ timing: RunTiming }> = ({ timing }) => {
  switch (timing.kind) {
    case "none":
      return <>—</>;
    case "skipped":
      return (
        <span data-testid="skip-reason" data-reason={timing.reason}>
          skipped: <code>{timing.reason}</code>
        </span>
      );
    default:
      return (
        <span data-testid="run-duration" data-kind={timing.kind} data-ms={String(timing.ms)}>
          {timing.kind === "abandoned" ? "abandoned after " : timing.kind === "failed" ? "failed after " : ""}
          {formatDuration(timing.ms)}
        </span>
      );
  }
};

/** Every `run` event of the conversation (all agents and compactors), newest first, a page at a time, with a count per status. */
// Longer than the house's ~60 lines: one section's markup, read top to bottom as the page shows it.
export const RunsSection: FC<{ runs: ConversationModel["runs"]; newestHref: string | undefined; olderHref: string | undefined }> = ({ runs, newestHref, olderHref }) => (
  <section>
    <h2>Runs</h2>
    <p>
      {STATUSES.map((status) => (
        <>
          <span class={STATUS_CLASS[status]} data-testid="run-count" data-status={status} data-count={String(runs.counts.get(status) ?? 0)}>
            {status} {runs.counts.get(status) ?? 0}
          </span>{" "}
        </>
      ))}
      {runs.countedAfterSeq > 0 ? (
        <span class="muted" data-testid="run-count-window" data-after={String(runs.countedAfterSeq)}>
          (counted in the newest events only: after seq {runs.countedAfterSeq})
        </span>
      ) : null}
    </p>
    {runs.items.length === 0 ? (
      <p class="muted">No runs.</p>
    ) : (
      <table>
        <thead>
          <tr>
            <th>seq</th>
            <th>status</th>
            <th>role</th>
            <th>agent</th>
            <th>run</th>
            <th>model</th>
            <th>usage</th>
            <th>error</th>
            <th title="from its plan to this event, or why it did not plan">time</th>
            <th>recorded</th>
          </tr>
        </thead>
        <tbody>
          {runs.items.map((run) => {
            const { body } = run;
            return (
              <tr data-testid="run" data-status={body.status} data-seq={String(run.seq)}>
                <td>{run.seq}</td>
                <td>
                  <span class={STATUS_CLASS[body.status]}>{body.status}</span>
                </td>
                <td>{body.role}</td>
                <td>
                  <code>{body.agentId}</code>
                </td>
                <td>
                  <code>{body.runId}</code>
                </td>
                <td>{body.model ?? "—"}</td>
                <td>{body.usage === undefined ? "—" : `${body.usage.inputTokens} in / ${body.usage.outputTokens} out`}</td>
                <td>
                  {body.error === undefined ? (
                    "—"
                  ) : (
                    <span title={body.error.message}>
                      <code>{body.error.code}</code>
                    </span>
                  )}
                </td>
                <td>
                  <Timing timing={runTiming(run, runs.spans.get(body.runId))} />
                </td>
                <td>{run.recordedAt}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    )}
    <p class="pager">
      {newestHref === undefined ? null : <a href={newestHref}>newest runs</a>}
      {olderHref === undefined ? null : (
        <a data-testid="older-runs" href={olderHref}>
          older runs
        </a>
      )}
    </p>
  </section>
);
