/**
 * proxy/handlers: the narrow interfaces the watch layer drives (kube-proxy's
 * config.go ServiceHandler / EndpointSliceHandler), and the admission step
 * every object passes on its way in.
 *
 * Handlers receive raw objects (`unknown`) straight from the watch. They
 * never throw and never block: they parse, record (prev, cur) in a change
 * tracker and request a sync. Parsing happens once, here, through
 * ObjectAdmission, which decides what each event means for the rules
 * (reconcile/last-good.ts has the rule and its reasons):
 * - a valid object is taken; a valid but rule-less one (headless, IPv6,
 *   another proxy's, ...) is recorded as ignored and gets no rules;
 * - an update the agent cannot use, of an object whose rules it serves,
 *   changes nothing: the last version it could use stays served (no change
 *   is recorded in the tracker), the rejection is recorded with its field
 *   (rejected() shows it, with servedFromLastGood, to the status and the
 *   CLI), logged once, counted, and told to the object as a Warning Event
 *   when the agent watches an API server. The next valid version replaces
 *   it; a delete removes it. kube-proxy never withdraws a Service's rules
 *   for an update either (it trusts the API server's validation);
 * - an object that was never valid (or a new object under the name of a
 *   served one: another uid) is skipped as absent, its rejection recorded
 *   the same way. It never affects any other Service.
 * The (prev, cur) handed to the tracker are what was served and what is to
 * be served, not the watch's raw prev: after a kept update the watch's prev
 * is the version the agent could not use, while its rules are the last
 * good one's (and a delete must remove those).
 *
 * Tombstones (client-go's DeletedFinalStateUnknown) are the watch layer's
 * business: a delete handler receives the last known object.
 */
import { InvalidObjectError } from '../../../lib/errors/errors.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import { objectReference, type EventRecorder } from '../../../lib/reconcile/event-recorder.js';
import { LastGood, type LastGoodVersion, type ObjectRejection, type RejectionCount } from '../../../lib/reconcile/last-good.js';
import { parseEndpointSlice, type EndpointSliceInfo } from './model/endpoint-slice.js';
import { objectKey } from './model/fields.js';
import { parseService, type PortRange } from './model/service.js';
import type { ServicePorts } from './service-map.js';

export interface ServiceHandler {
  /** A Service was created (or listed at start). Never throws. */
  onServiceAdd(svc: unknown): void;
  /** A Service changed from prev to cur. Never throws. */
  onServiceUpdate(prev: unknown, cur: unknown): void;
  /** A Service was deleted; svc is its last known state. Never throws. */
  onServiceDelete(svc: unknown): void;
  /** The initial list has been delivered; called once. Nothing is applied before both sources synced. */
  onServicesSynced(): void;
}

export interface EndpointSliceHandler {
  onEndpointSliceAdd(slice: unknown): void;
  onEndpointSliceUpdate(prev: unknown, cur: unknown): void;
  onEndpointSliceDelete(slice: unknown): void;
  onEndpointSlicesSynced(): void;
}

export type ObjectKind = 'Service' | 'EndpointSlice';

/** A rejected object: its field and message, and whether its last valid version is still served. */
export type Rejection = ObjectRejection<ObjectKind>;

export interface Ignored {
  readonly kind: ObjectKind;
  readonly key: string;
  readonly reason: string;
}

export interface ObjectAdmissionDeps {
  readonly log: Logger;
  readonly nodePortRange?: PortRange;
  /** Warning Events on the objects the agent cannot use (it watches an API server); none when absent. */
  readonly events?: EventRecorder;
}

/** What one event means for the change tracker: the key, what was served, what is to be served (null: nothing). */
export interface Admitted<V> {
  /** null when no version of the object has a readable namespace/name. */
  readonly key: string | null;
  readonly prev: V | null;
  readonly cur: V | null;
}

/** One version parsed: usable (a value, or null with an ignore reason) or not (the field and message). */
type Parsed<V> =
  | { readonly ok: true; readonly key: string; readonly value: V | null; readonly ignored: string | null }
  | { readonly ok: false; readonly key: string | null; readonly field: string; readonly message: string };

/** How ObjectAdmission handles one kind. */
interface KindRules<V> {
  readonly kind: ObjectKind;
  readonly apiVersion: string;
  readonly parse: (raw: unknown) => Parsed<V>;
  readonly lastGood: LastGood<V, ObjectKind>;
}

function failed(raw: unknown, err: unknown): Parsed<never> {
  return { ok: false, key: objectKey(raw), field: err instanceof InvalidObjectError ? err.field : '(root)', message: err instanceof Error ? err.message : String(err) };
}

