import type { FC } from "hono/jsx";
import type { ExtractedFactView } from "../conversation-model";

/** The facts extraction kept with this conversation for the agent (served here only, while the agent serves it), each with the messages it came from, a page at a time. */
export const MemorySection: FC<{ facts: readonly ExtractedFactView[]; firstHref: string | undefined; moreHref: string | undefined }> = ({ facts, firstHref, moreHref }) => (
  <section>
    <h2>Extracted memory</h2>
    {facts.length === 0 ? (
      <p class="muted">No extracted facts from this conversation.</p>
    ) : (
      <table>
        <thead>
          <tr>
            <th>page</th>
            <th>fact</th>
            <th>statement</th>
            <th>sources</th>
          </tr>
        </thead>
        <tbody>
          {facts.map((fact) => (
            <tr data-testid="extracted-fact" data-path={fact.path} data-key={fact.key}>
              <td>
                <code>{fact.path}</code> v{fact.pageVersion}
              </td>
              <td>
                <code>{fact.key}</code>
              </td>
              <td>{fact.statement}</td>
              <td>
                {fact.sources.map((source) => (
                  <div data-testid="fact-source" data-seq={String(source.seq)} data-message={source.messageId}>
                    msg <code>{source.messageId}</code> · seq {source.seq} · <code title={source.eventHash}>{source.eventHash.slice(0, 12)}</code> · run <code>{source.runId}</code>
                  </div>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    )}
    <p class="pager">
      {firstHref === undefined ? null : <a href={firstHref}>first facts</a>}
      {moreHref === undefined ? null : (
        <a data-testid="more-facts" href={moreHref}>
          more facts
        </a>
      )}
    </p>
  </section>
);
