// One owner per data directory. The lock is an exclusive SQLite lock (an fcntl record lock on
// `<dataDir>/flowgate.lock`, which stays an empty file): the kernel drops it when the process
// ends, SIGKILL included, so there is never a stale lock to clean up, and no pid to misread.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

/** The lock file under the data directory. */
export const LOCK_FILE_NAME = "flowgate.lock";

/** Another live process holds the data directory. */
export class DataDirInUseError extends Error {
  override readonly name = "DataDirInUseError";
  readonly dataDir: string;
  constructor(dataDir: string) {
    super(`the data directory ${dataDir} is in use by another flowgate server (${LOCK_FILE_NAME} is locked)`);
    this.dataDir = dataDir;
  }
}

/** The held lock of one data directory; `release()` gives it up. */
export class DataDirLock {
  readonly #db: DatabaseSync;

  private constructor(db: DatabaseSync) {
    this.#db = db;
  }

  /** Takes the data directory's lock at once (creating the directory), or throws DataDirInUseError. */
  static async acquire(dataDir: string): Promise<DataDirLock> {
    await mkdir(dataDir, { recursive: true });
    const db = new DatabaseSync(join(dataDir, LOCK_FILE_NAME), { timeout: 0 });
    try {
      // An exclusive transaction that writes nothing: it locks the file and never grows it.
      db.exec("PRAGMA locking_mode = EXCLUSIVE");
      db.exec("BEGIN EXCLUSIVE");
    } catch (error) {
      db.close();
      if ((error as { errcode?: number }).errcode === SQLITE_BUSY) throw new DataDirInUseError(dataDir);
      throw error;
    }
    return new DataDirLock(db);
  }

  /** Gives the directory up (idempotent). */
  release(): void {
    if (this.#db.isOpen) this.#db.close();
  }
}

const SQLITE_BUSY = 5;
