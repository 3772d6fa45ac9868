/**
 * node/proxy-host: one node's Service proxy, run by the agent from the
 * dependencies it is given (node/compose.ts builds the real ones; the unit
 * tests pass the validating fakes).
 *
 * Start order:
 * 1. The node-namespace sysctls Service traffic needs (all per namespace,
 *    set in the node's namespace, never in the root one):
 *    - net.ipv4.ip_forward=1: the node routes pod and Service traffic.
 *    - net.bridge.bridge-nf-call-iptables=1: pod-to-pod Service traffic on
 *      one bridge must pass netfilter, or the reply skips the reverse NAT.
 *    - net.ipv4.conf.all.route_localnet=1: NodePorts on 127.0.0.1.
 *    - net.ipv4.conf.{all,default}.send_redirects=0: a node that routes a
 *      packet back out of the bridge it came from would send ICMP redirects,
 *      which share the per-host ICMP rate limit with REJECT replies and eat
 *      them (measured: a refused ClusterIP then timed out instead).
 * 2. The other mode's rules of the same prefix are removed, as kube-proxy
 *    does at start: a node switched from iptables to nftables mode must not
 *    keep DNATing through stale iptables chains. A failure is logged: it
 *    must not stop the proxy.
 * 3. The Proxier core and its sync loop, then the source (a manifest
 *    directory today; the Kubernetes informers next). Without a source
 *    nothing is ever applied: the Proxier waits for the initial lists.
 *
 * After every successful sync the service health server (proxy/healthcheck.ts)
 * opens, closes and answers the healthCheckNodePorts of the applied Services.
 *
 * After every sync attempt and every source scan the host rewrites a status
 * file (`proxy-status.json` in the run dir): the applied Services and
 * endpoints, the last sync's stats, the rejected objects with their fields
 * (and whether their last valid version is still served).
 * The demo and the tests read it, and `nodenet proxy status` when the agent's
 * /status (node/health-server.ts, the same status()) does not answer; the
 * kernel rules stay the source of truth.
 */
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Conntrack } from '../netfilter/conntrack/conntrack.js';
import type { Sysctl } from '../netns/sysctl.js';
import type { EndpointSliceHandler, ServiceHandler } from '../proxy/handlers.js';
import { Proxier, type ProxierObserver } from '../proxy/proxier.js';
import { ServiceHealthServer } from '../proxy/healthcheck.js';
import type { ProxyBackend, ProxyNodeConfig, ProxySnapshot } from '../proxy/types.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import type { EventRecorder } from '../../../lib/reconcile/event-recorder.js';
import { AppliedCache, describeApplied, writeProxyStatus, type ProxyStatus } from './proxy-status.js';

export const NODE_SYSCTLS: readonly (readonly [string, string])[] = [
  ['net.ipv4.ip_forward', '1'],
  ['net.bridge.bridge-nf-call-iptables', '1'],
  ['net.ipv4.conf.all.route_localnet', '1'],
  ['net.ipv4.conf.all.send_redirects', '0'],
  ['net.ipv4.conf.default.send_redirects', '0'],
];

/** What feeds the proxy its Services and EndpointSlices. */
export interface ProxySource {
  /** Files (or objects) that could not be read, with the reason, for the status file. */
  errors(): Iterable<readonly [string, string]>;
  stop(): void;
}

export interface ProxySourceHandlers {
  readonly services: ServiceHandler;
  readonly slices: EndpointSliceHandler;
  /** The source calls this after each scan that changed something. */
  readonly onScan: () => void;
}

export interface ProxyHostDeps {
  readonly mode: 'iptables' | 'nftables' | 'ipvs';
  readonly nodeConfig: ProxyNodeConfig;
  readonly backend: ProxyBackend;
  readonly conntrack: Conntrack;
  /** The node namespace's sysctls. */
  readonly sysctl: Sysctl;
  readonly clock: Clock;
  readonly log: Logger;
  /** Removes the other modes' rules of the same prefix; true when there were any. */
  readonly removeOtherMode: () => Promise<boolean>;
  /** Starts the Service source; null when none is configured. */
  readonly startSource: ((h: ProxySourceHandlers) => Promise<ProxySource>) | null;
  /** Where to write the status file; none when null. */
  readonly statusFile: string | null;
  readonly minSyncIntervalMs: number;
  readonly maxSyncIntervalMs?: number;
  /**
   * Where LoadBalancer Services' healthCheckNodePort servers listen (the
   * NodePort addresses, or ['0.0.0.0']); none are opened when absent.
   */
  readonly healthCheckAddresses?: readonly string[];
  /** Told about the proxy's changes and syncs (the agent's metrics and /healthz). */
  readonly observer?: ProxierObserver;
  /** Warning Events on the Services and EndpointSlices the proxy cannot use: given when the source is an API server. */
  readonly events?: EventRecorder;
  /**
   * Called (on the next turn) after a successful full sync of at least LARGE_SYNC_SERVICE_PORTS service
   * ports: the composition root runs a full garbage collection there, so the render's garbage (hundreds
   * of MiB at 30,000 Services) goes back to the system instead of staying in the agent's RSS.
   */
  readonly afterLargeFullSync?: () => void;
}

