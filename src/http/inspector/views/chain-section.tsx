import type { FC } from "hono/jsx";
import type { ChainAudit, ChainListing } from "../../../api/chain";
import type { Result } from "../../../core/errors";
import { boundaryJsonPath, packetJsonPath } from "../paths";
import { Failure } from "./failure";

type Listed = ChainListing["boundaries"][number];

/**
 * The operator's audit (`verifyChain`): every link re-derived from D1 and R2, each valid or with
 * the checks it failed, and one verdict over every epoch. Coverage and run come from the listing,
 * which reads the same rows.
 */
// Longer than the house's ~60 lines: one section's markup, read top to bottom as the page shows it.
export const ChainVerification: FC<{ audit: Result<ChainAudit>; listing: Result<ChainListing> }> = ({ audit, listing }) => {
  if (!audit.ok) {
    return (
      <section>
        <h2>Chain verification</h2>
        <Failure testid="chain-error" error={audit.error} />
      </section>
    );
  }
  const report = audit.value;
  const links = report.epochs.flatMap((e) => e.links);
  const listed = new Map<string, Listed>(listing.ok ? listing.value.boundaries.map((b) => [b.id, b]) : []);
  return (
    <section>
      <h2>Chain verification</h2>
      <p
        class={`verdict ${report.valid ? "ok" : "bad"}`}
        data-testid="chain-verdict"
        data-valid={String(report.valid)}
        data-links={String(links.length)}
      >
        {report.valid ? "Valid" : "Invalid"}: {links.length} {links.length === 1 ? "link" : "links"} in {report.epochs.length}{" "}
        {report.epochs.length === 1 ? "epoch" : "epochs"}, every hash recomputed from D1 and R2
      </p>
      {report.epochs
        .filter((e) => !e.anchor.ok)
        .map((e) => (
          // Every link can be valid while the head is not the one the log settled (rows deleted or rewritten by hand).
          <p class="verdict bad" data-testid="chain-anchor" data-epoch-id={e.epochId}>
            Head not anchored in epoch <code>{e.epochId}</code>: {e.anchor.detail}
          </p>
        ))}
      {links.length === 0 ? null : (
        <table>
          <thead>
            <tr>
              <th>position</th>
              <th>boundary</th>
              <th>epoch</th>
              <th>covered through seq</th>
              <th>run</th>
              <th>verdict</th>
              <th>failed checks</th>
            </tr>
          </thead>
          <tbody>
            {links.map((link) => {
              const row = listed.get(link.boundaryId);
              const failed = link.checks.filter((c) => !c.ok);
              return (
                <tr data-testid="chain-link" data-valid={String(link.valid)} data-boundary-id={link.boundaryId}>
                  <td>{link.position}</td>
                  <td>
                    <code>{link.boundaryId}</code>
                  </td>
                  <td>
                    <code>{link.epochId}</code> {link.current ? <span class="badge">current</span> : <span class="badge">retired</span>}
                  </td>
                  <td>{row?.coveredThroughSeq ?? "—"}</td>
                  <td>
                    <code>{row?.runId ?? "—"}</code>
                  </td>
                  <td>
                    <span class={`badge ${link.valid ? "ok" : "bad"}`}>{link.valid ? "valid" : "invalid"}</span>
                  </td>
                  <td>
                    {failed.length === 0 ? (
                      <span class="muted">all {link.checks.length} checks pass</span>
                    ) : (
                      <ul>
                        {failed.map((c) => (
                          <li data-testid="failed-check" data-check={c.name}>
                            <code>{c.name}</code>: {c.detail ?? ""}
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
};

/** Every stored boundary of the agent here (`listChain`: previews only), each with its raw JSON one click away. */
// Longer than the house's ~60 lines: one section's markup, read top to bottom as the page shows it.
export const BoundaryList: FC<{ conversationId: string; listing: Result<ChainListing> }> = ({ conversationId, listing }) => {
  if (!listing.ok) {
    return (
      <section>
        <h2>Boundaries</h2>
        <Failure testid="boundaries-error" error={listing.error} />
      </section>
    );
  }
  const { boundaries } = listing.value;
  return (
    <section>
      <h2>Boundaries</h2>
      {boundaries.length === 0 ? (
        <p class="muted">No boundary yet.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>position</th>
              <th>boundary</th>
              <th>preview</th>
              <th>model</th>
              <th>hash</th>
              <th>created</th>
              <th>raw</th>
            </tr>
          </thead>
          <tbody>
            {boundaries.map((b) => (
              <tr data-testid="boundary" data-boundary-id={b.id}>
                <td>
                  {b.position} {b.current ? null : <span class="badge">retired epoch</span>}
                </td>
                <td>
                  <code>{b.id}</code>
                  <br />
                  <span class="muted">covers through seq {b.coveredThroughSeq}</span>
                </td>
                <td class="text">{b.preview ?? <span class="bad">not a boundary body</span>}</td>
                <td>{b.model === null ? "—" : `${b.model.provider} / ${b.model.model}`}</td>
                <td>
                  <code>{b.hash}</code>
                </td>
                <td>{b.createdAt}</td>
                <td>
                  <a data-testid="boundary-json" href={boundaryJsonPath(conversationId, b.id)}>
                    boundary
                  </a>{" "}
                  <a data-testid="packet-json" href={packetJsonPath(conversationId, b.id)}>
                    packet
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {listing.value.nextAfter === null ? null : (
        <p class="muted" data-testid="boundaries-more">
          The oldest {boundaries.length} shown; the rest are listed a page at a time by <code>GET …/chain?agent=&amp;after={listing.value.nextAfter}</code>.
        </p>
      )}
    </section>
  );
};
