/**
 * testing/wait: wait for the event a test depends on, not for a fixed time.
 * Polls `cond` until it holds and fails naming what it waited for after the
 * deadline, so a slow machine only makes a test slower, never wrong.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${opts.timeoutMs ?? 10_000} ms waiting for ${what}`);
    await sleep(opts.intervalMs ?? 20);
  }
}
