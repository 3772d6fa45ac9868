/**
 * node/agent-metrics: the figures behind the agent's /metrics, /healthz and
 * /livez (node/health-server.ts serves them).
 *
 * The proxy's metrics carry kube-proxy's names and buckets
 * (pkg/proxy/metrics), so dashboards and alerts written for kube-proxy read
 * them unchanged:
 *   kubeproxy_sync_proxy_rules_duration_seconds          every sync attempt (histogram)
 *   kubeproxy_sync_{full,partial}_proxy_rules_duration_seconds  the same, by scope
 *   kubeproxy_sync_proxy_rules_last_timestamp_seconds    the last successful sync
 *   kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds  the last change that requested one
 *   kubeproxy_network_programming_duration_seconds       from an EndpointSlice change to its rules in the kernel
 *   kubeproxy_sync_proxy_rules_{service,endpoint}_changes_{pending,total}
 *   kubeproxy_sync_proxy_rules_iptables_restore_failures_total / _nftables_sync_failures_total
 *   kubeproxy_proxy_{healthz,livez}_total{code}
 * plus nodenet's own: nodenet_sync_proxy_rules_last_written{mode} (when the
 * backend counts what it wrote), nodenet_cni_requests_total{command,result}
 * and nodenet_cni_request_duration_seconds{command}, the objects the agent
 * could not use (reconcile/last-good.ts), read from the proxier and the
 * overlay when scraped:
 *   nodenet_{proxy,overlay}_objects_rejected_total{kind}          distinct rejections
 *   nodenet_{proxy,overlay}_objects_served_from_last_good{kind}   served from their last valid version now
 *   nodenet_overlay_foreign_nodes{backend_type}                     Nodes announced with another overlay backend
 * and prom-client's process and Node.js runtime figures. One registry per agent, never the
 * global one, so two agents in one test process do not mix.
 *
 * Network programming latency starts at the EndpointSlice's
 * endpoints.kubernetes.io/last-change-trigger-time annotation (the time of
 * the Pod or Service change the controller acted on), else at the moment the
 * proxier received the slice (proxy/proxier.ts decides which); as upstream,
 * a clock skew between the controller and the node skews it.
 *
 * ProxyHealth is kube-proxy's ProxyHealthServer verdict
 * (pkg/proxy/healthcheck/proxy_health.go): healthy unless a change queued
 * after the initial lists has waited longer than the timeout (kube-proxy:
 * twice the sync period) without a successful sync. Time comes from the
 * injected clock.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CniCallObserver, CniServerCommand } from '../cniserver/server.js';
import type { ProxyMode } from '../config/config.js';
import type { ProxierObserver, SyncStats } from '../proxy/proxier.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import type { RejectionCount } from '../../../lib/reconcile/last-good.js';

function linear(start: number, step: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => start + step * i);
}

/** kube-proxy's sync-duration buckets: ExponentialBuckets(0.001, 2, 15), 1 ms to 16.4 s. */
export const SYNC_BUCKETS: readonly number[] = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);
/** kube-proxy's network-programming buckets: 0.25 s, 0.5 s, 1-59 s, 60-115 s by 5, 2-5 min by 30 s. */
export const PROGRAMMING_BUCKETS: readonly number[] = [...linear(0.25, 0.25, 2), ...linear(1, 1, 59), ...linear(60, 5, 12), ...linear(120, 30, 7)];
/** CNI calls: an ADD takes milliseconds to a second here. */
export const CNI_BUCKETS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** One /healthz or /livez verdict; times are clock ms. */
export interface HealthReport {
  readonly healthy: boolean;
  /** As kube-proxy: now when healthy, else the last successful sync (null: none yet). */
  readonly lastUpdated: number | null;
  readonly currentTime: number;
}

/** kube-proxy's proxier health: QueuedUpdate / Updated, and the verdict. */
export class ProxyHealth {
  private lastUpdated: number | null = null;
  private oldestPendingQueued: number | null = null;

  constructor(private readonly clock: Clock, readonly timeoutMs: number) {}

  /** A change is waiting for a sync; the timeout runs from the oldest such change. */
  queued(): void {
    this.oldestPendingQueued ??= this.clock.now();
  }

  /** A sync succeeded: nothing waits any more. */
  updated(): void {
    this.oldestPendingQueued = null;
    this.lastUpdated = this.clock.now();
  }

  check(): HealthReport {
    const now = this.clock.now();
    const healthy = this.oldestPendingQueued === null || now - this.oldestPendingQueued < this.timeoutMs;
    return { healthy, lastUpdated: healthy ? now : this.lastUpdated, currentTime: now };
  }
}

