import { afterAll, afterEach, expect } from "vitest";
import { takeBreaches, worstCase } from "../bench/worker/limits";

// Every test of a project that runs the Worker fails when any invocation it caused went past one of
// Cloudflare's per-invocation limits (bench/worker/limits.ts), even one the code under test caught.
afterEach(() => {
  expect(takeBreaches(), "Cloudflare's per-invocation limits").toEqual([]);
});

// The largest value each limit met in this file's invocations, one line for docs/OPERATIONS.md's table.
afterAll(() => {
  console.log(JSON.stringify({ event: "limits.worst", worst: worstCase() }));
});
