/**
 * reconcile/sync-runner: kube-proxy's BoundedFrequencyRunner for an async
 * function, on an injected Clock.
 *
 * - request() asks for a run as soon as allowed; requests coalesce: any
 *   number of them before the run starts give one run, and requests during
 *   a run give exactly one more run after it.
 * - minIntervalMs: at least this long from the end of one run to the start
 *   of the next (retries and periodic runs included), so an event storm
 *   costs one sync per interval, not one per event. No burst allowance.
 * - maxIntervalMs: a run happens at least this often even with no request
 *   (the periodic resync that repairs drift).
 * - retryAfter(ms): run again no later than ms from now (the earliest of
 *   several wins, still bounded by minIntervalMs); any run that starts
 *   afterwards satisfies it, a retry asked for during a run is kept for
 *   after it.
 * Runs never overlap. Nothing runs before start() or after stop(). A run
 * that throws is logged; the function is expected to handle its own errors.
 */
import type { Logger } from '../log/log.js';
import type { Clock } from './clock.js';

export interface SyncRunnerOptions {
  readonly fn: () => Promise<void>;
  readonly clock: Clock;
  readonly minIntervalMs: number;
  readonly maxIntervalMs: number;
  readonly log?: Logger;
}

export class BoundedFrequencyRunner {
  private started = false;
  private stopped = false;
  private startedAt = 0;
  private running = false;
  private pendingRequest = false;
  private retryAt: number | null = null;
  private lastRunEnd: number | null = null;
  private timer: unknown = null;
  private timerAt: number | null = null;
  private runCount = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly opts: SyncRunnerOptions) {
    if (!(opts.minIntervalMs >= 0) || !(opts.maxIntervalMs > 0)) throw new RangeError('intervals must be minIntervalMs >= 0, maxIntervalMs > 0');
    if (opts.maxIntervalMs < opts.minIntervalMs) {
      throw new RangeError(`maxIntervalMs (${opts.maxIntervalMs}) must be >= minIntervalMs (${opts.minIntervalMs})`);
    }
  }

  /** Starts scheduling: pending requests run, and the periodic run is armed. Idempotent. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.startedAt = this.opts.clock.now();
    this.schedule();
  }

  /** No run starts after this; a run in progress completes. Idempotent. */
  stop(): void {
    this.stopped = true;
    this.disarm();
  }

  /** Asks for a run as soon as minIntervalMs allows. Cheap; call on every event. */
  request(): void {
    this.pendingRequest = true;
    this.schedule();
  }

  /** Ensures a run no later than ms from now (bounded by minIntervalMs). */
  retryAfter(ms: number): void {
    const at = this.opts.clock.now() + Math.max(0, ms);
    this.retryAt = this.retryAt === null ? at : Math.min(this.retryAt, at);
    this.schedule();
  }

  /** Number of runs started so far. */
  get runs(): number {
    return this.runCount;
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Clock time the next run is armed for, null if none (not started, stopped, or running). */
  get nextRunAt(): number | null {
    return this.timerAt;
  }

  /** Resolves when no run is in progress. */
  whenIdle(): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private schedule(): void {
    if (!this.started || this.stopped || this.running) return;
    const now = this.opts.clock.now();
    let at = (this.lastRunEnd ?? this.startedAt) + this.opts.maxIntervalMs;
    if (this.pendingRequest) at = Math.min(at, now);
    if (this.retryAt !== null) at = Math.min(at, this.retryAt);
    if (this.lastRunEnd !== null) at = Math.max(at, this.lastRunEnd + this.opts.minIntervalMs);
    if (this.timer !== null && this.timerAt === at) return;
    this.disarm();
    this.timerAt = at;
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = null;
      this.timerAt = null;
      void this.run();
    }, Math.max(0, at - now));
  }

  private disarm(): void {
    if (this.timer !== null) this.opts.clock.clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = null;
  }

  private async run(): Promise<void> {
    if (this.stopped || this.running) return;
    this.running = true;
    this.pendingRequest = false;
    this.retryAt = null;
    this.runCount++;
    try {
      await this.opts.fn();
    } catch (err) {
      this.opts.log?.error({ err }, 'sync function threw');
    } finally {
      this.lastRunEnd = this.opts.clock.now();
      this.running = false;
      for (const w of this.idleWaiters.splice(0)) w();
      this.schedule();
    }
  }
}
