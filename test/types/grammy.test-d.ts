import type { Context } from "grammy";
import { describe, expectTypeOf, it } from "vitest";
import type { FoldlineContext, FoldlineFlavor } from "../../client/grammy";

/** Type-level: checked by `vitest run` in its typecheck mode (the `types` project), so `npm test` fails when one does. */
type BotContext = Context & FoldlineFlavor;

describe("foldline/grammy", () => {
  it("is typed as a grammY context flavor", () => {
    expectTypeOf<BotContext["foldline"]>().toEqualTypeOf<FoldlineContext>();
    expectTypeOf<FoldlineContext["compose"]>().parameter(0).toEqualTypeOf<string | { text: string; images?: { url: string; detail?: "auto" | "low" | "high" }[] }>();
  });
});
