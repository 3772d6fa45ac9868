/**
 * controlplane/controllers/apiserver-endpoints: the `kubernetes` Service's
 * EndpointSlice lists the API servers that are alive, as kube-apiserver's
 * lease endpoint reconciler keeps it (pkg/controlplane/reconcilers/lease.go,
 * `--endpoint-reconciler-type=lease`, the default).
 *
 * Every API server (not a leader: each one) holds a lease, a stored object
 *
 *   apiserverleases.nodenet.io//<advertise address>   kind ApiServerLease
 *
 * renewed every 10 s, and writes the slice from the leases that are live.
 * Upstream's leases are etcd keys with a 15 s TTL. A lease here expires by
 * observation instead, as client-go's leader election judges a Lease: one
 * whose resourceVersion this server has not seen change for the TTL (15 s
 * of this server's own clock) is dead, and is deleted (a compare-and-swap on
 * that version, so a renewal that raced wins). No clocks are compared across
 * servers, and it works the same on SQLite and on etcd. The slice is checked
 * every second against the cache, so a killed server leaves it about a TTL
 * after its last renewal. A clean stop deletes this server's lease and takes
 * it out of the slice at once, as kube-apiserver's shutdown does. A server
 * that advertises a loopback address (one serving on 127.0.0.1 only) holds
 * a lease but is not listed: EndpointSlice validation refuses loopback.
 *
 * Several servers write the one slice: each write is a compare-and-swap on
 * the version this server read, and a conflict waits for the next check.
 */
import { F } from '../../lib/log/fields.js';
import type { Logger } from '../../lib/log/log.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import type { RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { Storage } from '../store/storage.js';
import type { KObject, Stored } from '../store/types.js';
import type { WatchCache } from '../store/watch-cache.js';
import { SERVICE_NAME } from './endpointslice.js';

export const APISERVER_LEASES = 'apiserverleases.nodenet.io';
export const DEFAULT_LEASE_TTL_MS = 15_000;
export const DEFAULT_RENEW_EVERY_MS = 10_000;
export const DEFAULT_CHECK_EVERY_MS = 1_000;
const FIELD_MANAGER = 'kube-apiserver';
const SLICES = RESOURCES.find((r) => r.resource === 'endpointslices')!;

export interface ApiServerEndpointsOptions {
  readonly storage: Storage;
  readonly cache: WatchCache;
  readonly rest: RestClient;
  readonly clock: Clock;
  readonly log: Logger;
  /** This server's address as the others and the clients reach it (kube-apiserver's --advertise-address). */
  readonly ip: string;
  /** Its secure port (may be set once the server listens, before start()). */
  port: number;
  readonly ttlMs?: number;
  readonly renewEveryMs?: number;
  readonly checkEveryMs?: number;
}

/** The live servers' addresses, sorted, and the port they serve on (pure: the cache's leases and what was observed). */
export function liveEndpoints(leases: readonly Stored[], seen: ReadonlyMap<string, { rev: number; since: number }>, now: number, ttlMs: number, self: string): { live: string[]; expired: Stored[] } {
  const live = new Set<string>([self]);
  const expired: Stored[] = [];
  for (const l of leases) {
    const ip = String(l.object.metadata?.['name'] ?? '');
    if (ip === self) continue;
    const s = seen.get(ip);
    if (s && s.rev === l.rev && now - s.since >= ttlMs) expired.push(l);
    else live.add(ip);
  }
  return { live: [...live].filter((ip) => !isLoopback(ip)).sort(compareIPs), expired };
}

/** EndpointSlice validation refuses loopback addresses: a server advertising one holds its lease but is not listed. */
export function isLoopback(ip: string): boolean {
  return /^127\./.test(ip) || ip === '::1';
}

function compareIPs(a: string, b: string): number {
  const n = (ip: string) => ip.split('.').reduce((acc, p) => acc * 256 + (Number(p) || 0), 0);
  return n(a) - n(b) || a.localeCompare(b);
}

/** The slice as kube-apiserver writes it for the `kubernetes` Service. */
export function kubernetesSlice(ips: readonly string[], port: number): KObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'kubernetes', namespace: 'default', labels: { [SERVICE_NAME]: 'kubernetes' } },
    addressType: ips.some((ip) => ip.includes(':')) ? 'IPv6' : 'IPv4',
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true, serving: true, terminating: false } })),
    ports: [{ name: 'https', port, protocol: 'TCP' }],
  };
}

function sliceIPs(s: Stored | undefined): string[] {
  const eps = (s?.object['endpoints'] ?? []) as { addresses?: string[] }[];
  return eps.flatMap((e) => e.addresses ?? []);
}

function slicePort(s: Stored | undefined): number | undefined {
  return ((s?.object['ports'] ?? []) as { port?: number }[])[0]?.port;
}

/** Another server wrote first: the next check reads its write. */
function isRace(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  return code === 'NN_ERR_CONFLICT' || code === 'NN_ERR_ALREADY_EXISTS';
}

