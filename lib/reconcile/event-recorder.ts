/**
 * reconcile/event-recorder: core/v1 Events, client-go's tools/record in
 * small. One implementation for every component that records Events; only
 * the sink differs:
 * - the agent's components (the proxy, the overlay) and the embedded kubelet
 *   write over HTTP with the node's kubeconfig (pods/kubelet-api.ts:
 *   createEvent, patchEvent as a merge patch; node/compose.ts and
 *   pods/start.ts hand it in), through an ApiEventRecorder: one component on
 *   this node. With no API (the manifest directory) there is no recorder
 *   (NO_EVENTS);
 * - the control plane's controllers write through the in-process REST layer
 *   (controlplane/controllers/events.ts: its EventBroadcaster is an
 *   EventWriter with a Rest sink, one recorder per controller).
 *
 * An EventWriter takes events from recorders (each stamps its source: the
 * component and the host) and writes them to its sink. An Event is named
 * `<involved name>.<hex nanoseconds>` as upstream, lives in the involved
 * object's namespace (`default` for cluster-scoped objects such as Nodes),
 * and carries source.component / reportingComponent = the component and
 * source.host / reportingInstance = the host.
 *
 * Correlation, as client-go's EventCorrelator:
 * - the same event again (same source, involved object with its fieldPath,
 *   type, reason and message: getEventKey) within windowMs (10 minutes) of
 *   its last occurrence is a count + 1 and a new lastTimestamp on the Event
 *   before it (a merge patch; one deleted meanwhile, or expired by the API
 *   server's TTL, is created again under its name with its count);
 * - the spam filter, a token bucket per source and involved object
 *   (getSpamKey; burst 25, one token back every 5 minutes), drops the rest
 *   with a debug line. The control plane keeps it off (its controllers never
 *   had it).
 * Not done: client-go's aggregation of similar events (same reason, other
 * messages) into a "(combined from similar events)" one, and its retries
 * of a failed write (12 tries, 10 s apart).
 *
 * Recording never blocks or throws: writes run one at a time on a queue of
 * their own (at most maxQueued waiting, client-go's 1000; more are dropped
 * with a warning), which keeps correlation free of races, and a write that
 * fails is logged.
 */
import { ErrorCode, isNodenetError } from '../errors/errors.js';
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
  /** The part of the object, e.g. `spec.containers{web}` for a Pod's container. */
  readonly fieldPath?: string;
}

/** What a component records with. Never throws; the write happens later (or never: no API). */
export interface EventRecorder {
  event(involved: ObjectReference, type: EventType, reason: string, message: string): void;
}

/** A recorder that records nothing: the agent watches no API. */
export const NO_EVENTS: EventRecorder = { event() {} };

/** Who records: source.component / reportingComponent, and source.host / reportingInstance ('' for none). */
export interface EventSource {
  readonly component: string;
  readonly host: string;
}

/**
 * Where Events go: the API server's events resource (pods/kubelet-api.ts's calls satisfy it; the control
 * plane's Rest sink uses `source` as the field manager). A patch of a missing Event fails with an error whose
 * `code` is 404 or NN_ERR_NOT_FOUND.
 */
export interface EventSink {
  /** `source` is who records (the writer always gives it). */
  createEvent(namespace: string, event: Record<string, unknown>, source?: EventSource): Promise<void>;
  /** A merge patch. */
  patchEvent(namespace: string, name: string, patch: Record<string, unknown>, source?: EventSource): Promise<void>;
}

export interface EventWriterOptions {
  readonly sink: EventSink;
  readonly clock: Clock;
  readonly log: Logger;
  /** How long a repeat counts on the Event before it (default 10 minutes). */
  readonly windowMs?: number;
  /** Events (and spam buckets) remembered (default 4096, client-go's LRU size). */
  readonly cacheSize?: number;
  /** Writes that may wait (default 1000); more are dropped. */
  readonly maxQueued?: number;
  /** The spam filter: events per source and object at once (default 25) and ms per token back (default 300,000); null: off. */
  readonly spam?: { readonly burst?: number; readonly refillMs?: number } | null;
}

interface Seen {
  readonly namespace: string;
  readonly name: string;
  readonly first: string;
  count: number;
  lastMs: number;
}

interface Pending {
  readonly source: EventSource;
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
  if (isNodenetError(e)) return e.code === ErrorCode.NotFound;
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 404;
}

/** Remembers `key` as the most recent in an insertion-ordered Map used as an LRU of `max` entries. */
function touch<V>(m: Map<string, V>, key: string, v: V, max: number): void {
  m.delete(key);
  m.set(key, v);
  while (m.size > max) m.delete(m.keys().next().value as string);
}

