import type { components } from "./openapi.js";

/**
 * The bodies the named methods take and return, by the names `/openapi.json` gives them: the
 * same types `client.request` uses for every other route, so the two cannot disagree.
 */
type Schemas = components["schemas"];

/** One event (`POST …/events`): `{ kind, idempotencyKey, sensitive?, expectedSeq?, body }`. */
export type AppendEventRequest = Schemas["AppendEventRequest"];
/** One event of a batch (no `expectedSeq`: the batch has one). */
export type BatchEvent = Schemas["EventInput"];
export type AppendBatchRequest = Schemas["AppendBatchRequest"];
export type AppendedEvent = Schemas["AppendedEvent"];
export type AppendedBatch = Schemas["AppendedBatch"];
export type ContextResponse = Schemas["ContextResponse"];
export type ComposeRequest = Schemas["ComposeRequest"];
export type ComposeResponse = Schemas["ComposeResponse"];
export type MemorySearch = Schemas["MemorySearch"];
/** An agent and its reciprocal compactor, `{ agent, compactor }` (`PUT /v1/agents/{agent}`). */
export type Registration = Schemas["Registration"];
export type RegisteredAgent = Schemas["RegisteredAgent"];
