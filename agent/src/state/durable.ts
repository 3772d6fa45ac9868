/**
 * state/durable: the one way the agent replaces a state file. A reader sees
 * the old content or the new one, never a mix, and once the call returns the
 * new content survives a crash or a power loss:
 *   1. write a temp file next to the target (same directory, so rename is
 *      atomic), named `.<name>.<pid>.<n>.tmp` so concurrent writers in one
 *      process or several never share one;
 *   2. fsync it;
 *   3. rename it over the target;
 *   4. fsync the directory, which makes the rename itself durable.
 * A failure removes the temp file. The parent directory is created (0700)
 * when missing.
 *
 * The sync variant is for start-up and CLI paths; the agent's request paths
 * (CNI ADD/DEL records) use the async one, whose fsyncs run on libuv's
 * thread pool instead of blocking the event loop.
 *
 * Exceptions: the IPAM store (ipam/disk-store.ts) reserves with link(), not
 * rename, because it must fail when the IP is taken; the shim's deletion
 * queue (cni/src/del-queue.ts) writes the same way but may import only
 * proto/.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export interface DurableOptions {
  /** File mode of the new file (default 0o600). */
  readonly mode?: number;
}

let seq = 0;
function tmpName(file: string): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.${seq++}.tmp`);
}

export function writeFileDurable(file: string, data: string | Uint8Array, opts: DurableOptions = {}): void {
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = tmpName(file);
  try {
    const fd = openSync(tmp, 'wx', opts.mode ?? 0o600);
    try {
      writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  const dfd = openSync(dir, 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
}

export async function writeFileDurableAsync(file: string, data: string | Uint8Array, opts: DurableOptions = {}): Promise<void> {
  const dir = dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = tmpName(file);
  try {
    const fh = await open(tmp, 'wx', opts.mode ?? 0o600);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  const dh = await open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/** Whether a directory entry is one of this module's temp files (for cleanups that list a state directory). */
export function isDurableTemp(name: string): boolean {
  return name.startsWith('.') && name.endsWith('.tmp');
}