export interface AgentMetricsOptions {
  readonly clock: Clock;
  readonly proxyMode: ProxyMode;
  /** How long a queued change may wait for a successful sync before /healthz fails (kube-proxy: 2 × the sync period). */
  readonly healthTimeoutMs: number;
  /** The proxier's pending changes now; null without a proxy (or before it started). */
  readonly pendingChanges: () => { readonly services: number; readonly endpoints: number } | null;
  /** prom-client's process and runtime metrics (default true). */
  readonly defaultMetrics?: boolean;
  /** The proxier's rejections per kind now (Proxier.rejectionCounts); null before it started. */
  readonly proxyRejections?: () => readonly RejectionCount[] | null;
  /** The overlay's (Overlay.rejectionCounts); absent without an overlay. */
  readonly overlayRejections?: () => readonly RejectionCount[];
  /** The Nodes on another overlay backend (Overlay.foreignNodes); absent without an overlay. */
  readonly overlayForeignNodes?: () => readonly { readonly backendType: string }[];
}

/**
 * The two rejection metrics of one component, read from `counts` when
 * scraped (the components keep the figures: the overlay's start before the
 * metrics exist).
 */
function rejectionMetrics(component: 'proxy' | 'overlay', what: string, kinds: readonly string[], counts: () => readonly RejectionCount[] | null, registers: Registry[]): void {
  const read = (pick: (c: RejectionCount) => number) => {
    const by = new Map<string, number>(kinds.map((k) => [k, 0]));
    for (const c of counts() ?? []) by.set(c.kind, pick(c));
    return by;
  };
  new Counter({
    name: `nodenet_${component}_objects_rejected_total`,
    help: `${what} the ${component} could not use, once per distinct rejection (it keeps serving the last valid version of an object it served)`,
    labelNames: ['kind'],
    registers,
    collect() {
      this.reset();
      for (const [kind, n] of read((c) => c.rejected)) this.inc({ kind }, n);
    },
  });
  new Gauge({
    name: `nodenet_${component}_objects_served_from_last_good`,
    help: `${what} whose current version the ${component} cannot use, served from their last valid version`,
    labelNames: ['kind'],
    registers,
    collect() {
      for (const [kind, n] of read((c) => c.servedFromLastGood)) this.set({ kind }, n);
    },
  });
}

export class AgentMetrics {
  readonly registry = new Registry();
  readonly health: ProxyHealth;
  /** Hand to the Proxier (through the proxy host). */
  readonly proxy: ProxierObserver;
  /** Hand to the CNI server. */
  readonly cni: CniCallObserver;
  private readonly probes: Counter<'code'> | null = null;
  private readonly livez: Counter<'code'> | null = null;

