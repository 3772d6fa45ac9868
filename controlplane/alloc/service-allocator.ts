/**
 * controlplane/alloc/service-allocator: ClusterIPs from the service CIDR and
 * NodePorts from their range, in the API server's own create and update path
 * (as kube-apiserver's Service REST does), so that the object a client gets
 * back already carries them.
 *
 * Each value a Service holds is a stored object of its own, keyed by the
 * value, whose create-if-absent is the lock between writers: two API servers
 * (or two requests of one) can never both create it.
 *   ipaddresses.networking.k8s.io//<ip>   an IPAddress (networking.k8s.io/v1,
 *                                         KEP-1880's shape: spec.parentRef
 *                                         names the Service)
 *   servicenodeports.nodenet.io//<port>   the same shape for a NodePort
 *                                         (upstream keeps one bitmap object
 *                                         per range, whose compare-and-swap
 *                                         every concurrent create fights over)
 * The allocation objects are written in the same storage transaction as
 * their Service (the REST layer adds the operations this allocator returns:
 * creates for new values, deletes for released ones), so a Service never
 * exists without them nor they without it. Choosing a value reads the watch
 * cache; a value another writer took first fails its create, and the write
 * is tried again with another (`taken()`), or refused if it was the one the
 * client asked for. Within one process a write in flight also holds a
 * reservation, so concurrent creates rarely collide at all.
 *
 * The repair (repair(), run by the controller manager's leader): a Service that holds a value without its object (a
 * store written before 2026-12-05) gets the object; an object whose Service
 * is gone or holds the value no more is deleted; two Services sharing one
 * value are reported, and the one the object names keeps it.
 *
 * The first address of the service CIDR is the `kubernetes` Service's, as
 * in Kubernetes; the network and broadcast addresses are never handed out.
 *
 * A LoadBalancer Service with `externalTrafficPolicy: Local` also holds a
 * `spec.healthCheckNodePort` from the NodePort range (kube-apiserver's
 * allocHealthCheckNodePort), for the agents' health server; it goes back to
 * the range once the Service is deleted or no longer needs one (the
 * strategy drops the field then, as upstream's dropTypeDependentFields).
 * `allocateLoadBalancerNodePorts: false` gives a LoadBalancer no NodePorts
 * but the ones it asks for (upstream's shouldAllocateNodePorts).
 */
import { fieldErr, type FieldError } from '../api/errors.js';
import { cidrContains, intToIp, ipToInt, isIPv4, parseCidr } from '../../lib/net/ip.js';
import { ErrorCode, NodenetError } from '../../lib/errors/errors.js';
import type { Storage, TxnOp } from '../store/storage.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, Stored, StoreEvent } from '../store/types.js';
import { obj, arr } from '../../lib/json/loose.js';
import { randomUUID } from 'node:crypto';
import { realClock, type Clock } from '../../lib/reconcile/clock.js';

type O = Record<string, unknown>;

export interface ServiceAllocatorOptions {
  /** Default 10.96.0.0/12. */
  readonly serviceCIDR?: string;
  /** Default 30000-32767. */
  readonly nodePortRange?: { readonly from: number; readonly to: number };
  readonly random?: () => number;
  /** The allocation objects' creationTimestamp. Default the real clock. */
  readonly clock?: Clock;
}

/** What one Service holds. */
interface Held {
  readonly ips: readonly number[];
  readonly ports: readonly number[];
}

/** A reservation for a write in flight: `done()` once the write is committed or failed. */
export interface Reservation {
  done(): void;
}

/** The group-resources of the allocation objects. */
export const IP_ADDRESSES = 'ipaddresses.networking.k8s.io';
export const NODE_PORTS = 'servicenodeports.nodenet.io';
const ipKey = (v: number) => `${IP_ADDRESSES}//${intToIp(v)}`;
const portKey = (v: number) => `${NODE_PORTS}//${v}`;

