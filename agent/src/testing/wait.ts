/**
 * testing/wait: wait for the event a test depends on, not for a fixed time.
 * Polls `cond` until it holds and fails naming what it waited for after the
 * deadline, so a slow machine only makes a test slower, never wrong.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** Default timeouts stretch by NODENET_TEST_TIME_SCALE (an emulated VM: test-vm/ under qemu TCG). */
export const timeScale = (): number => Number(process.env['NODENET_TEST_TIME_SCALE']) || 1;

export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, opts: { timeoutMs?: number; intervalMs?: number } = {}): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 10_000 * timeScale();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(opts.intervalMs ?? 20);
  }
}
