import type { BusyConversation, FailureHour, HourWindow, LagPoint } from "../../core/fleet-series";
import { LAG_BIN_EDGES_MS, busiest, failureSeries, hourWindow, lagSeries } from "../../core/fleet-series";
import { mergeFleetPage } from "../../core/ops";
import type { IncidentKind } from "../../storage/shard/incidents";
import { INCIDENT_KINDS } from "../../storage/shard/incidents";
import { readBusiestConversations, readFailureCells, readLagCells } from "../../storage/shard/fleet";
import type { FleetIncidentRecord } from "../../storage/shard/ops";
import { readFleetIncidents } from "../../storage/shard/ops";
import { shardsOf } from "../../storage/shards";

/**
 * Everything the fleet page shows, read from every shard at once: one statement per shard for each
 * chart and list (`storage/shard/fleet`), merged by the pure functions of `core/fleet-series` and
 * the fleet's incident order (`core/ops`). Ids, counts, kinds, codes and times only: the page holds
 * no message text, and an incident's message (free text) is left out here, before any view sees it.
 */

export const OPEN_INCIDENTS_SHOWN = 50;
export const BUSIEST_SHOWN = 20;

/** An open incident as the fleet page lists it. */
export type OpenIncident = Omit<FleetIncidentRecord, "message"> & { readonly shard: string };

export interface FleetModel {
  readonly window: HourWindow;
  readonly shards: readonly string[];
  readonly lag: readonly LagPoint[];
  readonly failures: readonly FailureHour<IncidentKind>[];
  readonly openIncidents: readonly OpenIncident[];
  /** Whether any shard holds more open incidents than the page lists. */
  readonly moreOpen: boolean;
  readonly busiest: readonly BusyConversation[];
}

/** The fleet over the `hours` whole hours that end with the one `now` is in. */
export async function loadFleet(env: Env, now: Date, hours: number): Promise<FleetModel> {
  const window = hourWindow(now, hours);
  const shards = shardsOf(env);
  const perShard = await Promise.all(
    shards.map(async (shard, index) => {
      const [lag, failures, open, busy] = await Promise.all([
        readLagCells(shard.db, window.since, LAG_BIN_EDGES_MS),
        readFailureCells(shard.db, window.since),
        readFleetIncidents(shard.db, { open: true }, undefined, OPEN_INCIDENTS_SHOWN + 1),
        readBusiestConversations(shard.db, shard.name, window.since, BUSIEST_SHOWN),
      ]);
      // In the fleet's order (`core/ops`), so the shards' lists merge as /v1/ops/incidents merges them.
      const positioned = open.map(({ message: _message, ...incident }) => ({
        incident: { ...incident, shard: shard.name },
        position: { at: incident.lastSeenAt, shard: index, id: incident.id },
      }));
      return { lag, failures, open: positioned, busy };
    }),
  );
  const open = mergeFleetPage(perShard.map((s) => s.open), OPEN_INCIDENTS_SHOWN);
  return {
    window,
    shards: shards.map((shard) => shard.name),
    lag: lagSeries(perShard.flatMap((s) => s.lag)),
    failures: failureSeries(perShard.flatMap((s) => s.failures), INCIDENT_KINDS),
    openIncidents: open.page.map((entry) => entry.incident),
    moreOpen: open.next !== undefined,
    busiest: busiest(perShard.map((s) => s.busy), BUSIEST_SHOWN),
  };
}
