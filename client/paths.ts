import { FoldlineError } from "./errors.js";
import type { paths } from "./openapi.js";

/**
 * The typed surface of the whole HTTP API, from the types openapi-typescript generated from
 * `/openapi.json` (`client/openapi.ts`): a route is named by its method and its documented path
 * template, and its parameters, body and success answer are that operation's types. A route that
 * does not exist, a missing parameter or a mistyped body is a compile error.
 */

export type Method = "get" | "put" | "post" | "delete";

/** The operation of `path` for `method`; `never` where the route has no such method. */
export type OperationOf<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** Every documented path with an operation for `method`. */
export type PathOf<M extends Method> = { [P in keyof paths]: [OperationOf<P, M>] extends [never] ? never : P }[keyof paths];

type ParametersOf<O> = O extends { readonly parameters: infer X } ? X : never;

type PathPart<O> = ParametersOf<O> extends { readonly path: infer X } ? { readonly path: X } : { readonly path?: never };

type QueryPart<O> =
  ParametersOf<O> extends { readonly query: infer X }
    ? { readonly query: X }
    : ParametersOf<O> extends { readonly query?: infer X }
      ? [Exclude<X, undefined>] extends [never]
        ? { readonly query?: never }
        : { readonly query?: Exclude<X, undefined> }
      : { readonly query?: never };

type BodyPart<O> = O extends { readonly requestBody: { readonly content: { readonly "application/json": infer B } } }
  ? { readonly body: B }
  : { readonly body?: never };

/** What a call of operation `O` takes: its path parameters, its query and its JSON body, each where it has one. */
export type RequestInit<O> = PathPart<O> & QueryPart<O> & BodyPart<O>;

type SuccessStatus = 200 | 201 | 202 | 204;
type Responses<O> = O extends { readonly responses: infer R } ? R : never;
type Answer<R> = R extends { readonly content: { readonly "application/json": infer B } } ? B : R extends { readonly content: { readonly "text/html": unknown } } ? string : undefined;

/** The body of any success answer of operation `O` (undefined for 204). */
export type SuccessBody<O> = { [S in keyof Responses<O> & SuccessStatus]: Answer<Responses<O>[S]> }[keyof Responses<O> & SuccessStatus];

/** `init` is optional exactly when the operation needs none of its parts. */
export type InitArgument<O> = {} extends RequestInit<O> ? [init?: RequestInit<O>] : [init: RequestInit<O>];

type Scalar = string | number | boolean;

/**
 * Why `segment` cannot stand as one path segment, or undefined when it can: an empty segment
 * (`a//b`), `.` or `..` would be resolved by the URL parser before the request leaves, so the call
 * would reach another route than the one its template names (`memory/../../../ops/health` is
 * `/v1/ops/health`). Every other character is percent-encoded, which no URL parser resolves (the
 * `%` of a literal `%2e` is encoded too).
 */
function segmentProblem(segment: string): string | undefined {
  if (segment === "") return "an empty segment";
  if (segment === "." || segment === "..") return `a ${segment} segment`;
  return undefined;
}

/** The client's refusal of a path parameter it will not send: nothing left the client. */
function refusedParameter(template: string, name: string, problem: string): FoldlineError {
  return new FoldlineError({ code: "validation_failed", message: `${template}: the path parameter ${name} holds ${problem}, which would address another route`, details: { parameter: name } });
}

/**
 * `/v1/conversations/{conversation}/events` with its parameters filled in. Each value is one
 * encoded path segment, except `{path}`, a memory page's path: the API splits it on `/` before
 * decoding each segment (an encoded `/` is refused), so its segments are encoded one by one. A
 * value that is not one segment (or a page path of whole segments) is refused with a
 * `validation_failed` FoldlineError before anything is sent.
 */
export function expandPath(template: string, parameters: Readonly<Record<string, Scalar>> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = parameters[name];
    if (value === undefined) throw new TypeError(`${template}: the path parameter ${name} is missing`);
    const segments = name === "path" ? String(value).split("/") : [String(value)];
    for (const segment of segments) {
      const problem = segmentProblem(segment);
      if (problem !== undefined) throw refusedParameter(template, name, problem);
    }
    return segments.map(encodeURIComponent).join("/");
  });
}

/** `?a=1&b=x` from the defined entries of a query object; empty when there are none. */
export function queryString(query: Readonly<Record<string, Scalar | undefined>> = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) search.append(name, String(value));
  const text = search.toString();
  return text === "" ? "" : `?${text}`;
}
