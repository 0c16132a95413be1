import type { Group } from "./compaction-plan";

/** Undo entries kept at most (each is one group re-folded by one added event). */
export const GROUP_UNDO_ENTRIES = 4_096;

interface Entry {
  /** The added event that re-folded the group. */
  readonly seq: number;
  readonly group: number;
  /** The group before it (undefined: it folded to no turn). */
  readonly before: Group | undefined;
}

/**
 * What each group held before the newest added events re-folded it, so that the groups as of an
 * earlier point (a plan as of a source that replies followed, an earlier source of a batch) cost
 * what changed since that point, not a fold of the whole window. It reaches back a bounded number
 * of entries; before its reach it answers nothing and the caller folds.
 */
export class GroupUndo {
  #entries: Entry[] = [];
  #reach: number;

  constructor(
    reach: number,
    private readonly limit = GROUP_UNDO_ENTRIES,
  ) {
    this.#reach = reach;
  }

  record(seq: number, group: number, before: Group | undefined): void {
    this.#entries.push({ seq, group, before });
    if (this.#entries.length <= this.limit) return;
    // Let go of the oldest half, whole events at a time: every event after the new reach keeps all its entries.
    const through = this.#entries[this.#entries.length - Math.ceil(this.limit / 2) - 1]?.seq ?? this.#reach;
    this.#entries = this.#entries.filter((entry) => entry.seq > through);
    this.#reach = Math.max(this.#reach, through);
  }

  /** The groups that differed as of `seq`, each as it was then; undefined when `seq` is before the reach. */
  asOf(seq: number): Map<number, Group | undefined> | undefined {
    if (seq < this.#reach) return undefined;
    const then = new Map<number, Group | undefined>();
    // Newest first, so the oldest entry after `seq` for a group (its state before the first change since) is the one kept.
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const entry = this.#entries[i];
      if (entry === undefined || entry.seq <= seq) break;
      then.set(entry.group, entry.before);
    }
    return then;
  }

  /**
   * A boundary covered the groups through `coveredThrough`: their entries go. Where the covered
   * events also shaped a group left uncovered (`refolded`: a correction or reply that came before
   * its message, a message id used again), what the groups held before is no longer what they would
   * have held without those events, so nothing before `now` is answered any more.
   */
  trim(coveredThrough: number, refolded: ReadonlySet<number>, now: number): void {
    if (refolded.size > 0 && this.#entries.length > 0) {
      this.#entries = [];
      this.#reach = now;
      return;
    }
    this.#entries = this.#entries.filter((entry) => entry.group > coveredThrough);
    this.#reach = Math.max(this.#reach, coveredThrough);
  }
}
