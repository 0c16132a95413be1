import type { FC } from "hono/jsx";
import type { Result } from "../../../core/errors";
import type { ContextSelection } from "../../../core/context-manifest";
import { contextBarGeometry, contextComposition } from "../context-bar";
import type { SegmentKind } from "../context-bar";
import { Failure } from "./failure";

const SEGMENT_LABELS: Record<SegmentKind, string> = {
  boundary: "boundary envelope",
  amendment: "amendment envelope",
  tail: "exact tail",
};

/**
 * What the agent is served now, as a bar: boundary envelope, amendment envelope and exact tail,
 * against the compactor's retain and trigger lines. Widths are inline CSS percentages (no script).
 * A context that fails closed shows its error code and reason instead: there is nothing to draw.
 */
// Longer than the house's ~60 lines: one section's markup, read top to bottom as the page shows it.
export const ContextSection: FC<{ context: Result<ContextSelection>; policy: { triggerInputChars: number; retainInputChars: number } | undefined }> = ({ context, policy }) => {
  if (!context.ok) {
    return (
      <section>
        <h2>Context composition</h2>
        <Failure testid="context-error" error={context.error} />
      </section>
    );
  }
  const { manifest } = context.value;
  const composition = contextComposition(context.value);
  const geometry = policy === undefined ? undefined : contextBarGeometry(composition, policy);
  return (
    <section>
      <h2>Context composition</h2>
      {geometry === undefined || policy === undefined ? (
        <p class="muted">No compactor policy is declared for this agent.</p>
      ) : (
        <div
          class="bar"
          data-testid="context-bar"
          data-trigger={String(policy.triggerInputChars)}
          data-retain={String(policy.retainInputChars)}
          data-total={String(geometry.totalChars)}
          data-scale={String(geometry.scaleChars)}
        >
          {geometry.segments.map((s) => (
            <div
              class={`seg seg-${s.kind}`}
              data-segment={s.kind}
              data-chars={String(s.chars)}
              style={`left:${s.offsetPercent}%;width:${s.widthPercent}%`}
              title={`${SEGMENT_LABELS[s.kind]}: ${s.chars} characters`}
            ></div>
          ))}
          {geometry.lines.map((l) => (
            <div class={`mark mark-${l.kind}`} data-line={l.kind} data-chars={String(l.chars)} style={`left:${l.percent}%`}>
              <span>
                {l.kind} {l.chars}
              </span>
            </div>
          ))}
        </div>
      )}
      <table>
        <tbody>
          <tr>
            <th>
              <span class="swatch seg-boundary"></span>boundary envelope
            </th>
            <td>{composition.boundary} chars</td>
            <td>
              {manifest.boundary === null ? (
                manifest.withheld ?? "no boundary yet"
              ) : (
                <>
                  position {manifest.boundary.position}, <code>{manifest.boundary.id}</code>, covers through seq {manifest.boundary.coveredThroughSeq}
                </>
              )}
            </td>
          </tr>
          <tr>
            <th>
              <span class="swatch seg-amendment"></span>amendment envelope
            </th>
            <td>{composition.amendment} chars</td>
            <td>
              {manifest.amendment === null
                ? "none"
                : `${manifest.amendment.items.length} amended turn${manifest.amendment.items.length === 1 ? "" : "s"}: ${manifest.amendment.items.map((item) => `${item.kind} ${item.turnId}`).join(", ")}`}
            </td>
          </tr>
          <tr>
            <th>
              <span class="swatch seg-tail"></span>exact tail
            </th>
            <td>{composition.tail} chars</td>
            <td>{manifest.tail.turns} turns</td>
          </tr>
          <tr>
            <th>total</th>
            <td>{composition.boundary + composition.amendment + composition.tail} chars</td>
            <td>
              {manifest.totals.messages} messages; the agent allows {manifest.policy.maxChars} chars and {manifest.policy.maxMessages} messages
              {manifest.omitted.groups === 0 ? null : `; ${manifest.omitted.groups} older groups (${manifest.omitted.chars} chars) left out by that bound`}
            </td>
          </tr>
        </tbody>
      </table>
    </section>
  );
};
