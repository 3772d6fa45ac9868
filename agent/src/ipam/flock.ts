/**
 * ipam/flock: an exclusive flock(2) on an open file, bound with koffi (Node
 * has no flock). The kernel drops the lock when the file is closed or the
 * process dies, even by SIGKILL, so a crashed agent never leaves the store
 * locked: that is why this, not a pid lock file, guards the disk store.
 *
 * Taken with LOCK_NB and polled with backoff, so the event loop never blocks.
 */
import koffi from 'koffi';
import { getSystemErrorName } from 'node:util';
import { TryAgainLaterError } from '../errors/errors.js';
import { ipamStoreError } from './ipam-errors.js';

const LOCK_EX = 2;
const LOCK_NB = 4;
const EINTR = 4;
const EWOULDBLOCK = 11;

let flockFn: ((fd: number, op: number) => number) | undefined;

function flock(fd: number, op: number): number {
  if (!flockFn) {
    const f = koffi.load('libc.so.6').func('int flock(int fd, int operation)');
    flockFn = (a, b) => Number(f(a, b));
  }
  return flockFn(fd, op);
}

/**
 * Take an exclusive flock on `fd`, waiting up to timeoutMs while another
 * open file description holds it. Released by closing fd.
 * @throws TryAgainLaterError (CNI 11) on timeout; IpamStore on any other errno.
 */
export async function lockExclusive(fd: number, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let wait = 1;
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) === 0) return;
    const errno = Number(koffi.errno());
    if (errno !== EWOULDBLOCK && errno !== EINTR) {
      throw ipamStoreError(`flock ${what}: ${safeErrnoName(errno)}`);
    }
    if (Date.now() >= deadline) throw new TryAgainLaterError(`ipam store ${what} is locked by another process (waited ${timeoutMs} ms)`);
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 50);
  }
}

function safeErrnoName(errno: number): string {
  try {
    return getSystemErrorName(-errno);
  } catch {
    return `errno ${errno}`;
  }
}