/** The queue, the correlator and the spam filter in front of one sink. */
export class EventWriter {
  private readonly seen = new Map<string, Seen>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly queue: Pending[] = [];
  private running = false;
  private stopped = false;
  private seq = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly o: EventWriterOptions) {}

  /** A recorder that stamps `source` on what it records. */
  recorder(source: EventSource): EventRecorder {
    return { event: (involved, type, reason, message) => this.record(source, involved, type, reason, message) };
  }

  record(source: EventSource, involved: ObjectReference, type: EventType, reason: string, message: string): void {
    if (this.stopped) return;
    const at = this.o.clock.now();
    if (!this.take(source, involved, at)) {
      this.o.log.debug({ [F.kind]: involved.kind, [F.name]: involved.name, [F.reason]: reason }, 'events: too many about this object; event dropped');
      return;
    }
    if (this.queue.length >= (this.o.maxQueued ?? 1000)) {
      this.o.log.warn({ [F.kind]: involved.kind, [F.name]: involved.name, [F.reason]: reason }, 'events: too many waiting; event dropped');
      return;
    }
    this.queue.push({ source, involved, type, reason, message, at });
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

  /** The spam filter's token bucket for the source and the involved object. */
  private take(src: EventSource, io: ObjectReference, now: number): boolean {
    if (this.o.spam === null) return true;
    const key = [src.component, src.host, io.kind, io.namespace ?? '', io.name, io.uid ?? '', io.apiVersion].join('\u0000');
    const burst = this.o.spam?.burst ?? 25;
    const refill = this.o.spam?.refillMs ?? 300_000;
    const b = this.buckets.get(key) ?? { tokens: burst, at: now };
    const back = Math.floor((now - b.at) / refill);
    if (back > 0) {
      b.tokens = Math.min(burst, b.tokens + back);
      // A full bucket starts its next refill from now; otherwise the part of a period already run counts.
      b.at = b.tokens === burst ? now : b.at + back * refill;
    }
    touch(this.buckets, key, b, this.o.cacheSize ?? 4096);
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
          const io = p.involved;
          this.o.log.warn({ [F.err]: e, [F.reason]: p.reason, [F.kind]: io.kind, [F.namespace]: io.namespace ?? '', [F.name]: io.name }, 'events: could not record an event');
        }
      }
    } finally {
      this.running = false;
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  private async write(p: Pending): Promise<void> {
    const io = p.involved;
    const key = [p.source.component, p.source.host, io.kind, io.namespace ?? '', io.name, io.fieldPath ?? '', io.uid ?? '', io.apiVersion, p.type, p.reason, p.message].join('\u0000');
    const max = this.o.cacheSize ?? 4096;
    const now = rfc3339(p.at);
    const was = this.seen.get(key);
    if (was && p.at - was.lastMs <= (this.o.windowMs ?? 600_000)) {
      was.count++;
      was.lastMs = p.at;
      touch(this.seen, key, was, max);
      try {
        await this.o.sink.patchEvent(was.namespace, was.name, { count: was.count, lastTimestamp: now }, p.source);
        return;
      } catch (e) {
        if (!isNotFound(e)) throw e;
        // Deleted meanwhile (or expired): made again under its name, with its count, as client-go does.
      }
      await this.o.sink.createEvent(was.namespace, eventObject(p, was.namespace, was.name, was.first, now, was.count), p.source);
      return;
    }
    const namespace = io.namespace || 'default';
    // `<name>.<hex>` of a nanosecond time, as upstream; the sequence keeps two events in one millisecond apart.
    const nanos = BigInt(p.at) * 1_000_000n + BigInt(this.seq++ % 1_000_000);
    const name = `${io.name}.${nanos.toString(16)}`;
    await this.o.sink.createEvent(namespace, eventObject(p, namespace, name, now, now, 1), p.source);
    touch(this.seen, key, { namespace, name, first: now, count: 1, lastMs: p.at }, max);
  }
}

/** The core/v1 Event written for `p`. Pure. */
function eventObject(p: Pending, namespace: string, name: string, first: string, last: string, count: number): Record<string, unknown> {
  const io = p.involved;
  const { component, host } = p.source;
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
      ...(io.fieldPath ? { fieldPath: io.fieldPath } : {}),
    },
    reason: p.reason,
    message: p.message,
    type: p.type,
    source: { component, ...(host ? { host } : {}) },
    reportingComponent: component,
    reportingInstance: host,
    firstTimestamp: first,
    lastTimestamp: last,
    count,
  };
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

/** One of the agent's components on this node, recording through its own EventWriter. */
export class ApiEventRecorder implements EventRecorder {
  private readonly writer: EventWriter;
  private readonly source: EventSource;

  constructor(o: ApiEventRecorderOptions) {
    const { sink, clock, log, windowMs, cacheSize, maxQueued, burst, refillMs } = o;
    this.writer = new EventWriter({
      sink, clock, log,
      ...(windowMs !== undefined ? { windowMs } : {}),
      ...(cacheSize !== undefined ? { cacheSize } : {}),
      ...(maxQueued !== undefined ? { maxQueued } : {}),
      spam: { ...(burst !== undefined ? { burst } : {}), ...(refillMs !== undefined ? { refillMs } : {}) },
    });
    this.source = { component: o.component, host: o.host };
  }

  event(involved: ObjectReference, type: EventType, reason: string, message: string): void {
    this.writer.record(this.source, involved, type, reason, message);
  }

  /** Resolves once every event recorded so far is written (or given up on). */
  idle(): Promise<void> {
    return this.writer.idle();
  }

  /** Drops what waits and ignores later events; resolves once the write under way (if any) is done. */
  stop(): Promise<void> {
    return this.writer.stop();
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
