import { z } from "zod";

/**
 * Memory pages are addressed per agent by a relative path such as `decisions/vendor.pkf`. The
 * shape is strict so that a path means one page however it is written: no empty segments (`a//b`
 * would otherwise alias `a/b` in some clients), no `.`/`..` segments (URL parsers resolve those
 * before the request reaches us, so such a page could never be addressed again), and only
 * characters that never need percent-encoding. The D1 schema repeats these rules as CHECKs.
 */

export const MAX_MEMORY_PATH_CHARS = 200;
/** Longest page (JavaScript string length); a page is recalled whole into a compactor packet. */
export const MAX_MEMORY_PAGE_CHARS = 50_000;

const SEGMENT = /^[A-Za-z0-9._-]+$/;

export const memoryPathSchema = z
  .string()
  .min(1)
  .max(MAX_MEMORY_PATH_CHARS)
  .superRefine((path, ctx) => {
    for (const segment of path.split("/")) {
      if (segment === "") {
        ctx.addIssue({ code: "custom", message: "empty path segment (leading, trailing or doubled /)" });
        return;
      }
      if (!SEGMENT.test(segment)) {
        ctx.addIssue({ code: "custom", message: "path segments hold only letters, digits, . _ -" });
        return;
      }
      if (segment === "." || segment === "..") {
        ctx.addIssue({ code: "custom", message: "path segments cannot be . or .." });
        return;
      }
    }
  });

/**
 * Page content. Lone surrogates are refused rather than stored: D1 keeps text as UTF-8, where
 * they would silently become U+FFFD and the stored page would no longer match its hash. An empty
 * page is refused too: it is what a tombstone holds, and removing a page is what DELETE is for.
 */
export const memoryContentSchema = z
  .string()
  .min(1)
  .max(MAX_MEMORY_PAGE_CHARS)
  .refine((content) => content.isWellFormed(), { message: "content must be well-formed Unicode (no lone surrogates)" });

export const putMemoryPageSchema = z.strictObject({ content: memoryContentSchema });
