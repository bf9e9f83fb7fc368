// The history of every job status change and every output record of a test's schema, kept by
// test-only triggers, and the check over it: no move out of a terminal status, no second move to
// `running`, no output written while its job is neither running nor canceling (an output written
// in the transaction that ends its job counts as written while running).
import { adminQuery } from "../postgres/pg.ts";

const TERMINAL = ["succeeded", "canceled", "failed", "expired"];

/** Installs the history triggers in `schema` (after flowgate migrated it: the jobs table must exist). */
export async function recordHistory(schema: string): Promise<void> {
  await adminQuery(`
    CREATE TABLE ${schema}.test_status_history (seq BIGSERIAL PRIMARY KEY, job_id TEXT NOT NULL, old_status TEXT, new_status TEXT NOT NULL, tx BIGINT NOT NULL);
    CREATE TABLE ${schema}.test_output_history (seq BIGSERIAL PRIMARY KEY, job_id TEXT NOT NULL, asset_id TEXT NOT NULL, job_status TEXT, tx BIGINT NOT NULL);
    CREATE FUNCTION ${schema}.test_record_status() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${schema}.test_status_history (job_id, old_status, new_status, tx)
        VALUES (NEW.id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END, NEW.status, txid_current());
      RETURN NULL;
    END $$;
    CREATE TRIGGER test_record_created AFTER INSERT ON ${schema}.jobs FOR EACH ROW EXECUTE FUNCTION ${schema}.test_record_status();
    CREATE TRIGGER test_record_status AFTER UPDATE OF status ON ${schema}.jobs FOR EACH ROW
      WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION ${schema}.test_record_status();
    CREATE FUNCTION ${schema}.test_record_output() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.job_id IS NOT NULL THEN
        INSERT INTO ${schema}.test_output_history (job_id, asset_id, job_status, tx)
          VALUES (NEW.job_id, NEW.id, (SELECT status FROM ${schema}.jobs WHERE id = NEW.job_id), txid_current());
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER test_record_output AFTER INSERT ON ${schema}.assets FOR EACH ROW EXECUTE FUNCTION ${schema}.test_record_output();
  `);
}

/** What broke the rules, one line each (empty: the history is sound). */
export async function historyViolations(schema: string): Promise<string[]> {
  const moves = await adminQuery(`SELECT job_id, old_status, new_status, tx FROM ${schema}.test_status_history ORDER BY seq`);
  const outputs = await adminQuery(`SELECT job_id, asset_id, job_status, tx FROM ${schema}.test_output_history ORDER BY seq`);
  const problems: string[] = [];
  const runs = new Map<string, number>();
  /** Per job, the transactions that moved it from running/canceling to a terminal status. */
  const endTx = new Map<string, Set<string>>();
  for (const m of moves) {
    const id = m.job_id as string;
    const from = m.old_status as string | null;
    const to = m.new_status as string;
    if (from !== null && TERMINAL.includes(from)) problems.push(`job ${id} moved out of terminal ${from} to ${to}`);
    if (to === "running") {
      runs.set(id, (runs.get(id) ?? 0) + 1);
      if (runs.get(id)! > 1) problems.push(`job ${id} moved to running a second time`);
    }
    if (TERMINAL.includes(to) && (from === "running" || from === "canceling")) {
      if (!endTx.has(id)) endTx.set(id, new Set());
      endTx.get(id)!.add(String(m.tx));
    }
  }
  for (const o of outputs) {
    const status = o.job_status as string;
    if (status === "running" || status === "canceling") continue;
    if (TERMINAL.includes(status) && endTx.get(o.job_id as string)?.has(String(o.tx))) continue; // written with its job's end
    problems.push(`output ${o.asset_id as string} written while job ${o.job_id as string} was ${status}`);
  }
  return problems;
}
