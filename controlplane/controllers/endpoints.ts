/**
 * controlplane/controllers/endpoints: kube-controller-manager's Endpoints
 * controller for the embedded control plane, for the clients that still read
 * core/v1 Endpoints (`kubectl get ep`, Prometheus' `role: endpoints`,
 * older ingress controllers).
 *
 * Upstream computes Endpoints from the Pods, as its EndpointSlice controller
 * does. Here they are mirrored from the EndpointSlices instead, so that the
 * two views cannot disagree and the Pod rules (readiness, named ports,
 * finished Pods) live in one place (endpointslice.ts). For every Service with
 * a selector (not ExternalName), one Endpoints of the Service's name holds
 * what its managed slices (label `kubernetes.io/service-name`) of the
 * Service's IP family hold:
 *   addresses          endpoints whose `ready` is true (or unset), not terminating
 *   notReadyAddresses  the other endpoints that are not terminating
 *   (publishNotReadyAddresses: every endpoint, terminating ones included, is ready, as upstream)
 * with each address's `targetRef`, `nodeName` and `hostname`, and the slices'
 * ports, packed as upstream's RepackSubsets packs them (one subset per set
 * of addresses sharing the same ports; addresses and ports sorted).
 *
 * The Endpoints carries the Service's labels, plus
 * `endpoints.kubernetes.io/managed-by: endpoint-controller` and
 * `service.kubernetes.io/headless` for a headless Service, as upstream's.
 * It has no ownerReference (upstream's have none: the shared name is the
 * link), so this controller deletes it when its Service goes, and at start
 * any Endpoints it manages whose Service is gone. A Service without a
 * selector keeps whatever Endpoints its user writes; a Service whose selector
 * is removed keeps its last Endpoints, as upstream leaves it.
 *
 * At most 1000 addresses (upstream's maxCapacity): more are truncated as
 * upstream's truncateEndpoints does (ready ones first, each subset keeping
 * its share) and the Endpoints is annotated
 * `endpoints.kubernetes.io/over-capacity: truncated`.
 *
 * `endpoints.kubernetes.io/last-change-trigger-time`, as upstream sets it: the
 * earliest change not yet written. The slices already carry that time (the
 * EndpointSlice controller's, from the same Pod and Service changes), so a
 * slice that brings a new one passes it on; a new Service brings its
 * creationTimestamp, any other change the time it was seen. A sync with no
 * such change (the resync at start) clears it.
 *
 * The `kubernetes` Service (default/kubernetes, no selector) is the one
 * exception: its Endpoints mirrors the EndpointSlice the API servers write
 * (apiserver-endpoints.ts), labelled `endpointslice.kubernetes.io/skip-mirror`
 * as kube-apiserver's. Upstream's API servers write both objects themselves;
 * here each API server would then race the others for a second object on
 * every lease change, while this controller is one writer behind leader
 * election reading the slice they already agree on.
 *
 * Watch → compare → act through the REST layer, one Service at a time from a
 * de-duplicated queue: a Service's change, a change to one of its slices and
 * a change to its Endpoints (someone edited or deleted it: it is put back)
 * queue the Service. A write that fails is recorded as upstream's Warning
 * Event (FailedToCreateEndpoint, FailedToUpdateEndpoint) and retried.
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { arr, obj, str } from '../../lib/json/loose.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import type { RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { IndexFunc } from '../store/indexer.js';
import type { KObject, Stored, StoreEvent } from '../store/types.js';
import { namespaceOf } from '../store/types.js';
import type { WatchCache } from '../store/watch-cache.js';
import { CONTROLLER_NAME as SLICE_CONTROLLER, MANAGED_BY as SLICE_MANAGED_BY, rfc3339Nano, SERVICE_NAME, TRIGGER_TIME_ANNOTATION } from './endpointslice.js';
import { NO_EVENTS, type EventRecorder } from './events.js';
import { WorkQueue } from './work-queue.js';

type O = Record<string, unknown>;
const meta = (o: Readonly<KObject>): O => (o.metadata ?? {}) as O;

const ENDPOINTS = RESOURCES.find((r) => r.resource === 'endpoints')!;
const SLICES_GR = 'endpointslices.discovery.k8s.io';
/** Upstream's LabelManagedBy and ControllerName (pkg/controller/endpoint). */
export const ENDPOINTS_MANAGED_BY = 'endpoints.kubernetes.io/managed-by';
export const ENDPOINTS_CONTROLLER = 'endpoint-controller';
export const OVER_CAPACITY_ANNOTATION = 'endpoints.kubernetes.io/over-capacity';
export const HEADLESS_LABEL = 'service.kubernetes.io/headless';
export const SKIP_MIRROR_LABEL = 'endpointslice.kubernetes.io/skip-mirror';
/** Upstream's maxCapacity: the addresses one Endpoints holds at most. */
export const MAX_ENDPOINTS_ADDRESSES = 1000;
/** The Service whose Endpoints lists the API servers. */
const KUBERNETES_SERVICE = 'services/default/kubernetes';

