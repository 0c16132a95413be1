import type { FC } from "hono/jsx";
import type { ConversationModel, ConversationQuery } from "../conversation-model";
import type { ConversationPageQuery } from "../paths";
import { conversationListPath, conversationPath } from "../paths";
import { ChainHealthSection } from "./chain-health-section";
import { BoundaryList, ChainVerification } from "./chain-section";
import { ContextSection } from "./context-section";
import { ContextSizeSection } from "./context-size-section";
import { Layout } from "./layout";
import { MemorySection } from "./memory-section";
import { RunsSection } from "./runs-section";
import { TimelineSection } from "./timeline-section";

/**
 * One conversation, seen by one agent: what it is served, whether its chain holds, and the log
 * behind it. Each long section pages on its own cursor; a section's links keep the others' pages.
 */
export const ConversationPage: FC<{ model: ConversationModel; query: ConversationQuery }> = ({ model, query }) => {
  const { conversationId, agentId, servingAgents } = model;
  const current = { before: query.before, runsBefore: query.runsBefore, memory: query.memory };
  const here = (change: ConversationPageQuery) => conversationPath(conversationId, { ...current, agent: agentId, ...change });
  return (
    <Layout title={conversationId} signedIn={true}>
      <p>
        <a href={conversationListPath()}>← conversations</a>
      </p>
      <h1>
        <code>{conversationId}</code>
      </h1>
      <p class="picker" data-testid="agent-picker">
        Agent:{" "}
        {servingAgents.length === 0 ? <span class="muted">no agent's declaration serves this conversation</span> : null}
        {servingAgents.map((id) =>
          id === agentId ? (
            <span class="current" data-testid="agent" data-agent={id}>
              {id}
            </span>
          ) : (
            <a data-testid="agent" data-agent={id} href={conversationPath(conversationId, { agent: id })}>
              {id}
            </a>
          ),
        )}
        {agentId !== undefined && !servingAgents.includes(agentId) ? (
          <span class="current">
            {agentId} <span class="badge warn">does not serve this conversation</span>
          </span>
        ) : null}
      </p>
      {model.context === undefined ? null : <ContextSection context={model.context} policy={model.policy} />}
      {agentId === undefined ? null : <ContextSizeSection samples={model.sizes} policyTrigger={model.policy?.triggerInputChars} />}
      {model.listing === undefined ? null : <ChainHealthSection listing={model.listing} />}
      {model.audit === undefined || model.listing === undefined ? null : <ChainVerification audit={model.audit} listing={model.listing} />}
      {model.listing === undefined ? null : <BoundaryList conversationId={conversationId} listing={model.listing} />}
      {agentId === undefined ? null : (
        <MemorySection
          facts={model.memory.items}
          firstHref={query.memory === undefined ? undefined : here({ memory: undefined })}
          moreHref={model.memory.next === null ? undefined : here({ memory: model.memory.next })}
        />
      )}
      <RunsSection
        runs={model.runs}
        newestHref={query.runsBefore === undefined ? undefined : here({ runsBefore: undefined })}
        olderHref={model.runs.nextBefore === null ? undefined : here({ runsBefore: model.runs.nextBefore })}
      />
      <TimelineSection
        timeline={model.timeline}
        newestHref={query.before === undefined ? undefined : here({ before: undefined })}
        olderHref={model.timeline.nextBefore === null ? undefined : here({ before: model.timeline.nextBefore })}
      />
    </Layout>
  );
};
