/**
 * controlplane/controllers/endpointslice: kube-controller-manager's
 * EndpointSlice controller for the embedded control plane.
 *
 * For every Service with a selector (not ExternalName), the Pods of its
 * namespace it selects become endpoints, in slices of at most 100, with the
 * conditions kube-proxy reads:
 *   ready       the Pod's Ready condition is True and it is not terminating
 *   serving     the Pod's Ready condition is True (terminating or not)
 *   terminating the Pod has a deletionTimestamp
 * plus `nodeName`, a `targetRef` to the Pod, and the Service's ports with
 * each named `targetPort` resolved per Pod (Pods that resolve a name
 * differently go into different slices, as upstream). Pods without an IP,
 * and finished Pods, are left out.
 *
 * Slices are labelled `kubernetes.io/service-name` and
 * `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`
 * and owned by their Service (so the garbage collector removes them with
 * it). A Service without a selector keeps the slices its user wrote: only
 * slices this controller manages are ever touched.
 *
 * Watch → compare → act through the REST layer, one Service at a time from a
 * de-duplicated queue; a Pod's change queues the Services that select it
 * (before or after the change), a change to a managed slice queues its
 * Service (someone edited it: it is put back).
 *
 * The slices a sync writes carry `endpoints.kubernetes.io/last-change-trigger-time`
 * (RFC 3339), as upstream's TriggerTimeTracker sets it, so an agent can measure
 * network programming latency: the earliest change not yet written for the
 * Service (a new Service: its creationTimestamp; a Pod whose Ready condition
 * moved: its lastTransitionTime; any other change: when the controller saw
 * it). A sync with no such change (the resync at start) clears it.
 */
import { WorkQueue } from './work-queue.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import type { RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { labelSelectorRequirements, matchesLabels } from '../api/selectors.js';
import type { IndexFunc } from '../store/indexer.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, Stored, StoreEvent } from '../store/types.js';
import { namespaceOf } from '../store/types.js';
import { obj, arr } from '../../lib/json/loose.js';

type O = Record<string, unknown>;
const meta = (o: Readonly<KObject>): O => (o.metadata ?? {}) as O;

const SLICES = RESOURCES.find((r) => r.resource === 'endpointslices')!;
const SLICES_GR = 'endpointslices.discovery.k8s.io';
export const MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';
export const CONTROLLER_NAME = 'endpointslice-controller.k8s.io';
export const SERVICE_NAME = 'kubernetes.io/service-name';
export const MAX_ENDPOINTS_PER_SLICE = 100;
export const TRIGGER_TIME_ANNOTATION = 'endpoints.kubernetes.io/last-change-trigger-time';

/** The slices this controller manages, by `<namespace>/<service>`: a sync reads its Service's slices, not all of them. */
const MANAGED_FOR_SERVICE = 'managed-for-service';
const managedForService: IndexFunc = (s: Stored) => {
  const l = (meta(s.object)['labels'] ?? {}) as Record<string, unknown>;
  const svc = l[SERVICE_NAME];
  return l[MANAGED_BY] === CONTROLLER_NAME && typeof svc === 'string' && svc ? [`${String(meta(s.object)['namespace'] ?? '')}/${svc}`] : [];
};

/** Go's time.RFC3339Nano of a UTC time in ms (no trailing zeros in the fraction). */
export function rfc3339Nano(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d*?)0+Z$/, (_m, d: string) => (d ? `.${d}Z` : 'Z'));
}

const timeOf = (v: unknown): number | undefined => {
  const t = typeof v === 'string' ? Date.parse(v) : NaN;
  return Number.isNaN(t) ? undefined : t;
};
const readyTransition = (pod: Readonly<KObject> | undefined): unknown =>
  arr(obj(pod?.['status'])?.['conditions']).map(obj).find((c) => c?.['type'] === 'Ready')?.['lastTransitionTime'];

export interface EndpointSliceControllerOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  readonly maxEndpointsPerSlice?: number;
  readonly retryMs?: number;
}

interface Port {
  name: string;
  port: number;
  protocol: string;
  appProtocol?: string;
}

/** The selector of a Service that has one (a map of labels), else null. */
function selectorOf(svc: Readonly<KObject>): Record<string, string> | null {
  const spec = obj(svc['spec']) ?? {};
  if (spec['type'] === 'ExternalName') return null;
  const sel = obj(spec['selector']);
  if (!sel || Object.keys(sel).length === 0) return null;
  return sel as Record<string, string>;
}

function podReady(pod: Readonly<KObject>): boolean {
  return arr(obj(pod['status'])?.['conditions']).some((c) => obj(c)?.['type'] === 'Ready' && obj(c)?.['status'] === 'True');
}

