// Accounts, API keys and deployments: who may call the cloud and serverless surfaces, with
// what credits and tier, and which deployments exist in which state. Asynchronous like Store,
// so a PostgreSQL implementation fits behind it.

/** A customer account of the cloud and serverless surfaces. */
export interface AccountRecord {
  name: string;
  tier: string;
  credits: number;
  subscription_active: boolean;
  created_at: number;
}

/** An API key as stored: only its SHA-256 digest. */
export interface ApiKeyRecord {
  key_hash: string;
  account: string;
  /** The first characters of the key, to tell keys apart in listings. */
  prefix: string;
  created_at: number;
  revoked_at: number | null;
}

/** States of a serverless deployment. */
export type DeploymentState = "provisioning" | "starting" | "ready" | "stopped";

export const DEPLOYMENT_STATES: readonly DeploymentState[] = ["provisioning", "starting", "ready", "stopped"];

/** A serverless deployment. */
export interface DeploymentRecord {
  id: string;
  state: DeploymentState;
  /** The public demo deployment: takes callers with no credential and withholds logs. */
  demo: boolean;
  created_at: number;
}

/** Accounts, keys and deployments. */
export interface Directory {
  /** Creates the account, or returns it unchanged when it exists. */
  ensureAccount(name: string, defaults: { tier: string; credits: number; now: number }): Promise<AccountRecord>;
  getAccount(name: string): Promise<AccountRecord | null>;
  listAccounts(): Promise<AccountRecord[]>;
  /** Changes tier, credits or subscription; null when the account does not exist. */
  updateAccount(name: string, patch: { tier?: string; credits?: number; subscription_active?: boolean }): Promise<AccountRecord | null>;
  /** Subtracts `amount` from the account's credits atomically; the balance may go below zero. */
  chargeCredits(name: string, amount: number): Promise<AccountRecord | null>;

  addApiKey(key: ApiKeyRecord): Promise<void>;
  /** The live (unrevoked) key with this digest, or null. */
  findApiKey(keyHash: string): Promise<ApiKeyRecord | null>;
  /** Revokes a key; false when it does not exist or is already revoked. */
  revokeApiKey(keyHash: string, now: number): Promise<boolean>;

  createDeployment(d: DeploymentRecord): Promise<DeploymentRecord>;
  getDeployment(id: string): Promise<DeploymentRecord | null>;
  setDeploymentState(id: string, state: DeploymentState): Promise<DeploymentRecord | null>;
  listDeployments(): Promise<DeploymentRecord[]>;

  close(): Promise<void>;
}
