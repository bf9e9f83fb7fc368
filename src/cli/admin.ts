// Admin commands of the cloud and serverless surfaces, against the data directory or the
// PostgreSQL database (safe while the server runs): `flowgate keys|accounts|deployments ...`.
import path from "node:path";
import { DEPLOYMENT_STATES, PG_SCHEMA_VERSION, SQLITE_SCHEMA_VERSION, openDirectory, openStore, type DeploymentState, type Directory } from "../store/index.ts";
import { generateApiKey, hashApiKey, keyPrefix } from "../surfaces/api-keys.ts";
import { helpText, parseCommand, stringFlag, UsageError, type CommandSpec, type FlagSpec } from "./command.ts";

const DATA_DIR: Record<string, FlagSpec> = {
  "data-dir": { type: "string", env: "FLOWGATE_DATA_DIR", arg: "DIR", help: "the server's data directory (default ./data)" },
  "database-url": { type: "string", env: "FLOWGATE_DATABASE_URL", arg: "URL", help: "the server's PostgreSQL database, when it runs on one" },
};

async function withDirectory<T>(values: Record<string, unknown>, work: (d: Directory) => Promise<T>): Promise<T> {
  const url = stringFlag(values as never, "database-url");
  const dir = await openDirectory(url ? { kind: "postgres", url } : path.resolve(stringFlag(values as never, "data-dir") ?? "data"));
  try {
    return await work(dir);
  } finally {
    await dir.close();
  }
}

function number(text: string | undefined, what: string): number {
  const n = Number(text);
  if (text === undefined || !Number.isFinite(n)) throw new UsageError(`${what} must be a number`);
  return n;
}

/** Flags and help of `flowgate keys`. */
export const KEYS: CommandSpec = {
  name: "keys",
  summary: "Create or revoke account-scoped API keys. `create` prints the new key alone on standard output; it is shown only once.",
  synopsis: "keys create --account NAME | keys revoke KEY [flags]",
  flags: {
    ...DATA_DIR,
    account: { type: "string", arg: "NAME", help: "the account (created with the default tier and credits if needed)" },
    tier: { type: "string", arg: "TIER", help: "tier of an account created here (default free)" },
    credits: { type: "string", arg: "N", help: "credits of an account created here (default 0)" },
  },
};

/** `flowgate keys create|revoke`. */
export async function keys(argv: string[]): Promise<void> {
  const p = parseCommand(KEYS, argv);
  if (p.help) return void process.stdout.write(helpText(KEYS));
  const [sub, arg] = p.positionals;
  await withDirectory(p.values, async (d) => {
    if (sub === "create") {
      const account = stringFlag(p.values, "account");
      if (!account) throw new UsageError("keys create needs --account NAME");
      const now = Date.now();
      await d.ensureAccount(account, {
        tier: stringFlag(p.values, "tier") ?? "free",
        credits: number(stringFlag(p.values, "credits") ?? "0", "--credits"),
        now,
      });
      const key = generateApiKey();
      await d.addApiKey({ key_hash: hashApiKey(key), account, prefix: keyPrefix(key), created_at: now, revoked_at: null });
      process.stdout.write(`${key}\n`);
    } else if (sub === "revoke" && arg) {
      if (!(await d.revokeApiKey(hashApiKey(arg), Date.now()))) throw new Error("no such live key");
      process.stderr.write("revoked\n");
    } else {
      throw new UsageError("expected `keys create --account NAME` or `keys revoke KEY`");
    }
  });
}

/** Flags and help of `flowgate accounts`. */
export const ACCOUNTS: CommandSpec = {
  name: "accounts",
  summary: "Manage accounts: tier (concurrent jobs), credits, subscription.",
  synopsis: "accounts create NAME | set-tier NAME TIER | set-credits NAME N | set-subscription NAME active|inactive | list [flags]",
  flags: {
    ...DATA_DIR,
    tier: { type: "string", arg: "TIER", help: "tier for create (default free)" },
    credits: { type: "string", arg: "N", help: "credits for create (default 0)" },
    json: { type: "boolean", help: "print JSON" },
  },
};

