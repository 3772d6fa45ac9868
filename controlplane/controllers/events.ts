/**
 * controlplane/controllers/events: the event recorder the controllers share
 * (client-go's tools/record, in small), so that `kubectl describe` and
 * `kubectl get events` tell what they did.
 *
 * An `EventBroadcaster` owns the writes; each component takes a recorder
 * from it (`recorder('replicaset-controller')`) that stamps its name as
 * `source.component` and `reportingComponent`. The Event's shape, its name,
 * the correlation of repeats, the queue and the logging of failures are the
 * agent's too: lib/reconcile/event-recorder.ts's EventWriter, here with a sink
 * that writes through the REST layer like any client (the component as the
 * field manager). What is the control plane's own: a recorder takes an
 * object as read from the store and refers to it by its kind, namespace,
 * name, uid, apiVersion and resourceVersion (refOf), and the spam filter
 * stays off, as it always was here.
 */
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { EventWriter, type EventSink, type EventType, type ObjectReference } from '../../lib/reconcile/event-recorder.js';
import type { RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { KObject } from '../store/types.js';

export type { EventType };

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
  /** Where Events are written: one client, or one per recording component (its own identity). */
  readonly rest: RestClient | ((component: string) => RestClient);
  readonly clock: Clock;
  readonly log: Logger;
  /** How long a repeat is folded into the Event before it (default 10 minutes). */
  readonly windowMs?: number;
  /** Events remembered for correlation (default 4096, client-go's LRU size). */
  readonly cacheSize?: number;
  /** Writes that may wait (default 1000); more are dropped. */
  readonly maxQueued?: number;
}

const EVENTS = RESOURCES.find((r) => r.resource === 'events')!;
const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** Events written through the REST layer, the recording component as the field manager. */
function restSink(rest: RestClient | ((component: string) => RestClient)): EventSink {
  const of = (component: string) => (typeof rest === 'function' ? rest(component) : rest);
  return {
    async createEvent(namespace, event, source) {
      const c = source?.component ?? 'unknown';
      await of(c).create(EVENTS, namespace, event, { fieldManager: c });
    },
    async patchEvent(namespace, name, patch, source) {
      const c = source?.component ?? 'unknown';
      await of(c).patch(EVENTS, namespace, name, 'merge', patch, { fieldManager: c });
    },
  };
}

export class EventBroadcaster {
  private readonly writer: EventWriter;

  constructor(o: EventBroadcasterOptions) {
    const { rest, clock, log, windowMs, cacheSize, maxQueued } = o;
    this.writer = new EventWriter({
      sink: restSink(rest), clock, log, spam: null,
      ...(windowMs !== undefined ? { windowMs } : {}),
      ...(cacheSize !== undefined ? { cacheSize } : {}),
      ...(maxQueued !== undefined ? { maxQueued } : {}),
    });
  }

  /** A recorder for one component (`source.component`, `reportingComponent`); `host` is `source.host` / `reportingInstance`. */
  recorder(component: string, host = ''): EventRecorder {
    const r = this.writer.recorder({ component, host });
    return { event: (involved, type, reason, message) => r.event(refOf(involved), type, reason, message) };
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

/** The ObjectReference an Event keeps of an object (ref.GetReference). Pure. */
export function refOf(o: Readonly<KObject>): ObjectReference {
  const m = (o.metadata ?? {}) as Record<string, unknown>;
  const namespace = str(m['namespace']);
  const uid = str(m['uid']);
  const resourceVersion = str(m['resourceVersion']);
  return {
    kind: str(o.kind),
    apiVersion: str(o.apiVersion),
    ...(namespace ? { namespace } : {}),
    name: str(m['name']),
    ...(uid ? { uid } : {}),
    ...(resourceVersion ? { resourceVersion } : {}),
  };
}
