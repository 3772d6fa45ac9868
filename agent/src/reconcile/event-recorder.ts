/**
 * reconcile/event-recorder: core/v1 Events from the agent's own components
 * (the proxy and the overlay tell the user about objects they cannot use),
 * client-go's tools/record in small, over an injected sink.
 *
 * The sink is the HTTP path the embedded kubelet already writes its Events
 * with (pods/kubelet-api.ts: createEvent, patchEvent as a merge patch);
 * node/compose.ts hands it in when the agent watches an API server. With no
 * API (the manifest directory) there is no recorder (NO_EVENTS).
 *
 * An Event is named `<involved name>.<hex nanoseconds>` as upstream, lives in
 * the involved object's namespace (`default` for cluster-scoped objects such
 * as Nodes, as the kubelet's node Events), and carries source.component /
 * reportingComponent = the component and source.host / reportingInstance =
 * this node.
 *
 * Correlation, in client-go's spirit (EventCorrelator):
 * - the same event again (same involved object, type, reason, message) within
 *   windowMs (client-go's 10 minutes) is a count + 1 and a new lastTimestamp
 *   on the Event before it (a merge patch; one deleted meanwhile, or expired
 *   by the API server's TTL, is created again with its count);
 * - a token bucket per involved object (client-go's spam filter: burst 25, one
 *   token back every 5 minutes) drops the rest, with a debug line.
 * Recording never blocks or throws: writes run one at a time on a queue of
 * their own (at most maxQueued waiting, client-go's 1000), and a write that
 * fails is logged.
 */
import { F } from '../log/fields.js';
import type { Logger } from '../log/log.js';
import type { Clock } from './clock.js';

export type EventType = 'Normal' | 'Warning';

/** The object an Event is about (core/v1 ObjectReference). */
export interface ObjectReference {
  readonly kind: string;
  readonly apiVersion: string;
  /** Absent for cluster-scoped objects (Nodes). */
  readonly namespace?: string;
  readonly name: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
}

/** What a component records with. Never throws; the write happens later (or never: no API). */
export interface EventRecorder {
  event(involved: ObjectReference, type: EventType, reason: string, message: string): void;
}

/** A recorder that records nothing: the agent watches no API. */
export const NO_EVENTS: EventRecorder = { event() {} };

/** Where Events go: the API server's events resource (pods/kubelet-api.ts's calls satisfy it). */
export interface EventSink {
  createEvent(namespace: string, event: Record<string, unknown>): Promise<void>;
  /** A merge patch. A missing Event is an error whose `code` is 404. */
  patchEvent(namespace: string, name: string, patch: Record<string, unknown>): Promise<void>;
}

export interface ApiEventRecorderOptions {
  readonly sink: EventSink;
  /** source.component and reportingComponent, e.g. nodenet-proxy. */
  readonly component: string;
  /** source.host and reportingInstance: this node's name. */
  readonly host: string;
  readonly clock: Clock;
  readonly log: Logger;
  /** How long a repeat counts on the Event before it (default 10 minutes). */
  readonly windowMs?: number;
  /** Events remembered for correlation (default 4096, client-go's LRU size). */
  readonly cacheSize?: number;
  /** Writes that may wait (default 1000); more are dropped. */
  readonly maxQueued?: number;
  /** The spam filter: events per object at once (default 25) and ms per token back (default 300,000). */
  readonly burst?: number;
  readonly refillMs?: number;
}

interface Seen {
  readonly namespace: string;
  readonly name: string;
  readonly first: string;
  count: number;
  lastMs: number;
}

interface Pending {
  readonly involved: ObjectReference;
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
  readonly at: number;
}

/** RFC 3339 with seconds, as the API's timestamps. */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function isNotFound(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 404;
}

