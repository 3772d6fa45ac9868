/**
 * watch/dns-source: what `nodenet dns` answers from, kept by list+watch of the API, as CoreDNS's kubernetes
 * plugin keeps its informers: Services, EndpointSlices and Namespaces (the Namespaces tell NODATA from
 * NXDOMAIN for `<ns>.svc.<zone>` and a Pod's `<ns>.pod.<zone>`; Pods themselves are not watched, since
 * Pod A records are read off the name, CoreDNS's `pods insecure`).
 *
 * The record index (records.ts) is immutable: each change schedules a rebuild from the informers' lists,
 * coalesced over `debounceMs` (50 ms), so a burst of writes (a rollout, a namespace deleted) costs one
 * rebuild, and an answer follows a change well within the issue's second. While a rebuild waits, the last
 * index keeps serving. Until every list has arrived there is no index: the server answers SERVFAIL for
 * the cluster's names and /ready is 503, as CoreDNS's kubernetes plugin before its caches synced.
 *
 * An object the index cannot use (a Service without a name, a slice of another address type) is skipped
 * by records.ts; it never withdraws what the others give.
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import { ClusterWatch, type WatchKind } from './cluster-watch.js';
import { buildDnsIndex, type DnsIndex } from '../dns/records.js';

export interface DnsSourceOptions {
  readonly kubeconfig: KubeConfig;
  readonly log: Logger;
  readonly clock: Clock;
  /** The cluster domain (cluster.local). */
  readonly domain: string;
  readonly ttl?: number;
  /** How long a change waits for others before the index is rebuilt (default 50 ms). */
  readonly debounceMs?: number;
  /** Called after each rebuild (tests, metrics). */
  readonly onIndex?: (index: DnsIndex, objects: number, ms: number) => void;
}

const KINDS: readonly WatchKind[] = ['services', 'endpointslices', 'namespaces'];

export class DnsSource {
  private readonly watch: ClusterWatch;
  private current: DnsIndex | null = null;
  private timer: unknown = null;
  private stopped = false;
  /** Rebuilds so far (the first one after the lists arrived included). */
  rebuilds = 0;

  constructor(private readonly o: DnsSourceOptions) {
    const changed = (): void => this.schedule();
    this.watch = new ClusterWatch({
      kubeconfig: o.kubeconfig,
      log: o.log,
      clock: o.clock,
      sources: KINDS.map((kind) => ({ kind, handler: { add: changed, update: changed, delete: changed } })),
      onSynced: () => this.rebuild(),
    });
  }

  /** Starts the informers; resolves once each delivered its first list or is retrying. */
  start(): Promise<void> {
    return this.watch.start();
  }

  /** The index to answer from; null until every list arrived. */
  index(): DnsIndex | null {
    return this.current;
  }

  get synced(): boolean {
    return this.current !== null;
  }

  /** Why the source is not healthy (lists or watches failing), for /ready and the log. */
  errors(): Iterable<readonly [string, string]> {
    return this.watch.errors();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) this.o.clock.clearTimeout(this.timer);
    this.timer = null;
    this.watch.stop();
  }

  private schedule(): void {
    if (this.stopped || this.timer !== null || !this.watch.synced) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = null;
      this.rebuild();
    }, this.o.debounceMs ?? 50);
  }

  private rebuild(): void {
    if (this.stopped) return;
    const t0 = performance.now();
    const list = (k: WatchKind): KubernetesObject[] => this.watch.list(k);
    const objects = { services: list('services'), endpointSlices: list('endpointslices'), namespaces: list('namespaces') };
    this.current = buildDnsIndex(objects, { domain: this.o.domain, ...(this.o.ttl !== undefined ? { ttl: this.o.ttl } : {}) });
    this.rebuilds++;
    const ms = performance.now() - t0;
    const count = objects.services.length + objects.endpointSlices.length + objects.namespaces.length;
    if (this.rebuilds === 1) this.o.log.info({ [F.subsys]: 'dns/source', [F.count]: count, [F.durationMs]: Math.round(ms) }, 'DNS records built from the API: serving');
    else this.o.log.debug({ [F.subsys]: 'dns/source', [F.count]: count, [F.durationMs]: Math.round(ms * 10) / 10 }, 'DNS records rebuilt');
    this.o.onIndex?.(this.current, count, ms);
  }
}
