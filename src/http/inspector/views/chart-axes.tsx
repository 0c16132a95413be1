import type { FC } from "hono/jsx";
import type { Frame } from "../../../core/chart-geometry";
import { baseline } from "../../../core/chart-geometry";

/**
 * The frame every inspector chart is drawn in: horizontal grid lines with their values on the left,
 * the baseline, and labels under the plot. Positions come from `core/chart-geometry`; text is
 * rendered as escaped children like any other page text.
 */
export const ChartAxes: FC<{
  frame: Frame;
  yTicks: readonly { readonly y: number; readonly text: string }[];
  xLabels: readonly { readonly center: number; readonly text: string }[];
}> = ({ frame, yTicks, xLabels }) => (
  <g class="axes">
    {yTicks.map((tick) => (
      <>
        <line x1={frame.left} x2={frame.width - frame.right} y1={tick.y} y2={tick.y} stroke="#eef0f3" />
        <text x={frame.left - 6} y={tick.y + 4} text-anchor="end">
          {tick.text}
        </text>
      </>
    ))}
    <line x1={frame.left} x2={frame.width - frame.right} y1={baseline(frame)} y2={baseline(frame)} stroke="#8a94a6" />
    {xLabels.map((label) => (
      <text x={label.center} y={frame.height - 8} text-anchor="middle">
        {label.text}
      </text>
    ))}
  </g>
);
