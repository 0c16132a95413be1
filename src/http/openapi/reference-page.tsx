import { raw } from "hono/html";
import type { Child } from "hono/jsx";
import type { HttpMethod, JsonSchema, OpenApiDocument, OperationObject, ParameterObject, ResponseObject } from "./types";
import { SCHEMA_REF_PREFIX } from "./types";

/**
 * The API reference as one server-rendered page: no script, no external resource, so it can be
 * served under a CSP that allows nothing but this stylesheet (by hash). Every string from the
 * document reaches the page as JSX text and is escaped; the stylesheet is the only raw insert,
 * and it is this constant.
 */
export const REFERENCE_CSS = `
body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 72rem; padding: 1rem 2rem; color: #1d1d1f; }
code, pre { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
pre { background: #f5f5f7; padding: .75rem; overflow-x: auto; border-radius: 4px; }
nav ul { columns: 2; }
section.operation { border-top: 1px solid #d2d2d7; padding: .5rem 0 1rem; }
h3 { font-size: 1.05rem; margin: .75rem 0 .25rem; }
.method { display: inline-block; min-width: 4.5rem; font-weight: 700; text-transform: uppercase; }
.method.get { color: #0a6e31; } .method.post { color: #0b57d0; } .method.put { color: #8a4b00; } .method.delete { color: #b3261e; }
table { border-collapse: collapse; width: 100%; margin: .25rem 0 .75rem; }
th, td { text-align: left; vertical-align: top; padding: .25rem .5rem; border-bottom: 1px solid #e5e5ea; }
td pre { margin: 0; padding: .25rem .5rem; }
`;

const METHODS: readonly HttpMethod[] = ["get", "put", "post", "delete"];

interface Listed {
  readonly method: HttpMethod;
  readonly path: string;
  readonly operation: OperationObject;
}

function operationsOf(document: OpenApiDocument): Listed[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const operation = item[method];
      return operation === undefined ? [] : [{ method, path, operation }];
    }),
  );
}

function schemaName(schema: JsonSchema | undefined): string | undefined {
  if (typeof schema !== "object") return undefined;
  const ref = schema.$ref ?? schema.allOf?.find((part) => part.$ref !== undefined)?.$ref;
  return ref?.startsWith(SCHEMA_REF_PREFIX) ? ref.slice(SCHEMA_REF_PREFIX.length) : undefined;
}

const pretty = (value: unknown): string => JSON.stringify(value, null, 2);

/** Descriptions mark literals with backticks; they become `<code>`, everything stays text. */
function Prose({ text }: { text: string }) {
  return <>{text.split("`").map((part, i): Child => (i % 2 === 1 ? <code>{part}</code> : part))}</>;
}

function SchemaLink({ name }: { name: string }) {
  return <a href={`#schema-${name}`}>{name}</a>;
}

function Parameters({ parameters }: { parameters: readonly ParameterObject[] }) {
  if (parameters.length === 0) return <></>;
  return (
    <table>
      <thead>
        <tr><th>parameter</th><th>in</th><th>required</th><th>description</th><th>schema</th></tr>
      </thead>
      <tbody>
        {parameters.map((p) => (
          <tr>
            <td><code>{p.name}</code></td>
            <td>{p.in}</td>
            <td>{p.required ? "yes" : "no"}</td>
            <td><Prose text={p.description ?? ""} /></td>
            <td><pre>{JSON.stringify(p.schema)}</pre></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function RequestBody({ operation, document }: { operation: OperationObject; document: OpenApiDocument }) {
  const content = operation.requestBody?.content;
  if (content === undefined) return <></>;
  return (
    <>
      {Object.entries(content).map(([media, { schema }]) => {
        const name = schemaName(schema);
        return (
          <div>
            <h4>Request body ({media}){name === undefined ? "" : <>: <SchemaLink name={name} /></>}</h4>
            <details>
              <summary>JSON Schema</summary>
              <pre>{pretty(name === undefined ? schema : document.components.schemas[name])}</pre>
            </details>
          </div>
        );
      })}
    </>
  );
}

function Responses({ responses }: { responses: Readonly<Record<string, ResponseObject>> }) {
  return (
    <table>
      <thead>
        <tr><th>status</th><th>description</th><th>body</th></tr>
      </thead>
      <tbody>
        {Object.entries(responses).map(([status, response]) => (
          <tr>
            <td>{status}</td>
            <td><Prose text={response.description} /></td>
            <td>
              {Object.entries(response.content ?? {}).map(([media, { schema }]) => {
                const name = schemaName(schema);
                return <div>{media}{name === undefined ? "" : <> — <SchemaLink name={name} /></>}</div>;
              })}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function securityText(operation: OperationObject, document: OpenApiDocument): string {
  const names = operation.security.flatMap((requirement) => Object.keys(requirement));
  if (names.length === 0) return "none";
  return names
    .map((name) => {
      const scheme = document.components.securitySchemes[name];
      if (scheme === undefined) return name;
      return scheme.type === "http" ? `${scheme.scheme} token (Authorization header)` : `${scheme.name} header`;
    })
    .join(" or ");
}

function Operation({ listed, document }: { listed: Listed; document: OpenApiDocument }) {
  const { method, path, operation } = listed;
  return (
    <section class="operation" id={`op-${operation.operationId}`}>
      <h3>
        <span class={`method ${method}`}>{method}</span> <code>{path}</code>
      </h3>
      <p><strong>{operation.summary}</strong>. <Prose text={operation.description} /></p>
      <p>Authentication: {securityText(operation, document)}</p>
      <Parameters parameters={operation.parameters} />
      <RequestBody operation={operation} document={document} />
      <h4>Responses</h4>
      <Responses responses={operation.responses} />
    </section>
  );
}

export function ReferencePage({ document }: { document: OpenApiDocument }) {
  const operations = operationsOf(document);
  return (
    <>
      {raw("<!DOCTYPE html>")}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{document.info.title} API reference</title>
          <style>{raw(REFERENCE_CSS)}</style>
        </head>
        <body>
          <h1>{document.info.title} API reference</h1>
          <p><Prose text={document.info.description} /></p>
          <p>
            OpenAPI {document.openapi} document: <a href="/openapi.json">/openapi.json</a>
          </p>
          <nav>
            <ul>
              {document.tags.map((tag) => (
                <li><a href={`#tag-${tag.name}`}>{tag.name}</a>: {tag.description}</li>
              ))}
              <li><a href="#schemas">schemas</a></li>
            </ul>
          </nav>
          {document.tags.map((tag) => (
            <section id={`tag-${tag.name}`}>
              <h2>{tag.name}</h2>
              <p>{tag.description}</p>
              {operations
                .filter((listed) => listed.operation.tags.includes(tag.name))
                .map((listed) => <Operation listed={listed} document={document} />)}
            </section>
          ))}
          <section id="schemas">
            <h2>Schemas</h2>
            {Object.entries(document.components.schemas).map(([name, schema]) => (
              <section id={`schema-${name}`}>
                <h3>{name}</h3>
                <pre>{pretty(schema)}</pre>
              </section>
            ))}
          </section>
        </body>
      </html>
    </>
  );
}