/** `flowgate accounts ...`. */
export async function accounts(argv: string[]): Promise<void> {
  const p = parseCommand(ACCOUNTS, argv);
  if (p.help) return void process.stdout.write(helpText(ACCOUNTS));
  const [sub, name, value] = p.positionals;
  await withDirectory(p.values, async (d) => {
    let result;
    switch (sub) {
      case "create":
        if (!name) throw new UsageError("accounts create needs NAME");
        result = await d.ensureAccount(name, {
          tier: stringFlag(p.values, "tier") ?? "free",
          credits: number(stringFlag(p.values, "credits") ?? "0", "--credits"),
          now: Date.now(),
        });
        break;
      case "set-tier":
        if (!name || !value) throw new UsageError("accounts set-tier needs NAME TIER");
        result = await d.updateAccount(name, { tier: value });
        break;
      case "set-credits":
        if (!name) throw new UsageError("accounts set-credits needs NAME N");
        result = await d.updateAccount(name, { credits: number(value, "N") });
        break;
      case "set-subscription":
        if (!name || (value !== "active" && value !== "inactive")) throw new UsageError("accounts set-subscription needs NAME active|inactive");
        result = await d.updateAccount(name, { subscription_active: value === "active" });
        break;
      case "list":
        result = await d.listAccounts();
        break;
      default:
        throw new UsageError("expected create, set-tier, set-credits, set-subscription or list");
    }
    if (result === null) throw new Error(`no account "${name}"`);
    process.stdout.write(`${JSON.stringify(result, null, p.values.json ? 2 : undefined)}\n`);
  });
}

/** Flags and help of `flowgate deployments`. */
export const DEPLOYMENTS: CommandSpec = {
  name: "deployments",
  summary: "Manage serverless deployments and their states (provisioning, starting, ready, stopped).",
  synopsis: "deployments create ID [--demo] [--state S] | set-state ID STATE | list [flags]",
  flags: {
    ...DATA_DIR,
    demo: { type: "boolean", help: "the public demo deployment: no credential needed, logs withheld" },
    state: { type: "string", arg: "S", help: "initial state (default ready)" },
  },
};

function state(text: string | undefined): DeploymentState {
  if (!DEPLOYMENT_STATES.includes(text as DeploymentState)) throw new UsageError(`state must be one of ${DEPLOYMENT_STATES.join(", ")}`);
  return text as DeploymentState;
}

/** `flowgate deployments ...`. */
export async function deployments(argv: string[]): Promise<void> {
  const p = parseCommand(DEPLOYMENTS, argv);
  if (p.help) return void process.stdout.write(helpText(DEPLOYMENTS));
  const [sub, id, value] = p.positionals;
  await withDirectory(p.values, async (d) => {
    if (sub === "create") {
      if (!id || !/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(id))
        throw new UsageError("deployments create needs a DNS-safe ID (lowercase letters, digits, dashes)");
      const created = await d.createDeployment({
        id,
        state: state(stringFlag(p.values, "state") ?? "ready"),
        demo: p.values.demo === true,
        created_at: Date.now(),
      });
      process.stdout.write(`${JSON.stringify(created)}\n`);
    } else if (sub === "set-state") {
      const updated = await d.setDeploymentState(id ?? "", state(value));
      if (!updated) throw new Error(`no deployment "${id}"`);
      process.stdout.write(`${JSON.stringify(updated)}\n`);
    } else if (sub === "list") {
      for (const dep of await d.listDeployments()) process.stdout.write(`${JSON.stringify(dep)}\n`);
    } else {
      throw new UsageError("expected create, set-state or list");
    }
  });
}

/** Flags and help of `flowgate migrate`. */
export const MIGRATE: CommandSpec = {
  name: "migrate",
  summary: "Bring the database schema to this flowgate's version (the server also does it at start).",
  synopsis: "migrate [--database-url URL | --data-dir DIR]",
  flags: { ...DATA_DIR },
  details: "Safe while servers run and when several start at once: each migration is applied once, in one transaction, under a lock.",
};

/** `flowgate migrate`: applies the pending schema migrations of the configured store. */
export async function migrate(argv: string[]): Promise<void> {
  const p = parseCommand(MIGRATE, argv);
  if (p.help) return void process.stdout.write(helpText(MIGRATE));
  const url = stringFlag(p.values, "database-url");
  const store = await openStore(url ? { kind: "postgres", url } : { dataDir: path.resolve(stringFlag(p.values, "data-dir") ?? "data") });
  await store.close();
  process.stdout.write(`${url ? "PostgreSQL" : "SQLite"} schema at version ${url ? PG_SCHEMA_VERSION : SQLITE_SCHEMA_VERSION}\n`);
}