/** The Service's ports for one Pod, named targetPorts resolved in its containers; null when one cannot be. */
function portsFor(svc: Readonly<KObject>, pod: Readonly<KObject>): Port[] | null {
  const out: Port[] = [];
  const containers = arr(obj(pod['spec'])?.['containers']).map(obj).filter((c): c is O => !!c);
  for (const p of arr(obj(svc['spec'])?.['ports']).map(obj)) {
    if (!p) continue;
    const protocol = String(p['protocol'] ?? 'TCP');
    const target = p['targetPort'] ?? p['port'];
    let port: number | undefined;
    if (typeof target === 'number') port = target;
    else if (typeof target === 'string' && /^\d+$/.test(target)) port = Number(target);
    else if (typeof target === 'string') {
      for (const c of containers) {
        const cp = arr(c['ports']).map(obj).find((x) => x?.['name'] === target && String(x?.['protocol'] ?? 'TCP') === protocol);
        if (cp && typeof cp['containerPort'] === 'number') port = cp['containerPort'];
        if (port !== undefined) break;
      }
    }
    if (port === undefined) continue; // upstream leaves out a port a Pod does not have
    const e: Port = { name: String(p['name'] ?? ''), port, protocol };
    if (typeof p['appProtocol'] === 'string') e.appProtocol = p['appProtocol'];
    out.push(e);
  }
  return out;
}

/** The desired slices' contents for a Service: groups of (ports, endpoints), endpoints sorted, chunked. Pure. */
export function desiredSlices(svc: Readonly<KObject>, pods: readonly Readonly<KObject>[], max = MAX_ENDPOINTS_PER_SLICE): { ports: Port[]; endpoints: O[] }[] {
  const sel = selectorOf(svc);
  if (!sel) return [];
  const reqs = labelSelectorRequirements({ matchLabels: sel });
  const groups = new Map<string, { ports: Port[]; endpoints: O[] }>();
  for (const pod of pods) {
    const m = meta(pod);
    if (!matchesLabels(reqs, (m['labels'] ?? {}) as Record<string, string>)) continue;
    const status = obj(pod['status']) ?? {};
    const ip = typeof status['podIP'] === 'string' ? status['podIP'] : '';
    if (!ip || status['phase'] === 'Succeeded' || status['phase'] === 'Failed') continue;
    const ports = portsFor(svc, pod);
    if (!ports) continue;
    const terminating = Boolean(m['deletionTimestamp']);
    const ready = podReady(pod);
    const ep: O = {
      addresses: [ip],
      conditions: { ready: ready && !terminating, serving: ready, terminating },
      targetRef: { kind: 'Pod', namespace: String(m['namespace']), name: String(m['name']), uid: String(m['uid']) },
    };
    const spec = obj(pod['spec']) ?? {};
    const node = spec['nodeName'];
    if (typeof node === 'string' && node) ep['nodeName'] = node;
    // Upstream's ShouldSetHostname: a Pod with a hostname whose subdomain names this Service (same namespace), the
    // record `<hostname>.<service>.<ns>.svc.<zone>` of the DNS spec's headless Services.
    if (typeof spec['hostname'] === 'string' && spec['hostname'] && spec['subdomain'] === meta(svc)['name'] && m['namespace'] === meta(svc)['namespace']) ep['hostname'] = spec['hostname'];
    const k = JSON.stringify(ports);
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { ports, endpoints: [] }));
    g.endpoints.push(ep);
  }
  const out: { ports: Port[]; endpoints: O[] }[] = [];
  for (const k of [...groups.keys()].sort()) {
    const g = groups.get(k)!;
    g.endpoints.sort((a, b) => (String(arr(a['addresses'])[0]) < String(arr(b['addresses'])[0]) ? -1 : 1));
    for (let i = 0; i < g.endpoints.length; i += max) out.push({ ports: g.ports, endpoints: g.endpoints.slice(i, i + max) });
  }
  // A Service with a selector and no endpoints still has one (empty) placeholder slice, as upstream.
  if (out.length === 0) out.push({ ports: [], endpoints: [] });
  return out;
}

export class EndpointSliceController {
  private readonly handles: { stop(): void }[] = [];
  private readonly work: WorkQueue;
  /** Service key → the time of the earliest change not yet written to its slices (TriggerTimeTracker). */
  private readonly triggers = new Map<string, number>();

  constructor(private readonly o: EndpointSliceControllerOptions) {
    this.work = new WorkQueue({ name: 'endpointslice controller', clock: o.clock, log: o.log, process: (k) => this.sync(k), ...(o.retryMs ? { retryMs: o.retryMs } : {}) });
    o.cache.addIndex(SLICES_GR, MANAGED_FOR_SERVICE, managedForService);
  }

