// The Directory on PostgreSQL: accounts, hashed API keys and deployments in the same schema as
// the jobs (its own small pool, so the admin command can write while servers run).
import type pg from "pg";
import type { AccountRecord, ApiKeyRecord, DeploymentRecord, DeploymentState, Directory } from "./directory.ts";
import { openPostgresPool, type PostgresOptions } from "./postgres-pool.ts";

type Row = Record<string, unknown>;

const ACCOUNT = "name, tier, credits, subscription_active, created_at";
const KEY = "key_hash, account, prefix, created_at, revoked_at";
const DEPLOYMENT = "id, state, demo, created_at";

const toAccount = (r: Row): AccountRecord => ({
  name: r.name as string,
  tier: r.tier as string,
  credits: r.credits as number,
  subscription_active: r.subscription_active as boolean,
  created_at: r.created_at as number,
});
const toKey = (r: Row): ApiKeyRecord => ({
  key_hash: r.key_hash as string,
  account: r.account as string,
  prefix: r.prefix as string,
  created_at: r.created_at as number,
  revoked_at: r.revoked_at as number | null,
});
const toDeployment = (r: Row): DeploymentRecord => ({
  id: r.id as string,
  state: r.state as DeploymentState,
  demo: r.demo as boolean,
  created_at: r.created_at as number,
});

/**
 * Each statement's name, given at its first use: a named statement is parsed and planned once per
 * connection, not on every call (an API key is looked up on every request of the cloud surfaces).
 * The texts are the fixed ones of this file, so the names are few.
 */
const STATEMENT_NAMES = new Map<string, string>();
function statementName(text: string): string {
  let name = STATEMENT_NAMES.get(text);
  if (name === undefined) STATEMENT_NAMES.set(text, (name = `fg_directory_${STATEMENT_NAMES.size + 1}`));
  return name;
}

/** Directory on PostgreSQL. */
export class PostgresDirectory implements Directory {
  readonly #pool: pg.Pool;

  private constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /** Connects and migrates, like PostgresStore.open. */
  static async open(options: PostgresOptions): Promise<PostgresDirectory> {
    return new PostgresDirectory(await openPostgresPool({ maxConnections: 4, ...options }));
  }

  async #rows(text: string, params: unknown[] = []): Promise<Row[]> {
    // PostgreSQL text cannot hold U+0000: no stored name or id has one (a lookup by one finds nothing).
    if (params.some((p) => typeof p === "string" && p.includes("\0")) && !/^\s*INSERT/i.test(text)) return [];
    return (await this.#pool.query({ name: statementName(text), text, values: params })).rows as Row[];
  }

  async ensureAccount(name: string, d: { tier: string; credits: number; now: number }): Promise<AccountRecord> {
    await this.#rows(
      "INSERT INTO accounts (name, tier, credits, subscription_active, created_at) VALUES ($1, $2, $3, true, $4) ON CONFLICT (name) DO NOTHING",
      [name, d.tier, d.credits, d.now],
    );
    return (await this.getAccount(name))!;
  }

  async getAccount(name: string): Promise<AccountRecord | null> {
    const [r] = await this.#rows(`SELECT ${ACCOUNT} FROM accounts WHERE name = $1`, [name]);
    return r ? toAccount(r) : null;
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return (await this.#rows(`SELECT ${ACCOUNT} FROM accounts ORDER BY name COLLATE "C"`)).map(toAccount);
  }

  async updateAccount(name: string, patch: { tier?: string; credits?: number; subscription_active?: boolean }): Promise<AccountRecord | null> {
    const [r] = await this.#rows(
      `UPDATE accounts SET tier = COALESCE($2, tier), credits = COALESCE($3::float8, credits),
        subscription_active = COALESCE($4::boolean, subscription_active) WHERE name = $1 RETURNING ${ACCOUNT}`,
      [name, patch.tier ?? null, patch.credits ?? null, patch.subscription_active ?? null],
    );
    return r ? toAccount(r) : null;
  }

  async chargeCredits(name: string, amount: number): Promise<AccountRecord | null> {
    // One UPDATE: concurrent charges from any number of processes all count.
    const [r] = await this.#rows(`UPDATE accounts SET credits = credits - $2 WHERE name = $1 RETURNING ${ACCOUNT}`, [name, amount]);
    return r ? toAccount(r) : null;
  }

  async addApiKey(key: ApiKeyRecord): Promise<void> {
    await this.#rows(`INSERT INTO api_keys (${KEY}) VALUES ($1, $2, $3, $4, $5)`, [key.key_hash, key.account, key.prefix, key.created_at, key.revoked_at]);
  }

  async findApiKey(keyHash: string): Promise<ApiKeyRecord | null> {
    const [r] = await this.#rows(`SELECT ${KEY} FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`, [keyHash]);
    return r ? toKey(r) : null;
  }

  async revokeApiKey(keyHash: string, now: number): Promise<boolean> {
    return ((await this.#pool.query("UPDATE api_keys SET revoked_at = $2 WHERE key_hash = $1 AND revoked_at IS NULL", [keyHash, now])).rowCount ?? 0) > 0;
  }

  async createDeployment(d: DeploymentRecord): Promise<DeploymentRecord> {
    const [r] = await this.#rows(`INSERT INTO deployments (${DEPLOYMENT}) VALUES ($1, $2, $3, $4) RETURNING ${DEPLOYMENT}`, [
      d.id,
      d.state,
      d.demo,
      d.created_at,
    ]);
    return toDeployment(r!);
  }

  async getDeployment(id: string): Promise<DeploymentRecord | null> {
    const [r] = await this.#rows(`SELECT ${DEPLOYMENT} FROM deployments WHERE id = $1`, [id]);
    return r ? toDeployment(r) : null;
  }

  async setDeploymentState(id: string, state: DeploymentState): Promise<DeploymentRecord | null> {
    const [r] = await this.#rows(`UPDATE deployments SET state = $2 WHERE id = $1 RETURNING ${DEPLOYMENT}`, [id, state]);
    return r ? toDeployment(r) : null;
  }

  async listDeployments(): Promise<DeploymentRecord[]> {
    return (await this.#rows(`SELECT ${DEPLOYMENT} FROM deployments ORDER BY id COLLATE "C"`)).map(toDeployment);
  }

  async close(): Promise<void> {
    if (!this.#pool.ended) await this.#pool.end();
  }
}