/** The Service key (`services/<ns>/<name>`) an allocation object names as its parent. */
function parentOf(s: Readonly<KObject>): string | undefined {
  const ref = obj(obj(s['spec'])?.['parentRef']);
  if (!ref || ref['resource'] !== 'services' || typeof ref['name'] !== 'string') return undefined;
  return `services/${typeof ref['namespace'] === 'string' ? ref['namespace'] : ''}/${ref['name']}`;
}

/** The allocation object for a value held by the Service under svcKey. */
function allocationObject(kind: 'ip' | 'port', value: number, svcKey: string, nowMs: number): KObject {
  const [, namespace, name] = svcKey.split('/');
  const parentRef = { group: '', resource: 'services', namespace, name };
  // uid and creationTimestamp as every served object has (IPAddresses are served: kubectl get ipaddresses).
  const meta = { uid: randomUUID(), creationTimestamp: new Date(Math.floor(nowMs / 1000) * 1000).toISOString().replace('.000Z', 'Z') };
  return kind === 'ip'
    ? { apiVersion: 'networking.k8s.io/v1', kind: 'IPAddress', metadata: { name: intToIp(value), ...meta, labels: { 'ipaddress.kubernetes.io/ip-family': 'IPv4', 'ipaddress.kubernetes.io/managed-by': 'ipallocator.k8s.io' } }, spec: { parentRef } }
    : { apiVersion: 'nodenet.io/v1', kind: 'ServiceNodePort', metadata: { name: String(value), ...meta }, spec: { parentRef } };
}

/** What an allocation adds to the Service's write. */
export interface Allocation {
  readonly errors: FieldError[];
  /** Creates of the allocation objects for new values, deletes of the released ones. */
  readonly ops: TxnOp[];
  readonly reservation: Reservation;
}

export const DEFAULT_SERVICE_CIDR = '10.96.0.0/12';
export const DEFAULT_NODE_PORT_RANGE = { from: 30000, to: 32767 } as const;

/** "30000-32767" → the range. @throws TypeError */
export function parsePortRange(s: string): { from: number; to: number } {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(s);
  const from = Number(m?.[1]);
  const to = Number(m?.[2]);
  if (!m || from < 1 || to > 65535 || from > to) throw new TypeError(`not a port range: ${JSON.stringify(s)} (expected FROM-TO within 1-65535)`);
  return { from, to };
}

/** NeedsHealthCheck: a LoadBalancer that keeps the client's address needs a health check NodePort. */
export function needsHealthCheckNodePort(spec: Readonly<O>): boolean {
  return spec['type'] === 'LoadBalancer' && spec['externalTrafficPolicy'] === 'Local';
}

function isAllocating(spec: O): { ip: boolean; ports: boolean; newPorts: boolean; hc: boolean } {
  const type = spec['type'];
  return {
    ip: type !== 'ExternalName' && spec['clusterIP'] !== 'None',
    // NodePort and LoadBalancer Services may ask for NodePorts; only these get new ones (shouldAllocateNodePorts).
    ports: type === 'NodePort' || type === 'LoadBalancer',
    newPorts: type === 'NodePort' || (type === 'LoadBalancer' && spec['allocateLoadBalancerNodePorts'] !== false),
    hc: needsHealthCheckNodePort(spec),
  };
}

const positive = (v: unknown): number | undefined => (typeof v === 'number' && v > 0 ? v : undefined);

function nodePortsOf(spec: O): number[] {
  return [...new Set(arr(spec['ports']).map((p) => positive(obj(p)?.['nodePort'])).filter((n): n is number => n !== undefined))];
}

/** The health check NodePort a Service holds (only while it needs one, as upstream releases it). */
function healthCheckPortOf(spec: O): number | undefined {
  return needsHealthCheckNodePort(spec) ? positive(spec['healthCheckNodePort']) : undefined;
}

function heldBy(o: Readonly<KObject>): Held {
  const spec = obj(o['spec']) ?? {};
  const ips = [...new Set([spec['clusterIP'], ...arr(spec['clusterIPs'])].filter((x): x is string => typeof x === 'string' && isIPv4(x)))].map(ipToInt);
  const hc = healthCheckPortOf(spec);
  const ports = [...new Set([...nodePortsOf(spec), ...(hc === undefined ? [] : [hc])])];
  return { ips, ports };
}