export class ApiServerEndpoints {
  private readonly ttlMs: number;
  private readonly key: string;
  private readonly seen = new Map<string, { rev: number; since: number }>();
  private lastRenew = -Infinity;
  private timer: unknown = null;
  private running = false;
  private busy: Promise<void> = Promise.resolve();
  /** The port this server serves on (set once it listens, before start()). */
  port: number;

  constructor(private readonly o: ApiServerEndpointsOptions) {
    this.port = o.port;
    this.ttlMs = o.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.key = `${APISERVER_LEASES}//${o.ip}`;
  }

  /** Writes this server's lease and the slice, then keeps both. */
  async start(): Promise<void> {
    this.running = true;
    if (isLoopback(this.o.ip)) this.o.log.warn({ address: this.o.ip }, 'the advertise address is a loopback address, which an EndpointSlice may not hold: the kubernetes Service does not list this server (set --advertise-address)');
    await this.tick();
  }

  /** Deletes this server's lease and takes it out of the slice (best effort: the TTL does it otherwise). */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    await this.busy;
    try {
      const mine = await this.o.storage.get(this.key);
      if (mine) await this.o.storage.delete(this.key, mine.rev);
      const others = this.o.cache.list(APISERVER_LEASES).items.filter((l) => l.object.metadata?.['name'] !== this.o.ip);
      await this.writeSlice(liveEndpoints(others, this.seen, this.o.clock.now(), this.ttlMs, this.o.ip).live.filter((ip) => ip !== this.o.ip));
    } catch (e) {
      this.o.log.warn({ [F.err]: e instanceof Error ? e.message : String(e) }, 'could not withdraw this API server from the kubernetes EndpointSlice; its lease expires instead');
    }
  }

  private schedule(): void {
    if (!this.running) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      void this.tick();
    }, this.o.checkEveryMs ?? DEFAULT_CHECK_EVERY_MS);
  }

  private tick(): Promise<void> {
    this.busy = this.reconcileRacing()
      .catch((e: unknown) => (isRace(e) ? this.o.log.debug : this.o.log.warn).call(this.o.log, { [F.err]: e instanceof Error ? e.message : String(e) }, 'kubernetes EndpointSlice not reconciled; retrying'))
      .finally(() => this.schedule());
    return this.busy;
  }

  /**
   * A conflict means another server wrote the slice (or a lease) after this one's cache was read: read again, made
   * fresh, at once rather than at the next check, so a server that starts is listed when its start returns.
   */
  private async reconcileRacing(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.reconcile();
      } catch (e) {
        if (!isRace(e) || attempt >= 3 || !this.running) throw e;
      }
    }
  }

  private async reconcile(): Promise<void> {
    await this.o.cache.fresh(); // the slice and the leases as of now, this server's last write included
    const now = this.o.clock.now();
    if (now - this.lastRenew >= (this.o.renewEveryMs ?? DEFAULT_RENEW_EVERY_MS)) {
      await this.renew();
      this.lastRenew = now;
      await this.o.cache.fresh();
    }
    const leases = this.o.cache.list(APISERVER_LEASES).items;
    for (const l of leases) {
      const ip = String(l.object.metadata?.['name'] ?? '');
      const s = this.seen.get(ip);
      if (!s || s.rev !== l.rev) this.seen.set(ip, { rev: l.rev, since: now });
    }
    for (const ip of [...this.seen.keys()]) if (!leases.some((l) => l.object.metadata?.['name'] === ip)) this.seen.delete(ip);
    const { live, expired } = liveEndpoints(leases, this.seen, now, this.ttlMs, this.o.ip);
    for (const l of expired) {
      this.o.log.info({ address: l.object.metadata?.['name'] }, 'API server lease expired: taken out of the kubernetes EndpointSlice');
      await this.o.storage.delete(l.key, l.rev).catch(() => undefined); // renewed meanwhile, or another server deleted it
    }
    await this.writeSlice(live);
  }

  private async renew(): Promise<void> {
    const body: KObject = {
      apiVersion: 'nodenet.io/v1', kind: 'ApiServerLease',
      metadata: { name: this.o.ip },
      spec: { address: this.o.ip, port: this.port, renewTime: new Date(this.o.clock.now()).toISOString(), leaseDurationSeconds: this.ttlMs / 1000 },
    };
    const cur = await this.o.storage.get(this.key);
    if (cur) await this.o.storage.update(this.key, body, cur.rev);
    else await this.o.storage.create(this.key, body);
  }

  private async writeSlice(ips: readonly string[]): Promise<void> {
    const cur = this.o.cache.get('endpointslices.discovery.k8s.io/default/kubernetes');
    if (cur && sliceIPs(cur).join(',') === ips.join(',') && slicePort(cur) === this.port) return;
    const desired = kubernetesSlice(ips, this.port);
    if (cur) {
      await this.o.rest.update(SLICES, 'default', 'kubernetes', { ...desired, metadata: { ...(desired.metadata as object), resourceVersion: String(cur.rev) } }, { fieldManager: FIELD_MANAGER });
    } else {
      await this.o.rest.create(SLICES, 'default', desired, { fieldManager: FIELD_MANAGER });
    }
    this.o.log.info({ addresses: ips.join(',') }, 'kubernetes EndpointSlice updated');
  }
}
