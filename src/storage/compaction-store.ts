/**
 * Every D1 statement of the compaction engine, one module per table it owns: declarations, the
 * document index, activations, plans, boundaries, incidents, and the audit's tolerant reads. Rows
 * are inserted, never updated; "current" always means the newest row. This module is the surface
 * for callers outside storage; the engine imports the part it uses.
 */

export * from "./compaction-store-declarations";
export * from "./compaction-store-documents";
export * from "./compaction-store-activations";
export * from "./compaction-store-plans";
export * from "./compaction-store-boundaries";
export * from "./compaction-store-incidents";
export * from "./compaction-store-audit";