  constructor(private readonly o: AgentMetricsOptions) {
    const registers = [this.registry];
    const clock = o.clock;
    this.health = new ProxyHealth(clock, o.healthTimeoutMs);

    const cniRequests = new Counter({ name: 'nodenet_cni_requests_total', help: 'CNI calls the agent answered, by command and result (error: an in-band CNI error).', labelNames: ['command', 'result'], registers });
    const cniDuration = new Histogram({ name: 'nodenet_cni_request_duration_seconds', help: 'Time the agent took to answer a CNI call, by command.', labelNames: ['command'], buckets: [...CNI_BUCKETS], registers });
    this.cni = {
      callDone(command: CniServerCommand, result: 'success' | 'error', durationMs: number) {
        cniRequests.inc({ command, result });
        cniDuration.observe({ command }, durationMs / 1000);
      },
    };

    if (o.proxyMode === 'none') {
      this.proxy = { changeSeen() {}, syncDone() {} };
    } else {
      this.probes = new Counter({ name: 'kubeproxy_proxy_healthz_total', help: 'Cumulative proxy healthz HTTP status', labelNames: ['code'], registers });
      this.livez = new Counter({ name: 'kubeproxy_proxy_livez_total', help: 'Cumulative proxy livez HTTP status', labelNames: ['code'], registers });
      this.proxy = this.proxyMetrics(o.proxyMode, registers);
      rejectionMetrics('proxy', 'Services and EndpointSlices', ['Service', 'EndpointSlice'], o.proxyRejections ?? (() => null), registers);
    }
    if (o.overlayRejections) rejectionMetrics('overlay', 'Nodes', ['Node'], o.overlayRejections, registers);
    const foreign = o.overlayForeignNodes;
    if (foreign) {
      new Gauge({
        name: 'nodenet_overlay_foreign_nodes',
        help: 'Nodes announced with another overlay backend than this node runs, by that backend type: no route to their pods is made from here',
        labelNames: ['backend_type'],
        registers,
        collect() {
          this.reset();
          const by = new Map<string, number>();
          for (const f of foreign()) by.set(f.backendType, (by.get(f.backendType) ?? 0) + 1);
          for (const [t, n] of by) this.set({ backend_type: t }, n);
        },
      });
    }
    if (o.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  private proxyMetrics(mode: 'iptables' | 'nftables' | 'ipvs', registers: Registry[]): ProxierObserver {
    const { clock, pendingChanges } = this.o;
    const health = this.health;
    const duration = new Histogram({ name: 'kubeproxy_sync_proxy_rules_duration_seconds', help: 'SyncProxyRules latency in seconds', buckets: [...SYNC_BUCKETS], registers });
    const full = new Histogram({ name: 'kubeproxy_sync_full_proxy_rules_duration_seconds', help: 'SyncProxyRules latency in seconds for full resyncs', buckets: [...SYNC_BUCKETS], registers });
    const partial = new Histogram({ name: 'kubeproxy_sync_partial_proxy_rules_duration_seconds', help: 'SyncProxyRules latency in seconds for partial resyncs', buckets: [...SYNC_BUCKETS], registers });
    const lastSync = new Gauge({ name: 'kubeproxy_sync_proxy_rules_last_timestamp_seconds', help: 'The last time proxy rules were successfully synced', registers });
    const lastQueued = new Gauge({ name: 'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds', help: 'The last time a sync of proxy rules was queued', registers });
    const programming = new Histogram({ name: 'kubeproxy_network_programming_duration_seconds', help: 'In Cluster Network Programming Latency in seconds', buckets: [...PROGRAMMING_BUCKETS], registers });
    const total = {
      service: new Counter({ name: 'kubeproxy_sync_proxy_rules_service_changes_total', help: 'Cumulative proxy rules Service changes', registers }),
      endpoints: new Counter({ name: 'kubeproxy_sync_proxy_rules_endpoint_changes_total', help: 'Cumulative proxy rules Endpoint changes', registers }),
    };
    new Gauge({
      name: 'kubeproxy_sync_proxy_rules_service_changes_pending',
      help: 'Pending proxy rules Service changes',
      registers,
      collect() {
        this.set(pendingChanges()?.services ?? 0);
      },
    });
    new Gauge({
      name: 'kubeproxy_sync_proxy_rules_endpoint_changes_pending',
      help: 'Pending proxy rules Endpoint changes',
      registers,
      collect() {
        this.set(pendingChanges()?.endpoints ?? 0);
      },
    });
    const failures =
      mode !== 'nftables' // IPVS mode counts its iptables-restore failures there too, as kube-proxy does
        ? new Counter({ name: 'kubeproxy_sync_proxy_rules_iptables_restore_failures_total', help: 'Cumulative proxy iptables restore failures', registers })
        : new Counter({ name: 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total', help: 'Cumulative proxy nftables sync failures', registers });
    const written = new Gauge({ name: 'nodenet_sync_proxy_rules_last_written', help: 'Rules (nftables: rules plus set and map elements) the last successful sync wrote, when the backend counts them.', labelNames: ['mode'], registers });

    return {
      changeSeen(kind, queued) {
        total[kind].inc();
        if (!queued) return;
        health.queued();
        lastQueued.set(clock.now() / 1000);
      },
      syncDone(stats: SyncStats, triggerTimes) {
        const seconds = stats.durationMs / 1000;
        duration.observe(seconds);
        (stats.scope === 'full' ? full : partial).observe(seconds);
        if (!stats.ok) return void failures.inc();
        const now = clock.now();
        health.updated();
        lastSync.set(now / 1000);
        if (stats.ruleCount !== null) written.set({ mode }, stats.ruleCount);
        // A trigger time ahead of the node's clock (skew with the controller's) counts as no delay.
        for (const t of triggerTimes) programming.observe(Math.max(0, now - t) / 1000);
      },
    };
  }

  /** A /healthz or /livez verdict, counted by the code it answers with (kube-proxy's proxy_{healthz,livez}_total). */
  probe(kind: 'healthz' | 'livez'): HealthReport {
    const r = this.health.check();
    (kind === 'healthz' ? this.probes : this.livez)?.inc({ code: r.healthy ? '200' : '503' });
    return r;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
