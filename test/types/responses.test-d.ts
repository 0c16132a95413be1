import { describe, expectTypeOf, it } from "vitest";
import type { ChainAudit, ChainListing, VerifiedLinkPage } from "../../src/api/chain";
import type { Composed } from "../../src/api/conversations";
import type { composeResponseSchema, contextResponseSchema, Wire } from "../../src/api/responses";
import type { chainAuditSchema, chainListingSchema, linkPageSchema } from "../../src/api/responses-chain";
import type { ContextSelection } from "../../src/core/context-manifest";

/** Type-level: checked by `vitest run` in its typecheck mode (the `types` project), so `npm test` fails when one does. */
describe("the API's responses", () => {
  it("of the chain, context and compose views conform to their schemas", () => {
    expectTypeOf<ChainListing>().toExtend<Wire<typeof chainListingSchema>>();
    expectTypeOf<ChainAudit>().toExtend<Wire<typeof chainAuditSchema>>();
    expectTypeOf<VerifiedLinkPage>().toExtend<Wire<typeof linkPageSchema>>();
    expectTypeOf<ContextSelection>().toExtend<Wire<typeof contextResponseSchema>>();
    expectTypeOf<Composed>().toExtend<Wire<typeof composeResponseSchema>>();
  });
});
