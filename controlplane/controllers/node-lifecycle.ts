/**
 * controlplane/controllers/node-lifecycle: kube-controller-manager's node
 * lifecycle controller, with its taint-based eviction (the taint manager),
 * for the embedded control plane.
 *
 * Health. A Node is alive while something it writes moves on: its Lease in
 * `kube-node-lease` (`spec.renewTime` later than last seen) or its Ready
 * condition's `lastHeartbeatTime`. As upstream, the controller times these
 * by when *it* saw them move (its own clock), never by the timestamps
 * themselves, so a skewed node clock changes nothing. A Node first seen
 * (every Node, at the controller's start) gets a full grace period from
 * then: a restarted control plane does not flap its Nodes. When nothing has
 * moved for the grace period (`--node-monitor-grace-period`, 40 s), the
 * conditions the Node reports (Ready, and MemoryPressure, DiskPressure,
 * PIDPressure when present) become `Unknown` / `NodeStatusUnknown`
 * ("Kubelet stopped posting node status."); a Node that never posted Ready
 * gets one (`NodeStatusNeverUpdated`). The controller never sets Ready back
 * to True: the agent does, and the taints then go.
 *
 * Taints follow Ready (upstream's NoSchedule pass and NoExecute tainting):
 * Unknown → `node.kubernetes.io/unreachable`, False →
 * `node.kubernetes.io/not-ready`, each as NoSchedule and NoExecute with
 * `timeAdded`; True → neither. Other taints are never touched. NoExecute,
 * which evicts, follows upstream's zone disruption modes (zones by the
 * topology.kubernetes.io/region and zone labels; a zone with no Ready Node
 * is FullDisruption, one with more than 2 not Ready and at least 55% of
 * them PartialDisruption, else Normal):
 * - every zone FullDisruption: the control plane, not the Nodes, has most
 *   likely lost sight of them ("master disruption mode"): no NoExecute
 *   taint is added and those there are removed, so nothing is evicted;
 * - a PartialDisruption zone of at most 50 Nodes: no new NoExecute taint
 *   (a larger one: one Node per 100 s);
 * - otherwise one Node per zone is tainted NoExecute per 10 s
 *   (--node-eviction-rate 0.1).
 *
 * Pods. When the controller turns a Node's Ready to Unknown it records
 * `NodeNotReady` on the Node, and every Pod bound to a Node whose Ready is
 * not True has its Ready condition set to False (MarkPodsNotReady, with a
 * `NodeNotReady` Event on the Pod), so that the EndpointSlice controller
 * marks its endpoints neither ready nor serving and kube-proxy stops
 * sending traffic there. Eviction is the taint manager's: a Pod that does
 * not tolerate one of its Node's NoExecute taints is deleted at once; one
 * that tolerates them all is deleted after the smallest `tolerationSeconds`
 * of the tolerations used, counted from when the controller saw the taints
 * (DefaultTolerationSeconds gives every new Pod 300 s for not-ready and
 * unreachable, see kinds.ts); no `tolerationSeconds`: never. The deletion
 * is graceful, adds a `DisruptionTarget` condition first, and lets the Pod's
 * ReplicaSet replace it elsewhere. Taints gone: scheduled deletions are
 * cancelled.
 *
 * Watch → compare → act through the REST layer only, one key at a time
 * from a de-duplicated queue (`nodes//N`, `pods/NS/P`, `evict/NS/P`);
 * time comes from the injected clock, as per-Node deadlines and per-Pod
 * eviction timers. Writes carry the resourceVersion read, so a heartbeat
 * that lands meanwhile is a Conflict and the key is looked at again.
 */
