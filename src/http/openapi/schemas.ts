import { z } from "zod";
import {
  agentDeclarationSchema,
  compactionPolicySchema,
  compactorDeclarationSchema,
  contextPolicySchema,
  documentRefSchema,
  providerSchema,
  registrationSchema,
  replySchema,
} from "../../core/declarations";
import { attachmentSchema, authorSchema, correctionBodySchema, deliveryBodySchema, eventInputSchema, proposalBodySchema, runBodySchema, sourceBodySchema } from "../../core/events";
import { chatRequestSchema, composeManifestSchema, contextManifestSchema, contextMessageSchema, epochSchema, incidentSchema, memoryPageSummarySchema, storedEventSchema, turnSchema } from "../../api/responses";
import { auditCheckSchema, chainHealthSchema, epochAuditSchema, linkAuditSchema, listedBoundarySchema } from "../../api/responses-chain";
import { problemSchema } from "./problem";
import type { JsonSchema, RequestBodyConfig, ResponseConfig } from "./types";
import { SCHEMA_REF_PREFIX } from "./types";

/**
 * The schemas of the document, converted by zod itself (`z.toJSONSchema`) rather than by
 * zod-to-openapi's own converter, because one zod schema reads differently in the two directions
 * and only zod's converter knows it: as a request (`io: "input"`) a defaulted field is optional
 * and `z.coerce.number()` is described by the number it coerces to, as a response (`io: "output"`)
 * the service always sends the defaulted field. zod-to-openapi 9 has no direction, so it would
 * describe every response as loosely as a request and a coerced query value as nullable.
 *
 * A route names its request body and success bodies where it declares them (`jsonBody`,
 * `jsonResponse`), and the operation refers to the component by `$ref`; the parts worth a name
 * of their own inside those bodies are named below. Each direction has its own registry; a
 * component both use keeps one name only when it converts identically both ways (checked as the
 * document is built), and otherwise its response form is named `<Name>Output`.
 */

type Direction = "input" | "output";

/** The event bodies and their parts: request and response components alike, under the same names. */
const EVENT_PARTS: readonly (readonly [string, z.ZodType])[] = [
  ["SourceBody", sourceBodySchema],
  ["CorrectionBody", correctionBodySchema],
  ["ProposalBody", proposalBodySchema],
  ["DeliveryBody", deliveryBodySchema],
  ["RunBody", runBodySchema],
  ["Author", authorSchema],
  ["Attachment", attachmentSchema],
];

/**
 * Named parts of the bodies, so that every occurrence refers to one component (a batch's events
 * to `EventInput`, every event variant to its body). Everything not named here or by a route is
 * inlined by the converter. The registration and everything in it with a default are response
 * components under their `Output` names, since as responses those fields are always present.
 */
const PARTS: Readonly<Record<Direction, readonly (readonly [string, z.ZodType])[]>> = {
  input: [
    ["EventInput", eventInputSchema],
    ...EVENT_PARTS,
    ["AgentDeclaration", agentDeclarationSchema],
    ["CompactorDeclaration", compactorDeclarationSchema],
    ["Provider", providerSchema],
    ["DocumentRef", documentRefSchema],
    ["Reply", replySchema],
    ["ContextPolicy", contextPolicySchema],
    ["CompactionPolicy", compactionPolicySchema],
  ],
  output: [
    ["Problem", problemSchema],
    ["StoredEvent", storedEventSchema],
    ["Turn", turnSchema],
    ["ContextMessage", contextMessageSchema],
    ["ContextManifest", contextManifestSchema],
    ["ChatRequest", chatRequestSchema],
    ["ComposeManifest", composeManifestSchema],
    ["ListedBoundary", listedBoundarySchema],
    ["ChainHealth", chainHealthSchema],
    ["AuditCheck", auditCheckSchema],
    ["LinkAudit", linkAuditSchema],
    ["EpochAudit", epochAuditSchema],
    ["Incident", incidentSchema],
    ["Epoch", epochSchema],
    ["MemoryPageSummary", memoryPageSummarySchema],
    ...EVENT_PARTS,
    ["Provider", providerSchema],
    ["DocumentRef", documentRefSchema],
    ["RegistrationOutput", registrationSchema],
    ["AgentDeclarationOutput", agentDeclarationSchema],
    ["CompactorDeclarationOutput", compactorDeclarationSchema],
    ["ReplyOutput", replySchema],
    ["ContextPolicyOutput", contextPolicySchema],
    ["CompactionPolicyOutput", compactionPolicySchema],
  ],
};

/** What the routes named, per direction: filled as the route modules declare their operations. */
const named: Record<Direction, Map<string, z.ZodType>> = { input: new Map(PARTS.input), output: new Map(PARTS.output) };

function component(direction: Direction, name: string, schema: z.ZodType): { $ref: string } {
  const known = named[direction].get(name);
  if (known !== undefined && known !== schema) throw new Error(`two ${direction} schemas are named ${name}`);
  for (const [other, otherSchema] of named[direction]) {
    if (otherSchema === schema && other !== name) throw new Error(`one ${direction} schema is named both ${other} and ${name}`);
  }
  named[direction].set(name, schema);
  return { $ref: `${SCHEMA_REF_PREFIX}${name}` };
}

const JSON_MEDIA = "application/json";

/**
 * A required JSON request body, for the document only: the content is a `$ref`, not a zod
 * schema, so `OpenAPIHono.openapi()` installs no validator for it. The handler reads and
 * validates the body through `api/` (the operation the RPC entrypoint shares), after the route's
 * scope check, so a refusal is the same whichever transport carried the request.
 */
export function jsonBody(name: string, schema: z.ZodType): RequestBodyConfig {
  return { required: true, content: { [JSON_MEDIA]: { schema: component("input", name, schema) } } };
}

/** A JSON success response whose body `schema` describes, as the component `name`. */
export function jsonResponse(description: string, name: string, schema: z.ZodType): ResponseConfig {
  return { description, content: { [JSON_MEDIA]: { schema: component("output", name, schema) } } };
}

/** Request shapes: defaults make fields optional, coerced query values are described by what they coerce to. */
export function requestJsonSchema(schema: z.ZodType): z.core.JSONSchema.JSONSchema {
  const { $schema: _dialect, $id: _id, ...rest } = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input", unrepresentable: "any" });
  return rest;
}

/**
 * One direction's components, converted together so that each refers to the others by `$ref`
 * (every reference is `#/components/schemas/<id>`, whichever registry the target is in).
 */
function convert(direction: Direction): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of named[direction]) registry.add(schema, { id });
  const converted = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    io: direction,
    unrepresentable: "any",
    uri: (id) => `${SCHEMA_REF_PREFIX}${id}`,
  }).schemas;
  return Object.fromEntries(Object.entries(converted).map(([id, { $schema: _dialect, $id: _id, ...schema }]) => [id, schema]));
}

/**
 * Both directions' components under one `components.schemas`, by name. A name in both must denote
 * the same shape both ways; a schema whose output differs from its input (a default, a transform),
 * or which refers to one that does, needs its own `Output` name.
 */
export function schemaComponents(): Record<string, JsonSchema> {
  const input = convert("input");
  const output = convert("output");
  for (const [id, schema] of Object.entries(output)) {
    const request = input[id];
    if (request !== undefined && JSON.stringify(request) !== JSON.stringify(schema)) {
      throw new Error(`component ${id} reads differently as a response than as a request: name its response form ${id}Output, or name the components it refers to`);
    }
  }
  return Object.fromEntries(Object.entries({ ...input, ...output }).sort(([a], [b]) => a.localeCompare(b)));
}
