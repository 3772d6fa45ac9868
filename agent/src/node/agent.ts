/**
 * node/agent: one node's agent, run from the dependencies it is given.
 * node/compose.ts builds the real ones (netlink sockets, the disk IPAM, the
 * gRPC server, the firewall executors) and is the only place that does; the
 * unit test runs this whole agent on the validating fakes without root.
 *
 * Start order matters:
 * 1. state and run dirs, then the health and metrics server (first, so
 *    /healthz answers and /readyz says 503 while the rest starts, and a
 *    taken port fails the start before anything else is set up);
 * 2. the ipMasq table (set up once, then matched to the attachment records);
 * 3. the sandbox and its CNI handler (answering "try again later" until the
 *    agent is ready);
 * 4. the CNI server;
 * 5. the replay of DELs the shim queued while it could not reach the agent
 *    (needs the sandbox), which then keeps watching the queue;
 * 6. the Service proxy, when a proxy mode is set (its first sync waits for
 *    the source's initial lists);
 * 7. the embedded kubelet, when runPods (it needs the CNI handler ready: its CNI ADDs are in-process);
 * 8. the ready marker (<runDir>/agent.ready).
 * stop() undoes 8 to 3 (the kubelet without stopping its Pods), then closes the health server, and leaves every pod as it is: namespaces, veths,
 * IPs and rules stay, and a restarted agent picks up from its state dir.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { CniServer, CniServerOptions } from '../cniserver/server.js';
import { DeletionReplayer, deletionQueueDirFor, type ReplayerOptions } from '../cniserver/replay-deletions.js';
import type { AgentConfig } from '../config/config.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Clock } from '../../../lib/reconcile/clock.js';
import type { RejectionCount } from '../../../lib/reconcile/last-good.js';
import { SandboxCniHandler } from '../cniserver/sandbox-handler.js';
import type { CniHandler } from '../cniserver/handler.js';
import type { MasqueradeEntry, SandboxDeps } from '../sandbox/deps.js';
import { masqueradeEntry } from '../sandbox/masquerade.js';
import { Sandbox } from '../sandbox/sandbox.js';
import { AgentMetrics } from './agent-metrics.js';
import type { HealthServer, HealthServerOptions, HealthSource } from './health-server.js';
import { ProxyHost, type ProxyHostDeps } from './proxy-host.js';

export interface AgentMasquerade {
  /** Writes the node's ipMasq table; a failure is kept for later ADDs to report. */
  setup(): Promise<void>;
  /** Makes the ipMasq sets hold exactly these entries. */
  reconcile(entries: readonly MasqueradeEntry[]): Promise<unknown>;
}

export interface AgentDeps {
  readonly config: AgentConfig;
  readonly log: Logger;
  readonly clock: Clock;
  /** What the sandbox works with (its `log` is derived from the agent's). */
  readonly sandbox: Omit<SandboxDeps, 'log'>;
  readonly masquerade: AgentMasquerade;
  /** Starts the CNI gRPC server (cniserver/server.ts's startCniServer). */
  readonly serveCni: (o: CniServerOptions) => Promise<CniServer>;
  /** How the DEL queue is watched (default fs.watch). */
  readonly watchQueue?: ReplayerOptions['watch'];
  /** The Service proxy's dependencies; null when proxyMode is none. */
  readonly proxy: Omit<ProxyHostDeps, 'log' | 'clock'> | null;
  /**
   * Starts the /metrics, /status and /healthz server on the config's bind
   * addresses (health-server.ts's startHealthServer); none when absent.
   */
  readonly serveHealth?: (o: HealthServerOptions) => Promise<HealthServer>;
  /**
   * Starts the embedded kubelet (pods/) on the agent's CNI handler, after the proxy; absent unless runPods.
   * Its stop() leaves the Pods running.
   */
  readonly pods?: (cni: CniHandler) => Promise<{ stop(): Promise<void> }>;
  /** Closes what compose opened (netlink sockets, worker threads). */
  readonly close?: () => void | Promise<void>;
  /** The overlay's rejections per kind (its Nodes it cannot use), for the metrics; absent without an overlay. */
  readonly overlayRejections?: () => readonly RejectionCount[];
}

export class Agent {
  private ready = false;
  private server: CniServer | null = null;
  private replayer: DeletionReplayer | null = null;
  private proxyHost: ProxyHost | null = null;
  private healthServer: HealthServer | null = null;
  private metrics: AgentMetrics | null = null;
  private kubelet: { stop(): Promise<void> } | null = null;
  readonly log: Logger;
  private readonly readyFile: string;

  constructor(private readonly deps: AgentDeps) {
    this.log = deps.log.child({ [F.node]: deps.config.nodeName });
    this.readyFile = `${deps.config.runDir}/agent.ready`;
  }

