import type { RouteConfig } from "@hono/zod-openapi";
import type { ParameterObject as OpenApiParameter, SchemaObject } from "openapi3-ts/oas31";
import type { z } from "zod";

/**
 * The served document's shape, as the reference page and the conformance tests read it. Narrower
 * than the OpenAPI 3.1 specification: every operation is declared through `operation()`
 * (`openapi/operation.ts`), whose type requires what is required here.
 */

export type JsonSchema = z.core.JSONSchema._JSONSchema;
export type HttpMethod = "get" | "put" | "post" | "delete";

export interface ParameterObject {
  readonly name: string;
  readonly in: "path" | "query";
  readonly required: boolean;
  readonly description?: string;
  readonly schema: JsonSchema;
}

export interface MediaTypeObject {
  readonly schema?: JsonSchema;
}

export interface HeaderObject {
  readonly description: string;
  readonly required?: boolean;
  readonly schema: JsonSchema;
}

export interface ResponseObject {
  readonly description: string;
  readonly headers?: Readonly<Record<string, HeaderObject>>;
  readonly content?: Readonly<Record<string, MediaTypeObject>>;
}

export interface OperationObject {
  readonly operationId: string;
  readonly summary: string;
  readonly description: string;
  readonly tags: readonly string[];
  /** `[]` where no credential is needed (the document sets no global requirement). */
  readonly security: readonly Readonly<Record<string, readonly string[]>>[];
  readonly parameters: readonly ParameterObject[];
  readonly requestBody?: { readonly required: true; readonly content: Readonly<Record<string, MediaTypeObject>> };
  readonly responses: Readonly<Record<string, ResponseObject>>;
}

export interface TagObject {
  readonly name: string;
  readonly description: string;
}

export type SecuritySchemeObject =
  | { readonly type: "http"; readonly scheme: "bearer"; readonly description: string }
  | { readonly type: "apiKey"; readonly in: "header"; readonly name: string; readonly description: string };

export interface OpenApiDocument {
  readonly openapi: "3.1.0";
  readonly info: { readonly title: string; readonly version: string; readonly description: string };
  readonly tags: readonly TagObject[];
  readonly paths: Readonly<Record<string, Readonly<Partial<Record<HttpMethod, OperationObject>>>>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, JsonSchema>>;
    readonly securitySchemes: Readonly<Record<string, SecuritySchemeObject>>;
  };
}

export const SCHEMA_REF_PREFIX = "#/components/schemas/";

/** The route-declaration types of `@hono/zod-openapi`, which it exports only inside `RouteConfig`. */
export type RequestBodyConfig = NonNullable<NonNullable<RouteConfig["request"]>["body"]>;
export type ResponseConfig = Exclude<RouteConfig["responses"][string], { $ref: string }>;

/**
 * A schema zod converted (JSON Schema draft 2020-12, the dialect of OpenAPI 3.1) as the type
 * zod-to-openapi gives OpenAPI 3.1 schemas: the same object, typed apart by the two libraries.
 */
export function openApiSchema(schema: JsonSchema): SchemaObject {
  return schema as SchemaObject;
}

/** A parameter as a route declares it. */
export function routeParameter(parameter: ParameterObject): OpenApiParameter {
  return { ...parameter, schema: openApiSchema(parameter.schema) };
}