export class ApiEventRecorder implements EventRecorder {
  private readonly seen = new Map<string, Seen>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly queue: Pending[] = [];
  private running = false;
  private stopped = false;
  private seq = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly o: ApiEventRecorderOptions) {}

  event(involved: ObjectReference, type: EventType, reason: string, message: string): void {
    if (this.stopped) return;
    const at = this.o.clock.now();
    if (!this.take(involved, at)) {
      this.o.log.debug({ [F.kind]: involved.kind, [F.name]: involved.name, [F.reason]: reason }, 'events: too many about this object; event dropped');
      return;
    }
    if (this.queue.length >= (this.o.maxQueued ?? 1000)) {
      this.o.log.warn({ [F.kind]: involved.kind, [F.name]: involved.name, [F.reason]: reason }, 'events: too many waiting; event dropped');
      return;
    }
    this.queue.push({ involved, type, reason, message, at });
    if (!this.running) {
      this.running = true;
      void this.drain();
    }
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

  /** The spam filter's token bucket for the involved object. */
  private take(io: ObjectReference, now: number): boolean {
    const key = `${io.kind}\u0000${io.namespace ?? ''}\u0000${io.name}\u0000${io.uid ?? ''}`;
    const burst = this.o.burst ?? 25;
    const refill = this.o.refillMs ?? 300_000;
    const b = this.buckets.get(key) ?? { tokens: burst, at: now };
    const back = Math.floor((now - b.at) / refill);
    if (back > 0) {
      b.tokens = Math.min(burst, b.tokens + back);
      // A full bucket starts its next refill from now; otherwise the part of a period already run counts.
      b.at = b.tokens === burst ? now : b.at + back * refill;
    }
    this.buckets.delete(key);
    this.buckets.set(key, b);
    while (this.buckets.size > (this.o.cacheSize ?? 4096)) this.buckets.delete(this.buckets.keys().next().value as string);
    if (b.tokens < 1) return false;
    b.tokens--;
    return true;
  }

  private async drain(): Promise<void> {
    try {
      for (let p = this.queue.shift(); p && !this.stopped; p = this.queue.shift()) {
        try {
          await this.write(p);
        } catch (e) {
          this.o.log.warn({ [F.err]: e instanceof Error ? e.message : String(e), [F.reason]: p.reason, [F.kind]: p.involved.kind, [F.name]: p.involved.name }, 'events: could not record an event');
        }
      }
    } finally {
      this.running = false;
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  private async write(p: Pending): Promise<void> {
    const io = p.involved;
    const key = [io.kind, io.apiVersion, io.namespace ?? '', io.name, io.uid ?? '', p.type, p.reason, p.message].join('\u0000');
    const now = rfc3339(p.at);
    const was = this.seen.get(key);
    if (was && p.at - was.lastMs <= (this.o.windowMs ?? 600_000)) {
      was.count++;
      was.lastMs = p.at;
      this.touch(key, was);
      try {
        await this.o.sink.patchEvent(was.namespace, was.name, { count: was.count, lastTimestamp: now });
        return;
      } catch (e) {
        if (!isNotFound(e)) throw e;
        // Deleted meanwhile (or expired): made again under its name, with its count, as client-go does.
      }
      await this.o.sink.createEvent(was.namespace, this.eventObject(p, was.namespace, was.name, was.first, now, was.count));
      return;
    }
    const namespace = io.namespace || 'default';
    // `<name>.<hex>` of a nanosecond time, as upstream; the sequence keeps two events in one millisecond apart.
    const nanos = BigInt(p.at) * 1_000_000n + BigInt(this.seq++ % 1_000_000);
    const name = `${io.name}.${nanos.toString(16)}`;
    this.touch(key, { namespace, name, first: now, count: 1, lastMs: p.at });
    await this.o.sink.createEvent(namespace, this.eventObject(p, namespace, name, now, now, 1));
  }

  /** Remembers `key` as the most recent (a Map keeps insertion order: the oldest goes first). */
  private touch(key: string, s: Seen): void {
    this.seen.delete(key);
    this.seen.set(key, s);
    while (this.seen.size > (this.o.cacheSize ?? 4096)) this.seen.delete(this.seen.keys().next().value as string);
  }

  private eventObject(p: Pending, namespace: string, name: string, first: string, last: string, count: number): Record<string, unknown> {
    const io = p.involved;
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: {
        kind: io.kind,
        apiVersion: io.apiVersion,
        ...(io.namespace ? { namespace: io.namespace } : {}),
        name: io.name,
        ...(io.uid ? { uid: io.uid } : {}),
        ...(io.resourceVersion ? { resourceVersion: io.resourceVersion } : {}),
      },
      reason: p.reason,
      message: p.message,
      type: p.type,
      source: { component: this.o.component, host: this.o.host },
      reportingComponent: this.o.component,
      reportingInstance: this.o.host,
      firstTimestamp: first,
      lastTimestamp: last,
      count,
    };
  }
}

/** The ObjectReference of a Kubernetes object read from a watch (unknown), or null without a name. Pure. */
export function objectReference(raw: unknown, kind: string, apiVersion: string): ObjectReference | null {
  const meta = typeof raw === 'object' && raw !== null ? (raw as { metadata?: unknown }).metadata : undefined;
  const m = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>) : {};
  const s = (k: string): string | undefined => (typeof m[k] === 'string' && m[k] !== '' ? (m[k] as string) : undefined);
  const name = s('name');
  if (name === undefined) return null;
  const namespace = s('namespace');
  const uid = s('uid');
  const resourceVersion = s('resourceVersion');
  return { kind, apiVersion, name, ...(namespace ? { namespace } : {}), ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) };
}
