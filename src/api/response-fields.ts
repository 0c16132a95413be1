import { z } from "zod";
import { modelEvidenceSchema } from "../core/boundary";

/** The fields every response schema is built from (`responses.ts`, `responses-chain.ts`). */

/** Instants as the service writes them (`Date.prototype.toISOString`). */
export const isoTime = z.iso.datetime({ offset: true });
export const seq = z.number().int().nonnegative();
export const count = z.number().int().nonnegative();
export const position = z.number().int().positive();
/** Ids the service derives (boundary, run, epoch, turn ids) and promises no pattern for. */
export const id = z.string().min(1);

/** The model that answered a compactor run, without the rest of its evidence. */
export const modelNames = modelEvidenceSchema.pick({ provider: true, model: true });