/** A full sync this large leaves enough garbage to be worth a collection (afterLargeFullSync). */
export const LARGE_SYNC_SERVICE_PORTS = 5000;

export class ProxyHost {
  private source: ProxySource | null = null;
  private applied: ProxySnapshot | null = null;
  /** The status's per-endpoint-list text, reused across syncs (a partial sync changes few lists). */
  private readonly appliedCache = new AppliedCache();
  /** kube-proxy's service health server, driven after every successful sync. */
  private readonly health: ServiceHealthServer | null;
  readonly proxier: Proxier;
  private readonly log: Logger;
  private stopped = false;

  private constructor(private readonly deps: ProxyHostDeps) {
    this.log = deps.log.child({ [F.subsys]: 'proxy-host', [F.mode]: deps.mode });
    this.health = this.healthFor(deps.healthCheckAddresses);
    this.proxier = new Proxier({
      backend: deps.backend,
      nodeConfig: deps.nodeConfig,
      conntrack: deps.conntrack,
      clock: deps.clock,
      log: deps.log,
      minSyncIntervalMs: deps.minSyncIntervalMs,
      maxSyncIntervalMs: deps.maxSyncIntervalMs ?? 30_000,
      ...(deps.observer ? { observer: deps.observer } : {}),
      ...(deps.events ? { events: deps.events } : {}),
      onSyncDone: (snap, stats) => {
        if (snap) this.applied = snap;
        if (snap && stats.ok && stats.scope === 'full' && stats.servicePorts >= LARGE_SYNC_SERVICE_PORTS && deps.afterLargeFullSync) setImmediate(deps.afterLargeFullSync);
        if (snap) void this.health?.update(snap);
        this.writeStatus();
      },
    });
  }

  private healthFor(addresses: readonly string[] | undefined): ServiceHealthServer | null {
    if (!addresses) return null;
    // kube-proxy's serviceProxyHealthy: rules applied and the last sync succeeded.
    return new ServiceHealthServer({ log: this.deps.log, addresses, proxyHealthy: () => this.proxier.ready && this.proxier.lastSync?.ok === true });
  }

  get backend(): ProxyBackend {
    return this.deps.backend;
  }

  static async start(deps: ProxyHostDeps): Promise<ProxyHost> {
    const host = new ProxyHost(deps);
    for (const [k, v] of NODE_SYSCTLS) await deps.sysctl.set(k, v);
    const other = (['iptables', 'nftables', 'ipvs'] as const).filter((m) => m !== deps.mode).join(' or ');
    try {
      if (await deps.removeOtherMode()) host.log.info(`removed the ${other}-mode rules a previous run left`);
    } catch (err) {
      host.log.warn({ [F.err]: err }, `could not remove the ${other}-mode rules a previous run left`);
    }
    host.proxier.start();
    if (deps.startSource) {
      host.source = await deps.startSource({ services: host.proxier, slices: host.proxier, onScan: () => host.writeStatus() });
    } else {
      host.log.warn('proxy mode set but no Service source configured (kubeconfig or manifestsDir): no rules will be applied');
    }
    host.writeStatus();
    const ips = deps.nodeConfig.nodeIPs;
    host.log.info({ [F.count]: ips.length }, `proxy started in ${deps.mode} mode, node IPs ${ips.join(', ') || '(none)'}`);
    return host;
  }

  status(): ProxyStatus {
    const p = this.proxier;
    return {
      mode: this.deps.mode,
      syncs: p.syncCount,
      ready: p.ready,
      lastSync: p.lastSync,
      applied: describeApplied(this.applied, this.appliedCache),
      rejected: p.rejected(),
      ignored: p.ignored(),
      manifestErrors: Object.fromEntries(this.source?.errors() ?? []),
    };
  }

  private writeStatus(): void {
    // Not after stop(): a source's scan still in flight would write into a directory its owner may be removing.
    if (!this.deps.statusFile || this.stopped) return;
    try {
      writeProxyStatus(this.deps.statusFile, this.status(), { snapshot: this.applied, cache: this.appliedCache });
    } catch (err) {
      this.log.warn({ [F.err]: err }, 'cannot write the proxy status file');
    }
  }

  /** Stops the source and the sync loop; the rules stay in place (as kube-proxy leaves them on exit). */
  async stop(): Promise<void> {
    this.source?.stop();
    this.proxier.stop();
    await this.proxier.whenIdle();
    this.stopped = true;
    await this.health?.close();
    this.deps.backend.close?.();
  }

  /** Removes this mode's rules (kube-proxy --cleanup). */
  cleanup(): Promise<void> {
    return this.deps.backend.cleanup();
  }
}