/** Every slice that names a Service, by `<namespace>/<service>` (the `kubernetes` Service's slice has no managed-by label). */
const SLICES_FOR_SERVICE = 'for-service';
const slicesForService: IndexFunc = (s: Stored) => {
  const svc = (obj(meta(s.object)['labels']) ?? {})[SERVICE_NAME];
  return typeof svc === 'string' && svc ? [`${str(meta(s.object)['namespace'])}/${svc}`] : [];
};

export interface EndpointsControllerOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  readonly events?: EventRecorder;
  readonly maxAddresses?: number;
  readonly retryMs?: number;
}

export interface EndpointAddress {
  ip: string;
  hostname?: string;
  nodeName?: string;
  targetRef?: O;
}
export interface EndpointPort {
  name?: string;
  port: number;
  protocol: string;
  appProtocol?: string;
}
export interface EndpointSubset {
  addresses?: EndpointAddress[];
  notReadyAddresses?: EndpointAddress[];
  ports?: EndpointPort[];
}

const timeOf = (v: unknown): number | undefined => {
  const t = typeof v === 'string' ? Date.parse(v) : NaN;
  return Number.isNaN(t) ? undefined : t;
};

/** The selector of a Service that has one (not ExternalName), else null (upstream's controller leaves it alone). */
function hasSelector(svc: Readonly<KObject>): boolean {
  const spec = obj(svc['spec']) ?? {};
  return spec['type'] !== 'ExternalName' && spec['selector'] !== undefined && spec['selector'] !== null;
}

/** IsServiceIPSet: a ClusterIP that is neither empty nor None. */
const isHeadless = (svc: Readonly<KObject>): boolean => {
  const ip = obj(svc['spec'])?.['clusterIP'];
  return !ip || ip === 'None';
};

/** LessEndpointAddress: by IP (as bytes of text), then targetRef uid (none first). */
function compareAddresses(a: EndpointAddress, b: EndpointAddress): number {
  if (a.ip !== b.ip) return a.ip < b.ip ? -1 : 1;
  const ua = a.targetRef ? str(a.targetRef['uid']) : null;
  const ub = b.targetRef ? str(b.targetRef['uid']) : null;
  if (ua === ub) return 0;
  if (ua === null) return -1;
  if (ub === null) return 1;
  return ua < ub ? -1 : 1;
}

const portKey = (p: EndpointPort): string => JSON.stringify([p.name ?? '', p.port, p.protocol, p.appProtocol ?? null]);
const addressKey = (a: EndpointAddress): string => `${a.ip}/${a.targetRef ? str(a.targetRef['uid']) : ''}`;
/** The sentinel port of addresses that offer none (a headless Service without ports), as upstream's RepackSubsets. */
const NO_PORT: EndpointPort = { port: -1, protocol: '' };

/**
 * The Endpoints' subsets for a Service from its slices (pure): upstream's RepackSubsets of one subset per
 * (address, port), an address not ready on a port when any slice says so. Sorted: addresses by IP and uid, ports
 * by name, number and protocol, subsets by their first address.
 */
