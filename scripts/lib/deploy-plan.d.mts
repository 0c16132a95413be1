// Types of deploy-plan.mjs for the TypeScript tests that import it.
export interface DeployResources {
  d1: { binding: string; name: string; id: string | undefined }[];
  buckets: string[];
  queues: string[];
}
export type DeployStep = { kind: "create_d1"; name: string } | { kind: "set_id"; binding: string; name: string } | { kind: "ensure_bucket"; name: string } | { kind: "ensure_queue"; name: string };
export function deployResources(tomlText: string): DeployResources;
export function deployPlan(resources: DeployResources, databases: { name: string; uuid: string }[]): DeployStep[];
export function withDatabaseIds(tomlText: string, ids: Map<string, string>): string;
export function alreadyExists(output: string): boolean;
