// The filesystem calls of the file blob store: temp files, links, fsyncs of files and
// directories, each in an asynchronous and a mostly synchronous flavour (see FileBlobStore).
import { closeSync, existsSync, fsync, linkSync, open as openFile, openSync, renameSync, rmSync, statfs, utimesSync, writeSync } from "node:fs";
import { link, mkdir, open, readdir, rename, rm, utimes } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";

/** Writes all of `chunk` at the handle's position. */
export async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset);
    offset += bytesWritten;
  }
}

/** A temp file being put. */
export interface TempFile {
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** The filesystem calls of a put but fsyncs, asynchronous or synchronous. */
export interface FileOps {
  /** A new temp file holding `bytes`. */
  create(path: string, bytes: Uint8Array): Promise<TempFile>;
  /** Marks an existing blob as just used (its mtime guards it from a concurrent GC); false when absent. */
  touch(path: string): Promise<boolean>;
  /** mkdir -p; the first directory it made, if any. */
  mkdir(path: string): Promise<string | undefined>;
  /** Makes `finalPath` name the temp file's content without replacing an existing blob; false if one was there. */
  publish(tempPath: string, finalPath: string): Promise<boolean>;
  /** fsyncs a directory so that a new entry in it survives a power loss. */
  syncDir(path: string): Promise<void>;
  remove(path: string): Promise<void>;
}

export const ASYNC_OPS: FileOps = {
  async create(path, bytes) {
    const handle = await open(path, "wx", 0o644);
    try {
      await writeAll(handle, bytes);
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
    return { sync: () => handle.sync(), close: () => handle.close() };
  },
  touch: touchIfPresent,
  mkdir: (path) => mkdir(path, { recursive: true }),
  publish,
  syncDir,
  remove: (path) => rm(path, { force: true }),
};

// Every call runs on the event loop but the fsyncs and the two that allocate an inode (the temp
// file's creation, mkdir): those cost hundreds of µs of system CPU on some hosts (410 to 650 µs a
// file on a Firecracker VM), which on the thread pool runs beside the event loop. A failure
// rejects the promise as above.
export const SYNC_OPS: FileOps = {
  async create(path, bytes) {
    const fd = await new Promise<number>((resolve, reject) => openFile(path, "wx", 0o644, (error, fd) => (error ? reject(error) : resolve(fd))));
    try {
      for (let offset = 0; offset < bytes.byteLength; ) offset += writeSync(fd, bytes, offset, bytes.byteLength - offset);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    return { sync: () => fsyncFd(fd), close: async () => closeSync(fd) };
  },
  async touch(path) {
    // Most puts are of new bytes: asking first costs no thrown error (tens of µs) in that case.
    if (!existsSync(path)) return false;
    const now = new Date();
    try {
      utimesSync(path, now, now);
      return true;
    } catch (error) {
      if (isCode(error, "ENOENT")) return false;
      throw error;
    }
  },
  mkdir: (path) => mkdir(path, { recursive: true }),
  async publish(tempPath, finalPath) {
    try {
      linkSync(tempPath, finalPath);
      return true;
    } catch (error) {
      if (isCode(error, "EEXIST")) return false;
      if (!noHardLinks(error)) throw error;
      renameSync(tempPath, finalPath);
      return true;
    }
  },
  async syncDir(path) {
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (error) {
      if (cannotSyncDir(error)) return;
      throw error;
    }
    try {
      await fsyncFd(fd);
    } catch (error) {
      if (!cannotSyncDir(error)) throw error;
    } finally {
      closeSync(fd);
    }
  },
  async remove(path) {
    rmSync(path, { force: true });
  },
};

function fsyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (error) => (error ? reject(error) : resolve())));
}

/** Filesystem types (statfs magic numbers) reached over a network, where a synchronous call may wait for a round trip. */
const NETWORK_FILESYSTEMS = new Set([
  0x6969, // NFS
  0x517b, // SMB
  0xff534d42, // CIFS
  0xfe534d42, // SMB2
  0x65735546, // FUSE (sshfs, s3fs, ...)
  0x00c36400, // Ceph
  0x01021997, // 9P
  0x5346414f, // AFS
  0x0bd00bd0, // Lustre
  0x01161970, // GFS2
  0x7461636f, // OCFS2
]);

/** Whether `path` is on a local filesystem; false when it cannot be told. */
export function isLocalDisk(path: string): Promise<boolean> {
  return new Promise((resolve) => statfs(path, (error, stats) => resolve(!error && !NETWORK_FILESYSTEMS.has(stats.type))));
}

/** Marks an existing blob as just used (its mtime guards it from a concurrent GC); false when absent. */
export async function touchIfPresent(path: string): Promise<boolean> {
  const now = new Date();
  try {
    await utimes(path, now, now);
    return true;
  } catch (error) {
    if (isCode(error, "ENOENT")) return false;
    throw error;
  }
}

/** Makes `finalPath` name the temp file's content without replacing an existing blob; false if one was there. */
async function publish(tempPath: string, finalPath: string): Promise<boolean> {
  try {
    await link(tempPath, finalPath);
    return true;
  } catch (error) {
    if (isCode(error, "EEXIST")) return false;
    if (!noHardLinks(error)) throw error;
    await rename(tempPath, finalPath);
    return true;
  }
}

/** fsyncs a directory so that a new entry in it survives a power loss. */
async function syncDir(path: string): Promise<void> {
  let handle: FileHandle | null = null;
  try {
    handle = await open(path, "r");
    await handle.sync();
  } catch (error) {
    if (!cannotSyncDir(error)) throw error;
  } finally {
    await handle?.close();
  }
}

export async function listDir(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (error) {
    if (isCode(error, "ENOENT")) return [];
    throw error;
  }
}

export function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isCode(error, "EPERM");
  }
}

/** Filesystems without hard links: rename is still atomic, and identical content makes a replace harmless. */
function noHardLinks(error: unknown): boolean {
  return isCode(error, "EPERM") || isCode(error, "ENOTSUP") || isCode(error, "EOPNOTSUPP") || isCode(error, "EMLINK");
}

/** Some platforms cannot fsync a directory; the data itself was already synced. */
function cannotSyncDir(error: unknown): boolean {
  return isCode(error, "EISDIR") || isCode(error, "EINVAL") || isCode(error, "EPERM");
}

/** Whether `error` is a Node system error of `code`. */
export function isCode(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === code;
}
