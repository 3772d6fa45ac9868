/**
 * controlplane/leaderelection: one active replica of a component (the
 * scheduler, the controller manager) among several, on a
 * `coordination.k8s.io/v1` Lease, as client-go's tools/leaderelection does
 * it (written for nodenet, with its defaults: lease 15 s, renew deadline
 * 10 s, retry 2 s).
 *
 * - Acquire: every retry period (jittered by up to 1.2×), read the Lease;
 *   take it when it is free (no holder) or its holder has not renewed it
 *   for a lease duration *as observed by this replica's clock* (the time
 *   it last saw the record change, never the renewTime written by another
 *   machine's clock), with a compare-and-swap on its resourceVersion. A
 *   lost race is just a failed try.
 * - Lead: renew every retry period; a renewal that has not succeeded for
 *   the renew deadline means the lease may be lost: the replica steps down
 *   at once (onStoppedLeading) and goes back to acquiring. (kube-controller-
 *   manager exits there; nodenet steps down, which issue 26 allows.) Every
 *   write a component makes stays a compare-and-swap of its own, so a
 *   paused ex-leader that wakes up writes nothing stale.
 * - stop() releases a held lease (holder cleared, duration 1 s), so a
 *   standby takes over at its next retry instead of after 15 s.
 *
 * The Lease goes through a LeaseLock: the REST layer in the control plane
 * (RestLeaseLock), a fake in tests.
 */
