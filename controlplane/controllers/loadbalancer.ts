/**
 * controlplane/controllers/loadbalancer: the load-balancer controller of the
 * embedded control plane, the job k3s's ServiceLB or MetalLB's IPAM does on
 * bare metal: every Service of type LoadBalancer gets an address from a
 * configured pool in `status.loadBalancer.ingress[0].ip` (written through the
 * status subresource, as a cloud controller does), which the agents then
 * serve as kube-proxy serves a load balancer's address.
 *
 * What it owns and assumes:
 * - the Services it manages are those of type LoadBalancer without a
 *   `spec.loadBalancerClass` or with its own (`LOAD_BALANCER_CLASS`); one of
 *   another class belongs to another implementation and is left alone (as
 *   MetalLB and ServiceLB do);
 * - each address a Service holds is a stored claim (alloc/claims.ts,
 *   `loadbalancerips.nodenet.io//<ip>`), taken by create-if-absent before
 *   the status is written, so no two Services ever share an address, also
 *   with two controllers at once (a leader change that overlaps); at start
 *   the claims are repaired from the Services' statuses, the oldest Service
 *   first (a newer one that shows a taken address, or one outside the
 *   pool, gets a new one; a claim no Service shows goes);
 * - `spec.loadBalancerIP`, when set, is the address asked for: given when it
 *   is in the pool and free, else the Service gets none and a Warning says why;
 * - without a pool, LoadBalancer Services stay `<pending>` with no ingress
 *   (a cluster without a load-balancer implementation) and an Event says so;
 * - an address is free again once its Service is deleted or stops being one
 *   this controller manages; Services waiting for one are tried again then.
 * Events as MetalLB records them: `IPAllocated` (Normal), `AllocationFailed`
 * (Warning: pool exhausted, address taken or outside the pool, no pool).
 *
 * Watch → compare → act through the REST layer, one Service at a time from a
 * de-duplicated queue; an address is claimed (table and stored claim) before
 * its write, so two Services never race for one.
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import { intToIp, ipToInt, isIPv4, parseCidr } from '../../lib/net/ip.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import { deepEqual } from '../../lib/reconcile/deep-equal.js';
import type { RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { Claims, Owner } from '../alloc/claims.js';
import type { KObject, StoreEvent } from '../store/types.js';
import { NO_EVENTS, type EventRecorder } from './events.js';
import { WorkQueue } from './work-queue.js';
import { obj, arr, str } from '../../lib/json/loose.js';

type O = Record<string, unknown>;
const SERVICES = RESOURCES.find((r) => r.resource === 'services')!;

/** The `spec.loadBalancerClass` this controller answers to (besides none). */
export const LOAD_BALANCER_CLASS = 'nodenet.io/service-lb';
/** Its name in Events and managedFields. */
export const LOAD_BALANCER_COMPONENT = 'service-lb-controller';

/** An inclusive range of IPv4 addresses (as numbers). */
export interface PoolRange {
  readonly from: number;
  readonly to: number;
}

/**
 * "CIDR" or "START-END", several comma-separated, into ranges. A CIDR of /30 or wider leaves out its
 * network and broadcast addresses (a /31 or /32 is all usable). Overlapping ranges are refused.
 * @throws TypeError
 */