  get proxy(): ProxyHost | null {
    return this.proxyHost;
  }

  get isReady(): boolean {
    return this.ready;
  }

  /** The health and metrics server (its bound addresses), null when not serving. */
  get health(): HealthServer | null {
    return this.healthServer;
  }

  async start(): Promise<void> {
    const { config: cfg, deps } = { config: this.deps.config, deps: this.deps };
    rmSync(this.readyFile, { force: true });
    mkdirSync(cfg.stateDir, { recursive: true, mode: 0o700 });
    mkdirSync(cfg.runDir, { recursive: true, mode: 0o700 });
    if (deps.serveHealth && (cfg.metricsBindAddress || cfg.healthzBindAddress)) {
      const metrics = new AgentMetrics({
        clock: deps.clock,
        proxyMode: cfg.proxyMode,
        // kube-proxy's healthz timeout: twice the sync period (the proxy host's default 30 s).
        healthTimeoutMs: 2 * (deps.proxy?.maxSyncIntervalMs ?? 30_000),
        pendingChanges: () => this.proxyHost?.proxier.pendingChanges() ?? null,
        proxyRejections: () => this.proxyHost?.proxier.rejectionCounts() ?? null,
        ...(deps.overlayRejections ? { overlayRejections: deps.overlayRejections } : {}),
      });
      this.metrics = metrics;
      this.healthServer = await deps.serveHealth({ metricsBindAddress: cfg.metricsBindAddress, healthzBindAddress: cfg.healthzBindAddress, source: this.healthSource(metrics), log: this.log });
    }
    const observe = this.metrics;

    await deps.masquerade.setup();
    await this.masqueradeEntries()
      .then((entries) => deps.masquerade.reconcile(entries))
      .catch((e: unknown) => this.log.warn({ [F.err]: e }, 'cannot match the ipMasq sets to the attachment records'));

    const sandbox = new Sandbox({ ...deps.sandbox, log: this.log.child({ [F.subsys]: 'sandbox' }) });
    const handler = new SandboxCniHandler({ sandbox, defaultMtu: cfg.mtu, ready: () => this.ready, log: this.log.child({ [F.subsys]: 'cni' }) });
    this.server = await deps.serveCni({ socketPath: cfg.cniSocket, handler, log: this.log, ...(observe ? { observer: observe.cni } : {}) });
    this.replayer = new DeletionReplayer({
      dir: deletionQueueDirFor(cfg.cniSocket),
      handler,
      log: this.log,
      clock: deps.clock,
      ...(deps.watchQueue ? { watch: deps.watchQueue } : {}),
    });
    const replay = await this.replayer.start();
    if (deps.proxy) this.proxyHost = await ProxyHost.start({ ...deps.proxy, log: this.log, clock: deps.clock, ...(observe ? { observer: observe.proxy } : {}) });

    this.ready = true;
    // The kubelet's first CNI ADDs need the handler ready.
    if (deps.pods) this.kubelet = await deps.pods(handler);
    writeFileSync(this.readyFile, `${process.pid}\n`);
    this.log.info({ socket: cfg.cniSocket, podCIDR: cfg.podCIDR, replay }, 'agent ready');
  }

  /** What the health server reports: this agent's readiness and proxy, over its metrics. */
  private healthSource(m: AgentMetrics): HealthSource {
    return {
      probe: (kind) => m.probe(kind),
      notReady: () => {
        if (!this.ready) return 'the agent is starting or stopping';
        if (this.proxyHost && !this.proxyHost.proxier.ready) return 'the proxy has not synced its rules with the Service source yet';
        return null;
      },
      metrics: async () => ({ contentType: m.contentType, text: await m.text() }),
      status: () => (this.deps.proxy === null ? 'none' : (this.proxyHost?.status() ?? 'starting')),
      proxyMode: () => this.deps.config.proxyMode,
    };
  }

  /** The masquerade entries the attachment records with ipMasq stand for (their IPs from the IPAM store). */
  private async masqueradeEntries(): Promise<MasqueradeEntry[]> {
    const { ipam, records } = this.deps.sandbox;
    const out: MasqueradeEntry[] = [];
    for (const r of (await records.list()).filter((x) => x.ipMasq)) {
      const ips = ipam.addresses(r.ipam, r.network, await ipam.get(r.ipam, r.network, r.containerId, r.ifName));
      out.push(...ips.filter((ip) => ip.includes('/')).map(masqueradeEntry));
    }
    return out;
  }

  async stop(): Promise<void> {
    this.ready = false;
    rmSync(this.readyFile, { force: true });
    await this.kubelet?.stop();
    this.kubelet = null;
    await this.replayer?.stop();
    await this.proxyHost?.stop();
    await this.server?.close();
    await this.healthServer?.close();
    await this.deps.close?.();
    this.log.info('agent stopped');
  }
}