export function subsetsFromSlices(slices: readonly Readonly<KObject>[], opts: { publishNotReadyAddresses?: boolean; addressType?: string; servicePorts?: boolean } = {}): EndpointSubset[] {
  const publish = opts.publishNotReadyAddresses === true;
  const servicePorts = opts.servicePorts !== false;
  const addrs = new Map<string, EndpointAddress>();
  const byPort = new Map<string, { port: EndpointPort; ready: Map<string, boolean> }>();
  for (const s of slices) {
    if (str(s['addressType']) !== (opts.addressType ?? 'IPv4')) continue;
    const ports: EndpointPort[] = [];
    for (const p of arr(s['ports']).map(obj)) {
      if (!p || typeof p['port'] !== 'number') continue; // a port without a number ("every port") has no Endpoints form
      const ep: EndpointPort = { port: p['port'], protocol: str(p['protocol']) || 'TCP' };
      if (str(p['name'])) ep.name = str(p['name']);
      if (typeof p['appProtocol'] === 'string') ep.appProtocol = p['appProtocol'];
      ports.push(ep);
    }
    // A Service without ports (headless): addresses without ports. One with ports: an endpoint whose Pod has none of
    // them is left out, as upstream's FindPort leaves it.
    if (!servicePorts) ports.splice(0, ports.length, NO_PORT);
    if (ports.length === 0) continue;
    for (const e of arr(s['endpoints']).map(obj)) {
      const ip = arr(e?.['addresses'])[0];
      if (!e || typeof ip !== 'string' || !ip) continue;
      const cond = obj(e['conditions']) ?? {};
      if (cond['terminating'] === true && !publish) continue; // ShouldPodBeInEndpoints
      const ready = publish || cond['ready'] !== false;
      const a: EndpointAddress = { ip };
      if (typeof e['hostname'] === 'string' && e['hostname']) a.hostname = e['hostname'];
      if (typeof e['nodeName'] === 'string' && e['nodeName']) a.nodeName = e['nodeName'];
      const ref = obj(e['targetRef']);
      if (ref) a.targetRef = { ...ref };
      const ak = addressKey(a);
      if (!addrs.has(ak)) addrs.set(ak, a);
      for (const port of ports) {
        const pk = portKey(port);
        let entry = byPort.get(pk);
        if (!entry) byPort.set(pk, (entry = { port, ready: new Map() }));
        // Not ready on a port anywhere: not ready on it (upstream: "not ready always trumps ready").
        const was = entry.ready.get(ak);
        if (was === undefined || was) entry.ready.set(ak, ready);
      }
    }
  }
  // Ports offered by the same addresses, with the same readiness, share a subset.
  const groups = new Map<string, { ports: EndpointPort[]; ready: Map<string, boolean> }>();
  for (const { port, ready } of byPort.values()) {
    const k = JSON.stringify([...ready.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const g = groups.get(k);
    if (g) g.ports.push(port);
    else groups.set(k, { ports: [port], ready });
  }
  const out: EndpointSubset[] = [];
  for (const g of groups.values()) {
    const ready: EndpointAddress[] = [];
    const notReady: EndpointAddress[] = [];
    for (const [ak, r] of g.ready) (r ? ready : notReady).push(structuredClone(addrs.get(ak)!));
    ready.sort(compareAddresses);
    notReady.sort(compareAddresses);
    const ss: EndpointSubset = {};
    if (ready.length) ss.addresses = ready;
    if (notReady.length) ss.notReadyAddresses = notReady;
    if (!(g.ports.length === 1 && g.ports[0] === NO_PORT)) ss.ports = g.ports.filter((p) => p !== NO_PORT).sort((a, b) => (portKey(a) < portKey(b) ? -1 : 1));
    out.push(ss);
  }
  const first = (ss: EndpointSubset) => (ss.addresses ?? ss.notReadyAddresses ?? [])[0]!;
  return out.sort((a, b) => compareAddresses(first(a), first(b)) || (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
}

/**
 * upstream's truncateEndpoints (pure, on a copy): over `max` addresses, ready ones are kept first; each subset keeps
 * its share (rounded up) of what may stay. Returns the subsets and whether they were truncated.
 */
export function truncateSubsets(subsets: readonly EndpointSubset[], max = MAX_ENDPOINTS_ADDRESSES): { subsets: EndpointSubset[]; truncated: boolean } {
  let totalReady = 0;
  let totalNotReady = 0;
  for (const ss of subsets) {
    totalReady += ss.addresses?.length ?? 0;
    totalNotReady += ss.notReadyAddresses?.length ?? 0;
  }
  const copy = structuredClone(subsets) as EndpointSubset[];
  if (totalReady + totalNotReady <= max) return { subsets: copy, truncated: false };
  const truncateReady = totalReady > max;
  const room = truncateReady ? max : max - totalReady;
  const total = truncateReady ? totalReady : totalNotReady;
  let canBeAdded = room;
  for (const ss of copy) {
    const inSubset = (truncateReady ? ss.addresses?.length : ss.notReadyAddresses?.length) ?? 0;
    const toBeAdded = Math.min(Math.ceil((inSubset / total) * room), canBeAdded);
    if (truncateReady) {
      if (ss.addresses) ss.addresses = ss.addresses.slice(0, toBeAdded);
      delete ss.notReadyAddresses;
      canBeAdded -= ss.addresses?.length ?? 0;
    } else if (ss.notReadyAddresses) {
      ss.notReadyAddresses = ss.notReadyAddresses.slice(0, toBeAdded);
      canBeAdded -= ss.notReadyAddresses.length;
    }
  }
  // A subset left with no address at all is not valid Endpoints (upstream would write it and be refused).
  return { subsets: copy.filter((ss) => (ss.addresses?.length ?? 0) + (ss.notReadyAddresses?.length ?? 0) > 0), truncated: true };
}

/** The quick-retry conflicts of the work queue (a stale read, a race): routine, not worth a Warning. */
const isRace = (e: unknown): boolean => isNodenetError(e) && (e.code === ErrorCode.Conflict || e.code === ErrorCode.AlreadyExists || e.code === ErrorCode.NotFound);

export class EndpointsController {
  private readonly handles: { stop(): void }[] = [];
  private readonly work: WorkQueue;
  /** Service key → the time of the earliest change not yet written to its Endpoints (upstream's TriggerTimeTracker). */
  private readonly triggers = new Map<string, number>();

  constructor(private readonly o: EndpointsControllerOptions) {
    this.work = new WorkQueue({ name: 'endpoints controller', clock: o.clock, log: o.log, process: (k) => this.sync(k), ...(o.retryMs ? { retryMs: o.retryMs } : {}) });
    o.cache.addIndex(SLICES_GR, SLICES_FOR_SERVICE, slicesForService);
  }

  start(): void {
    const st = this.o.cache;
    const rev = st.rev;
    for (const s of st.list('services').items) this.work.add(s.key);
    // checkLeftoverEndpoints: the Endpoints this controller wrote whose Service went while it was not running.
    for (const e of st.list('endpoints').items) if (this.managed(e.object)) this.work.add(this.serviceKey(e.key));
    this.handles.push(st.watch({ gr: 'services', afterRev: rev, onEvent: (ev) => this.onService(ev) }));
    this.handles.push(st.watch({ gr: SLICES_GR, afterRev: rev, onEvent: (ev) => this.onSlice(ev) }));
    this.handles.push(st.watch({ gr: 'endpoints', afterRev: rev, onEvent: (ev) => this.onEndpoints(ev) }));
  }

  stop(): void {
    for (const h of this.handles) h.stop();
    this.handles.length = 0;
    this.work.stop();
  }

  idle(): Promise<void> {
    return this.work.idle();
  }

  private managed(o: Readonly<KObject>): boolean {
    return (obj(meta(o)['labels']) ?? {})[ENDPOINTS_MANAGED_BY] === ENDPOINTS_CONTROLLER;
  }

  private serviceKey(key: string): string {
    return `services/${key.slice(key.indexOf('/') + 1)}`;
  }

  private enqueue(key: string, changedAt?: number): void {
    if (changedAt !== undefined) {
      const was = this.triggers.get(key);
      if (was === undefined || changedAt < was) this.triggers.set(key, changedAt);
    }
    this.work.add(key);
  }

  private onService(ev: StoreEvent): void {
    const now = this.o.clock.now();
    const created = ev.type === 'ADDED' ? timeOf(meta(ev.cur.object)['creationTimestamp']) : undefined;
    this.enqueue(ev.key, created !== undefined && created <= now ? created : now);
  }

  private onSlice(ev: StoreEvent): void {
    const svc = (obj(meta(ev.cur.object)['labels']) ?? {})[SERVICE_NAME];
    if (typeof svc !== 'string' || !svc) return;
    const key = `services/${namespaceOf(ev.key)}/${svc}`;
    if (ev.type === 'DELETED') return this.enqueue(key, this.o.clock.now());
    // A slice written for a change carries the change's time: passed on (once: a rewrite with the same time is not a new change).
    const at = (o: Stored | null) => (o ? obj(meta(o.object)['annotations'])?.[TRIGGER_TIME_ANNOTATION] : undefined);
    const t = at(ev.cur) !== at(ev.prev) ? timeOf(at(ev.cur)) : undefined;
    this.enqueue(key, t !== undefined && t <= this.o.clock.now() ? t : undefined);
  }

  private onEndpoints(ev: StoreEvent): void {
    // Edited or deleted by someone else: put back (its Service, if any, decides). Our own writes come here too and compare equal.
    const key = this.serviceKey(ev.key);
    if (this.managed(ev.cur.object) || this.o.cache.get(key)) this.work.add(key);
  }

  private async sync(key: string): Promise<void> {
    const trigger = this.triggers.get(key);
    this.triggers.delete(key);
    try {
      await this.syncService(key, trigger);
    } catch (e) {
      // Not written: the change still waits (with any newer one noted meanwhile).
      if (trigger !== undefined) {
        const later = this.triggers.get(key);
        this.triggers.set(key, later === undefined ? trigger : Math.min(later, trigger));
      }
      throw e;
    }
  }

  private async syncService(key: string, trigger: number | undefined): Promise<void> {
    const [, ns = '', name = ''] = key.split('/');
    const svc = this.o.cache.get(key)?.object;
    const cur = this.o.cache.get(`endpoints/${ns}/${name}`)?.object;
    if (!svc) {
      // The Service is gone: so is the Endpoints this controller wrote for it (one a user wrote without a Service stays).
      if (cur && this.managed(cur)) await this.o.rest.delete(ENDPOINTS, ns, name, { preconditions: { uid: str(meta(cur)['uid']) } });
      return;
    }
    const kubernetes = key === KUBERNETES_SERVICE;
    if (!kubernetes && !hasSelector(svc)) return;
    const spec = obj(svc['spec']) ?? {};
    const family = arr(spec['ipFamilies'])[0];
    const slices = this.o.cache.byIndex(SLICES_GR, SLICES_FOR_SERVICE, `${ns}/${name}`).map((s) => s.object)
      // A Service with a selector: the EndpointSlice controller's slices (not a user's); `kubernetes`: the API servers'.
      .filter((s) => kubernetes || (obj(meta(s)['labels']) ?? {})[SLICE_MANAGED_BY] === SLICE_CONTROLLER);
    const packed = subsetsFromSlices(slices, {
      publishNotReadyAddresses: spec['publishNotReadyAddresses'] === true, addressType: typeof family === 'string' ? family : 'IPv4', servicePorts: arr(spec['ports']).length > 0,
    });
    const { subsets, truncated } = truncateSubsets(packed, this.o.maxAddresses ?? MAX_ENDPOINTS_ADDRESSES);

    const labels: O = kubernetes
      ? { [SKIP_MIRROR_LABEL]: 'true' }
      : { ...(obj(meta(svc)['labels']) ?? {}), [ENDPOINTS_MANAGED_BY]: ENDPOINTS_CONTROLLER, ...(isHeadless(svc) ? { [HEADLESS_LABEL]: '' } : {}) };
    const overCapacity = (o: Readonly<KObject> | undefined) => (o ? obj(meta(o)['annotations'])?.[OVER_CAPACITY_ANNOTATION] : undefined);
    if (cur && deepEqual(cur['subsets'] ?? [], subsets) && deepEqual(obj(meta(cur)['labels']) ?? {}, labels) && overCapacity(cur) === (truncated ? 'truncated' : undefined)) return;

    const next: KObject = cur ? (structuredClone(cur) as KObject) : { apiVersion: 'v1', kind: 'Endpoints', metadata: { name, namespace: ns } };
    const nm = next.metadata as O;
    nm['labels'] = labels;
    const ann: O = { ...(obj(nm['annotations']) ?? {}) };
    if (trigger !== undefined && !kubernetes) ann[TRIGGER_TIME_ANNOTATION] = rfc3339Nano(trigger);
    else delete ann[TRIGGER_TIME_ANNOTATION];
    if (truncated) ann[OVER_CAPACITY_ANNOTATION] = 'truncated';
    else delete ann[OVER_CAPACITY_ANNOTATION];
    if (Object.keys(ann).length) nm['annotations'] = ann;
    else delete nm['annotations'];
    if (subsets.length) next['subsets'] = subsets;
    else delete next['subsets'];
    try {
      if (cur) await this.o.rest.update(ENDPOINTS, ns, name, next, { fieldManager: ENDPOINTS_CONTROLLER });
      else await this.o.rest.create(ENDPOINTS, ns, next, { fieldManager: ENDPOINTS_CONTROLLER });
    } catch (e) {
      if (!isRace(e)) {
        const why = e instanceof Error ? e.message : String(e);
        (this.o.events ?? NO_EVENTS).event(next, 'Warning', cur ? 'FailedToUpdateEndpoint' : 'FailedToCreateEndpoint',
          cur ? `Failed to update endpoint ${ns}/${name}: ${why}` : `Failed to create endpoint for service ${ns}/${name}: ${why}`);
      }
      throw e;
    }
  }
}
