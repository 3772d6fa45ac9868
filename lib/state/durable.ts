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
 * (CNI ADD/DEL records) use the async one, whose two fsyncs run on libuv's
 * thread pool instead of blocking the event loop. Its other calls (open,
 * write of a few hundred bytes, rename) stay synchronous: each takes
 * microseconds, while a thread-pool round trip costs 60-400 us under load
 * (as the IPAM disk store found).
 *
 * Exceptions: the IPAM store (ipam/disk-store.ts) reserves with link(), not
 * rename, because it must fail when the IP is taken; the shim's deletion
 * queue (cni/delqueue.c) writes the same way, in C.
 */
import { closeSync, fsync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { basename, dirname, join } from 'node:path';

export interface DurableOptions {
  /** File mode of the new file (default 0o600). */
  readonly mode?: number;
}

const fsyncAsync = promisify(fsync);

let seq = 0;
function tmpName(file: string): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.${seq++}.tmp`);
}

/** Steps 1 and 3 around a caller's fsyncs: the temp file written (fd open), then renamed over the target. */
function staged(file: string, data: string | Uint8Array, mode: number): { fd: number; commit(): void; abort(): void } {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = tmpName(file);
  const fd = openSync(tmp, 'wx', mode);
  let open = true;
  const close = () => {
    if (open) closeSync(fd);
    open = false;
  };
  try {
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
  } catch (e) {
    close();
    rmSync(tmp, { force: true });
    throw e;
  }
  return {
    fd,
    commit() {
      close();
      try {
        renameSync(tmp, file);
      } catch (e) {
        rmSync(tmp, { force: true });
        throw e;
      }
    },
    abort() {
      close();
      rmSync(tmp, { force: true });
    },
  };
}

export function writeFileDurable(file: string, data: string | Uint8Array, opts: DurableOptions = {}): void {
  const st = staged(file, data, opts.mode ?? 0o600);
  try {
    fsyncSync(st.fd);
  } catch (e) {
    st.abort();
    throw e;
  }
  st.commit();
  const dfd = openSync(dirname(file), 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
}

export async function writeFileDurableAsync(file: string, data: string | Uint8Array, opts: DurableOptions = {}): Promise<void> {
  const st = staged(file, data, opts.mode ?? 0o600);
  try {
    await fsyncAsync(st.fd);
  } catch (e) {
    st.abort();
    throw e;
  }
  st.commit();
  const dfd = openSync(dirname(file), 'r');
  try {
    await fsyncAsync(dfd);
  } finally {
    closeSync(dfd);
  }
}

/** Whether a directory entry is one of this module's temp files (for cleanups that list a state directory). */
export function isDurableTemp(name: string): boolean {
  return name.startsWith('.') && name.endsWith('.tmp');
}