export function parseLoadBalancerPool(s: string): PoolRange[] {
  const out: PoolRange[] = [];
  for (const part of s.split(',').map((x) => x.trim())) {
    if (part === '') throw new TypeError(`not a load-balancer IP pool: ${JSON.stringify(s)} (expected CIDR or START-END, comma-separated)`);
    let r: PoolRange;
    const dash = /^([\d.]+)-([\d.]+)$/.exec(part);
    if (dash) {
      const [a = '', b = ''] = [dash[1], dash[2]];
      if (!isIPv4(a) || !isIPv4(b) || ipToInt(a) > ipToInt(b)) throw new TypeError(`not an address range: ${JSON.stringify(part)} (expected START-END, IPv4, START not after END)`);
      r = { from: ipToInt(a), to: ipToInt(b) };
    } else {
      let c;
      try {
        c = parseCidr(part);
      } catch {
        throw new TypeError(`not a load-balancer IP pool: ${JSON.stringify(part)} (expected an IPv4 CIDR or START-END)`);
      }
      if (c.cidr !== part) throw new TypeError(`${part} has host bits set (did you mean ${c.cidr}?)`);
      const base = ipToInt(c.ip);
      const size = 2 ** (32 - c.prefix);
      r = c.prefix <= 30 ? { from: base + 1, to: base + size - 2 } : { from: base, to: base + size - 1 };
    }
    const clash = out.find((q) => r.from <= q.to && q.from <= r.to);
    if (clash) throw new TypeError(`${part} overlaps ${intToIp(clash.from)}-${intToIp(clash.to)}`);
    out.push(r);
  }
  return out;
}

/** Whether this controller manages the Service. */
export function isManagedLoadBalancer(svc: Readonly<KObject>): boolean {
  const spec = obj(svc['spec']) ?? {};
  const cls = spec['loadBalancerClass'];
  return spec['type'] === 'LoadBalancer' && (cls === undefined || cls === null || cls === '' || cls === LOAD_BALANCER_CLASS);
}

function ingressIPs(svc: Readonly<KObject>): string[] {
  return arr(obj(obj(svc['status'])?.['loadBalancer'])?.['ingress']).map((i) => str(obj(i)?.['ip'])).filter((ip) => ip !== '');
}

const nameOf = (key: string): string => key.split('/').slice(1).join('/');
/** The claim owner for a Service key `services/<ns>/<name>`. */
const ownerOf = (key: string): Owner => {
  const [resource = 'services', namespace = '', name = ''] = key.split('/');
  return { resource, namespace, name };
};

export interface LoadBalancerControllerOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  /** The stored claims on addresses (`loadbalancerips.nodenet.io`). */
  readonly claims: Claims;
  readonly clock: Clock;
  readonly log: Logger;
  /** The addresses to hand out (parseLoadBalancerPool's form); absent or empty: none. @throws TypeError from the constructor when malformed */
  readonly pool?: string;
  readonly events?: EventRecorder;
  readonly retryMs?: number;
}

export class LoadBalancerController {
  readonly pool: readonly PoolRange[];
  /** address → the Service key holding it. */
  private readonly owner = new Map<number, string>();
  private readonly held = new Map<string, number>();
  /** Services that got no address for want of a free one: tried again when one is freed. */
  private readonly waiting = new Set<string>();
  /** The last failure told about a Service (so one is not repeated on every change). */
  private readonly told = new Map<string, string>();
  private readonly events: EventRecorder;
  private readonly work: WorkQueue;
  private watch: { stop(): void } | null = null;

  constructor(private readonly o: LoadBalancerControllerOptions) {
    this.pool = o.pool && o.pool.trim() !== '' ? parseLoadBalancerPool(o.pool) : [];
    this.events = o.events ?? NO_EVENTS;
    this.work = new WorkQueue({ name: 'load-balancer controller', clock: o.clock, log: o.log, process: (k) => this.process(k), retryMs: o.retryMs ?? 500 });
  }

