// Where an instance's output files are read from. Beside ComfyUI (on this machine) they are read
// from its output folder, which saves a GET /view round trip per file and ComfyUI's serving of
// it; otherwise they are fetched with /view, which stays the fallback for every file the folder
// does not give. The folder is either configured, or found (`auto`) from what the instance says
// about itself and trusted only once a file read from it equals what /view served.
import { closeSync, constants, fstatSync, openSync, read, readSync, realpathSync, statSync } from "node:fs";
import { isIP } from "node:net";
import { basename, dirname, isAbsolute, join, normalize, relative, sep } from "node:path";
import { promisify } from "node:util";
import type { ComfyHttp, FileInfo } from "./http-api.ts";

/** The setting of one instance: a folder path, `auto` (the default) or `off` (always /view). */
export type OutputFolderSetting = string;

/** What the folder is now: unused, found and waiting for a first file to confirm it, or used. */
export type OutputFolderState = "view" | "candidate" | "folder";

/** Largest output file read with synchronous calls (a few µs from the page cache; readFile is four trips to the thread pool). */
const SMALL_READ_BYTES = 256 * 1024;

// O_NOFOLLOW: a link planted as the file is refused; O_NONBLOCK: a FIFO planted there cannot hang the open.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** One instance's output folder. */
export class OutputFolder {
  readonly #setting: "auto" | "off" | { path: string };
  readonly #http: ComfyHttp;
  /** The folder read from (its real path), and whether it is trusted or still to be confirmed. */
  #root: { path: string; trusted: boolean } | null = null;
  /** Bumped by every discovery, so that a slow one does not overwrite a newer one's finding. */
  #generation = 0;

  constructor(setting: OutputFolderSetting, http: ComfyHttp) {
    this.#http = http;
    const s = setting.trim();
    this.#setting = s === "" || s === "auto" ? "auto" : s === "off" ? "off" : { path: s };
  }

  /** view: outputs are fetched with /view; candidate: the next output file confirms the folder; folder: read from it. */
  get state(): OutputFolderState {
    this.#folder();
    return this.#root === null ? "view" : this.#root.trusted ? "folder" : "candidate";
  }

  /**
   * Looks for the instance's output folder (setting `auto`, an instance on this machine only):
   * called when its socket first opens, and again after an outage, since a restarted ComfyUI may
   * use another folder. Until a file confirms what is found, outputs are fetched with /view.
   */
  async discover(): Promise<void> {
    if (this.#setting !== "auto" || !isLoopback(this.#http.base)) return;
    const generation = ++this.#generation;
    this.#root = null;
    const found = await this.#find().catch(() => null);
    if (generation !== this.#generation || found === null) return;
    this.#root = { path: found, trusted: false };
  }

  /** The bytes of an output file from the folder, or null when it must be fetched with /view. */
  async read(file: FileInfo): Promise<Buffer | null> {
    const folder = this.#folder();
    return folder === null ? null : readInside(folder, file);
  }

  /**
   * After a /view fetch: while the folder found is unconfirmed, its copy of the file is compared
   * with what /view served. Equal bytes confirm it; other bytes drop it (until it is looked for
   * again); a file not there leaves the question to the next one.
   */
  async confirm(file: FileInfo, served: Buffer): Promise<void> {
    const root = this.#root;
    if (root === null || root.trusted) return;
    const local = await readInside(root.path, file);
    if (this.#root !== root || local === null) return;
    if (local.equals(served)) root.trusted = true;
    else this.#root = null;
  }

  /** The real path of the folder to read from, or null while there is none to trust. */
  #folder(): string | null {
    // A configured folder may appear after the start (ComfyUI creates it on its first save).
    if (typeof this.#setting === "object" && this.#root === null) {
      const path = realFolder(this.#setting.path);
      if (path !== null) this.#root = { path, trusted: true };
    }
    return this.#root?.trusted ? this.#root.path : null;
  }

  /**
   * The output folder the instance names: its --output-directory when absolute, else `output` in
   * its base folder (where its custom_nodes folder is, as GET /internal/folder_paths lists it).
   */
  async #find(): Promise<string | null> {
    const stats = await this.#http.systemStats().catch(() => null);
    const argv = stats?.argv;
    const given = Array.isArray(argv) ? optionValue(argv, "--output-directory") : undefined;
    let path: string | null = null;
    if (given !== undefined) {
      // A relative one is relative to ComfyUI's working directory, which it does not tell.
      if (!isAbsolute(given)) return null;
      path = given;
    } else {
      const paths = await this.#http.folderPaths();
      const customNodes = Array.isArray(paths.custom_nodes) ? paths.custom_nodes[0] : undefined;
      if (typeof customNodes !== "string" || !isAbsolute(customNodes)) return null;
      path = join(dirname(customNodes), "output");
    }
    return realFolder(path);
  }
}

/** The value of a command-line option (`--name value` or `--name=value`) in argv, if given. */
function optionValue(argv: readonly unknown[], name: string): string | undefined {
  let value: string | undefined;
  argv.forEach((arg, i) => {
    if (arg === name && typeof argv[i + 1] === "string") value = argv[i + 1] as string;
    else if (typeof arg === "string" && arg.startsWith(`${name}=`)) value = arg.slice(name.length + 1);
  });
  return value; // the last one wins, as with argparse
}

/** Whether a base URL names this machine. */
function isLoopback(base: string): boolean {
  const host = new URL(base).hostname.replace(/^\[|\]$/g, "");
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

/** A folder's real path, or null when it is not a folder (yet). */
function realFolder(path: string): string | null {
  try {
    const real = realpathSync(path);
    return statSync(real).isDirectory() ? real : null;
  } catch {
    return null;
  }
}

/**
 * The bytes of a file inside `root` (a real path), or null when it is not there, not a regular
 * file, or not inside: any folder on the way is resolved and must stay inside, and the file
 * itself must not be a link.
 */
async function readInside(root: string, file: FileInfo): Promise<Buffer | null> {
  if (file.type !== "output") return null;
  const rel = normalize(join(file.subfolder, file.filename));
  if (rel === "." || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return null;
  try {
    const folder = dirname(rel) === "." ? root : realpathSync(join(root, dirname(rel)));
    const inside = relative(root, folder);
    if (inside === ".." || inside.startsWith(`..${sep}`) || isAbsolute(inside)) return null;
    const path = join(folder, basename(rel));
    const fd = openSync(path, OPEN_FLAGS);
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) return null;
      // A large file is read on the thread pool, not to hold the event loop.
      const readAt: ReadAt =
        st.size <= SMALL_READ_BYTES
          ? (buf, at) => readSync(fd, buf, at, buf.length - at, at)
          : async (buf, at) => (await readAsync(fd, buf, at, buf.length - at, at)).bytesRead;
      return await readWhole(st.size, readAt);
    } finally {
      closeSync(fd);
    }
  } catch {
    return null; // gone meanwhile, unreadable, a link: /view knows better
  }
}

/** Reads into `buf` from `at` (the same offset in the file); the bytes read, 0 at its end. */
type ReadAt = (buf: Buffer, at: number) => number | Promise<number>;

const readAsync = promisify(read);

/** Reads `size` bytes from the start of a file (fewer if it shrank meanwhile). */
async function readWhole(size: number, readAt: ReadAt): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(size);
  let at = 0;
  while (at < size) {
    const n = await readAt(buf, at);
    if (n === 0) break;
    at += n;
  }
  return at === size ? buf : buf.subarray(0, at);
}
