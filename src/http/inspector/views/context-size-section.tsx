import type { FC } from "hono/jsx";
import type { SizeSample } from "../../../core/chart-geometry";
import { CHART_FRAME, countLabel, pointsAttribute, sizeChartGeometry, ticks } from "../../../core/chart-geometry";
import { ChartAxes } from "./chart-axes";

/** Half the width of a `seq 12345` label at the chart's font size. */
const LABEL_INSET = 28;

/**
 * The chain's active context size against its compactor's trigger, source by source, as the
 * preflight measured it: the size climbs with each message, a plan is drawn where it reached the
 * trigger, and it drops once the boundary settles and the next preflight measures it.
 */
export const ContextSizeSection: FC<{ samples: readonly SizeSample[]; policyTrigger: number | undefined }> = ({ samples, policyTrigger }) => {
  const frame = CHART_FRAME;
  const geometry = sizeChartGeometry(samples, policyTrigger, frame);
  const first = samples[0];
  const last = samples.at(-1);
  return (
    <section>
      <h2>Context size over time</h2>
      {first === undefined || last === undefined ? (
        <p class="muted" data-testid="context-size-empty">
          No preflight of this agent's compactor is recorded in this conversation yet.
        </p>
      ) : (
        <>
          <svg
            class="chart"
            data-testid="context-size-chart"
            data-samples={String(samples.length)}
            data-plans={String(geometry.plans.length)}
            viewBox={`0 0 ${frame.width} ${frame.height}`}
            role="img"
            aria-label="Active context size against the compaction trigger, by sequence number"
          >
            <ChartAxes
              frame={frame}
              yTicks={ticks(geometry.scale, frame).map((t) => ({ y: t.y, text: countLabel(t.value) }))}
              xLabels={[
                // Inset from the ends, so a label centred on its point is not clipped by the drawing's edge.
                { center: frame.left + LABEL_INSET, text: `seq ${first.seq}` },
                { center: frame.width - frame.right - LABEL_INSET, text: `seq ${last.seq}` },
              ]}
            />
            {geometry.trigger.length === 0 ? null : (
              <polyline data-series="trigger" points={pointsAttribute(geometry.trigger)} fill="none" stroke="#c53030" stroke-width={1.5} stroke-dasharray="5 4" />
            )}
            <polyline data-series="active" points={pointsAttribute(geometry.active)} fill="none" stroke="#5b6cff" stroke-width={2} />
            {geometry.plans.map((plan) => (
              <circle data-series="plan" data-seq={String(plan.seq)} cx={plan.x} cy={plan.y} r={4} fill="#f2a33a">
                <title>{`plan at seq ${plan.seq}: ${plan.chars} characters active`}</title>
              </circle>
            ))}
          </svg>
          <p class="muted">
            <span class="legend">
              <span class="swatch seg-boundary"></span>active characters as of each source
            </span>
            <span class="legend">
              <span class="swatch" style="background:#c53030"></span>the compactor's trigger
            </span>
            <span class="legend">
              <span class="swatch seg-amendment"></span>a compaction planned
            </span>
            the newest {samples.length} preflights
          </p>
        </>
      )}
    </section>
  );
};
