// A loopback OpenAI-compatible endpoint for the compactor: it answers at once and records how many
// characters each request carried, section by section, so the compactor-input metric is measured
// at the model's edge (what would be billed), not inferred.
//
// Its reply is a valid seed-001 projection: a summary built from the slice's first words, capped at
// `summaryChars` (default 1,600: the offline extractive compactor's maximum, 8 lines of ≤ 200
// characters, and within the prompt's "short" projection). A real model's summaries may be longer
// (the policy allows `maxSummaryChars`, 8,000 by default); the report recomputes the ratio for that
// worst case from the measured slices.
//
// Failure injection, per model name: a declaration whose model is `bench-flaky` gets an HTTP 500 on
// every first attempt at a slice (the queue then retries the same packet), so settlement under
// redelivered jobs can be observed.
import { createHash } from "node:crypto";
import { createServer } from "node:http";

/**
 * @typedef {{
 *   at: number, model: string, systemChars: number, userChars: number, totalChars: number,
 *   previousBoundaryChars: number, amendmentsChars: number, pagesChars: number, sliceChars: number,
 *   status: number, replyChars: number, sliceKey: string,
 * }} ModelCall
 */

const FLAKY_MODEL = "bench-flaky";

/**
 * @param {string} input @param {string} tag
 * @returns {string} the section's body ("" when the section says "(none)")
 */
function section(input, tag) {
  const match = new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`).exec(input);
  const body = match?.[1] ?? "";
  return body === "(none)" ? "" : body;
}

/** @param {string} text */
function unescape(text) {
  return text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

/**
 * `delayMs` holds every answer that long (a slow model, so that a crash can land during a call);
 * `inFlight()` says how many requests are being held.
 * @param {{ summaryChars?: number, delayMs?: number }} [options]
 * @returns {Promise<{ baseUrl: string, calls: ModelCall[], inFlight: () => number, close: () => Promise<void> }>}
 */
export async function startFakeOpenAi(options = {}) {
  const summaryChars = options.summaryChars ?? 1_600;
  const delayMs = options.delayMs ?? 0;
  let held = 0;
  /** @type {ModelCall[]} */
  const calls = [];
  /** Slices already failed once (flaky model): the retry of the same packet succeeds. */
  const failedOnce = new Set();

  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const send = (status, body) => {
        const text = JSON.stringify(body);
        const answer = () => {
          response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
          response.end(text);
        };
        if (delayMs === 0) return answer();
        held += 1;
        setTimeout(() => {
          held -= 1;
          // The caller may have been killed meanwhile: its socket is gone, and so is the answer.
          if (!response.destroyed) answer();
        }, delayMs);
      };
      if (request.method !== "POST" || !request.url?.endsWith("/chat/completions")) return send(404, { error: { message: "not found" } });
      /** @type {any} */
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        return send(400, { error: { message: "invalid json" } });
      }
      const messages = Array.isArray(body?.messages) ? body.messages : [];
      const system = messages.find((m) => m.role === "system")?.content ?? "";
      const user = messages.find((m) => m.role === "user")?.content ?? "";
      const slice = section(user, "slice");
      const model = String(body?.model ?? "");
      // The slice's own bytes identify the packet across retries (a retry re-reads the same packet).
      const sliceKey = createHash("sha256").update(slice).digest("hex").slice(0, 16);
      /** @type {ModelCall} */
      const call = {
        at: Date.now(),
        model,
        systemChars: system.length,
        userChars: user.length,
        totalChars: system.length + user.length,
        previousBoundaryChars: section(user, "previous-boundary").length,
        amendmentsChars: section(user, "amendments").length,
        pagesChars: section(user, "existing-memory-pages").length,
        sliceChars: slice.length,
        status: 200,
        replyChars: 0,
        sliceKey,
      };
      calls.push(call);

      if (model === FLAKY_MODEL && !failedOnce.has(sliceKey)) {
        failedOnce.add(sliceKey);
        call.status = 500;
        return send(500, { error: { message: "injected failure", type: "server_error", code: "server_error" } });
      }

      // The slice's words, without turn markup (ids, handles, roles, wrappers), up to the summary size.
      const words = unescape(slice.replace(/<\/?turn>/g, " ").replace(/\[[^\]]*\] @\S+ \((user|assistant)\):/g, " "))
        .split(/\s+/)
        .filter((w) => w !== "");
      let summary = "Summary:";
      for (const word of words) {
        if (summary.length + word.length + 1 > summaryChars) break;
        summary += ` ${word}`;
      }
      const content = system.includes("salientFacts") ? JSON.stringify({ summary, salientFacts: {} }) : summary;
      call.replyChars = content.length;
      send(200, {
        id: `chatcmpl-bench-${calls.length}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, finish_reason: "stop", logprobs: null }],
        usage: { prompt_tokens: Math.ceil(call.totalChars / 4), completion_tokens: Math.ceil(content.length / 4), total_tokens: Math.ceil((call.totalChars + content.length) / 4) },
      });
    });
  });
  // Loopback only.
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    calls,
    inFlight: () => held,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve(undefined));
      }),
  };
}
