import type { FC } from "hono/jsx";
import { opsAllowed } from "../../../core/ops";
import type { ConversationSummary } from "../../../storage/inspector-store";
import { conversationListPath, conversationPath, fleetPath } from "../paths";
import { Layout } from "./layout";

export const ConversationListPage: FC<{
  scopes: readonly string[];
  conversations: readonly ConversationSummary[];
  nextAfter: string | null;
  first: boolean;
  /** Carried into the paging links only when it is not the default. */
  limit: number | undefined;
}> = ({ scopes, conversations, nextAfter, first, limit }) => (
  <Layout title="Conversations" signedIn={true}>
    <section>
      <h1>Conversations</h1>
      <p class="muted">
        Scopes of this token: {scopes.map((s) => <code>{s} </code>)}
      </p>
      {opsAllowed(scopes) ? (
        <p>
          <a data-testid="fleet-link" href={fleetPath()}>
            Fleet: lag, failures, open incidents, busiest conversations →
          </a>
        </p>
      ) : null}
      {conversations.length === 0 ? (
        <p data-testid="no-conversations">No conversation in these scopes has events{first ? "" : " after this point"}.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>conversation</th>
              <th>events</th>
              <th>last seq</th>
              <th>last recorded</th>
            </tr>
          </thead>
          <tbody>
            {conversations.map((c) => (
              <tr data-testid="conversation" data-conversation={c.conversationId}>
                <td>
                  <a href={conversationPath(c.conversationId)}>
                    <code>{c.conversationId}</code>
                  </a>
                </td>
                <td>{c.events}</td>
                <td>{c.lastSeq}</td>
                <td>{c.lastRecordedAt}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p class="pager">
        {first ? null : <a href={conversationListPath({ limit })}>first page</a>}
        {nextAfter === null ? null : (
          <a data-testid="next-page" href={conversationListPath({ after: nextAfter, limit })}>
            next page
          </a>
        )}
      </p>
    </section>
  </Layout>
);
