/**
 * ipam/flock: the IPAM store's lock, an exclusive flock(2) (state/flock.ts:
 * dropped by the kernel when the process dies, even by SIGKILL, so a crashed
 * agent never leaves the store locked), waited for with backoff so the
 * event loop never blocks.
 */
import { TryAgainLaterError } from '../../../lib/errors/errors.js';
import { tryLockExclusive } from '../../../lib/state/flock.js';
import { ipamStoreError } from './ipam-errors.js';

/**
 * Take an exclusive flock on `fd`, waiting up to timeoutMs while another
 * open file description holds it. Released by closing fd.
 * @throws TryAgainLaterError (CNI 11) on timeout; IpamStore on any other errno.
 */
export async function lockExclusive(fd: number, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let wait = 1;
  for (;;) {
    let locked: boolean;
    try {
      locked = tryLockExclusive(fd);
    } catch (e) {
      throw ipamStoreError(`${e instanceof Error ? e.message.replace(/^flock/, `flock ${what}`) : String(e)}`);
    }
    if (locked) return;
    if (Date.now() >= deadline) throw new TryAgainLaterError(`ipam store ${what} is locked by another process (waited ${timeoutMs} ms)`);
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 50);
  }
}
