/**
 * dns/metrics: `nodenet dns`'s Prometheus metrics under CoreDNS's names and labels, so CoreDNS's dashboards
 * and alerts read them unchanged. Names, labels and buckets are those of coredns/coredns at the time of
 * writing (plugin/metrics/vars/vars.go, plugin/cache/metrics.go, plugin/forward/metrics.go,
 * plugin/pkg/proxy/metrics.go):
 *   coredns_dns_requests_total{server,zone,view,proto,family,type}   type: CoreDNS's monitored qtypes, else "other"
 *   coredns_dns_responses_total{server,zone,view,rcode,plugin}
 *   coredns_dns_request_duration_seconds{server,zone,view}           CoreDNS dropped its `type` label in 2021 (#4534)
 *   coredns_dns_request_size_bytes / coredns_dns_response_size_bytes{server,zone,view,proto}
 *   coredns_dns_do_requests_total{server,zone,view}
 *   coredns_cache_entries{server,type,zones,view}                    type: success | denial
 *   coredns_cache_requests_total{server,zones,view}, coredns_cache_hits_total{server,type,zones,view},
 *   coredns_cache_misses_total{server,zones,view}, coredns_cache_evictions_total{server,type,zones,view}
 *   coredns_proxy_request_duration_seconds{proxy_name="forward",to,rcode}  (replaced coredns_forward_requests_total,
 *                                                                    which CoreDNS deprecated: count = its _count)
 *   coredns_forward_max_concurrent_rejects_total
 *   coredns_plugin_enabled{server,zone,view,name}, coredns_panics_total
 * Label values as CoreDNS with the default kubeadm Corefile (`.:53 { ... }`): server "dns://:53" (the
 * listen address when one is bound), zone "." (the server block's), view "", and zone "dropped" for queries
 * refused before any plugin ran (bad class, bad EDNS version, malformed: CoreDNS counts only the first two,
 * its DNS library answers FORMERR/NOTIMP uncounted; we count all, a superset).
 *
 * One Registry per instance, never prom-client's global one, so two servers in a test process do not mix.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** CoreDNS's plugin.TimeBuckets: prometheus.ExponentialBuckets(0.00025, 2, 16), 0.25 ms to 8 s. */
export const TIME_BUCKETS: readonly number[] = Array.from({ length: 16 }, (_, i) => 0.00025 * 2 ** i);
const SIZE_BUCKETS = [0, 100, 200, 300, 400, 511, 1023, 2047, 4095, 8291, 16e3, 32e3, 48e3, 64e3];
/** vars/monitor.go: qtypes counted by name; others are "other". */
const MONITORED = new Set(['AAAA', 'A', 'CNAME', 'DNSKEY', 'DS', 'MX', 'NSEC3', 'NSEC', 'NS', 'PTR', 'RRSIG', 'SOA', 'SRV', 'TXT', 'HTTPS', 'SVCB', 'IXFR', 'AXFR', 'ANY']);
export const qtypeLabel = (qtype: string): string => (MONITORED.has(qtype) ? qtype : 'other');

/** Zone label for queries answered before the plugin chain (CoreDNS's vars.Dropped). */
export const ZONE_DROPPED = 'dropped';
/** The plugins whose names label responses_total (CoreDNS's names). */
export type PluginLabel = 'kubernetes' | 'forward' | 'cache' | 'any' | '';

export interface RequestReport {
  readonly zone: string;
  readonly proto: 'udp' | 'tcp';
  /** 1 IPv4, 2 IPv6 (CoreDNS's family label). */
  readonly family: 1 | 2;
  readonly qtype: string;
  readonly rcode: string;
  readonly plugin: PluginLabel;
  readonly do: boolean;
  readonly requestBytes: number;
  readonly responseBytes: number;
  readonly seconds: number;
}

export class DnsMetrics {
  readonly registry = new Registry();
  /** The `server` label, set when the server knows its address (dns://:53). */
  server = 'dns://:53';
  private readonly view = '';
  private readonly zones = '.';
  private readonly requests: Counter<string>;
  private readonly responses: Counter<string>;
  private readonly duration: Histogram<string>;
  private readonly requestSize: Histogram<string>;
  private readonly responseSize: Histogram<string>;
  private readonly doRequests: Counter<string>;
  private readonly cacheEntries: Gauge<string>;
  private readonly cacheRequests: Counter<string>;
  private readonly cacheHits: Counter<string>;
  private readonly cacheMisses: Counter<string>;
  private readonly cacheEvictions: Counter<string>;
  private readonly proxyDuration: Histogram<string>;
  private readonly maxConcurrentRejects: Counter<string>;
  private readonly pluginEnabled: Gauge<string>;
  readonly panics: Counter<string>;

