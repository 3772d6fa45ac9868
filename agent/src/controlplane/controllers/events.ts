/**
 * controlplane/controllers/events: the event recorder the controllers share
 * (client-go's tools/record, in small), so that `kubectl describe` and
 * `kubectl get events` tell what they did.
 *
 * An `EventBroadcaster` owns the writes; each component takes a recorder
 * from it (`recorder('replicaset-controller')`) that stamps its name as
 * `source.component` and `reportingComponent`. A recorded event is a
 * core/v1 Event, written through the REST layer like any client's:
 * named `<involved name>.<hex time>` as upstream, in the involved object's
 * namespace (`default` for cluster-scoped objects), with the involved
 * object's kind, namespace, name, uid, apiVersion and resourceVersion,
 * firstTimestamp, lastTimestamp and count.
 *
 * Correlation (client-go's EventCorrelator, its logger part): an event the
 * same component already recorded about the same object, with the same
 * type, reason and message, within `windowMs` (client-go's 10 minutes) is
 * not a new Event: the existing one gets count + 1 and a new lastTimestamp
 * (a merge patch; if it was deleted meanwhile it is created again, count
 * kept). Not done here: client-go's aggregation of similar events with
 * different messages and its spam filter (a token bucket per object).
 *
 * Recording never blocks or fails the controller: writes go one at a time
 * on a queue of their own (which keeps correlation free of races), at most
 * `maxQueued` waiting (client-go's 1000; more are dropped, with a warning),
 * and a write that fails is logged, never thrown.
 */
