// The Directory over the same SQLite file as the job store (its own connection: the admin
// command writes while the server runs; WAL and the busy timeout make that safe).
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { AccountRecord, ApiKeyRecord, DeploymentRecord, DeploymentState, Directory } from "./directory.ts";
import { migrate } from "./sqlite-schema.ts";
import { SQLITE_FILE_NAME } from "./sqlite.ts";

type Row = Record<string, unknown>;

const ACCOUNT = "name, tier, credits, subscription_active, created_at";
const KEY = "key_hash, account, prefix, created_at, revoked_at";
const DEPLOYMENT = "id, state, demo, created_at";

function toAccount(r: Row): AccountRecord {
  return {
    name: String(r.name),
    tier: String(r.tier),
    credits: Number(r.credits),
    subscription_active: r.subscription_active === 1,
    created_at: Number(r.created_at),
  };
}

function toKey(r: Row): ApiKeyRecord {
  return {
    key_hash: String(r.key_hash),
    account: String(r.account),
    prefix: String(r.prefix),
    created_at: Number(r.created_at),
    revoked_at: r.revoked_at === null ? null : Number(r.revoked_at),
  };
}

function toDeployment(r: Row): DeploymentRecord {
  return { id: String(r.id), state: r.state as DeploymentState, demo: r.demo === 1, created_at: Number(r.created_at) };
}

/** Directory on SQLite. */
export class SqliteDirectory implements Directory {
  readonly #db: DatabaseSync;

  private constructor(db: DatabaseSync) {
    this.#db = db;
  }

  /** Opens (creating and migrating as needed) the database under dataDir. */
  static async open(dataDir: string, now: number = Date.now()): Promise<SqliteDirectory> {
    await mkdir(dataDir, { recursive: true });
    const db = new DatabaseSync(join(dataDir, SQLITE_FILE_NAME), { timeout: 5000, enableForeignKeyConstraints: true, defensive: true });
    try {
      db.exec("PRAGMA journal_mode = WAL");
      migrate(db, now);
      return new SqliteDirectory(db);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  async ensureAccount(name: string, d: { tier: string; credits: number; now: number }): Promise<AccountRecord> {
    this.#db
      .prepare("INSERT INTO accounts (name, tier, credits, subscription_active, created_at) VALUES (?, ?, ?, 1, ?) ON CONFLICT (name) DO NOTHING")
      .run(name, d.tier, d.credits, d.now);
    return (await this.getAccount(name))!;
  }

  async getAccount(name: string): Promise<AccountRecord | null> {
    const r = this.#db.prepare(`SELECT ${ACCOUNT} FROM accounts WHERE name = ?`).get(name);
    return r ? toAccount(r) : null;
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return this.#db.prepare(`SELECT ${ACCOUNT} FROM accounts ORDER BY name`).all().map(toAccount);
  }

  // Writes with RETURNING use .all(), never .get(): see writeReturning in sqlite.ts.
  async updateAccount(name: string, patch: { tier?: string; credits?: number; subscription_active?: boolean }): Promise<AccountRecord | null> {
    const r = this.#db
      .prepare(
        `UPDATE accounts SET tier = COALESCE(:tier, tier), credits = COALESCE(:credits, credits),
          subscription_active = COALESCE(:active, subscription_active) WHERE name = :name RETURNING ${ACCOUNT}`,
      )
      .all({
        name,
        tier: patch.tier ?? null,
        credits: patch.credits ?? null,
        active: patch.subscription_active === undefined ? null : patch.subscription_active ? 1 : 0,
      })[0];
    return r ? toAccount(r) : null;
  }

  async chargeCredits(name: string, amount: number): Promise<AccountRecord | null> {
    const r = this.#db.prepare(`UPDATE accounts SET credits = credits - ? WHERE name = ? RETURNING ${ACCOUNT}`).all(amount, name)[0];
    return r ? toAccount(r) : null;
  }

  async addApiKey(key: ApiKeyRecord): Promise<void> {
    this.#db.prepare(`INSERT INTO api_keys (${KEY}) VALUES (?, ?, ?, ?, ?)`).run(key.key_hash, key.account, key.prefix, key.created_at, key.revoked_at);
  }

  async findApiKey(keyHash: string): Promise<ApiKeyRecord | null> {
    const r = this.#db.prepare(`SELECT ${KEY} FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL`).get(keyHash);
    return r ? toKey(r) : null;
  }

  async revokeApiKey(keyHash: string, now: number): Promise<boolean> {
    return this.#db.prepare("UPDATE api_keys SET revoked_at = ? WHERE key_hash = ? AND revoked_at IS NULL").run(now, keyHash).changes > 0;
  }

  async createDeployment(d: DeploymentRecord): Promise<DeploymentRecord> {
    const r = this.#db
      .prepare(`INSERT INTO deployments (${DEPLOYMENT}) VALUES (?, ?, ?, ?) RETURNING ${DEPLOYMENT}`)
      .all(d.id, d.state, d.demo ? 1 : 0, d.created_at)[0];
    return toDeployment(r!);
  }

  async getDeployment(id: string): Promise<DeploymentRecord | null> {
    const r = this.#db.prepare(`SELECT ${DEPLOYMENT} FROM deployments WHERE id = ?`).get(id);
    return r ? toDeployment(r) : null;
  }

  async setDeploymentState(id: string, state: DeploymentState): Promise<DeploymentRecord | null> {
    const r = this.#db.prepare(`UPDATE deployments SET state = ? WHERE id = ? RETURNING ${DEPLOYMENT}`).all(state, id)[0];
    return r ? toDeployment(r) : null;
  }

  async listDeployments(): Promise<DeploymentRecord[]> {
    return this.#db.prepare(`SELECT ${DEPLOYMENT} FROM deployments ORDER BY id`).all().map(toDeployment);
  }

  async close(): Promise<void> {
    if (this.#db.isOpen) this.#db.close();
  }
}