  constructor() {
    const registers = [this.registry];
    this.requests = new Counter({ name: 'coredns_dns_requests_total', help: 'Counter of DNS requests made per zone, protocol and family.', labelNames: ['server', 'zone', 'view', 'proto', 'family', 'type'], registers });
    this.responses = new Counter({ name: 'coredns_dns_responses_total', help: 'Counter of response status codes.', labelNames: ['server', 'zone', 'view', 'rcode', 'plugin'], registers });
    this.duration = new Histogram({ name: 'coredns_dns_request_duration_seconds', help: 'Histogram of the time (in seconds) each request took per zone.', labelNames: ['server', 'zone', 'view'], buckets: [...TIME_BUCKETS], registers });
    this.requestSize = new Histogram({ name: 'coredns_dns_request_size_bytes', help: 'Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.', labelNames: ['server', 'zone', 'view', 'proto'], buckets: SIZE_BUCKETS, registers });
    this.responseSize = new Histogram({ name: 'coredns_dns_response_size_bytes', help: 'Size of the returned response in bytes.', labelNames: ['server', 'zone', 'view', 'proto'], buckets: SIZE_BUCKETS, registers });
    this.doRequests = new Counter({ name: 'coredns_dns_do_requests_total', help: 'Counter of DNS requests with DO bit set per zone.', labelNames: ['server', 'zone', 'view'], registers });
    this.cacheEntries = new Gauge({ name: 'coredns_cache_entries', help: 'The number of elements in the cache.', labelNames: ['server', 'type', 'zones', 'view'], registers });
    this.cacheRequests = new Counter({ name: 'coredns_cache_requests_total', help: 'The count of cache requests.', labelNames: ['server', 'zones', 'view'], registers });
    this.cacheHits = new Counter({ name: 'coredns_cache_hits_total', help: 'The count of cache hits.', labelNames: ['server', 'type', 'zones', 'view'], registers });
    this.cacheMisses = new Counter({ name: 'coredns_cache_misses_total', help: 'The count of cache misses. Deprecated, derive misses from cache hits/requests counters.', labelNames: ['server', 'zones', 'view'], registers });
    this.cacheEvictions = new Counter({ name: 'coredns_cache_evictions_total', help: 'The count of cache evictions.', labelNames: ['server', 'type', 'zones', 'view'], registers });
    this.proxyDuration = new Histogram({ name: 'coredns_proxy_request_duration_seconds', help: 'Histogram of the time each request took.', labelNames: ['proxy_name', 'to', 'rcode'], buckets: [...TIME_BUCKETS], registers });
    this.maxConcurrentRejects = new Counter({ name: 'coredns_forward_max_concurrent_rejects_total', help: 'Counter of the number of queries rejected because the concurrent queries were at maximum.', registers });
    this.pluginEnabled = new Gauge({ name: 'coredns_plugin_enabled', help: 'A metric that indicates whether a plugin is enabled on per server and zone basis.', labelNames: ['server', 'zone', 'view', 'name'], registers });
    this.panics = new Counter({ name: 'coredns_panics_total', help: 'A metrics that counts the number of panics.', registers });
  }

  /** Sets the `server` label (call before serving) and marks the plugins nodenet dns stands in for. */
  setServer(server: string): void {
    this.server = server;
    for (const name of ['kubernetes', 'forward', 'cache', 'any', 'prometheus', 'health', 'ready', 'errors']) this.pluginEnabled.set({ server, zone: '.', view: this.view, name }, 1);
  }

  /** One answered (or refused) query: vars.Report. */
  report(r: RequestReport): void {
    const base = { server: this.server, zone: r.zone, view: this.view };
    this.requests.inc({ ...base, proto: r.proto, family: String(r.family), type: qtypeLabel(r.qtype) });
    this.responses.inc({ ...base, rcode: r.rcode, plugin: r.plugin });
    this.duration.observe(base, r.seconds);
    this.requestSize.observe({ ...base, proto: r.proto }, r.requestBytes);
    this.responseSize.observe({ ...base, proto: r.proto }, r.responseBytes);
    if (r.do) this.doRequests.inc(base);
  }

  cacheLookup(hit: 'success' | 'denial' | null): void {
    const base = { server: this.server, zones: this.zones, view: this.view };
    this.cacheRequests.inc(base);
    // Labels in CoreDNS's order (the exposition keeps the object's).
    if (hit) this.cacheHits.inc({ server: this.server, type: hit, zones: this.zones, view: this.view });
    else this.cacheMisses.inc(base);
  }

  cacheSize(type: 'success' | 'denial', entries: number): void {
    this.cacheEntries.set({ server: this.server, type, zones: this.zones, view: this.view }, entries);
  }

  cacheEviction(type: 'success' | 'denial'): void {
    this.cacheEvictions.inc({ server: this.server, type, zones: this.zones, view: this.view });
  }

  /** One exchange with an upstream; rcode "timeout"/"error" when none came back (nodenet's values). */
  upstream(to: string, rcode: string, seconds: number): void {
    this.proxyDuration.observe({ proxy_name: 'forward', to, rcode }, seconds);
  }

  maxConcurrentReject(): void {
    this.maxConcurrentRejects.inc();
  }

  /** The text exposition for /metrics. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