import { ErrorCode, isNodenetError } from '../../errors/errors.js';
import { F } from '../../log/fields.js';
import type { Logger } from '../../log/log.js';
import type { Clock } from '../../reconcile/clock.js';
import { rfc3339, type Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { KObject } from '../store/types.js';

export type EventType = 'Normal' | 'Warning';

/** What a controller records with. Never throws; the write happens later. */
export interface EventRecorder {
  /**
   * Records that `reason` happened to `involved` (an object as read from the store: its apiVersion,
   * kind, metadata.name, namespace, uid and resourceVersion are what the Event refers to).
   */
  event(involved: Readonly<KObject>, type: EventType, reason: string, message: string): void;
}

/** A recorder that records nothing (a controller built without one). */
export const NO_EVENTS: EventRecorder = { event() {} };

export interface EventBroadcasterOptions {
  readonly rest: Rest;
  readonly clock: Clock;
  readonly log: Logger;
  /** How long a repeat is folded into the Event before it (default 10 minutes). */
  readonly windowMs?: number;
  /** Events remembered for correlation (default 4096, client-go's LRU size). */
  readonly cacheSize?: number;
  /** Writes that may wait (default 1000); more are dropped. */
  readonly maxQueued?: number;
}

type O = Record<string, unknown>;
const EVENTS = RESOURCES.find((r) => r.resource === 'events')!;
const str = (v: unknown) => (typeof v === 'string' ? v : '');

interface Seen {
  readonly namespace: string;
  readonly name: string;
  readonly first: string;
  count: number;
  lastMs: number;
}

interface Pending {
  readonly component: string;
  readonly host: string;
  readonly involved: O;
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
  readonly at: number;
}

export class EventBroadcaster {
  private readonly seen = new Map<string, Seen>();
  private readonly queue: Pending[] = [];
  private running = false;
  private stopped = false;
  private seq = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly o: EventBroadcasterOptions) {}

  /** A recorder for one component (`source.component`, `reportingComponent`); `host` is `source.host` / `reportingInstance`. */
  recorder(component: string, host = ''): EventRecorder {
    return { event: (involved, type, reason, message) => this.enqueue({ component, host, involved: refOf(involved), type, reason, message, at: this.o.clock.now() }) };
  }

  /** Resolves once every event recorded so far is written (or given up on). */
  idle(): Promise<void> {
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** Drops what waits and ignores later events; resolves once the write under way (if any) is done. */
  stop(): Promise<void> {
    this.stopped = true;
    this.queue.length = 0;
    return this.idle();
  }

  private enqueue(p: Pending): void {
    if (this.stopped) return;
    if (this.queue.length >= (this.o.maxQueued ?? 1000)) {
      this.o.log.warn({ [F.reason]: p.reason, [F.name]: str(p.involved['name']) }, 'events: too many waiting; event dropped');
      return;
    }
    this.queue.push(p);
    if (!this.running) {
      this.running = true;
      void this.drain();
    }
  }

  private async drain(): Promise<void> {
    try {
      for (let p = this.queue.shift(); p && !this.stopped; p = this.queue.shift()) {
        try {
          await this.write(p);
        } catch (e) {
          this.o.log.warn({ [F.err]: e, [F.reason]: p.reason, [F.kind]: str(p.involved['kind']), [F.namespace]: str(p.involved['namespace']), [F.name]: str(p.involved['name']) }, 'events: could not record an event');
        }
      }
    } finally {
      this.running = false;
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  private async write(p: Pending): Promise<void> {
    const io = p.involved;
    const key = [p.component, p.host, io['kind'], io['namespace'], io['name'], io['fieldPath'], io['uid'], io['apiVersion'], p.type, p.reason, p.message].map(str).join('\u0000');
    const now = rfc3339(p.at);
    const was = this.seen.get(key);
    if (was && p.at - was.lastMs <= (this.o.windowMs ?? 600_000)) {
      was.count++;
      was.lastMs = p.at;
      this.touch(key, was);
      try {
        await this.o.rest.patch(EVENTS, was.namespace, was.name, 'merge', { count: was.count, lastTimestamp: now, message: p.message }, { fieldManager: p.component });
        return;
      } catch (e) {
        if (!(isNodenetError(e) && e.code === ErrorCode.NotFound)) throw e;
        // Deleted meanwhile: made again under its name, with its count, as client-go does.
      }
      await this.o.rest.create(EVENTS, was.namespace, this.eventObject(p, was.namespace, was.name, was.first, now, was.count), { fieldManager: p.component });
      return;
    }
    const namespace = str(io['namespace']) || 'default';
    // `<name>.<hex>` of a nanosecond time, as upstream; the sequence keeps two events in one millisecond apart.
    const nanos = BigInt(p.at) * 1_000_000n + BigInt(this.seq++ % 1_000_000);
    const name = `${str(io['name'])}.${nanos.toString(16)}`;
    await this.o.rest.create(EVENTS, namespace, this.eventObject(p, namespace, name, now, now, 1), { fieldManager: p.component });
    this.touch(key, { namespace, name, first: now, count: 1, lastMs: p.at });
  }

  /** Remembers `key` as the most recent (a Map keeps insertion order: the oldest goes first). */
  private touch(key: string, s: Seen): void {
    this.seen.delete(key);
    this.seen.set(key, s);
    const max = this.o.cacheSize ?? 4096;
    while (this.seen.size > max) this.seen.delete(this.seen.keys().next().value as string);
  }

  private eventObject(p: Pending, namespace: string, name: string, first: string, last: string, count: number): KObject {
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: p.involved,
      reason: p.reason,
      message: p.message,
      source: { component: p.component, ...(p.host ? { host: p.host } : {}) },
      firstTimestamp: first,
      lastTimestamp: last,
      count,
      type: p.type,
      reportingComponent: p.component,
      reportingInstance: p.host,
    };
  }
}

/** The ObjectReference an Event keeps of an object (ref.GetReference). Pure. */
export function refOf(o: Readonly<KObject>): O {
  const m = (o.metadata ?? {}) as O;
  const ref: O = { kind: str(o.kind), apiVersion: str(o.apiVersion) };
  if (str(m['namespace'])) ref['namespace'] = m['namespace'];
  ref['name'] = str(m['name']);
  if (str(m['uid'])) ref['uid'] = m['uid'];
  if (str(m['resourceVersion'])) ref['resourceVersion'] = m['resourceVersion'];
  return ref;
}
