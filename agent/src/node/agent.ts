/**
 * node/agent: one node's agent, run from the dependencies it is given.
 * node/compose.ts builds the real ones (netlink sockets, the disk IPAM, the
 * gRPC server, the firewall executors) and is the only place that does; the
 * unit test runs this whole agent on the validating fakes without root.
 *
 * The agent is one ordered list of components (lib/lifecycle): each starts
 * in turn, a failed start stops what had started, and stop() stops them in
 * reverse. The order matters:
 * 0. what compose opened (netlink sockets, worker threads): closed last;
 * 1. state and run dirs, then the health and metrics server (first, so
 *    /healthz answers and /readyz says 503 while the rest starts, and a
 *    taken port fails the start before anything else is set up);
 * 2. on an API server, the Node's registration and Lease (as a kubelet
 *    does); the pod CIDR comes from the Node (node IPAM) when none is
 *    configured;
 * 3. the overlay (its backend's device, the Node watch, its first sync): the
 *    pods' default MTU is its backend's;
 * 4. the ipMasq table (set up once, then matched to the attachment records);
 * 5. the sandbox, its CNI handler (answering "try again later" until the
 *    agent is ready) and the CNI server;
 * 6. the replay of DELs the shim queued while it could not reach the agent
 *    (needs the sandbox), which then keeps watching the queue;
 * 7. the Service proxy, when a proxy mode is set (its first sync waits for
 *    the source's initial lists);
 * 8. ready: the CNI handler takes ADDs;
 * 9. the embedded kubelet, when runPods (it needs the CNI handler ready: its CNI ADDs are in-process);
 * 10. the ready marker (<runDir>/agent.ready).
 * Stopping leaves every pod as it is (the kubelet stops without stopping its
 * Pods; namespaces, veths, IPs and rules stay), and so does the overlay (its
 * device and entries): a restarted agent picks up from its state dir.
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
import { Lifecycle } from '../../../lib/lifecycle/lifecycle.js';
import { parseCidr, type Cidr } from '../../../lib/net/ip.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { AgentMetrics } from './agent-metrics.js';
import { overlayHealth, type OverlayStatus } from '../overlay/status.js';
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
  /**
   * What the sandbox works with (its `log` is derived from the agent's); a function of the config when it
   * needs what an earlier component learns (the pod CIDR from the Node).
   */
  readonly sandbox: Omit<SandboxDeps, 'log'> | ((config: AgentConfig) => Omit<SandboxDeps, 'log'>);
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
  /** On an API server: the Node's registration and Lease; its pod CIDR (node IPAM's) when none is configured. */
  readonly registration?: AgentRegistration;
  /** The overlay, made from the config once the pod CIDR is known; absent without one. */
  readonly overlay?: (config: AgentConfig) => AgentOverlay;
}

export interface AgentRegistration {
  start(): Promise<void>;
  /** The Node's spec.podCIDR, waiting for node IPAM a while; null when none came. */
  podCIDR(): Promise<string | null>;
  stop(): void;
}

export interface AgentOverlay {
  /** Sets up, watches the Nodes and waits (a while) for the first sync. */
  start(): Promise<void>;
  /** Stops syncing; the device and its entries stay. */
  stop(): Promise<void>;
  /** The pods' MTU its backend allows (after start). */
  readonly mtu: number;
  /** Its rejections per kind (the Nodes it cannot use), for the metrics. */
  rejectionCounts(): readonly RejectionCount[];
  /** The Nodes on another backend, by backend type, for the metrics. */
  foreignNodes(): readonly { readonly backendType: string }[];
  /** Its status (/status, /overlay/status): the backend, the peers, those not routed, BGP's sessions; null before start. */
  status?(): Promise<OverlayStatus | null>;
}

export class Agent {
  private ready = false;
  private config: AgentConfig;
  private server: CniServer | null = null;
  private replayer: DeletionReplayer | null = null;
  private proxyHost: ProxyHost | null = null;
  private healthServer: HealthServer | null = null;
  private metrics: AgentMetrics | null = null;
  private kubelet: { stop(): Promise<void> } | null = null;
  private overlay: AgentOverlay | null = null;
  private handler: SandboxCniHandler | null = null;
  private readonly lifecycle: Lifecycle;
  private started = false;
  readonly log: Logger;
  private readonly readyFile: string;

