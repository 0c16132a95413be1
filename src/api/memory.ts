import { z } from "zod";
import type { Result } from "../core/errors";
import { fail, ok } from "../core/errors";
import { EXTRACTED_PREFIX } from "../core/fact-extraction";
import { memoryPathSchema, putMemoryPageSchema } from "../core/memory-path";
import type { MemoryPage, MemoryPageSummary } from "../storage/control/memory-pages";
import { deletePage, getPage, listPages, MAX_LIST_PAGES, putPage } from "../storage/control/memory-pages";
import type { memoryPageListSchema, memoryPageSchema, memoryPageSummarySchema, memoryPageWriteSchema, Wire } from "./responses";
import { validate } from "./validation";

/**
 * The pages people write for an agent: list, write, read (a version) and delete. Each operation
 * takes an agent the caller is already scoped to (`agentInScope`; a write or delete needs a
 * declared agent, `declaredAgentInScope`) and plain input, and returns a `Result`. These pages are
 * agent-wide: they are served in every conversation the agent serves (core/memory-privacy).
 * Extracted facts are not here: they are kept with the conversation they were said in and read
 * through it (`api/conversation-memory`).
 */

export const memoryListQuery = z.object({
  after: z.string().max(200).default(""),
  limit: z.coerce.number().int().min(1).max(MAX_LIST_PAGES).default(100),
});

export const memoryVersionQuery = z.object({
  version: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  provenance: z.enum(["0", "1"]).default("0"),
});

const pathField = z.object({ path: memoryPathSchema });

/**
 * The page path from the raw (still percent-encoded) segments of a request path. Each segment is
 * decoded once, on its own, so an encoded slash (%2F) stays inside its segment and is refused,
 * instead of quietly turning `a%2Fb` into the page `a/b`.
 */
export function memoryPagePath(rawSegments: readonly string[]): Result<string> {
  const segments: string[] = [];
  for (const raw of rawSegments) {
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return fail("validation_failed", "path: malformed percent-encoding");
    }
    if (segment.includes("/")) return fail("validation_failed", "path: a segment cannot contain an encoded /");
    segments.push(segment);
  }
  const parsed = validate(pathField, { path: segments.join("/") });
  return parsed.ok ? ok(parsed.value.path) : parsed;
}

/** A page version as the API shows it: a person's page, or a conversation's extracted page. */
export function pageView(page: Pick<MemoryPage, "path" | "version" | "contentHash" | "chars" | "content" | "createdAt">) {
  return {
    path: page.path,
    version: page.version,
    contentHash: page.contentHash,
    chars: page.chars,
    content: page.content,
    createdAt: page.createdAt,
  } satisfies Wire<typeof memoryPageSchema>;
}

export function summaryView(page: MemoryPageSummary) {
  return { path: page.path, version: page.version, contentHash: page.contentHash, chars: page.chars } satisfies Wire<typeof memoryPageSummarySchema>;
}

/** `{ after?, limit? }`: live pages in path order, paged by path. */
export async function listMemoryPages(db: D1Database, agentId: string, query: unknown): Promise<Result<Wire<typeof memoryPageListSchema>>> {
  const parsed = validate(memoryListQuery, query);
  if (!parsed.ok) return parsed;
  const { after, limit } = parsed.value;
  const pages = await listPages(db, agentId, { after, limit });
  const last = pages.at(-1);
  return ok({ pages: pages.map(summaryView), nextAfter: pages.length === limit && last ? last.path : null });
}

/**
 * Extraction owns its namespace: a person's page there would pass for facts with provenance they
 * do not have, and the facts themselves are each conversation's (`GET
 * /v1/conversations/{conversation}/memory/pages/{path}?agent=`).
 */
function extractedRefused(path: string): Result<never> | undefined {
  if (!path.startsWith(EXTRACTED_PREFIX)) return undefined;
  return fail("forbidden", `pages under ${EXTRACTED_PREFIX} are written by memory extraction and kept with the conversation they come from: read them at /v1/conversations/{conversation}/memory/pages/${path}?agent=`);
}

/** `{ content }`: a new version of the page, unless it equals the live one (`created: false`). */
export async function writeMemoryPage(db: D1Database, agentId: string, path: string, input: unknown): Promise<Result<Wire<typeof memoryPageWriteSchema>>> {
  const refused = extractedRefused(path);
  if (refused !== undefined) return refused;
  const body = validate(putMemoryPageSchema, input);
  if (!body.ok) return body;
  const put = await putPage(db, agentId, path, body.value.content, new Date());
  return ok({ path, version: put.version, contentHash: put.contentHash, created: put.created });
}

/** `{ version?, provenance? }`: the live page, or one of its past versions. */
export async function readMemoryPage(db: D1Database, agentId: string, path: string, query: unknown): Promise<Result<Wire<typeof memoryPageSchema>>> {
  const parsed = validate(memoryVersionQuery, query);
  if (!parsed.ok) return parsed;
  const refused = extractedRefused(path);
  if (refused !== undefined) return refused;
  const page = await getPage(db, agentId, path, parsed.value.version);
  if (page === undefined) {
    const which = parsed.value.version === undefined ? "" : ` at version ${parsed.value.version}`;
    return fail("not_found", `no memory page ${path}${which} (missing or deleted)`);
  }
  // A person's page holds no extracted facts: with `provenance=1` its list of facts is empty.
  return ok(parsed.value.provenance === "0" ? pageView(page) : { ...pageView(page), facts: [] });
}

/** Deletes the page (a tombstone version: its history stays readable). */
export async function deleteMemoryPage(db: D1Database, agentId: string, path: string): Promise<Result<null>> {
  const refused = extractedRefused(path);
  if (refused !== undefined) return refused;
  const deleted = await deletePage(db, agentId, path, new Date());
  return deleted === undefined ? fail("not_found", `no memory page ${path} to delete`) : ok(null);
}
