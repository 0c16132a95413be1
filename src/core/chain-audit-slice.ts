import type { Finding, LinkFacts, ParsedPacket } from "./chain-audit-link";
import { finding, listed, sliceStartsAfter } from "./chain-audit-link";
import { hashCanonical } from "./hash";
import type { FrozenTurn, Packet } from "./packet";
import { LEGACY_PACKET_FORMAT, packetSchema } from "./packet";
import type { Turn } from "./reconstruction";
import { renderLegacySliceLine, renderSliceLine } from "./render";
import type { LogIndex, SliceRange } from "./turn-pages";
import { turnsAsOf } from "./turn-pages";

/**
 * The one check of a link that re-reads the log: the frozen slice its packet carried must be the
 * log's turns as they stood at the trigger. The audit runs it on every link, the resolver on the
 * head (over the head packet's range alone); `frozenSliceRanges` says which parts of the log it needs.
 */

/** Where a boundary's packet was read from, and what came back (the reader re-hashes; see `packetLocation`). */
export interface PacketRead {
  readonly key: string;
  /** The SHA-256 the read was verified against. */
  readonly hash: string;
  readonly outcome: { readonly ok: true; readonly text: string } | { readonly ok: false; readonly reason: string };
}

export function parsePacket(read: PacketRead | undefined): ParsedPacket {
  if (read === undefined) return { ok: false, detail: "not checked: no packet location" };
  if (!read.outcome.ok) return { ok: false, detail: `not checked: the packet could not be read (${read.outcome.reason})` };
  let json: unknown;
  try {
    json = JSON.parse(read.outcome.text);
  } catch {
    return { ok: false, detail: "the packet is not JSON" };
  }
  const parsed = packetSchema.safeParse(json);
  return parsed.success ? { ok: true, packet: parsed.data } : { ok: false, detail: "the packet does not match the packet schema" };
}

/**
 * The part of the log a packet's frozen slice is checked against: the groups after the slice's
 * start (or after the oldest group the slice claims, if it claims an older one: re-freezing is
 * `coverage_advances`' finding, not an invention) through its last (or the newest group a frozen
 * turn claims, if it claims a newer one), as the log stood at the trigger.
 */
export function frozenSliceRange(packet: Packet): SliceRange {
  const groups = packet.frozen.turns.map((t) => t.group);
  return { after: Math.min(sliceStartsAfter(packet), ...groups.map((group) => group - 1)), groupsThrough: Math.max(packet.frozen.throughSeq, ...groups), through: packet.triggerSeq };
}

/**
 * The parts of the log (`SliceRange`) the frozen-slice check of these packets reads: an audit of
 * some links needs only these, with the events related to them (`readSliceLog`, as
 * `LogIndex.slice` mirrors it), not the whole log. Unreadable packets need none (their check fails
 * without the log). Slices whose groups overlap or touch are read as one.
 */
export function frozenSliceRanges(reads: Iterable<PacketRead>): SliceRange[] {
  const ranges = [...reads]
    .map(parsePacket)
    .flatMap((read) => (read.ok ? [frozenSliceRange(read.packet)] : []))
    .filter((range) => range.through > range.after)
    .sort((a, b) => a.after - b.after);
  const merged: { after: number; groupsThrough: number; through: number }[] = [];
  for (const range of ranges) {
    const last = merged.at(-1);
    if (last !== undefined && range.after <= last.groupsThrough) {
      last.groupsThrough = Math.max(last.groupsThrough, range.groupsThrough);
      last.through = Math.max(last.through, range.through);
    } else merged.push({ ...range });
  }
  return merged;
}

/** The fields on which a frozen turn is not the log's turn. */
function differingFields(packet: Packet, turn: FrozenTurn, logged: Turn): string[] {
  return [
    turn.text !== logged.text ? "text" : undefined,
    turn.hash !== logged.hash ? "hash" : undefined,
    turn.role !== logged.role ? "role" : undefined,
    turn.group !== logged.group ? "group" : undefined,
    hashCanonical(turn.author) !== hashCanonical(logged.author) ? "author" : undefined,
    // The compactor read the rendered line, not `text`: it must be the log's turn too.
    turn.rendered !== (packet.format === LEGACY_PACKET_FORMAT ? renderLegacySliceLine(logged) : renderSliceLine(logged)) ? "rendered" : undefined,
    turn.messageId !== undefined && turn.messageId !== logged.messageId ? "messageId" : undefined,
  ].filter((f) => f !== undefined);
}

export function checkFrozenTurns({ packet: read }: LinkFacts, logIndex: LogIndex): Finding[] {
  if (!read.ok) return [finding("packet", "a readable packet", null, read.detail)];
  const { packet } = read;
  const after = sliceStartsAfter(packet);
  // The log's turns of the slice's groups as they stood at the trigger: exactly the whole prefix's
  // fold for those groups (core/turn-pages), read from the slice's part of the log rather than by
  // folding the whole prefix for every link. A frozen turn whose id the log gives a later group
  // than any the slice claims is named invented: it is not in the log where the slice says.
  const { after: from, groupsThrough } = frozenSliceRange(packet);
  const asPlanned = turnsAsOf(logIndex, { admittedAgents: new Set(packet.historyAgents), includeSensitive: packet.admitSensitive }, from, packet.triggerSeq, groupsThrough);
  const indexById = new Map<string, number>(asPlanned.map((t, i) => [t.id, i]));
  const found: Finding[] = [];
  const invented = packet.frozen.turns.filter((t) => !indexById.has(t.id)).map((t) => t.id);
  if (invented.length > 0) found.push(finding("frozen.turns", null, listed(invented), `frozen turns the log did not hold at seq ${packet.triggerSeq}: ${listed(invented)}`));
  // Silent truncation is forbidden: every turn of the groups the slice claims must be in it.
  // (Which groups it may claim at all is `coverage_advances`' question.)
  const frozenIds = new Set(packet.frozen.turns.map((t) => t.id));
  const dropped = asPlanned.filter((t) => t.group > after && t.group <= packet.frozen.throughSeq && !frozenIds.has(t.id)).map((t) => t.id);
  if (dropped.length > 0) found.push(finding("frozen.turns", listed(dropped), null, `log turns missing from the frozen slice: ${listed(dropped)}`));
  const mismatched: string[] = [];
  let lastIndex = -1;
  let ordered = true;
  for (const turn of packet.frozen.turns) {
    const index = indexById.get(turn.id);
    const logged = index === undefined ? undefined : asPlanned[index];
    if (index === undefined || logged === undefined) continue;
    if (index < lastIndex) ordered = false;
    lastIndex = index;
    const fields = differingFields(packet, turn, logged);
    if (fields.length > 0) mismatched.push(`${turn.id} (${fields.join(", ")})`);
  }
  if (mismatched.length > 0) found.push(finding("frozen.turns", "the log's turns", listed(mismatched), `frozen turns differ from the log as of seq ${packet.triggerSeq}: ${listed(mismatched)}`));
  if (!ordered) found.push(finding("frozen.turns", "the log's order", null, "frozen turns are not in the log's order"));
  return found;
}