  /** The repair, then the watch: addresses shown by the stored Services are theirs, the oldest Service's first. */
  async start(): Promise<void> {
    const { items, rev } = this.o.cache.list('services');
    const created = (s: (typeof items)[number]) => str(s.object.metadata?.['creationTimestamp']);
    const oldestFirst = [...items].sort((a, b) => (created(a) < created(b) ? -1 : created(a) > created(b) ? 1 : a.key < b.key ? -1 : 1));
    const claimed = this.o.claims.all();
    for (const s of oldestFirst) {
      if (!isManagedLoadBalancer(s.object)) continue;
      for (const ip of ingressIPs(s.object)) {
        if (!isIPv4(ip) || !this.inPool(ipToInt(ip)) || this.held.has(s.key)) continue;
        const v = ipToInt(ip);
        const other = this.owner.get(v);
        if (other === undefined) {
          // A claim by another Service is stale here: an older one showing the address would be in the table already.
          const stale = claimed.get(ip);
          if (stale !== undefined && stale !== s.key) await this.o.claims.release(ip, ownerOf(stale));
          if (stale === s.key || (await this.takeClaim(s.key, ip))) {
            this.claim(s.key, v);
            continue;
          }
        }
        const holder = other ?? this.o.claims.holder(ip);
        this.o.log.warn({ [F.svc]: s.key, [F.ip]: ip, holder }, `${s.key} shows ${ip}, which ${holder} (older) holds: it gets another`);
      }
    }
    // A claim no Service shows any more (deleted while no controller ran, or a write that never happened).
    for (const [ip, holder] of claimed) if (!isIPv4(ip) || this.owner.get(ipToInt(ip)) !== holder) await this.o.claims.release(ip, ownerOf(holder));
    for (const s of items) this.work.add(s.key);
    this.watch = this.o.cache.watch({ gr: 'services', afterRev: rev, onEvent: (ev) => this.onEvent(ev) });
  }

  /** Takes the stored claim on ip for the Service under key; false: another holds it. */
  private takeClaim(key: string, ip: string): Promise<boolean> {
    return this.o.claims.claim(ip, ownerOf(key));
  }

  stop(): void {
    this.watch?.stop();
    this.watch = null;
    this.work.stop();
  }

  /** Resolves when nothing is queued or being worked on (tests). */
  idle(): Promise<void> {
    return this.work.idle();
  }

  /** Addresses left to hand out. */
  get free(): number {
    return this.pool.reduce((n, r) => n + r.to - r.from + 1, 0) - this.owner.size;
  }

  private inPool(v: number): boolean {
    return this.pool.some((r) => v >= r.from && v <= r.to);
  }

  private poolText(): string {
    return this.pool.map((r) => (r.from === r.to ? intToIp(r.from) : `${intToIp(r.from)}-${intToIp(r.to)}`)).join(',');
  }

  private onEvent(ev: StoreEvent): void {
    if (ev.type === 'DELETED') {
      this.release(ev.key);
      this.told.delete(ev.key);
      this.waiting.delete(ev.key);
      return;
    }
    this.work.add(ev.key);
  }

  private claim(key: string, v: number): void {
    const had = this.held.get(key);
    if (had === v) return;
    if (had !== undefined) this.release(key);
    this.owner.set(v, key);
    this.held.set(key, v);
  }

  private release(key: string): void {
    const v = this.held.get(key);
    if (v === undefined) return;
    this.held.delete(key);
    if (this.owner.get(v) === key) this.owner.delete(v);
    // The stored claim goes too (only if it is this Service's: a compare-and-swap on the version read).
    this.work.add(`release ${intToIp(v)} ${key}`);
    this.o.log.info({ [F.svc]: key, [F.ip]: intToIp(v) }, 'load-balancer IP released');
    // An address is free: the Services that found none (or not the one they asked for) try again.
    for (const k of this.waiting) if (k !== key) this.work.add(k);
  }

  /** The lowest free address of the pool (MetalLB's order too). */
  private pick(): number | undefined {
    for (const r of this.pool) for (let v = r.from; v <= r.to; v++) if (!this.owner.has(v)) return v;
    return undefined;
  }