export class ServiceAllocator {
  readonly cidr: string;
  readonly range: { readonly from: number; readonly to: number };
  private readonly base: number;
  private readonly size: number;
  /** Stored allocation objects: value → the Service key it names. */
  private readonly ipOwners = new Map<number, string>();
  private readonly portOwners = new Map<number, string>();
  /** Values another writer was seen to take before the cache heard of it (until it does). */
  private readonly ipElsewhere = new Set<number>();
  private readonly portElsewhere = new Set<number>();
  /** Reserved by writes in flight: value → the key it is for. */
  private readonly ipPending = new Map<number, string>();
  private readonly portPending = new Map<number, string>();
  private watches: { stop(): void }[] = [];
  private cache: WatchCache | null = null;
  private readonly random: () => number;
  private readonly clock: Clock;
  /** Values held by two Services at start (the repair's report). */
  readonly duplicates: string[] = [];

  constructor(opts: ServiceAllocatorOptions = {}) {
    const c = parseCidr(opts.serviceCIDR ?? DEFAULT_SERVICE_CIDR);
    if (c.prefix > 30) throw new TypeError(`service CIDR ${c.cidr} is too small (at most /30)`);
    this.cidr = c.cidr;
    this.clock = opts.clock ?? realClock;
    this.base = ipToInt(c.ip);
    this.size = 2 ** (32 - c.prefix);
    this.range = opts.nodePortRange ?? DEFAULT_NODE_PORT_RANGE;
    this.random = opts.random ?? Math.random;
  }

  /** The `kubernetes` Service's address: the first of the CIDR. */
  get firstIP(): string {
    return intToIp(this.base + 1);
  }

  /**
   * Reads the allocation objects from the cache and follows them. Every API server does this; the repair
   * (repair()) is the controller manager's leader's.
   */
  start(cache: WatchCache): void {
    this.cache = cache;
    for (const [gr, owners, elsewhere] of [[IP_ADDRESSES, this.ipOwners, this.ipElsewhere], [NODE_PORTS, this.portOwners, this.portElsewhere]] as const) {
      const { items, rev } = cache.list(gr);
      for (const s of items) this.own(owners, s);
      this.watches.push(cache.watch({ gr, afterRev: rev, onEvent: (ev) => this.onAllocation(owners, elsewhere, ev) }));
    }
  }

  stop(): void {
    for (const w of this.watches) w.stop();
    this.watches = [];
  }

  /** Free addresses and ports (for status and tests). */
  free(): { ips: number; ports: number } {
    const usable = this.size - 2;
    return { ips: usable - new Set([...this.ipOwners.keys(), ...this.ipPending.keys()]).size, ports: this.range.to - this.range.from + 1 - new Set([...this.portOwners.keys(), ...this.portPending.keys()]).size };
  }

  /**
   * A write failed because another writer holds the allocation object under `key` (TxnFailed on one of this
   * allocator's creates): the value counts as taken until the cache hears of it, and the write may be tried again.
   * @returns whether the key is one of this allocator's
   */
  taken(key: string): boolean {
    const [gr, , name] = key.split('/');
    if (gr === IP_ADDRESSES && name && isIPv4(name)) this.ipElsewhere.add(ipToInt(name));
    else if (gr === NODE_PORTS && /^\d+$/.test(name ?? '')) this.portElsewhere.add(Number(name));
    else return false;
    return true;
  }

  /** The deletes of the allocation objects a Service held, for its deletion's transaction. */
  release(svcKey: string, old: Readonly<KObject>): TxnOp[] {
    const h = heldBy(old);
    return [...this.releaseOps(h.ips, [], this.ipOwners, ipKey, svcKey), ...this.releaseOps(h.ports, [], this.portOwners, portKey, svcKey)];
  }

  private releaseOps(had: readonly number[], keep: readonly number[], owners: Map<number, string>, keyOf: (v: number) => string, svcKey: string): TxnOp[] {
    const ops: TxnOp[] = [];
    for (const v of had) {
      if (keep.includes(v) || owners.get(v) !== svcKey) continue;
      const stored = this.cache?.get(keyOf(v));
      if (stored) ops.push({ op: 'delete', key: keyOf(v), expectRev: stored.rev });
    }
    return ops;
  }

