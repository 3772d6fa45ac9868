/**
 * proxy/handlers: the narrow interfaces the watch layer drives (kube-proxy's
 * config.go ServiceHandler / EndpointSliceHandler), and the admission step
 * every object passes on its way in.
 *
 * Handlers receive raw objects (`unknown`) straight from the watch. They
 * never throw and never block: they parse, record (prev, cur) in a change
 * tracker and request a sync. Parsing happens once, here, through
 * ObjectAdmission: an invalid object is logged with the offending field,
 * recorded as rejected (rejected() shows it to the CLI and tests) and
 * treated as absent — so an invalid update takes that Service's rules away
 * as a delete would, and never affects any other Service. A valid but
 * rule-less object (headless, IPv6, ...) is recorded as ignored.
 *
 * Tombstones (client-go's DeletedFinalStateUnknown) are the watch layer's
 * business: a delete handler receives the last known object.
 */
import { InvalidObjectError } from '../errors/errors.js';
import { F } from '../log/fields.js';
import type { Logger } from '../log/log.js';
import { parseEndpointSlice, type EndpointSliceInfo } from './model/endpoint-slice.js';
import { objectKey } from './model/fields.js';
import { parseService, type PortRange } from './model/service.js';
import type { ServicePorts } from './service-map.js';
import type { ServiceKey } from './types.js';

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

export interface Rejection {
  readonly kind: ObjectKind;
  /** "namespace/name", or "(unknown)" when even that was unreadable. */
  readonly key: string;
  /** JSON path of the offending field, e.g. spec.ports[1].port. */
  readonly field: string;
  readonly message: string;
}

export interface Ignored {
  readonly kind: ObjectKind;
  readonly key: string;
  readonly reason: string;
}

export interface ObjectAdmissionDeps {
  readonly log: Logger;
  readonly nodePortRange?: PortRange;
}

/**
 * Parses incoming objects, keeping the latest rejection or ignore reason
 * per object. `record` is true for an event's current object and false for
 * its previous one (already judged when it arrived: no second log line).
 */
export class ObjectAdmission {
  private readonly rejections = new Map<string, Rejection>();
  private readonly ignores = new Map<string, Ignored>();

  constructor(private readonly deps: ObjectAdmissionDeps) {}

  /** A Service's ports, or null (absent, ignored or invalid); key null when the object has no readable name. */
  service(raw: unknown, record: boolean): { key: ServiceKey | null; ports: ServicePorts | null } {
    const key = objectKey(raw);
    if (raw === null || raw === undefined) return { key: null, ports: null };
    try {
      const p = parseService(raw, this.deps.nodePortRange ? { nodePortRange: this.deps.nodePortRange } : {});
      if (record) this.accept('Service', p.key, p.kind === 'ignored' ? p.reason : null);
      return { key: p.key, ports: p.kind === 'service' ? p.ports : null };
    } catch (err) {
      if (record) this.reject('Service', key, err);
      return { key, ports: null };
    }
  }

  /** An EndpointSlice's parsed form, or null (absent, ignored or invalid). */
  endpointSlice(raw: unknown, record: boolean): { key: string | null; info: EndpointSliceInfo | null } {
    const key = objectKey(raw);
    if (raw === null || raw === undefined) return { key: null, info: null };
    try {
      const p = parseEndpointSlice(raw);
      const k = p.kind === 'slice' ? p.info.key : p.key;
      if (record) this.accept('EndpointSlice', k, p.kind === 'ignored' ? p.reason : null);
      return { key: k, info: p.kind === 'slice' ? p.info : null };
    } catch (err) {
      if (record) this.reject('EndpointSlice', key, err);
      return { key, info: null };
    }
  }

  /** Forgets what was recorded for a deleted object. */
  forget(kind: ObjectKind, key: string): void {
    this.rejections.delete(`${kind}/${key}`);
    this.ignores.delete(`${kind}/${key}`);
  }

  /** Objects currently rejected, sorted by kind then key. */
  rejected(): Rejection[] {
    return [...this.rejections.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
  }

  /** Objects currently ignored (valid, no rules), sorted by kind then key. */
  ignored(): Ignored[] {
    return [...this.ignores.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, r]) => r);
  }

  private accept(kind: ObjectKind, key: string, ignoredReason: string | null): void {
    const id = `${kind}/${key}`;
    this.rejections.delete(id);
    if (ignoredReason === null) {
      this.ignores.delete(id);
      return;
    }
    if (this.ignores.get(id)?.reason !== ignoredReason) this.deps.log.info({ [F.svc]: key, [F.kind]: kind, [F.reason]: ignoredReason }, `${kind} ignored`);
    this.ignores.set(id, { kind, key, reason: ignoredReason });
  }

  private reject(kind: ObjectKind, key: string | null, err: unknown): void {
    const k = key ?? '(unknown)';
    const field = err instanceof InvalidObjectError ? err.field : '(root)';
    const message = err instanceof Error ? err.message : String(err);
    this.deps.log.warn({ [F.svc]: k, [F.kind]: kind, [F.field]: field, [F.err]: err }, `invalid ${kind} rejected: ${message}`);
    this.ignores.delete(`${kind}/${k}`);
    this.rejections.set(`${kind}/${k}`, { kind, key: k, field, message });
  }
}
