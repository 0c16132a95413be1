import type { FC } from "hono/jsx";
import { CHART_FRAME, bar, countCeiling, countLabel, durationCeiling, durationLabel, hourLabels, slots, ticks, yOf } from "../../../core/chart-geometry";
import type { FailureHour, HourWindow, LagPoint } from "../../../core/fleet-series";
import type { IncidentKind } from "../../../storage/shard/incidents";
import { INCIDENT_KINDS } from "../../../storage/shard/incidents";
import { ChartAxes } from "./chart-axes";

/** At most this many hour labels under a chart: a week of hours would overlap otherwise. */
const HOUR_LABELS = 8;

/** One colour per incident kind, so a kind keeps its colour from one view to the next. */
const KIND_COLOURS: Record<IncidentKind, string> = {
  compactor_failure: "#c53030",
  compactor_abandoned: "#8a1c1c",
  compaction_stalled: "#f2a33a",
  plan_failure: "#b7791f",
  resolver_failure: "#6b46c1",
  agent_failure: "#2b6cb0",
  delivery_failure: "#2c7a7b",
  extraction_failure: "#38a169",
  wake_failure: "#718096",
};

/**
 * Compaction lag per hour: a bar to the median, a whisker and a dot at the slowest. Hours without a
 * settled boundary have no bar.
 */
export const LagChart: FC<{ window: HourWindow; points: readonly LagPoint[] }> = ({ window, points }) => {
  if (points.length === 0) return <p class="muted" data-testid="lag-empty">No boundary settled in this window.</p>;
  const frame = CHART_FRAME;
  const hourSlots = slots(window.hours, frame);
  const slotOf = new Map(hourSlots.map((slot) => [slot.key, slot]));
  const scale = durationCeiling(Math.max(...points.map((p) => p.maxMs)));
  return (
    <svg class="chart" data-testid="lag-chart" viewBox={`0 0 ${frame.width} ${frame.height}`} role="img" aria-label="Compaction lag per hour: median and slowest">
      <ChartAxes frame={frame} yTicks={ticks(scale, frame).map((t) => ({ y: t.y, text: durationLabel(t.value) }))} xLabels={hourLabels(hourSlots, HOUR_LABELS)} />
      {points.map((point) => {
        const slot = slotOf.get(point.hour);
        if (slot === undefined) return null;
        const median = bar(slot, 0, point.p50Ms, scale, frame);
        const slowest = yOf(point.maxMs, scale, frame);
        return (
          <g data-testid="lag-hour" data-hour={point.hour} data-settled={String(point.settled)} data-p50-ms={String(point.p50Ms)} data-max-ms={String(point.maxMs)}>
            <title>{`${point.hour}:00 UTC: ${point.settled} settled, median ${durationLabel(point.p50Ms)}, slowest ${durationLabel(point.maxMs)}`}</title>
            <rect data-series="p50" x={median.x} y={median.y} width={median.width} height={median.height} fill="#5b6cff" />
            <line x1={slot.center} x2={slot.center} y1={median.y} y2={slowest} stroke="#1d2330" />
            <circle data-series="max" cx={slot.center} cy={slowest} r={3} fill="#1d2330" />
          </g>
        );
      })}
    </svg>
  );
};

/** Incidents per hour, stacked by kind, with a legend of the kinds the window holds. */
export const FailureChart: FC<{ window: HourWindow; hours: readonly FailureHour<IncidentKind>[] }> = ({ window, hours }) => {
  if (hours.length === 0) return <p class="muted" data-testid="failures-empty">No incident was seen in this window.</p>;
  const frame = CHART_FRAME;
  const hourSlots = slots(window.hours, frame);
  const slotOf = new Map(hourSlots.map((slot) => [slot.key, slot]));
  const scale = countCeiling(Math.max(...hours.map((h) => h.incidents)));
  const kinds = INCIDENT_KINDS.filter((kind) => hours.some((h) => h.kinds.some((k) => k.kind === kind)));
  return (
    <>
      <svg class="chart" data-testid="failure-chart" viewBox={`0 0 ${frame.width} ${frame.height}`} role="img" aria-label="Incidents per hour by kind">
        <ChartAxes frame={frame} yTicks={ticks(scale, frame).map((t) => ({ y: t.y, text: countLabel(t.value) }))} xLabels={hourLabels(hourSlots, HOUR_LABELS)} />
        {hours.map((hour) => {
          const slot = slotOf.get(hour.hour);
          if (slot === undefined) return null;
          let below = 0;
          return (
            <g data-testid="failure-hour" data-hour={hour.hour} data-incidents={String(hour.incidents)}>
              {hour.kinds.map((k) => {
                const from = below;
                below += k.incidents;
                const segment = bar(slot, from, below, scale, frame);
                return (
                  <rect data-kind={k.kind} data-incidents={String(k.incidents)} x={segment.x} y={segment.y} width={segment.width} height={segment.height} fill={KIND_COLOURS[k.kind]}>
                    <title>{`${hour.hour}:00 UTC: ${k.incidents} ${k.kind} (${k.occurrences} ${k.occurrences === 1 ? "occurrence" : "occurrences"})`}</title>
                  </rect>
                );
              })}
            </g>
          );
        })}
      </svg>
      <p>
        {kinds.map((kind) => (
          <span class="legend">
            <span class="swatch" style={`background:${KIND_COLOURS[kind]}`}></span>
            <code>{kind}</code>
          </span>
        ))}
      </p>
    </>
  );
};
