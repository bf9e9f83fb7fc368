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