import { F } from '../../lib/log/fields.js';
import { silentLogger, type Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';

/** The Lease's spec, as leader election reads and writes it. */
export interface LeaderRecord {
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  /** RFC 3339 with microseconds (a MicroTime). */
  readonly acquireTime: string;
  readonly renewTime: string;
  readonly leaseTransitions: number;
}

export interface LeaseLock {
  /** The record and its resourceVersion, or null when the Lease does not exist. */
  get(): Promise<{ readonly record: LeaderRecord; readonly resourceVersion: string } | null>;
  /** @throws when it exists already (a lost race) */
  create(record: LeaderRecord): Promise<void>;
  /** Compare-and-swap on resourceVersion. @throws on a conflict */
  update(record: LeaderRecord, resourceVersion: string): Promise<void>;
  /** `kube-system/kube-scheduler`, for logs. */
  readonly describe: string;
}

export interface LeaderElectorOptions {
  readonly lock: LeaseLock;
  /** This replica's name (client-go: hostname + a unique suffix). */
  readonly identity: string;
  readonly clock: Clock;
  readonly log?: Logger;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  /** Leading begins: start acting. */
  readonly onStartedLeading: () => void | Promise<void>;
  /** Leading ended (lost or released): stop acting now. */
  readonly onStoppedLeading: () => void | Promise<void>;
  /** Another holder was observed (or this one). */
  readonly onNewLeader?: (identity: string) => void;
  /** Jitter source (tests). Default Math.random. */
  readonly random?: () => number;
}

export const DEFAULT_LEASE_DURATION_MS = 15_000;
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;

/** A MicroTime as the API writes it: RFC 3339 with six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private readonly leaseMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryMs: number;
  private readonly log: Logger;
  private readonly random: () => number;
  private timer: unknown = null;
  private running = false;
  private leading = false;
  /** The last record seen, its resourceVersion, and when (this clock) it last changed. */
  private observed: { record: LeaderRecord; resourceVersion: string; at: number } | null = null;
  private lastRenew = 0;
  private lastLeader = '';
  private busy: Promise<void> = Promise.resolve();
  /** The last failed try's error (its code, or its message), warned once (null: the last try went through). */
  private lastFailure: string | null = null;

  constructor(private readonly o: LeaderElectorOptions) {
    this.leaseMs = o.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS;
    this.renewDeadlineMs = o.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
    this.retryMs = o.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS;
    if (!(this.leaseMs > this.renewDeadlineMs && this.renewDeadlineMs > this.retryMs * 1.2)) {
      throw new Error('leader election: leaseDuration must exceed renewDeadline, which must exceed retryPeriod × 1.2 (client-go\'s rule)');
    }
    this.log = (o.log ?? silentLogger()).child({ [F.subsys]: 'controlplane/leader-election', lease: o.lock.describe, identity: o.identity });
    this.random = o.random ?? Math.random;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** The holder last observed ('' for none). */
  get leader(): string {
    return this.lastLeader;
  }

  /** Starts trying to acquire: the first try at once (resolved when it is done: leading or not), then every retry period. */
  start(): Promise<void> {
    if (this.running) return this.busy;
    this.running = true;
    return this.loop();
  }

  /** Stops; a held lease is released and onStoppedLeading called. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.busy;
    if (this.leading) {
      await this.release().catch((e: unknown) => this.log.warn({ [F.err]: e }, 'releasing the lease failed; it expires on its own'));
      await this.stepDown('stopped');
    }
  }

  /** One round, then the next one scheduled (while running): a retry period when leading, jittered up to 1.2× when not. */
  private loop(): Promise<void> {
    this.busy = this.round().finally(() => {
      const ms = this.leading ? this.retryMs : this.retryMs * (1 + 0.2 * this.random());
      if (!this.running) return;
      this.timer = this.o.clock.setTimeout(() => {
        this.timer = null;
        void this.loop();
      }, ms);
    });
    return this.busy;
  }

  private async round(): Promise<void> {
    if (!this.running) return;
    // A leader whose last renewal is older than the deadline (it was paused, or its calls hung) stops acting before it
    // tries anything: the lease may be another's by now.
    if (this.leading && this.o.clock.now() - this.lastRenew >= this.renewDeadlineMs) await this.stepDown('renew deadline passed');
    const ok = await this.tryAcquireOrRenew().then((r) => {
      if (this.lastFailure !== null) this.log.info('lease tries succeed again');
      this.lastFailure = null;
      return r;
    }, (e: unknown) => {
      // client-go logs each failed try and retries; here a failure is a warning when it differs from the last one
      // (a 403 until RBAC is seen, the API not reachable yet), its repeats debug: visible, never a flood, never an exit.
      // The same failure is its code (an HTTP status, ECONNREFUSED) when it has one: a message may carry a Date header.
      const msg = e instanceof Error ? e.message : String(e);
      const code = (e as { code?: unknown } | null)?.code;
      const key = typeof code === 'number' || typeof code === 'string' ? String(code) : msg;
      if (key !== this.lastFailure) this.log.warn({ [F.err]: msg }, 'lease try failed; retrying every retry period');
      else this.log.debug({ [F.err]: msg }, 'lease try failed');
      this.lastFailure = key;
      return false;
    });
    const now = this.o.clock.now();
    if (ok) {
      this.lastRenew = now;
      if (!this.leading && this.running) {
        this.leading = true;
        this.log.info('became leader');
        await this.o.onStartedLeading();
      }
      return;
    }
    if (this.leading && now - this.lastRenew >= this.renewDeadlineMs) {
      this.log.warn({ [F.durationMs]: now - this.lastRenew }, 'could not renew the lease within the renew deadline; stepping down');
      await this.stepDown('lost');
    }
  }

  private async stepDown(why: string): Promise<void> {
    if (!this.leading) return;
    this.leading = false;
    this.log.info({ [F.reason]: why }, 'stopped leading');
    await this.o.onStoppedLeading();
  }

  /** client-go's tryAcquireOrRenew. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.o.clock.now();
    const me = this.o.identity;
    const fresh = (acquireTime: string, transitions: number): LeaderRecord => ({
      holderIdentity: me, leaseDurationSeconds: Math.ceil(this.leaseMs / 1000), acquireTime, renewTime: microTime(now), leaseTransitions: transitions,
    });
    const cur = await this.o.lock.get();
    if (!cur) {
      await this.o.lock.create(fresh(microTime(now), 0));
      this.observe(fresh(microTime(now), 0), '', now);
      return true;
    }
    if (!this.observed || this.observed.resourceVersion !== cur.resourceVersion) this.observe(cur.record, cur.resourceVersion, now);
    const r = cur.record;
    const held = r.holderIdentity !== '' && r.holderIdentity !== me;
    if (held && this.observed!.at + r.leaseDurationSeconds * 1000 > now) return false;
    const next = r.holderIdentity === me ? fresh(r.acquireTime, r.leaseTransitions) : fresh(microTime(now), r.leaseTransitions + 1);
    await this.o.lock.update(next, cur.resourceVersion);
    return true;
  }

  private observe(record: LeaderRecord, resourceVersion: string, at: number): void {
    this.observed = { record, resourceVersion, at };
    if (record.holderIdentity !== this.lastLeader) {
      this.lastLeader = record.holderIdentity;
      if (record.holderIdentity) this.o.onNewLeader?.(record.holderIdentity);
    }
  }

  /** Clears the holder so a standby need not wait for the lease to expire. */
  private async release(): Promise<void> {
    const cur = await this.o.lock.get();
    if (!cur || cur.record.holderIdentity !== this.o.identity) return;
    const now = microTime(this.o.clock.now());
    await this.o.lock.update({ holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: cur.record.leaseTransitions }, cur.resourceVersion);
    this.log.info('released the lease');
  }
}
