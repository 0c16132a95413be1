import type { FC } from "hono/jsx";
import type { StoredEvent } from "../../../core/events";
import type { Page } from "../conversation-model";
import { eventExcerpt } from "../event-excerpt";

/** The log, newest first, a page at a time; the text shown is escaped data, never markup. */
export const TimelineSection: FC<{ timeline: Page<StoredEvent>; newestHref: string | undefined; olderHref: string | undefined }> = ({ timeline, newestHref, olderHref }) => (
  <section>
    <h2>Timeline</h2>
    {timeline.items.length === 0 ? (
      <p class="muted">No events.</p>
    ) : (
      <table>
        <thead>
          <tr>
            <th>seq</th>
            <th>kind</th>
            <th>recorded</th>
            <th>event</th>
          </tr>
        </thead>
        <tbody>
          {timeline.items.map((event) => {
            const { label, text } = eventExcerpt(event);
            return (
              <tr data-testid="event" data-seq={String(event.seq)} data-kind={event.kind} data-sensitive={String(event.sensitive)}>
                <td>{event.seq}</td>
                <td>
                  <span class="badge">{event.kind}</span> {event.sensitive ? <span class="badge warn">sensitive</span> : null}
                </td>
                <td>{event.recordedAt}</td>
                <td>
                  <div class="muted">{label}</div>
                  {text === null ? null : <div class="text">{text}</div>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    )}
    <p class="pager">
      {newestHref === undefined ? null : <a href={newestHref}>newest events</a>}
      {olderHref === undefined ? null : (
        <a data-testid="older-events" href={olderHref}>
          older events
        </a>
      )}
    </p>
  </section>
);