  start(): void {
    const st = this.o.cache;
    const rev = st.rev;
    for (const s of st.list('services').items) this.work.add(s.key);
    this.handles.push(st.watch({ gr: 'services', afterRev: rev, onEvent: (ev) => this.onService(ev) }));
    this.handles.push(st.watch({ gr: 'pods', afterRev: rev, onEvent: (ev) => this.onPod(ev) }));
    this.handles.push(st.watch({ gr: SLICES_GR, afterRev: rev, onEvent: (ev) => this.onSlice(ev) }));
  }

  stop(): void {
    for (const h of this.handles) h.stop();
    this.work.stop();
  }

  idle(): Promise<void> {
    return this.work.idle();
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

  private onPod(ev: StoreEvent): void {
    const ns = namespaceOf(ev.key);
    const labelsOf = (o: Readonly<KObject> | undefined) => (o ? ((meta(o)['labels'] ?? {}) as Record<string, string>) : null);
    const before = labelsOf(ev.prev?.object);
    const after = labelsOf(ev.cur.object);
    // The Pod's trigger time: its Ready condition's transition when that moved (upstream's), else now.
    const now = this.o.clock.now();
    const ltt = readyTransition(ev.cur.object);
    const moved = ev.type !== 'DELETED' && ltt !== readyTransition(ev.prev?.object) ? timeOf(ltt) : undefined;
    const changedAt = moved !== undefined && moved <= now ? moved : now;
    for (const s of this.o.cache.list('services', ns).items) {
      const sel = selectorOf(s.object);
      if (!sel) continue;
      const reqs = labelSelectorRequirements({ matchLabels: sel });
      if ((before && matchesLabels(reqs, before)) || (after && matchesLabels(reqs, after))) this.enqueue(s.key, changedAt);
    }
  }

  private onSlice(ev: StoreEvent): void {
    const labels = (meta(ev.cur.object)['labels'] ?? {}) as Record<string, string>;
    if (labels[MANAGED_BY] !== CONTROLLER_NAME || !labels[SERVICE_NAME]) return;
    this.enqueue(`services/${namespaceOf(ev.key)}/${labels[SERVICE_NAME]}`);
  }


  /** The Service's managed slices, by name (the index answers in key order: one namespace, so name order). */
  private managedSlices(ns: string, name: string): Readonly<KObject>[] {
    return this.o.cache.byIndex(SLICES_GR, MANAGED_FOR_SERVICE, `${ns}/${name}`).map((s) => s.object);
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
    const existing = this.managedSlices(ns, name);
    if (!svc || !selectorOf(svc) || meta(svc)['deletionTimestamp']) {
      // No Service, or one without a selector: the slices this controller made go (a user's stay).
      for (const s of existing) await this.o.rest.delete(SLICES, ns, String(meta(s)['name']));
      return;
    }
    const pods = this.o.cache.list('pods', ns).items.map((s) => s.object);
    const want = desiredSlices(svc, pods, this.o.maxEndpointsPerSlice ?? MAX_ENDPOINTS_PER_SLICE);
    const m = meta(svc);
    const body = (d: { ports: Port[]; endpoints: O[] }, current?: Readonly<KObject>): KObject => {
      const next: KObject = current ? (structuredClone(current) as KObject) : {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          generateName: `${name}-`,
          namespace: ns,
          ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name, uid: String(m['uid']), controller: true, blockOwnerDeletion: true }],
        },
      };
      const nm = next.metadata as O;
      nm['labels'] = { ...((nm['labels'] ?? {}) as O), ...((m['labels'] ?? {}) as O), [SERVICE_NAME]: name, [MANAGED_BY]: CONTROLLER_NAME };
      const ann: O = { ...((nm['annotations'] ?? {}) as O) };
      if (trigger !== undefined) ann[TRIGGER_TIME_ANNOTATION] = rfc3339Nano(trigger);
      else delete ann[TRIGGER_TIME_ANNOTATION];
      if (Object.keys(ann).length) nm['annotations'] = ann;
      else delete nm['annotations'];
      next['addressType'] = 'IPv4';
      next['ports'] = d.ports;
      next['endpoints'] = d.endpoints;
      return next;
    };
    for (let i = 0; i < Math.max(want.length, existing.length); i++) {
      const d = want[i];
      const cur = existing[i];
      if (d && cur) {
        const next = body(d, cur);
        if (deepEqual(next['ports'], cur['ports']) && deepEqual(next['endpoints'], cur['endpoints']) && deepEqual(next.metadata?.['labels'], cur.metadata?.['labels'])) continue;
        await this.o.rest.update(SLICES, ns, String(meta(cur)['name']), next, { fieldManager: CONTROLLER_NAME });
      } else if (d) {
        await this.o.rest.create(SLICES, ns, body(d), { fieldManager: CONTROLLER_NAME });
      } else if (cur) {
        await this.o.rest.delete(SLICES, ns, String(meta(cur)['name']));
      }
    }
  }
}
