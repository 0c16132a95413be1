// The report of a run of `--only <name>`: the sections that run on Workers of their own, alone,
// each with its note and, where it has them, its targets (lib/report.mjs writes the rest).
import { costSection } from "./cost-report.mjs";
import { locomoSection, locomoTargets } from "./locomo-report.mjs";
import { memorySection, memoryTargets } from "./memory-report.mjs";
import { peerSection } from "./peer-report.mjs";
import { scaleSection, scaleTargets } from "./scale-report.mjs";
import { scriptsSection, scriptsTargets } from "./scripts-report.mjs";
import { shardSection } from "./shard-report.mjs";

/**
 * The sections a run of `--only <name>` writes, each with its note and targets.
 * @type {Record<string, { note: string, targets?: (m: any) => (string | number)[][], sections: [string, string, (m: any, env: any) => string[]][] }>}
 */
export const ONLY = {
  memory: {
    note: "**Only §9 and §10 (`--only memory`)**: the other sections did not run.",
    targets: (m) => memoryTargets(m.memory),
    sections: [
      ["9. Memory: the facts of a long group chat after compaction", "memory", (m) => memorySection(m.memory)],
      ["10. Cost: a group conversation on Cloudflare, per 1,000 messages and per month", "cost", (m) => costSection(m.cost)],
    ],
  },
  locomo: {
    note: "**Only §12 (`--only locomo`)**: the other sections did not run (§12 runs only when asked for).",
    targets: (m) => locomoTargets(m.locomo),
    sections: [["12. LoCoMo: evidence for questions about long real conversations", "locomo", (m) => locomoSection(m.locomo)]],
  },
  scale: {
    note: "**Only §13 (`--only scale`)**: the other sections did not run (§13 runs only when asked for).",
    targets: (m) => scaleTargets(m.scale),
    sections: [["13. Scale: each operation on a long conversation against a short one", "scale", (m) => scaleSection(m.scale)]],
  },
  scripts: {
    note: "**Only §14 (`--only scripts`)**: the other sections did not run.",
    targets: (m) => scriptsTargets(m.scripts),
    sections: [["14. Append cost by script and length", "scripts", (m) => scriptsSection(m.scripts)]],
  },
  shards: {
    note: "**Only §11 (`--only shards`)**: the other sections did not run.",
    sections: [["11. Shards: aggregate append throughput", "shards", (m, env) => shardSection(m.shards, env)]],
  },
  peer: {
    note: "**Only §15 (`--only peer`)**: the other sections did not run (§15 runs only when asked for).",
    sections: [["15. The peer: Foldline beside the Agents SDK's Sessions, on the same replay", "peer", (m) => peerSection(m.peer)]],
  },
};