import { ErrorCode, isNodenetError, NodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import { rfc3339, type RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import { POD_NODE_NAME, podNodeName } from './indexes.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, StoreEvent } from '../store/types.js';
import { grOf, namespaceOf } from '../store/types.js';
import { NO_EVENTS, type EventRecorder } from './events.js';
import { WorkQueue } from './work-queue.js';
import { obj, arr, str } from '../../lib/json/loose.js';
import { toleratesTaint, type Taint, type Toleration } from './taints.js';

type O = Record<string, unknown>;
const meta = (o: Readonly<KObject>): O => (o.metadata ?? {}) as O;
const R = (name: string) => RESOURCES.find((r) => r.resource === name)!;
const [NODES, PODS] = [R('nodes'), R('pods')];

export const DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS = 40_000;
export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
export const TAINT_UNREACHABLE = 'node.kubernetes.io/unreachable';
export const TAINT_NOT_READY = 'node.kubernetes.io/not-ready';
const MANAGED_TAINTS: ReadonlySet<string> = new Set([TAINT_UNREACHABLE, TAINT_NOT_READY]);
/** The conditions a silent Node's kubelet reported that become Unknown (NetworkUnavailable is the control plane's, as upstream). */
const CONDITIONS = ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure'] as const;
const FIELD_MANAGER = 'node-lifecycle-controller';
/** The `source.component`s upstream's Events carry: the node controller's, and its taint manager's. */
export const NODE_COMPONENT = 'node-controller';
export const EVICTION_COMPONENT = 'taint-eviction-controller';

export interface NodeLifecycleOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  /** How long a Node may be silent before it is Unknown (ms); default 40 s. */
  readonly gracePeriodMs?: number;
  readonly retryMs?: number;
  /** Records as NODE_COMPONENT: NodeNotReady on Nodes and Pods. */
  readonly events?: EventRecorder;
  /** Records as EVICTION_COMPONENT: TaintManagerEviction on Pods. */
  readonly evictionEvents?: EventRecorder;
}


/** What the controller saw of a Node's signs of life, and when (its clock). */
interface Health {
  /** When a sign of life was last seen move (or the Node first seen). */
  probe: number;
  heartbeat: string;
  renewTime: string;
}

interface Eviction {
  readonly node: string;
  readonly uid: string;
  /** When the taints were first seen on the Pod's Node (the count starts there). */
  readonly createdAt: number;
  readonly fireAt: number;
  /** null: due, its key queued. */
  readonly timer: unknown;
}

export function conditionOf(o: Readonly<KObject>, type: string): O | undefined {
  return arr(obj(o['status'])?.['conditions']).map(obj).find((c) => c?.['type'] === type);
}

export function taintsOf(node: Readonly<KObject>): Taint[] {
  return arr(obj(node['spec'])?.['taints']).map(obj).filter((t): t is O => !!t && typeof t['key'] === 'string').map((t) => t as unknown as Taint);
}


/**
 * The taint manager's decision for a Pod on a Node with these NoExecute taints: 'now' when one is not
 * tolerated, 'never' when every one is tolerated without tolerationSeconds, else the seconds to wait
 * (the smallest of the first toleration matching each taint; ≤ 0 is 0). Pure.
 */
export function evictionDelay(taints: readonly Taint[], tolerations: readonly Toleration[]): 'now' | 'never' | number {
  if (taints.length === 0) return 'never';
  const used: Toleration[] = [];
  for (const taint of taints) {
    const t = tolerations.find((x) => toleratesTaint(x, taint));
    if (!t) return 'now';
    used.push(t);
  }
  let min = Infinity;
  for (const t of used) {
    if (typeof t.tolerationSeconds !== 'number') continue;
    if (t.tolerationSeconds <= 0) return 0;
    min = Math.min(min, t.tolerationSeconds);
  }
  return min === Infinity ? 'never' : min;
}

/** The condition taints a Node should carry for its Ready status (kept as they are when already there). */
export function desiredTaints(ready: string | undefined): { key: string; effect: string }[] {
  const key = ready === 'Unknown' ? TAINT_UNREACHABLE : ready === 'False' ? TAINT_NOT_READY : null;
  return key ? [{ key, effect: 'NoSchedule' }, { key, effect: 'NoExecute' }] : [];
}

/** A later time than `prev` (RFC 3339, micro- or milliseconds); strings that do not parse: any change. */
function advanced(prev: string, cur: string): boolean {
  if (cur === '' || cur === prev) return false;
  if (prev === '') return true;
  const a = Date.parse(prev);
  const b = Date.parse(cur);
  return Number.isFinite(a) && Number.isFinite(b) ? b > a : true;
}

/** Upstream's --large-cluster-size-threshold: a partially disrupted zone larger than this still evicts, slowly. */
const LARGE_CLUSTER_SIZE = 50;
/** --unhealthy-zone-threshold. */
const UNHEALTHY_ZONE_THRESHOLD = 0.55;

export interface ZoneState {
  readonly state: 'Normal' | 'PartialDisruption' | 'FullDisruption';
  readonly size: number;
}

/** A Node's zone (utilnode.GetZoneKey): its region and zone labels; '' without them. */
export function zoneOf(node: Readonly<KObject>): string {
  const labels = (obj(meta(node)['labels']) ?? {}) as Record<string, string>;
  const region = labels['topology.kubernetes.io/region'] ?? '';
  const zone = labels['topology.kubernetes.io/zone'] ?? '';
  return region || zone ? `${region}:\u0000:${zone}` : '';
}

/** ComputeZoneState over the Ready statuses of a zone's Nodes. Pure. */
export function zoneState(readyStatuses: readonly (string | undefined)[]): ZoneState {
  const ready = readyStatuses.filter((r) => r === 'True').length;
  const notReady = readyStatuses.length - ready;
  const state = ready === 0 && notReady > 0 ? 'FullDisruption' : notReady > 2 && notReady / readyStatuses.length >= UNHEALTHY_ZONE_THRESHOLD ? 'PartialDisruption' : 'Normal';
  return { state, size: readyStatuses.length };
}

const notFound = (e: unknown) => isNodenetError(e) && e.code === ErrorCode.NotFound;

export class NodeLifecycleController {
  readonly gracePeriodMs: number;
  private readonly handles: { stop(): void }[] = [];
  private readonly work: WorkQueue;
  private readonly health = new Map<string, Health>();
  /** Node → its deadline timer (probe + grace). */
  private readonly deadlines = new Map<string, unknown>();
  /** `pods/NS/P` → its scheduled deletion. */
  private readonly evictions = new Map<string, Eviction>();
  private stopped = false;
  /** Every zone fully disrupted at the last look (master disruption mode). */
  private allDisrupted = false;
  /** Zone → when the next NoExecute taint may be added there (the eviction rate limiter). */
  private readonly nextNoExecute = new Map<string, number>();

  constructor(private readonly o: NodeLifecycleOptions) {
    const g = o.gracePeriodMs ?? DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS;
    if (!Number.isFinite(g) || g <= 0) throw new NodenetError(ErrorCode.InvalidConfig, `node monitor grace period ${g} ms: must be more than 0`);
    this.gracePeriodMs = g;
    o.cache.addIndex('pods', POD_NODE_NAME, podNodeName);
    this.work = new WorkQueue({ name: 'node lifecycle controller', clock: o.clock, log: o.log, process: (k) => this.process(k), ...(o.retryMs ? { retryMs: o.retryMs } : {}) });
  }

  start(): void {
    const st = this.o.cache;
    const rev = st.rev;
    // Every Node known now is judged a full grace period from now, as upstream after a restart.
    for (const s of st.list('nodes').items) this.observeNode(s.object);
    for (const s of st.list('leases.coordination.k8s.io', NODE_LEASE_NAMESPACE).items) this.observeLease(s.object);
    for (const s of st.list('pods').items) if (str(obj(s.object['spec'])?.['nodeName'])) this.work.add(s.key);
    this.handles.push(st.watch({ gr: 'nodes', afterRev: rev, onEvent: (ev) => this.onNode(ev) }));
    this.handles.push(st.watch({ gr: 'leases.coordination.k8s.io', namespace: NODE_LEASE_NAMESPACE, afterRev: rev, onEvent: (ev) => this.onLease(ev) }));
    this.handles.push(st.watch({ gr: 'pods', afterRev: rev, onEvent: (ev) => this.onPod(ev) }));
  }

  stop(): void {
    this.stopped = true;
    for (const h of this.handles) h.stop();
    this.work.stop();
    for (const t of this.deadlines.values()) this.o.clock.clearTimeout(t);
    this.deadlines.clear();
    for (const e of this.evictions.values()) if (e.timer !== null) this.o.clock.clearTimeout(e.timer);
    this.evictions.clear();
  }

  /** Resolves when nothing is queued or being worked on (timers aside). */
  idle(): Promise<void> {
    return this.work.idle();
  }

  /** Pods with a deletion scheduled, and when (tests, status). */
  scheduledEvictions(): ReadonlyMap<string, number> {
    return new Map([...this.evictions].map(([k, e]) => [k, e.fireAt]));
  }

  // --- watch handlers: record what moved, queue keys ---

  private observeNode(node: Readonly<KObject>): void {
    const name = str(meta(node)['name']);
    const hb = str(conditionOf(node, 'Ready')?.['lastHeartbeatTime']);
    const h = this.health.get(name);
    if (!h) {
      this.health.set(name, { probe: this.o.clock.now(), heartbeat: hb, renewTime: '' });
    } else if (advanced(h.heartbeat, hb)) {
      h.heartbeat = hb;
      h.probe = this.o.clock.now();
    }
    this.armDeadline(name);
    this.work.add(`nodes//${name}`);
  }

  private observeLease(lease: Readonly<KObject>): void {
    const name = str(meta(lease)['name']);
    const h = this.health.get(name);
    if (!h) return; // no such Node (yet): its first sight starts its grace period anyway
    const renew = str(obj(lease['spec'])?.['renewTime']);
    if (!advanced(h.renewTime, renew)) return;
    h.renewTime = renew;
    h.probe = this.o.clock.now();
    this.armDeadline(name);
    this.work.add(`nodes//${name}`);
  }

  private onNode(ev: StoreEvent): void {
    const name = str(meta(ev.cur.object)['name']);
    if (ev.type === 'DELETED') {
      this.health.delete(name);
      const t = this.deadlines.get(name);
      if (t !== undefined) this.o.clock.clearTimeout(t);
      this.deadlines.delete(name);
      return;
    }
    this.observeNode(ev.cur.object);
  }

  private onLease(ev: StoreEvent): void {
    if (ev.type !== 'DELETED') this.observeLease(ev.cur.object);
  }

  private onPod(ev: StoreEvent): void {
    if (ev.type === 'DELETED') {
      this.cancelEviction(ev.key, false);
      return;
    }
    const spec = obj(ev.cur.object['spec']) ?? {};
    const prev = obj(ev.prev?.object['spec']) ?? {};
    if (!str(spec['nodeName'])) return;
    // A Pod newly bound, or its tolerations changed: judged against its Node now.
    if (!ev.prev || prev['nodeName'] !== spec['nodeName'] || !deepEqual(prev['tolerations'], spec['tolerations'])) this.work.add(ev.key);
  }

  private armDeadline(name: string): void {
    if (this.stopped) return;
    const h = this.health.get(name);
    if (!h) return;
    const old = this.deadlines.get(name);
    if (old !== undefined) this.o.clock.clearTimeout(old);
    this.deadlines.delete(name);
    const ms = h.probe + this.gracePeriodMs - this.o.clock.now();
    if (ms <= 0) return; // already due: the caller queued the Node
    this.deadlines.set(name, this.o.clock.setTimeout(() => {
      this.deadlines.delete(name);
      this.work.add(`nodes//${name}`);
    }, ms));
  }

  // --- the work ---

  private async process(key: string): Promise<void> {
    const gr = grOf(key);
    if (gr === 'nodes') return this.syncNode(key.slice('nodes//'.length));
    if (gr === 'pods') return this.syncPod(key);
    if (gr === 'evict') return this.evict(`pods/${key.slice('evict/'.length)}`);
  }

  private podsOn(node: string): Readonly<KObject>[] {
    return this.o.cache.byIndex('pods', POD_NODE_NAME, node).map((s) => s.object);
  }

  private async syncNode(name: string): Promise<void> {
    const s = this.o.cache.get(`nodes//${name}`);
    if (!s || meta(s.object)['deletionTimestamp']) return;
    let node = s.object;
    const h = this.health.get(name);
    if (!h) return;
    const observed = str(conditionOf(node, 'Ready')?.['status']);
    if (this.o.clock.now() - h.probe >= this.gracePeriodMs) {
      const next = this.unknownStatus(node);
      if (next) {
        const log = { [F.node]: name, silentMs: this.o.clock.now() - h.probe };
        node = (await this.o.rest.update(NODES, '', name, { ...structuredClone(node), status: next }, { sub: 'status', fieldManager: FIELD_MANAGER })).object;
        this.o.log.info(log, `node ${name} stopped posting status: conditions set to Unknown`);
        if (observed === 'True') (this.o.events ?? NO_EVENTS).event(node, 'Normal', 'NodeNotReady', `Node ${name} status is now: NodeNotReady`);
      }
    } else {
      // Not due yet (a timer may fire a millisecond early, or this sync came from another change): judge it
      // again at its deadline, or a silent Node would never be.
      this.armDeadline(name);
    }
    const ready = str(conditionOf(node, 'Ready')?.['status']) || undefined;
    const zones = this.zoneStates();
    const all = zones.size > 0 && [...zones.values()].every((z) => z.state === 'FullDisruption');
    if (all !== this.allDisrupted) {
      this.allDisrupted = all;
      this.o.log[all ? 'warn' : 'info']({}, all ? 'Controller detected that all Nodes are not-Ready. Entering master disruption mode.' : 'Controller detected that some Nodes are Ready. Exiting master disruption mode.');
      for (const n of this.o.cache.list('nodes').items) if (str(meta(n.object)['name']) !== name) this.work.add(`nodes//${str(meta(n.object)['name'])}`);
    }
    node = await this.syncTaints(node, ready, zones.get(zoneOf(node)));
    if (ready !== undefined && ready !== 'True') {
      for (const p of this.podsOn(name)) await this.markPodNotReady(p, name);
    }
    const noExecute = taintsOf(node).filter((t) => t.effect === 'NoExecute');
    for (const p of this.podsOn(name)) this.judgePod(p, name, noExecute);
  }

  /** The status with the silent Node's conditions Unknown, or null when they already are. */
  private unknownStatus(node: Readonly<KObject>): O | null {
    const status = structuredClone(obj(node['status']) ?? {});
    const conds = arr(status['conditions']).map(obj).filter((c): c is O => !!c);
    const now = rfc3339(this.o.clock.now());
    let changed = false;
    for (const type of CONDITIONS) {
      const c = conds.find((x) => x['type'] === type);
      if (!c) {
        if (type !== 'Ready') continue; // only what the Node reports, and Ready always
        conds.push({ type, status: 'Unknown', lastHeartbeatTime: str(meta(node)['creationTimestamp']) || now, lastTransitionTime: now, reason: 'NodeStatusNeverUpdated', message: 'Kubelet never posted node status.' });
        changed = true;
      } else if (c['status'] !== 'Unknown') {
        Object.assign(c, { status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.', lastTransitionTime: now });
        changed = true;
      }
    }
    if (!changed) return null;
    // The heartbeat written for a Node that never had one is not a sign of life.
    const h = this.health.get(str(meta(node)['name']));
    const hb = str(conds.find((x) => x['type'] === 'Ready')?.['lastHeartbeatTime']);
    if (h && advanced(h.heartbeat, hb)) h.heartbeat = hb;
    status['conditions'] = conds;
    return status;
  }

  /**
   * Each zone's disruption state, from the Nodes' Ready conditions, a Node silent past the grace period counted as
   * not Ready already (upstream marks every silent Node in one monitor pass before it judges the zones, so Nodes
   * that went silent together are counted together).
   */
  private zoneStates(): Map<string, ZoneState> {
    const byZone = new Map<string, (string | undefined)[]>();
    const now = this.o.clock.now();
    for (const s of this.o.cache.list('nodes').items) {
      if (meta(s.object)['deletionTimestamp']) continue;
      const z = zoneOf(s.object);
      const h = this.health.get(str(meta(s.object)['name']));
      const silent = h !== undefined && now - h.probe >= this.gracePeriodMs;
      (byZone.get(z) ?? byZone.set(z, []).get(z)!).push(silent ? 'Unknown' : str(conditionOf(s.object, 'Ready')?.['status']) || undefined);
    }
    return new Map([...byZone].map(([z, r]) => [z, zoneState(r)]));
  }

  /** Puts the condition taints right (kept with their timeAdded, added with now, the other kind removed); returns the Node as stored. */
  private async syncTaints(node: Readonly<KObject>, ready: string | undefined, zone: ZoneState | undefined): Promise<Readonly<KObject>> {
    const have = taintsOf(node);
    let want = desiredTaints(ready);
    const name0 = str(meta(node)['name']);
    const hasNoExecute = have.some((t) => MANAGED_TAINTS.has(t.key) && t.effect === 'NoExecute' && want.some((w) => w.key === t.key && w.effect === 'NoExecute'));
    if (this.allDisrupted) want = want.filter((w) => w.effect !== 'NoExecute');
    else if (!hasNoExecute && want.some((w) => w.effect === 'NoExecute')) {
      // The eviction rate limiter: a new NoExecute taint waits its zone's turn.
      const z = zoneOf(node);
      const every = zone?.state === 'PartialDisruption' ? (zone.size > LARGE_CLUSTER_SIZE ? 100_000 : null) : 10_000;
      const now = this.o.clock.now();
      const next = this.nextNoExecute.get(z) ?? 0;
      if (every === null || now < next) {
        want = want.filter((w) => w.effect !== 'NoExecute');
        if (every !== null) this.work.addAfter(`nodes//${name0}`, next - now);
      } else this.nextNoExecute.set(z, now + every);
    }
    const isWanted = (t: Taint) => want.some((w) => w.key === t.key && w.effect === t.effect);
    const kept = have.filter((t) => !MANAGED_TAINTS.has(t.key) || isWanted(t));
    const added = want.filter((w) => !have.some((t) => t.key === w.key && t.effect === w.effect)).map((w) => ({ ...w, timeAdded: rfc3339(this.o.clock.now()) }));
    if (added.length === 0 && kept.length === have.length) return node;
    const next = structuredClone(node) as KObject;
    const spec = (obj(next['spec']) ?? (next['spec'] = {})) as O;
    const taints = [...kept, ...added];
    if (taints.length) spec['taints'] = taints;
    else delete spec['taints'];
    const name = str(meta(node)['name']);
    const out = (await this.o.rest.update(NODES, '', name, next, { fieldManager: FIELD_MANAGER })).object;
    const removed = have.filter((t) => !kept.includes(t));
    this.o.log.info({ [F.node]: name, added: added.map((t) => `${t.key}:${t.effect}`), removed: removed.map((t) => `${t.key}:${t.effect}`) }, `node ${name}: taints follow Ready=${ready ?? 'none'}`);
    return out;
  }

  /** MarkPodsNotReady for one Pod: its Ready condition False (other conditions as they are), and an Event. */
  private async markPodNotReady(pod: Readonly<KObject>, node: string): Promise<void> {
    const c = conditionOf(pod, 'Ready');
    // Terminating ones too: a terminating endpoint that still serves is kube-proxy's last resort.
    if (!c || c['status'] === 'False') return;
    const next = structuredClone(pod) as KObject;
    const rc = conditionOf(next, 'Ready')!;
    rc['status'] = 'False';
    rc['lastTransitionTime'] = rfc3339(this.o.clock.now());
    const ns = str(meta(pod)['namespace']);
    const name = str(meta(pod)['name']);
    try {
      await this.o.rest.update(PODS, ns, name, next, { sub: 'status', fieldManager: FIELD_MANAGER });
    } catch (e) {
      if (notFound(e)) return;
      throw e;
    }
    this.o.log.info({ [F.node]: node, [F.namespace]: ns, [F.pod]: name }, `pod ${ns}/${name} marked not ready: node ${node} is not ready`);
    (this.o.events ?? NO_EVENTS).event(pod, 'Warning', 'NodeNotReady', 'Node is not ready');
  }

  private async syncPod(key: string): Promise<void> {
    const pod = this.o.cache.get(key)?.object;
    if (!pod) {
      this.cancelEviction(key, false);
      return;
    }
    const nodeName = str(obj(pod['spec'])?.['nodeName']);
    const node = this.o.cache.get(`nodes//${nodeName}`)?.object;
    if (!node || !this.health.has(nodeName)) return;
    const ready = str(conditionOf(node, 'Ready')?.['status']);
    if (ready !== '' && ready !== 'True') await this.markPodNotReady(pod, nodeName);
    this.judgePod(pod, nodeName, taintsOf(node).filter((t) => t.effect === 'NoExecute'));
  }

  /** processPodOnNode: schedules, moves or cancels the Pod's deletion for its Node's NoExecute taints. */
  private judgePod(pod: Readonly<KObject>, node: string, taints: readonly Taint[]): void {
    if (this.stopped) return;
    const m = meta(pod);
    const key = `pods/${str(m['namespace'])}/${str(m['name'])}`;
    if (m['deletionTimestamp']) {
      this.cancelEviction(key, false); // already going
      return;
    }
    const tolerations = arr(obj(pod['spec'])?.['tolerations']).map(obj).filter((t): t is O => !!t) as Toleration[];
    const d = evictionDelay(taints, tolerations);
    if (d === 'never') {
      this.cancelEviction(key, true);
      return;
    }
    const now = this.o.clock.now();
    const had = this.evictions.get(key);
    const createdAt = had && d !== 'now' ? had.createdAt : now;
    const fireAt = d === 'now' ? now : createdAt + d * 1000;
    if (had && had.fireAt === fireAt) return;
    if (had?.timer !== null && had?.timer !== undefined) this.o.clock.clearTimeout(had.timer);
    const evictKey = `evict/${key.slice('pods/'.length)}`;
    // Due already: queued now rather than on a timer (which a fake clock fires only when time moves).
    const timer = fireAt <= now ? null : this.o.clock.setTimeout(() => this.work.add(evictKey), fireAt - now);
    this.evictions.set(key, { node, uid: str(m['uid']), createdAt, fireAt, timer });
    if (timer === null) this.work.add(evictKey);
    if (!had && d !== 'now') this.o.log.info({ [F.node]: node, [F.pod]: key, inMs: fireAt - now }, `pod ${key.slice(5)} will be evicted in ${d} s unless its node ${node} recovers`);
  }

  private cancelEviction(key: string, withEvent: boolean): void {
    const e = this.evictions.get(key);
    if (!e) return;
    if (e.timer !== null) this.o.clock.clearTimeout(e.timer);
    this.evictions.delete(key);
    this.o.log.info({ [F.node]: e.node, [F.pod]: key }, `eviction of pod ${key.slice(5)} cancelled`);
    if (withEvent) {
      const [, ns = '', name = ''] = key.split('/');
      (this.o.evictionEvents ?? NO_EVENTS).event({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: ns, name, uid: e.uid } }, 'Normal', 'TaintManagerEviction', `Cancelling deletion of Pod ${ns}/${name}`);
    }
  }

  /** The taint manager's deletion: a DisruptionTarget condition, then a graceful delete of that very Pod. */
  private async evict(key: string): Promise<void> {
    const e = this.evictions.get(key);
    if (!e) return;
    const early = e.fireAt - this.o.clock.now();
    if (early > 0) {
      // The timer fired before its time (timers run on the event loop's cached time): wait the rest.
      this.evictions.set(key, { ...e, timer: this.o.clock.setTimeout(() => this.work.add(`evict/${key.slice('pods/'.length)}`), early) });
      return;
    }
    const pod = this.o.cache.get(key)?.object;
    if (!pod || str(meta(pod)['uid']) !== e.uid || meta(pod)['deletionTimestamp']) {
      this.evictions.delete(key);
      return;
    }
    const ns = namespaceOf(key);
    const name = str(meta(pod)['name']);
    const status = structuredClone(obj(pod['status']) ?? {});
    const conds = arr(status['conditions']).map(obj).filter((c): c is O => !!c && c['type'] !== 'DisruptionTarget');
    conds.push({ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByTaintManager', message: 'Taint manager: deleting due to NoExecute taint', lastTransitionTime: rfc3339(this.o.clock.now()) });
    status['conditions'] = conds;
    try {
      await this.o.rest.update(PODS, ns, name, { ...structuredClone(pod), status }, { sub: 'status', fieldManager: FIELD_MANAGER });
      await this.o.rest.delete(PODS, ns, name, { preconditions: { uid: e.uid } });
    } catch (err) {
      if (!notFound(err)) throw err;
    }
    this.evictions.delete(key);
    this.o.log.info({ [F.node]: e.node, [F.namespace]: ns, [F.pod]: name }, `pod ${ns}/${name} evicted from node ${e.node}`);
    (this.o.evictionEvents ?? NO_EVENTS).event(pod, 'Normal', 'TaintManagerEviction', `Marking for deletion Pod ${ns}/${name}`);
  }
}
