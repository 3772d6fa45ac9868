/**
 * controlplane/controllers/event-ttl: Events expire, as kube-apiserver's
 * `--event-ttl` (default 1 h) makes them expire.
 *
 * Upstream writes every Event on an etcd lease of that TTL, renewed by each
 * write, so an Event goes a TTL after it last changed. Neither backend here
 * has such a lease (SQLite has none at all), so the expiry is a sweep
 * instead, the same on both: every minute, each Event whose last update is a
 * TTL old is deleted. Its last update is the latest of the times it carries
 * (what `kubectl get events` shows as LAST SEEN): `lastTimestamp`,
 * `eventTime`, `series.lastObservedTime`, and `metadata.creationTimestamp`
 * (which the server sets, so an Event with no or bad times of its own still
 * goes a TTL after it was made). An Event written with a time in the future
 * lives until that time plus the TTL, as it would be shown until then.
 *
 * Each delete is conditional on the resourceVersion the sweep read: a
 * repeat that updated the Event meanwhile (a new lastTimestamp, count + 1)
 * wins and keeps it. The sweep reads the watch cache (memory, no backend
 * round trip) and writes through the REST layer, so watchers see the
 * deletions and the cache shrinks with the store.
 *
 * It runs in the controller manager, behind its leader election, so that
 * several API servers sharing one etcd do not all delete the same Events.
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { obj } from '../../lib/json/loose.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import type { RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { KObject, Stored } from '../store/types.js';
import type { WatchCache } from '../store/watch-cache.js';

const EVENTS = RESOURCES.find((r) => r.resource === 'events')!;
/** kube-apiserver's --event-ttl default. */
export const DEFAULT_EVENT_TTL_MS = 3_600_000;
/** How often Events are looked at. */
export const DEFAULT_EVENT_SWEEP_EVERY_MS = 60_000;

export interface EventTtlOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  readonly ttlMs?: number;
  readonly everyMs?: number;
}

const timeOf = (v: unknown): number => {
  const t = typeof v === 'string' ? Date.parse(v) : NaN;
  return Number.isNaN(t) ? -Infinity : t;
};

/** An Event's last update (ms): the latest of the times it carries; -Infinity when it has none. Pure. */
export function lastUpdate(ev: Readonly<KObject>): number {
  return Math.max(
    timeOf(ev['lastTimestamp']),
    timeOf(ev['eventTime']),
    timeOf(obj(ev['series'])?.['lastObservedTime']),
    timeOf(ev.metadata?.['creationTimestamp']),
  );
}

/** The Events whose last update is at least `ttlMs` before `now`. Pure. */
export function expired(events: readonly Stored[], now: number, ttlMs: number): Stored[] {
  return events.filter((s) => now - lastUpdate(s.object) >= ttlMs);
}

export class EventTtl {
  private readonly ttlMs: number;
  private timer: unknown = null;
  private running = false;
  private stopped = false;
  private busy: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: EventTtlOptions) {
    this.ttlMs = o.ttlMs ?? DEFAULT_EVENT_TTL_MS;
  }

  /** Sweeps at once (without waiting for it), then every minute. */
  start(): void {
    this.running = true;
    this.tick();
  }

  /** No sweep after this; resolves once the one under way (if any) is done. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopped = true;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.busy;
  }

  /** Resolves once the sweep under way (if any) is done (tests). */
  async idle(): Promise<void> {
    await this.busy;
  }

  private tick(): void {
    this.busy = this.sweep()
      .catch((e: unknown) => this.o.log.warn({ [F.err]: e instanceof Error ? e.message : String(e) }, 'expiring Events failed; retrying at the next sweep'))
      .finally(() => {
        if (this.running) this.timer = this.o.clock.setTimeout(() => {
          this.timer = null;
          this.tick();
        }, this.o.everyMs ?? DEFAULT_EVENT_SWEEP_EVERY_MS);
      });
  }

  /** Deletes the Events a TTL old; returns how many went. */
  async sweep(): Promise<number> {
    let deleted = 0;
    for (const s of expired(this.o.cache.list('events').items, this.o.clock.now(), this.ttlMs)) {
      if (this.stopped) break;
      const m = s.object.metadata ?? {};
      try {
        await this.o.rest.delete(EVENTS, String(m['namespace'] ?? ''), String(m['name'] ?? ''), { preconditions: { resourceVersion: String(s.rev) } });
        deleted++;
      } catch (e) {
        // Updated meanwhile (a repeat: it lives on), or already gone.
        if (isNodenetError(e) && (e.code === ErrorCode.Conflict || e.code === ErrorCode.NotFound)) continue;
        throw e;
      }
    }
    if (deleted) this.o.log.info({ [F.count]: deleted }, `Events not updated for ${this.ttlMs / 1000}s (--event-ttl) deleted`);
    return deleted;
  }
}
