/**
 * controlplane/api/metrics: `/metrics` in Prometheus' text format, with
 * kube-apiserver's names for the figures it has:
 *   apiserver_request_total{verb,group,version,resource,subresource,scope,code}
 *   apiserver_request_duration_seconds{verb,group,version,resource,subresource,scope}  (histogram; watches excluded, as upstream)
 *   apiserver_storage_objects{resource}   (resource as upstream: "services", "deployments.apps")
 *   apiserver_longrunning_requests{verb,resource}  (open watches)
 * plus prom-client's process and Node.js runtime figures. One registry per
 * server, never the global one, so two servers in a test do not mix.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface RequestSample {
  readonly verb: string;
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly subresource: string;
  readonly scope: string;
  readonly code: number;
  readonly durationMs: number;
}

/** kube-apiserver's request-duration buckets (seconds). */
const BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];

export class ApiMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter;
  private readonly duration: Histogram;
  private readonly watches: Gauge;

  /** `objects` gives the stored count per group-resource ("services", "deployments.apps"). */
  constructor(objects: () => ReadonlyMap<string, number>, opts: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.requests = new Counter({ name: 'apiserver_request_total', help: 'Counter of apiserver requests broken out for each verb, group, version, resource, subresource, scope and HTTP response code.', labelNames: ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'code'], registers });
    this.duration = new Histogram({ name: 'apiserver_request_duration_seconds', help: 'Response latency distribution in seconds for each verb, group, version, resource, subresource and scope.', labelNames: ['verb', 'group', 'version', 'resource', 'subresource', 'scope'], buckets: BUCKETS, registers });
    this.watches = new Gauge({ name: 'apiserver_longrunning_requests', help: 'Gauge of all active long-running apiserver requests (watches) broken out by verb and resource.', labelNames: ['verb', 'resource'], registers });
    new Gauge({
      name: 'apiserver_storage_objects',
      help: 'Number of stored objects at the time of last check split by kind.',
      labelNames: ['resource'],
      registers,
      collect() {
        this.reset();
        for (const [gr, n] of objects()) this.set({ resource: gr }, n);
      },
    });
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  observe(s: RequestSample): void {
    const labels = { verb: s.verb, group: s.group, version: s.version, resource: s.resource, subresource: s.subresource, scope: s.scope };
    this.requests.inc({ ...labels, code: String(s.code) });
    if (s.verb !== 'WATCH') this.duration.observe(labels, s.durationMs / 1000);
  }

  watchOpened(resource: string): void {
    this.watches.inc({ verb: 'WATCH', resource });
  }

  watchClosed(resource: string): void {
    this.watches.dec({ verb: 'WATCH', resource });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
