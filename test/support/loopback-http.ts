import type { IncomingMessage, ServerResponse } from "node:http";

/** What the loopback fakes run by vitest's globalSetup need of a request and an answer. */

/** A request's whole body, as text. */
export async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Answers `status` with `body` as JSON. */
export function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}
