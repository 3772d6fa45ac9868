/**
 * controlplane/alloc/service-allocator: ClusterIPs from the service CIDR and
 * NodePorts from their range, in the API server's own create and update path
 * (as kube-apiserver's Service REST does), so that the object a client gets
 * back already carries them.
 *
 * The stored Services are the record of what is allocated: an allocation is
 * written in the same transaction as its Service, so it can never be lost or
 * outlive it. The allocator's tables are rebuilt from the store at start
 * (kube-apiserver's repair loop does the same from the Services) and kept by
 * the store's watch; a write in flight holds a reservation until its
 * commit is known, so two concurrent creates never get the same value.
 * Two Services that already share a value in the store (written by an older
 * version, or by hand) are reported at start; the later one keeps it until
 * it is deleted.
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
import { cidrContains, intToIp, ipToInt, isIPv4, parseCidr } from '../../net/ip.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, StoreEvent } from '../store/types.js';

type O = Record<string, unknown>;
const obj = (v: unknown): O | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as O) : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

export interface ServiceAllocatorOptions {
  /** Default 10.96.0.0/12. */
  readonly serviceCIDR?: string;
  /** Default 30000-32767. */
  readonly nodePortRange?: { readonly from: number; readonly to: number };
  readonly random?: () => number;
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
  /** Committed: value → the Service keys holding it. */
  private readonly ipOwners = new Map<number, Set<string>>();
  private readonly portOwners = new Map<number, Set<string>>();
  private readonly held = new Map<string, Held>();
  /** Reserved by writes in flight: value → the key it is for. */
  private readonly ipPending = new Map<number, string>();
  private readonly portPending = new Map<number, string>();
  private watch: { stop(): void } | null = null;
  private readonly random: () => number;
  /** Values held by two Services at start (the repair's report). */
  readonly duplicates: string[] = [];

  constructor(opts: ServiceAllocatorOptions = {}) {
    const c = parseCidr(opts.serviceCIDR ?? DEFAULT_SERVICE_CIDR);
    if (c.prefix > 30) throw new TypeError(`service CIDR ${c.cidr} is too small (at most /30)`);
    this.cidr = c.cidr;
    this.base = ipToInt(c.ip);
    this.size = 2 ** (32 - c.prefix);
    this.range = opts.nodePortRange ?? DEFAULT_NODE_PORT_RANGE;
    this.random = opts.random ?? Math.random;
  }

  /** The `kubernetes` Service's address: the first of the CIDR. */
  get firstIP(): string {
    return intToIp(this.base + 1);
  }

  /** Rebuilds the tables from the stored Services and follows the store from there. */
  start(store: WatchCache): void {
    const { items, rev } = store.list('services');
    for (const s of items) this.take(s.key, s.object);
    this.watch = store.watch({ gr: 'services', afterRev: rev, onEvent: (ev) => this.onEvent(ev) });
  }

  stop(): void {
    this.watch?.stop();
    this.watch = null;
  }

  /** Free addresses and ports (for status and tests). */
  free(): { ips: number; ports: number } {
    const usable = this.size - 2;
    return { ips: usable - new Set([...this.ipOwners.keys(), ...this.ipPending.keys()]).size, ports: this.range.to - this.range.from + 1 - new Set([...this.portOwners.keys(), ...this.portPending.keys()]).size };
  }

  private onEvent(ev: StoreEvent): void {
    this.drop(ev.key);
    if (ev.type !== 'DELETED') this.take(ev.key, ev.cur.object);
  }

  private take(key: string, o: Readonly<KObject>): void {
    const h = heldBy(o);
    this.held.set(key, h);
    for (const [m, values] of [[this.ipOwners, h.ips], [this.portOwners, h.ports]] as const) {
      for (const v of values) {
        let s = m.get(v);
        if (!s) m.set(v, (s = new Set()));
        s.add(key);
        if (s.size === 2 && !this.watch) this.duplicates.push(`${m === this.ipOwners ? intToIp(v) : `nodePort ${v}`}: ${[...s].join(', ')}`);
      }
    }
  }

  private drop(key: string): void {
    const h = this.held.get(key);
    if (!h) return;
    this.held.delete(key);
    for (const [m, values] of [[this.ipOwners, h.ips], [this.portOwners, h.ports]] as const) {
      for (const v of values) {
        const s = m.get(v);
        s?.delete(key);
        if (s && s.size === 0) m.delete(v);
      }
    }
  }

  private ipTaken(v: number, key: string): boolean {
    const owners = this.ipOwners.get(v);
    const pending = this.ipPending.get(v);
    return (owners !== undefined && [...owners].some((k) => k !== key)) || (pending !== undefined && pending !== key);
  }

  private portTaken(v: number, key: string): boolean {
    const owners = this.portOwners.get(v);
    const pending = this.portPending.get(v);
    return (owners !== undefined && [...owners].some((k) => k !== key)) || (pending !== undefined && pending !== key);
  }

  /**
   * Fills in and checks the Service `o` about to be written under `key` (`old`: the stored version for
   * an update), in place: a ClusterIP when it has none, a NodePort for each port that needs one (an
   * update keeps a port's previous one), a health check NodePort for a LoadBalancer with
   * externalTrafficPolicy Local (an update keeps it). A requested value that is out of range or taken
   * is a field error, in kube-apiserver's words. On success the values are reserved until `done()`.
   */
  allocate(key: string, o: O, old: Readonly<KObject> | null): { errors: FieldError[]; reservation: Reservation } {
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
    if (errors.length) return { errors, reservation: { done() {} } };
    for (const v of ips) this.ipPending.set(v, key);
    for (const v of ports) this.portPending.set(v, key);
    let released = false;
    return {
      errors,
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
