// What differs by surface: one profile per surface, from the seed (and docs/decisions.md,
// "Surfaces", where the seed is open). Everything else holds on every surface.
import type { Surface } from "./types.ts";

/** Surface-dependent expectations. */
export interface Profile {
  surface: Surface;
  /** Jobs carry `logs` on GET once finished (LOG-1). */
  logs: boolean;
  /** 402 insufficient_credits may happen (SUB-10). */
  credits: boolean;
  /** Deployment states give deployment_not_ready / deployment_stopped (SUB-9). */
  deploymentScoped: boolean;
  /** Keys are account-scoped (AUTH-1): another account's jobs are invisible. */
  accountScoped: boolean;
  /** Anonymous callers are accepted by default (AUTH-2). */
  anonymousByDefault: boolean;
}

/** The profile of a surface. */
export function profileOf(surface: Surface): Profile {
  return {
    surface,
    logs: surface === "serverless",
    credits: surface !== "self-hosted",
    deploymentScoped: surface === "serverless",
    accountScoped: surface !== "self-hosted",
    anonymousByDefault: surface === "self-hosted",
  };
}

/**
 * What a surface can declare it does not support (`--unsupported`), and the rule groups each
 * covers. Any rule group ID (or rule ID) may be declared as well, so a group added later needs
 * no entry here.
 */
export const FEATURES: Readonly<Record<string, readonly string[]>> = {
  labels: ["LBL"],
  logs: ["LOG"],
  hosted: ["HOST", "WS", "HJOB"],
  jobs: ["JOB", "ST", "SUB", "IDEM", "GET", "CAN", "SSE", "PRG", "OUT", "JERR", "URL", "AST"],
};

/** The rule groups and rule IDs a list of declared features and groups stands for. */
export function declaredUnsupported(list: readonly string[] | undefined): Set<string> {
  return new Set((list ?? []).flatMap((x) => FEATURES[x] ?? [x]));
}
