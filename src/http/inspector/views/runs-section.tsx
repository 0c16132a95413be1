import type { FC } from "hono/jsx";
import { runBodySchema } from "../../../core/events";
import type { Page, RunEvent } from "../conversation-model";

const STATUSES = runBodySchema.shape.status.options;

/** In flight is amber, done green, failed red; a skipped run (content-dark preflight) is the plain badge. */
const STATUS_CLASS: Record<(typeof STATUSES)[number], string> = {
  skipped: "badge",
  planned: "badge warn",
  started: "badge warn",
  completed: "badge ok",
  failed: "badge bad",
};

/** Every `run` event of the conversation (all agents and compactors), newest first, with a count per status. */
// Longer than the house's ~60 lines: one section's markup, read top to bottom as the page shows it.
export const RunsSection: FC<{ runs: Page<RunEvent> & { counts: ReadonlyMap<string, number> }; olderHref: string | undefined }> = ({ runs, olderHref }) => (
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
                <td>{run.recordedAt}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    )}
    {olderHref === undefined ? null : (
      <p class="pager">
        <a href={olderHref}>older runs</a>
      </p>
    )}
  </section>
);
