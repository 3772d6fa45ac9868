/**
 * state/flock: an exclusive flock(2) on an open file, bound with koffi (Node
 * has no flock). The kernel drops the lock when the file is closed or the
 * process dies, even by SIGKILL, so a crashed process never leaves it held:
 * that is why this, not a pid file, guards the IPAM store and the control
 * plane's data directory.
 */
import koffi from 'koffi';
import { getSystemErrorName } from 'node:util';

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
 * Takes an exclusive flock on `fd` without waiting. Released by closing fd.
 * @returns false when another open file description holds it
 * @throws Error naming the errno for any other failure
 */
export function tryLockExclusive(fd: number): boolean {
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) === 0) return true;
    const errno = Number(koffi.errno());
    if (errno === EWOULDBLOCK) return false;
    if (errno !== EINTR) throw new Error(`flock: ${errnoName(errno)}`);
  }
}

export function errnoName(errno: number): string {
  try {
    return getSystemErrorName(-errno);
  } catch {
    return `errno ${errno}`;
  }
}