  private async process(item: string): Promise<void> {
    if (item.startsWith('release ')) {
      const [, ip, svc] = item.split(' ');
      // Taken again meanwhile (the same Service got it back): keep it.
      if (this.owner.get(ipToInt(ip!)) === svc) return;
      return this.o.claims.release(ip!, ownerOf(svc!));
    }
    const key = item;
    const cur = this.o.cache.get(key)?.object;
    if (!cur || !isManagedLoadBalancer(cur)) {
      // Gone, no LoadBalancer (the strategy dropped its load-balancer status with the type), or another class's.
      this.release(key);
      this.told.delete(key);
      this.waiting.delete(key);
      return;
    }
    const spec = obj(cur['spec']) ?? {};
    const requested = str(spec['loadBalancerIP']);
    let v = this.held.get(key);
    this.waiting.delete(key);
    // No pool: as a cluster without a load-balancer implementation, its status is left as it is.
    if (this.pool.length === 0) return this.fail(cur, key, 'no load-balancer IP pool is configured (nodenet control-plane --load-balancer-ip-pool): the Service stays pending', false);
    if (requested !== '') {
      const want = isIPv4(requested) ? ipToInt(requested) : undefined;
      if (want === undefined || !this.inPool(want)) return this.fail(cur, key, `${JSON.stringify(requested)} is not allowed in config: the pool is ${this.poolText()}`);
      const other = this.owner.get(want);
      if (other !== undefined && other !== key) {
        this.waiting.add(key);
        return this.fail(cur, key, `${requested} is already in use by ${nameOf(other)}`);
      }
      v = want;
    } else if (v === undefined) {
      v = this.pick();
      if (v === undefined) {
        this.waiting.add(key);
        return this.fail(cur, key, `no available IPs in the pool ${this.poolText()}`);
      }
    }
    const ip = intToIp(v);
    if (this.held.get(key) !== v) {
      this.claim(key, v); // held while the claim and the write are in flight
      if (!(await this.takeClaim(key, ip))) {
        // Another controller holds it, though this one had not heard: it counts as taken, and this Service tries again.
        this.release(key);
        this.owner.set(v, this.o.claims.holder(ip) ?? '(another controller)');
        this.work.add(key);
        return;
      }
    }
    this.told.delete(key);
    if (deepEqual(ingressIPs(cur), [ip])) return;
    if (await this.writeIngress(cur, key, [{ ip }])) {
      this.o.log.info({ [F.svc]: key, [F.ip]: ip }, 'load-balancer IP assigned');
      this.events.event(cur, 'Normal', 'IPAllocated', `Assigned IP ${JSON.stringify([ip])}`);
    }
  }

  /** No address for the Service: it holds none and (`clear`) shows none, and a Warning says why (once per reason). */
  private async fail(svc: Readonly<KObject>, key: string, why: string, clear = true): Promise<void> {
    this.release(key);
    const message = `Failed to allocate IP for ${JSON.stringify(nameOf(key))}: ${why}`;
    if (this.told.get(key) !== message) {
      this.told.set(key, message);
      this.o.log.warn({ [F.svc]: key, [F.reason]: why }, 'no load-balancer IP for the Service');
      this.events.event(svc, 'Warning', 'AllocationFailed', message);
    }
    if (clear && ingressIPs(svc).length > 0) await this.writeIngress(svc, key, []);
  }

  /** Writes the ingress through /status, with the read object's resourceVersion (a Conflict is retried from a new read). False: the Service is gone. */
  private async writeIngress(svc: Readonly<KObject>, key: string, ingress: O[]): Promise<boolean> {
    const next = structuredClone(svc) as KObject;
    next['status'] = { ...(obj(next['status']) ?? {}), loadBalancer: ingress.length ? { ingress } : {} };
    const [, ns = '', name = ''] = key.split('/');
    try {
      await this.o.rest.update(SERVICES, ns, name, next, { sub: 'status', fieldManager: LOAD_BALANCER_COMPONENT });
      return true;
    } catch (e) {
      if (isNodenetError(e) && e.code === ErrorCode.NotFound) {
        this.release(key);
        return false;
      }
      throw e;
    }
  }
}