  private own(owners: Map<number, string>, s: Stored): void {
    const name = String(s.object.metadata?.['name'] ?? '');
    const v = owners === this.ipOwners ? (isIPv4(name) ? ipToInt(name) : NaN) : Number(name);
    const parent = parentOf(s.object);
    if (Number.isFinite(v) && parent) owners.set(v, parent);
  }

  private onAllocation(owners: Map<number, string>, elsewhere: Set<number>, ev: StoreEvent): void {
    const name = String(ev.cur.object.metadata?.['name'] ?? '');
    const v = owners === this.ipOwners ? (isIPv4(name) ? ipToInt(name) : NaN) : Number(name);
    if (!Number.isFinite(v)) return;
    elsewhere.delete(v);
    if (ev.type === 'DELETED') owners.delete(v);
    else this.own(owners, ev.cur);
  }

  /**
   * The repair: every value a stored Service holds has its object, and every object a Service that holds it.
   * It works on one snapshot of the cache, taken before any write: a Service and its objects are written in one
   * transaction, so the snapshot never shows one without the other, while objects written during the repair (by
   * this or another API server) are not in it and are left alone. Resolves once the cache has seen its writes.
   */
  async repair(cache: WatchCache, storage: Storage): Promise<void> {
    this.duplicates.length = 0;
    const holders = new Map<string, string[]>();
    const services = cache.list('services').items;
    const allocations = [IP_ADDRESSES, NODE_PORTS].flatMap((gr) => cache.list(gr).items);
    const snapshot = new Map(allocations.map((s) => [s.key, s]));
    for (const s of services) {
      const h = heldBy(s.object);
      for (const v of h.ips) this.claim(holders, ipKey(v), s.key);
      for (const v of h.ports) this.claim(holders, portKey(v), s.key);
    }
    for (const [k, svcs] of holders) {
      const stored = snapshot.get(k);
      const owner = stored ? parentOf(stored.object) : undefined;
      if (svcs.length > 1) this.duplicates.push(`${k.startsWith(IP_ADDRESSES) ? k.slice(IP_ADDRESSES.length + 2) : `nodePort ${k.slice(NODE_PORTS.length + 2)}`}: ${svcs.join(', ')}`);
      if (owner && svcs.includes(owner)) continue;
      const [gr, , name] = k.split('/');
      const object = allocationObject(gr === IP_ADDRESSES ? 'ip' : 'port', gr === IP_ADDRESSES ? ipToInt(name!) : Number(name), svcs[0]!, this.clock.now());
      await (stored ? storage.update(k, object, stored.rev) : storage.create(k, object)).catch((e: unknown) => {
        // Another writer repaired it first, or it changed meanwhile: what it holds now is right or repaired next start.
        if (!(e instanceof NodenetError) || (e.code !== ErrorCode.AlreadyExists && e.code !== ErrorCode.Conflict)) throw e;
      });
    }
    for (const s of allocations) {
      if (holders.has(s.key)) continue;
      // No Service holds it: an object left behind (by hand, or by a version without one transaction).
      await storage.delete(s.key, s.rev).catch((e: unknown) => {
        if (!(e instanceof NodenetError) || (e.code !== ErrorCode.NotFound && e.code !== ErrorCode.Conflict)) throw e;
      });
    }
    await cache.fresh();
  }

  private claim(holders: Map<string, string[]>, k: string, svcKey: string): void {
    const l = holders.get(k);
    if (l) l.push(svcKey);
    else holders.set(k, [svcKey]);
  }

  private ipTaken(v: number, key: string): boolean {
    const owner = this.ipOwners.get(v);
    const pending = this.ipPending.get(v);
    return (owner !== undefined && owner !== key) || (pending !== undefined && pending !== key) || (this.ipElsewhere.has(v) && owner !== key);
  }

