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
}

const QUICK: ReadonlySet<string> = new Set([ErrorCode.Conflict, ErrorCode.NotFound, ErrorCode.AlreadyExists]);

export class WorkQueue {
  private readonly queue = new Set<string>();
  private readonly timers = new Set<unknown>();
  private running = false;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly o: WorkQueueOptions) {}

  add(key: string): void {
    if (this.stopped) return;
    this.queue.add(key);
    this.kick();
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
    for (const t of this.timers) this.o.clock.clearTimeout(t);
    this.timers.clear();
    for (const w of this.idleWaiters.splice(0)) w();
  }

  private kick(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    void this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (!this.stopped && this.queue.size) {
        const key = this.queue.values().next().value as string;
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
