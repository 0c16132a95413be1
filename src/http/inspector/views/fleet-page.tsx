import type { FC } from "hono/jsx";
import type { FleetModel } from "../fleet-model";
import { BUSIEST_SHOWN, OPEN_INCIDENTS_SHOWN } from "../fleet-model";
import { conversationListPath, conversationPath, fleetPath } from "../paths";
import { FailureChart, LagChart } from "./fleet-charts";
import { Layout } from "./layout";

/** The windows offered as links; any other `?hours=` up to a week works too. */
const WINDOWS = [24, 72, 168] as const;

const OpenIncidents: FC<{ model: FleetModel }> = ({ model }) => (
  <section>
    <h2>Open incidents</h2>
    {model.openIncidents.length === 0 ? (
      <p class="muted" data-testid="no-open-incidents">
        No incident is open on any shard.
      </p>
    ) : (
      <table>
        <thead>
          <tr>
            <th>last seen</th>
            <th>kind</th>
            <th>code</th>
            <th>count</th>
            <th>conversation</th>
            <th>agent</th>
            <th>shard</th>
            <th>first seen</th>
          </tr>
        </thead>
        <tbody>
          {model.openIncidents.map((incident) => (
            <tr data-testid="open-incident" data-conversation={incident.conversationId} data-kind={incident.kind} data-count={String(incident.count)}>
              <td>{incident.lastSeenAt}</td>
              <td>
                <span class="badge bad">{incident.kind}</span>
              </td>
              <td>
                <code>{incident.code}</code>
              </td>
              <td>{incident.count}</td>
              <td>
                <a href={conversationPath(incident.conversationId, { agent: incident.agentId ?? undefined })}>
                  <code>{incident.conversationId}</code>
                </a>
              </td>
              <td>{incident.agentId === null ? <span class="muted">the conversation's own</span> : <code>{incident.agentId}</code>}</td>
              <td>{incident.shard}</td>
              <td>{incident.createdAt}</td>
            </tr>
          ))}
        </tbody>
      </table>
    )}
    {model.moreOpen ? <p class="muted">More than {OPEN_INCIDENTS_SHOWN} incidents are open: the newest seen are listed; /v1/ops/incidents pages through all of them.</p> : null}
  </section>
);

const Busiest: FC<{ model: FleetModel }> = ({ model }) => (
  <section>
    <h2>Busiest conversations</h2>
    {model.busiest.length === 0 ? (
      <p class="muted" data-testid="no-busy-conversations">
        No conversation recorded an event in this window.
      </p>
    ) : (
      <table>
        <thead>
          <tr>
            <th>conversation</th>
            <th>events in the window</th>
            <th>last recorded</th>
            <th>shard</th>
          </tr>
        </thead>
        <tbody>
          {model.busiest.map((busy) => (
            <tr data-testid="busy-conversation" data-conversation={busy.conversationId} data-events={String(busy.events)}>
              <td>
                <a href={conversationPath(busy.conversationId)}>
                  <code>{busy.conversationId}</code>
                </a>
              </td>
              <td>{busy.events}</td>
              <td>{busy.lastRecordedAt}</td>
              <td>{busy.shard}</td>
            </tr>
          ))}
        </tbody>
      </table>
    )}
    <p class="muted">The {BUSIEST_SHOWN} conversations of every shard with the most events recorded in the window, most first.</p>
  </section>
);

/** The whole deployment at a glance, for an operator: how compaction keeps up, what fails, what is open, what is busy. */
export const FleetPage: FC<{ model: FleetModel }> = ({ model }) => {
  const hours = model.window.hours.length;
  return (
    <Layout title="Fleet" signedIn={true}>
      <p>
        <a href={conversationListPath()}>← conversations</a>
      </p>
      <h1>Fleet</h1>
      <p class="picker" data-testid="window" data-hours={String(hours)}>
        Last{" "}
        {WINDOWS.map((h) => (
          <>
            {h === hours ? <span class="current">{h} h</span> : <a href={fleetPath({ hours: h })}>{h} h</a>}{" "}
          </>
        ))}
        <span class="muted">
          from {model.window.since} (UTC, by the hour), over {model.shards.join(", ")}
        </span>
      </p>
      <section>
        <h2>Compaction lag</h2>
        <LagChart window={model.window} points={model.lag} />
        <p class="muted">
          Per hour, each settled boundary's settle time minus its plan's time: the bar is the median (counted in bins at most 19% wide, so it is at most that much above the
          true median), the dot the slowest.
        </p>
      </section>
      <section>
        <h2>Failures</h2>
        <FailureChart window={model.window} hours={model.failures} />
        <p class="muted">Incidents per hour by kind. An incident that repeats while open is counted once, in the hour it was last seen; its occurrences are in the bar's tooltip.</p>
      </section>
      <OpenIncidents model={model} />
      <Busiest model={model} />
    </Layout>
  );
};