  constructor(private readonly deps: AgentDeps) {
    this.config = deps.config;
    this.log = deps.log.child({ [F.node]: deps.config.nodeName });
    this.readyFile = `${deps.config.runDir}/agent.ready`;
    this.lifecycle = this.components();
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

  /** The components' names, in start order. */
  get componentNames(): readonly string[] {
    return this.lifecycle.names;
  }

  /** The agent's components, in start order (the header's list). */
  private components(): Lifecycle {
    const deps = this.deps;
    const lc = new Lifecycle(this.log);
    lc.append({ name: 'resources', stop: () => deps.close?.() });
    lc.append({
      name: 'dirs',
      start: () => {
        rmSync(this.readyFile, { force: true });
        mkdirSync(this.config.stateDir, { recursive: true, mode: 0o700 });
        mkdirSync(this.config.runDir, { recursive: true, mode: 0o700 });
      },
    });
    const cfg0 = deps.config;
    if (deps.serveHealth && (cfg0.metricsBindAddress || cfg0.healthzBindAddress)) {
      const serve = deps.serveHealth;
      lc.append({
        name: 'health server',
        start: async () => {
          const metrics = new AgentMetrics({
            clock: deps.clock,
            proxyMode: cfg0.proxyMode,
            // kube-proxy's healthz timeout: twice the sync period (the proxy host's default 30 s).
            healthTimeoutMs: 2 * (deps.proxy?.maxSyncIntervalMs ?? 30_000),
            pendingChanges: () => this.proxyHost?.proxier.pendingChanges() ?? null,
            proxyRejections: () => this.proxyHost?.proxier.rejectionCounts() ?? null,
            ...(deps.overlay ? { overlayRejections: () => this.overlay?.rejectionCounts() ?? [], overlayForeignNodes: () => this.overlay?.foreignNodes() ?? [] } : {}),
          });
          this.metrics = metrics;
          this.healthServer = await serve({ metricsBindAddress: cfg0.metricsBindAddress, healthzBindAddress: cfg0.healthzBindAddress, source: this.healthSource(metrics), log: this.log });
        },
        stop: async () => {
          await this.healthServer?.close();
          this.healthServer = null;
        },
      });
    }
    if (deps.registration) {
      const r = deps.registration;
      lc.append({
        name: 'node registration',
        start: async () => {
          await r.start();
          if (this.config.podCIDR) return;
          const fromApi = await r.podCIDR();
          if (!fromApi) throw new NodenetError(ErrorCode.InvalidConfig, `node ${this.config.nodeName} has no spec.podCIDR after 30 s and none is configured (--pod-cidr): is node IPAM running?`);
          this.config = { ...this.config, podCIDR: parseCidr(fromApi).cidr as Cidr };
          this.log.info({ podCIDR: fromApi }, 'pod CIDR from the Node object');
        },
        stop: () => r.stop(),
      });
    }
    if (deps.overlay) {
      const make = deps.overlay;
      lc.append({
        name: 'overlay',
        start: async () => {
          const o = make(this.config);
          await o.start();
          this.overlay = o;
          // The pods' default MTU is the backend's (VXLAN: underlay MTU - 50).
          if (this.config.mtu === null) this.config = { ...this.config, mtu: o.mtu };
        },
        stop: () => this.overlay?.stop(),
      });
    }
    lc.append({
      name: 'ipMasq',
      start: async () => {
        await deps.masquerade.setup();
        await this.masqueradeEntries()
          .then((entries) => deps.masquerade.reconcile(entries))
          .catch((e: unknown) => this.log.warn({ [F.err]: e }, 'cannot match the ipMasq sets to the attachment records'));
      },
    });
    lc.append({
      name: 'CNI server',
      start: async () => {
        const cfg = this.config;
        const sandbox = new Sandbox({ ...this.sandboxDeps(), log: this.log.child({ [F.subsys]: 'sandbox' }) });
        this.handler = new SandboxCniHandler({ sandbox, defaultMtu: cfg.mtu, ready: () => this.ready, log: this.log.child({ [F.subsys]: 'cni' }) });
        this.server = await deps.serveCni({ socketPath: cfg.cniSocket, handler: this.handler, log: this.log, ...(this.metrics ? { observer: this.metrics.cni } : {}) });
      },
      stop: async () => {
        await this.server?.close();
        this.server = null;
      },
    });
    lc.append({
      name: 'DEL replay',
      start: async () => {
        this.replayer = new DeletionReplayer({
          dir: deletionQueueDirFor(this.config.cniSocket),
          handler: this.handler!,
          log: this.log,
          clock: deps.clock,
          ...(deps.watchQueue ? { watch: deps.watchQueue } : {}),
        });
        const replay = await this.replayer.start();
        this.log.info({ replay }, 'queued DELs replayed');
      },
      stop: async () => {
        await this.replayer?.stop();
        this.replayer = null;
      },
    });
    if (deps.proxy) {
      const proxy = deps.proxy;
      lc.append({
        name: 'proxy',
        start: async () => {
          this.proxyHost = await ProxyHost.start({ ...proxy, log: this.log, clock: deps.clock, ...(this.metrics ? { observer: this.metrics.proxy } : {}) });
        },
        stop: async () => {
          await this.proxyHost?.stop();
        },
      });
    }
    lc.append({
      name: 'ready',
      start: () => {
        this.ready = true;
      },
      stop: () => {
        this.ready = false;
      },
    });
    if (deps.pods) {
      const pods = deps.pods;
      lc.append({
        name: 'kubelet',
        // The kubelet's first CNI ADDs need the handler ready.
        start: async () => {
          this.kubelet = await pods(this.handler!);
        },
        stop: async () => {
          await this.kubelet?.stop();
          this.kubelet = null;
        },
      });
    }
    lc.append({
      name: 'ready marker',
      start: () => {
        writeFileSync(this.readyFile, `${process.pid}\n`);
        this.log.info({ socket: this.config.cniSocket, podCIDR: this.config.podCIDR }, 'agent ready');
      },
      stop: () => {
        this.ready = false;
        rmSync(this.readyFile, { force: true });
      },
    });
    return lc;
  }

  private sandboxMade: Omit<SandboxDeps, 'log'> | null = null;

  /** The sandbox's deps, made once (after the pod CIDR is known, when they depend on it). */
  private sandboxDeps(): Omit<SandboxDeps, 'log'> {
    const s = this.deps.sandbox;
    return (this.sandboxMade ??= typeof s === 'function' ? s(this.config) : s);
  }

  /** Starts the components in order; a failed start stops the ones that had started and throws. */
  async start(): Promise<void> {
    this.started = true;
    await this.lifecycle.start();
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
      ...(this.deps.overlay ? {
        overlayStatus: async () => (await this.overlay?.status?.()) ?? null,
        healthDetail: async () => {
          const s = await this.overlay?.status?.();
          return s ? overlayHealth(s) : null;
        },
      } : {}),
    };
  }

  /** The masquerade entries the attachment records with ipMasq stand for (their IPs from the IPAM store). */
  private async masqueradeEntries(): Promise<MasqueradeEntry[]> {
    const { ipam, records } = this.sandboxDeps();
    const out: MasqueradeEntry[] = [];
    for (const r of (await records.list()).filter((x) => x.ipMasq)) {
      const ips = ipam.addresses(r.ipam, r.network, await ipam.get(r.ipam, r.network, r.containerId, r.ifName));
      out.push(...ips.filter((ip) => ip.includes('/')).map(masqueradeEntry));
    }
    return out;
  }

  /** Stops the components in reverse order; what compose opened is closed even when start() was never called. */
  async stop(): Promise<void> {
    this.ready = false;
    if (this.started) await this.lifecycle.stop();
    else await this.deps.close?.();
    this.started = false;
    this.log.info('agent stopped');
  }
}