function meta(raw: unknown, k: 'uid' | 'resourceVersion'): string | undefined {
  const m = typeof raw === 'object' && raw !== null ? (raw as { metadata?: unknown }).metadata : undefined;
  const v = typeof m === 'object' && m !== null ? (m as Record<string, unknown>)[k] : undefined;
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * Parses incoming objects and turns each event into the (prev, cur) the
 * change tracker records, keeping per object the last usable version while
 * its current one is rejected, and the latest ignore reason.
 */
export class ObjectAdmission {
  private readonly ignores = new Map<string, Ignored>();
  private readonly services: KindRules<ServicePorts>;
  private readonly slices: KindRules<EndpointSliceInfo>;

  constructor(private readonly deps: ObjectAdmissionDeps) {
    const lastGood = <V>(kind: ObjectKind) => new LastGood<V, ObjectKind>({ kind, log: deps.log, keyField: F.svc, serves: 'rules', events: deps.events });
    const opts = deps.nodePortRange ? { nodePortRange: deps.nodePortRange } : {};
    this.services = {
      kind: 'Service',
      apiVersion: 'v1',
      lastGood: lastGood<ServicePorts>('Service'),
      parse: (raw) => {
        try {
          const p = parseService(raw, opts);
          return p.kind === 'service' ? { ok: true, key: p.key, value: p.ports, ignored: null } : { ok: true, key: p.key, value: null, ignored: p.reason };
        } catch (err) {
          return failed(raw, err);
        }
      },
    };
    this.slices = {
      kind: 'EndpointSlice',
      apiVersion: 'discovery.k8s.io/v1',
      lastGood: lastGood<EndpointSliceInfo>('EndpointSlice'),
      parse: (raw) => {
        try {
          const p = parseEndpointSlice(raw);
          return p.kind === 'slice' ? { ok: true, key: p.info.key, value: p.info, ignored: null } : { ok: true, key: p.key, value: null, ignored: p.reason };
        } catch (err) {
          return failed(raw, err);
        }
      },
    };
  }

  /** A Service added (prev null) or updated. */
  serviceEvent(prev: unknown, cur: unknown): Admitted<ServicePorts> {
    return this.event(this.services, prev, cur);
  }

  /** A Service deleted (its last known state): what was served for it, to remove. */
  serviceDelete(last: unknown): Admitted<ServicePorts> {
    return this.delete(this.services, last);
  }

  /** An EndpointSlice added (prev null) or updated. */
  endpointSliceEvent(prev: unknown, cur: unknown): Admitted<EndpointSliceInfo> {
    return this.event(this.slices, prev, cur);
  }

  /** An EndpointSlice deleted (its last known state): what was served for it, to remove. */
  endpointSliceDelete(last: unknown): Admitted<EndpointSliceInfo> {
    return this.delete(this.slices, last);
  }

  /** Objects currently rejected, sorted by kind then key; servedFromLastGood says whether their last valid version is still served. */
  rejected(): Rejection[] {
    return [...this.services.lastGood.rejected(), ...this.slices.lastGood.rejected()].sort((a, b) => (a.kind === b.kind ? 0 : a.kind < b.kind ? -1 : 1));
  }

  /** Objects currently ignored (valid, no rules), sorted by kind then key. */
  ignored(): Ignored[] {
    return [...this.ignores.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
  }

  /** Rejections so far and objects served from their last valid version now, per kind (the agent's metrics). */
  counts(): RejectionCount[] {
    return [this.services.lastGood.counts(), this.slices.lastGood.counts()];
  }

  private event<V>(k: KindRules<V>, prevRaw: unknown, curRaw: unknown): Admitted<V> {
    const cur = curRaw === null || curRaw === undefined ? null : k.parse(curRaw);
    // The previous version as the watch knew it: parsed only when nothing is kept (then it is what is served).
    let prevParsed: Parsed<V> | null | undefined;
    const prevOf = () => (prevParsed ??= prevRaw === null || prevRaw === undefined ? null : k.parse(prevRaw));
    const key = cur?.key ?? prevOf()?.key ?? null;
    if (key === null) {
      if (cur && !cur.ok) k.lastGood.reject('(unknown)', null, cur.field, cur.message, null);
      return { key: null, prev: null, cur: null };
    }
    const kept = k.lastGood.get(key);
    const p = kept ? null : prevOf();
    const serving: LastGoodVersion<V> | null = kept ?? (p?.ok && p.value !== null ? { value: p.value, uid: meta(prevRaw, 'uid'), resourceVersion: meta(prevRaw, 'resourceVersion') } : null);
    const prev = serving?.value ?? null;
    const id = `${k.kind}/${key}`;
    if (cur === null) return { key, prev, cur: null };
    if (cur.ok) {
      k.lastGood.accept(key);
      this.noteIgnored(id, k.kind, key, cur.ignored);
      return { key, prev, cur: cur.value };
    }
    this.ignores.delete(id);
    return { key, prev, cur: k.lastGood.reject(key, objectReference(curRaw, k.kind, k.apiVersion), cur.field, cur.message, serving) };
  }

  private delete<V>(k: KindRules<V>, lastRaw: unknown): Admitted<V> {
    const p = lastRaw === null || lastRaw === undefined ? null : k.parse(lastRaw);
    const key = p?.key ?? null;
    if (key === null) return { key: null, prev: null, cur: null };
    const kept = k.lastGood.forget(key);
    this.ignores.delete(`${k.kind}/${key}`);
    return { key, prev: kept ? kept.value : p?.ok ? p.value : null, cur: null };
  }

  private noteIgnored(id: string, kind: ObjectKind, key: string, reason: string | null): void {
    if (reason === null) {
      this.ignores.delete(id);
      return;
    }
    if (this.ignores.get(id)?.reason !== reason) this.deps.log.info({ [F.svc]: key, [F.kind]: kind, [F.reason]: reason }, `${kind} ignored`);
    this.ignores.set(id, { kind, key, reason });
  }
}
