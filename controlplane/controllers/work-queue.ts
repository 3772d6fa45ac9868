/**
 * controlplane/controllers/work-queue: the loop every controller runs
 * (client-go's workqueue, in small): keys de-duplicated while they wait,
 * one worked on at a time, a failed one tried again later (at once after a
 * Conflict, NotFound or AlreadyExists: the next read sees the newer
 * object), `idle()` for tests, `stop()` for good.
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';

export interface WorkQueueOptions {
  /** For the log: "garbage collector", "endpointslice controller" ... */
  readonly name: string;
  readonly clock: Clock;
  readonly log: Logger;
  readonly process: (key: string) => Promise<void>;
  /** Delay before a failed key is tried again (default 500 ms). */
  readonly retryMs?: number;
  /**
   * The order keys are worked on: the higher first, equals in the order they came (the scheduler's PrioritySort).
   * Read when a key is added. Absent: first in, first out.
   */
  readonly priority?: (key: string) => number;
}

/** A binary heap of keys by (priority desc, arrival asc). */
class KeyHeap {
  private readonly h: { key: string; prio: number; seq: number }[] = [];
  private seq = 0;
  get size(): number {
    return this.h.length;
  }
  push(key: string, prio: number): void {
    this.h.push({ key, prio, seq: this.seq++ });
    let i = this.h.length - 1;
    while (i > 0) {
      const up = (i - 1) >> 1;
      if (!this.before(i, up)) break;
      [this.h[i], this.h[up]] = [this.h[up]!, this.h[i]!];
      i = up;
    }
  }
  pop(): string {
    const top = this.h[0]!;
    const last = this.h.pop()!;
    if (this.h.length) {
      this.h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < this.h.length && this.before(l, m)) m = l;
        if (r < this.h.length && this.before(r, m)) m = r;
        if (m === i) break;
        [this.h[i], this.h[m]] = [this.h[m]!, this.h[i]!];
        i = m;
      }
    }
    return top.key;
  }
  clear(): void {
    this.h.length = 0;
  }
  private before(a: number, b: number): boolean {
    const x = this.h[a]!;
    const y = this.h[b]!;
    return x.prio !== y.prio ? x.prio > y.prio : x.seq < y.seq;
  }
}

const QUICK: ReadonlySet<string> = new Set([ErrorCode.Conflict, ErrorCode.NotFound, ErrorCode.AlreadyExists]);

export class WorkQueue {
  private readonly queue = new Set<string>();
  /** With `priority`: the queued keys in order (each also in `queue`). */
  private readonly heap: KeyHeap | null;
  private readonly timers = new Set<unknown>();
  private running = false;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly o: WorkQueueOptions) {
    this.heap = o.priority ? new KeyHeap() : null;
  }

  add(key: string): void {
    if (this.stopped) return;
    if (this.queue.has(key)) return;
    this.queue.add(key);
    this.heap?.push(key, this.o.priority!(key));
    this.kick();
  }

  /** How many keys wait. */
  get length(): number {
    return this.queue.size;
  }

  /** Adds `key` after `ms` (a condition that only time changes, such as minReadySeconds). */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    const t = this.o.clock.setTimeout(() => {
      this.timers.delete(t);
      this.add(key);
    }, ms);
    this.timers.add(t);
  }

  /** Resolves when nothing waits and nothing is being worked on (retries scheduled for later aside). */
  idle(): Promise<void> {
    if (!this.running && this.queue.size === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  stop(): void {
    this.stopped = true;
    this.queue.clear();
    this.heap?.clear();
    for (const t of this.timers) this.o.clock.clearTimeout(t);
    this.timers.clear();
    for (const w of this.idleWaiters.splice(0)) w();
  }

  private kick(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    // With a priority, keys added together (one event bringing back many) are ordered before the first is taken.
    if (this.heap) queueMicrotask(() => void this.drain());
    else void this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (!this.stopped && this.queue.size) {
        const key = this.heap ? this.heap.pop() : (this.queue.values().next().value as string);
        this.queue.delete(key);
        try {
          await this.o.process(key);
        } catch (e) {
          if (this.stopped) break;
          const quick = isNodenetError(e) && QUICK.has(e.code);
          if (!quick) this.o.log.warn({ [F.err]: e, key }, `${this.o.name}: will retry`);
          this.addAfter(key, quick ? 0 : (this.o.retryMs ?? 500));
        }
      }
    } finally {
      this.running = false;
      if (this.queue.size && !this.stopped) this.kick();
      else for (const w of this.idleWaiters.splice(0)) w();
    }
  }
}
