/**
 * A Clock whose time moves only when a test says so. advance(ms) fires due
 * timers in time order (ties in creation order), setting now() to each
 * timer's due time, and lets the async work they start settle before the
 * next one, so "run, then schedule the next run" chains behave as in real
 * time. Rejects negative delays and unknown handles (what setTimeout would
 * silently accept is a bug in the code under test here).
 */
import type { Clock } from './clock.js';

interface Timer {
  readonly id: number;
  readonly at: number;
  readonly fn: () => void;
}

/** Lets pending promise chains run (fakes resolve without I/O). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
}

export class FakeClock implements Clock {
  private t: number;
  private nextId = 1;
  private timers: Timer[] = [];

  constructor(start = 1_000_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`FakeClock.setTimeout: bad delay ${ms}`);
    const id = this.nextId++;
    this.timers.push({ id, at: this.t + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    if (typeof handle !== 'number' || handle <= 0 || handle >= this.nextId) throw new TypeError(`FakeClock.clearTimeout: not a handle of this clock: ${String(handle)}`);
    this.timers = this.timers.filter((x) => x.id !== handle);
  }

  /** Number of pending timers. */
  get pending(): number {
    return this.timers.length;
  }

  /** Due time of the earliest pending timer, null if none. */
  nextAt(): number | null {
    let best: number | null = null;
    for (const x of this.timers) if (best === null || x.at < best) best = x.at;
    return best;
  }

  /** Moves time forward by ms, firing every timer due on the way, and settles async work. */
  async advance(ms: number): Promise<void> {
    if (ms < 0) throw new RangeError('FakeClock.advance: negative');
    const target = this.t + ms;
    await settle();
    for (;;) {
      const due = this.timers.filter((x) => x.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x.id !== due.id);
      this.t = Math.max(this.t, due.at);
      due.fn();
      await settle();
    }
    this.t = target;
  }
}