  private portTaken(v: number, key: string): boolean {
    const owner = this.portOwners.get(v);
    const pending = this.portPending.get(v);
    return (owner !== undefined && owner !== key) || (pending !== undefined && pending !== key) || (this.portElsewhere.has(v) && owner !== key);
  }

  /**
   * Fills in and checks the Service `o` about to be written under `key` (`old`: the stored version for
   * an update), in place: a ClusterIP when it has none, a NodePort for each port that needs one (an
   * update keeps a port's previous one), a health check NodePort for a LoadBalancer with
   * externalTrafficPolicy Local (an update keeps it). A requested value that is out of range or taken
   * is a field error, in kube-apiserver's words. On success the values are reserved until `done()`.
   */
  allocate(key: string, o: O, old: Readonly<KObject> | null): Allocation {
    const spec = obj(o['spec']) ?? {};
    const want = isAllocating(spec);
    const errors: FieldError[] = [];
    const ips: number[] = [];
    const ports: number[] = [];
    const was = obj(old?.['spec']) ?? {};
    if (want.ip) {
      const requested = typeof spec['clusterIP'] === 'string' && spec['clusterIP'] !== '' ? spec['clusterIP'] : undefined;
      const unchanged = requested !== undefined && requested === was['clusterIP'];
      if (requested === undefined) {
        const ip = this.pickIP(key);
        if (ip === undefined) errors.push(fieldErr.internal('spec.clusterIPs', `failed to allocate a serviceIP: range is full`));
        else {
          spec['clusterIP'] = intToIp(ip);
          spec['clusterIPs'] = [intToIp(ip)];
          ips.push(ip);
        }
      } else if (!unchanged && isIPv4(requested)) {
        const v = ipToInt(requested);
        if (!cidrContains(this.cidr, requested) || v === this.base || v === this.base + this.size - 1) {
          errors.push(fieldErr.invalid('spec.clusterIPs', requested, `failed to allocate IP ${requested}: the provided IP (${requested}) is not in the valid range. The range of valid IPs is ${this.cidr}`));
        } else if (this.ipTaken(v, key)) {
          errors.push(fieldErr.invalid('spec.clusterIPs', requested, `failed to allocate IP ${requested}: provided IP is already allocated`));
        } else ips.push(v);
      }
    }
    const svcPorts = arr(spec['ports']).map(obj).filter((p): p is O => p !== undefined);
    if (want.ports) {
      const oldPorts = arr(was['ports']).map(obj).filter((p): p is O => p !== undefined);
      const mine = new Set(nodePortsOf(was));
      svcPorts.forEach((p, i) => {
        const n = p['nodePort'];
        if (n === undefined || n === 0 || n === null) {
          // An update that leaves a port's nodePort out keeps the one it had (kube-apiserver's patchAllocatedValues).
          const prev = oldPorts.find((q) => q['port'] === p['port'] && (q['protocol'] ?? 'TCP') === (p['protocol'] ?? 'TCP'))?.['nodePort'];
          if (typeof prev === 'number' && prev > 0) {
            p['nodePort'] = prev;
            return;
          }
          // The same port number on another protocol of this Service shares its NodePort, as upstream.
          const sibling = svcPorts.find((q) => q !== p && q['port'] === p['port'] && typeof q['nodePort'] === 'number' && q['nodePort'] > 0)?.['nodePort'];
          if (typeof sibling === 'number') {
            p['nodePort'] = sibling;
            return;
          }
          // allocateLoadBalancerNodePorts: false: no new one, but a requested one is honoured.
          if (!want.newPorts) return;
          const v = this.pickPort(key, ports);
          if (v === undefined) errors.push(fieldErr.internal(`spec.ports[${i}].nodePort`, 'failed to allocate a nodePort: range is full'));
          else {
            p['nodePort'] = v;
            ports.push(v);
          }
        } else if (typeof n === 'number' && !mine.has(n) && !ports.includes(n)) {
          if (n < this.range.from || n > this.range.to) {
            errors.push(fieldErr.invalid(`spec.ports[${i}].nodePort`, n, `provided port is not in the valid range. The range of valid ports is ${this.range.from}-${this.range.to}`));
          } else if (this.portTaken(n, key)) {
            errors.push(fieldErr.invalid(`spec.ports[${i}].nodePort`, n, 'provided port is already allocated'));
          } else ports.push(n);
        }
      });
    }
    if (want.hc) {
      const path = 'spec.healthCheckNodePort';
      const had = healthCheckPortOf(was);
      // patchAllocatedValues: an update that leaves it out keeps the one it had.
      if (positive(spec['healthCheckNodePort']) === undefined && had !== undefined) spec['healthCheckNodePort'] = had;
      const n = spec['healthCheckNodePort'];
      const own = nodePortsOf(spec);
      if (n === undefined || n === null || n === 0) {
        const v = this.pickPort(key, [...ports, ...own]);
        // Upstream answers a full range here with a 500 too ("failed to allocate a HealthCheck NodePort").
        if (v === undefined) errors.push(fieldErr.internal(path, 'failed to allocate a HealthCheck NodePort: range is full'));
        else {
          spec['healthCheckNodePort'] = v;
          ports.push(v);
        }
      } else if (typeof n === 'number') {
        // One operation allocates the NodePorts and the health check port (upstream's nodePortOp): it may not be one of them.
        // Upstream reports a requested one that fails as a 500; here it is a 422 naming the field, as for a NodePort.
        if (own.includes(n)) errors.push(fieldErr.invalid(path, n, 'provided port is already allocated'));
        else if (n !== had) {
          if (n < this.range.from || n > this.range.to) {
            errors.push(fieldErr.invalid(path, n, `provided port is not in the valid range. The range of valid ports is ${this.range.from}-${this.range.to}`));
          } else if (ports.includes(n) || this.portTaken(n, key)) {
            errors.push(fieldErr.invalid(path, n, 'provided port is already allocated'));
          } else ports.push(n);
        }
      }
    }
    if (errors.length) return { errors, ops: [], reservation: { done() {} } };
    for (const v of ips) this.ipPending.set(v, key);
    for (const v of ports) this.portPending.set(v, key);
    // The objects: created for the values this write takes, deleted for those the stored version held and this one drops.
    const now = heldBy(o as KObject);
    const before = old ? heldBy(old) : { ips: [], ports: [] };
    const ops: TxnOp[] = [
      ...now.ips.filter((v) => this.ipOwners.get(v) !== key).map((v): TxnOp => ({ op: 'create', key: ipKey(v), obj: allocationObject('ip', v, key, this.clock.now()) })),
      ...now.ports.filter((v) => this.portOwners.get(v) !== key).map((v): TxnOp => ({ op: 'create', key: portKey(v), obj: allocationObject('port', v, key, this.clock.now()) })),
      ...this.releaseOps(before.ips, now.ips, this.ipOwners, ipKey, key),
      ...this.releaseOps(before.ports, now.ports, this.portOwners, portKey, key),
    ];
    let released = false;
    return {
      errors,
      ops,
      reservation: {
        done: () => {
          if (released) return;
          released = true;
          for (const v of ips) if (this.ipPending.get(v) === key) this.ipPending.delete(v);
          for (const v of ports) if (this.portPending.get(v) === key) this.portPending.delete(v);
        },
      },
    };
  }

  private pickIP(key: string): number | undefined {
    // Random, then a scan from there (upstream allocates at random too); never the network, the first or the broadcast address.
    const first = this.base + 2;
    const count = this.size - 3;
    if (count <= 0) return undefined;
    const start = Math.floor(this.random() * count);
    for (let i = 0; i < count; i++) {
      const v = first + ((start + i) % count);
      if (!this.ipTaken(v, key) && !this.ipOwners.has(v)) return v;
    }
    return undefined;
  }

  private pickPort(key: string, also: readonly number[]): number | undefined {
    const count = this.range.to - this.range.from + 1;
    const start = Math.floor(this.random() * count);
    for (let i = 0; i < count; i++) {
      const v = this.range.from + ((start + i) % count);
      if (!also.includes(v) && !this.portTaken(v, key) && !this.portOwners.has(v)) return v;
    }
    return undefined;
  }
}
