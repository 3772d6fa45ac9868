/**
 * node/compose: the composition root. The one place that builds real
 * dependencies: netlink sockets, the exec runner, the disk IPAM and
 * attachment stores, the firewall executors, the gRPC server, the logger.
 * Everything else takes them as deps (the Agent, the proxy host, the CLI
 * commands), so each runs on fakes in a unit test.
 */
import { machineCapacity, nodeResources } from '../config/capacity.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { release } from 'node:os';
import { startCniServer } from '../cniserver/server.js';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import type { AgentConfig } from '../config/config.js';
import { SpawnRunner, type Runner } from '../exec/runner.js';
import { createDiskIpam } from '../ipam/ipam.js';
import { F } from '../../../lib/log/fields.js';
import { createLogger, silentLogger, type LevelWithSilent, type Logger } from '../../../lib/log/log.js';
import { Lab, uniqueTag } from '../lab/lab.js';
import { applyLeftovers, LEGACY_LAB_ROOT, planLeftovers, readWorld } from '../lab/leftovers.js';
import { labRoot } from '../lab/plan.js';
import { labDir, labNodes } from '../lab/nodes.js';
import type { NodeNetwork as TraceNetwork } from '../trace/path.js';
import { parseIPNet, type Cidr, type IPv4 } from '../../../lib/net/ip.js';
import { ConntrackExecutor } from '../netfilter/conntrack/conntrack.js';
import { createIptables, detectBackend, ExecIptables } from '../netfilter/iptables/iptables.js';
import { NetlinkNftSets } from '../netfilter/nft/nft-sets.js';
import { NftExecutor } from '../netfilter/nft/nft.js';
import { IpsetExecutor } from '../netfilter/iptables/ipset.js';
import { GenlIpvs } from '../netfilter/ipvs/ipvs-genl.js';
import { BULK_OPS, HybridIpvs } from '../netfilter/ipvs/ipvs-hybrid.js';
import { IpvsadmExecutor } from '../netfilter/ipvs/ipvsadm.js';
import type { Ipvs } from '../netfilter/ipvs/ipvs-types.js';
import { IpvsBackend } from '../proxy/ipvs/proxier.js';
import { DUMMY_DEVICE, ipvsNames, isOurSet } from '../proxy/ipvs/names.js';
import { ipvsOwnedChains } from '../proxy/ipvs/render.js';
import { ThreadedLinkDeleter } from '../netlink/link-deleter.js';
import { openNetlink } from '../netlink/netlink.js';
import type { AddressInfo, NetlinkOps } from '../netlink/ops.js';
import { toNetnsPath } from '../netns/netns.js';
import { ProcSysctl } from '../netns/sysctl.js';
import { fullGc } from './full-gc.js';
import { isOwnedChain } from '../proxy/iptables/chains.js';
import { IptablesBackend } from '../proxy/iptables/proxier.js';
import { shardTableName, tableName } from '../proxy/nftables/names.js';
import { NftablesBackend } from '../proxy/nftables/proxier.js';
import type { ProxyBackend, ProxyNodeConfig } from '../proxy/types.js';
import { parseNodePortAddresses, primaryNodeIP, resolveNodePortAddresses, type NodeNetwork } from '../proxy/node-port-addresses.js';
import type { CniHandler } from '../cniserver/handler.js';
import { pausePath } from '../config/paths.js';
import { realClock } from '../../../lib/reconcile/clock.js';
import { ApiEventRecorder, type EventSink } from '../../../lib/reconcile/event-recorder.js';
import { IpamAdapter } from '../sandbox/ipam-adapter.js';
import { NftMasquerade } from '../sandbox/masquerade.js';
import { DiskAttachmentStore } from '../sandbox/record-store.js';
import type { NodeRegistration } from '../watch/node-registration.js';
import { ManifestSource } from '../watch/manifest-source.js';
import { BACKENDS, Overlay, removeOverlay as removeNodeOverlay } from '../overlay/overlay.js';
import { bgpBackendType } from '../overlay/bgp/backend.js';
import { stopBird } from '../overlay/bgp/bird.js';
import type { ControlPlaneOptions } from '../../../controlplane/control-plane.js';

// Loaded when used (a chunk of their own in dist/): client-node's import alone takes about 1.2 s, and
// an agent without an API server, or any other command, does not need it.
const kubeWatch = () => import('../watch/kube-source.js');
const nodeRegistration = () => import('../watch/node-registration.js');
const controlPlane = () => import('../../../controlplane/control-plane.js');
const embeddedKubelet = () => import('../pods/start.js');
const clusterWatch = () => import('../watch/cluster-watch.js');
const nodeAnnotations = () => import('../watch/node-annotations.js');
const kubeletApiModule = () => import('../pods/kubelet-api.js');
const apiBalancerModule = () => import('../watch/api-balancer.js');
import { Agent, type AgentOverlay, type AgentRegistration } from './agent.js';
import { startHealthServer } from './health-server.js';
import { ProxyHost, type ProxyHostDeps } from './proxy-host.js';
import { proxyStatusFile } from './proxy-status.js';

/**
 * The MAC a node pins its bridge to: locally administered, unicast, derived
 * from the node's name and the bridge's, so it is the same after every agent
 * restart and differs between the nodes of a lab.
 */
export function bridgeMacFor(nodeName: string, bridge: string): string {
  const h = createHash('sha256').update(`nodenet bridge ${nodeName}/${bridge}`).digest();
  h[0] = (h[0]! & 0xfe) | 0x02;
  return [...h.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** A node's own addresses for the proxy (NodePorts, "local" traffic): IPv4 but loopback and link-local. */
export function nodeAddresses(addrs: readonly AddressInfo[]): IPv4[] {
  const out: IPv4[] = [];
  for (const a of addrs) {
    const ip = parseIPNet(a.address).ip;
    if (ip.startsWith('127.') || ip.startsWith('169.254.') || out.includes(ip)) continue;
    out.push(ip);
  }
  return out;
}

export function agentLogger(cfg: AgentConfig): Logger {
  return createLogger({ level: cfg.logLevel, ...(cfg.logFile ? { destination: cfg.logFile } : {}) });
}

/** Builds one node's agent from real dependencies, in the calling process's network namespace. */
export async function composeAgent(given: AgentConfig, logger?: Logger): Promise<Agent> {
  let cfg = given;
  const base = logger ?? agentLogger(cfg);
  // The Agent adds the node field to its own logger; what is built here gets it from this one.
  const log = base.child({ [F.node]: cfg.nodeName });
  const runner = new SpawnRunner();
  const deleter = new ThreadedLinkDeleter();
  const node = openNetlink(undefined, { deleter });
  const nft = new NftExecutor({ runner });
  const sets = new NetlinkNftSets();
  const masquerade = new NftMasquerade({ nft, sets, log: log.child({ [F.subsys]: 'masquerade' }) });
  const sysctl = new ProcSysctl();
  let failover: { stop(): Promise<void> } | null = null;
  const close = async () => {
    await failover?.stop();
    node.close();
    sets.close();
    await deleter.close();
  };
  try {
    // Client-side failover first: every client below dials the balancer's kubeconfig.
    if (cfg.kubeconfig && cfg.kubeconfig !== 'in-cluster' && cfg.apiServerFailover) {
      const f = await apiFailover(cfg.kubeconfig, cfg.runDir, log);
      if (f) {
        failover = f;
        cfg = { ...cfg, kubeconfig: f.kubeconfig };
      }
    }
    const nodeIPs = nodeAddresses(await node.listAddresses());
    const proxy =
      cfg.proxyMode === 'none'
        ? null
        : await composeProxyHostDeps({
            mode: cfg.proxyMode,
            nodeName: cfg.nodeName,
            clusterCIDR: cfg.clusterCIDR,
            prefix: cfg.proxyPrefix,
            clusterIPPing: cfg.clusterIPPing,
            nftablesShards: cfg.nftablesShards,
            ipvs: { scheduler: cfg.ipvsScheduler, filter: cfg.ipvsFilter, strictARP: cfg.ipvsStrictARP },
            manifestsDir: cfg.manifestsDir,
            kubeconfig: cfg.kubeconfig,
            statusFile: proxyStatusFile(cfg.runDir),
            minSyncIntervalMs: cfg.proxyMinSyncMs,
            maxSyncIntervalMs: cfg.proxySyncPeriodMs,
            nodeIPs,
            nodePortAddresses: cfg.nodePortAddresses,
            serviceCIDR: cfg.serviceCIDR,
            bridge: cfg.bridge,
            runner,
            log,
          });
    return new Agent({
      config: cfg,
      log: base,
      clock: realClock,
      // Made once the pod CIDR is known (it may come from the Node).
      sandbox: (c) => ({
        node,
        openPod: (p) => openNetlink(p),
        resolveNetns: toNetnsPath,
        ipam: new IpamAdapter(createDiskIpam(`${c.stateDir}/ipam`, { log }), c.podCIDR),
        masq: masquerade,
        sysctl,
        records: new DiskAttachmentStore(`${c.stateDir}/attachments`),
        bridgeMac: (bridge) => bridgeMacFor(c.nodeName, bridge),
      }),
      masquerade,
      serveCni: startCniServer,
      serveHealth: startHealthServer,
      proxy,
      // On an API server the agent registers its Node and renews its Lease, as a kubelet does, and takes its pod
      // CIDR from spec.podCIDR (node IPAM) when none is configured.
      ...(cfg.kubeconfig ? { registration: registrationComponent(cfg, node, log) } : {}),
      ...(cfg.backend !== 'none' ? { overlay: (c: AgentConfig) => overlayComponent(c, log, runner, nodeIPs[0] ?? null) } : {}),
      ...(cfg.runPods && cfg.kubeconfig ? { pods: await kubeletStarter(cfg, node, log) } : {}),
      close,
    });
  } catch (e) {
    await close();
    throw e;
  }
}

/**
 * The balancer over every API server (watch/api-balancer.ts) for a kubeconfig file: started, with a kubeconfig
 * of its own under the run directory whose server is the balancer, and a watch of the kubernetes EndpointSlice
 * through it. null (the kubeconfig is used as it is, and the log says why) when its server is not https, or
 * when its certificate does not cover 127.0.0.1, which the clients then dial.
 */
async function apiFailover(kubeconfig: string, runDir: string, log: Logger): Promise<{ kubeconfig: string; stop(): Promise<void> } | null> {
  const [{ loadKubeConfig }, { ApiBalancer, addrKey, serversFromSlice }, { ClusterWatch }] = await Promise.all([kubeWatch(), apiBalancerModule(), clusterWatch()]);
  const blog = log.child({ [F.subsys]: 'api-balancer' });
  const kc = loadKubeConfig(kubeconfig);
  const cluster = kc.getCurrentCluster()!;
  const url = new URL(cluster.server);
  if (url.protocol !== 'https:') {
    blog.info({ server: cluster.server }, 'client-side failover needs an https server: dialing the kubeconfig\'s server only');
    return null;
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const ca = cluster.caData ? Buffer.from(cluster.caData, 'base64').toString('utf8') : cluster.caFile ? readFileSync(cluster.caFile, 'utf8') : undefined;
  const balancer = new ApiBalancer({ server: { host, port: Number(url.port || 443) }, ca, log, clock: realClock });
  const probe = await balancer.check(addrKey({ host, port: Number(url.port || 443) }));
  if (probe.coversLoopback === false) {
    blog.warn({ server: cluster.server }, 'the API server\'s certificate does not cover 127.0.0.1, which the balancer\'s clients dial: client-side failover is off, dialing the kubeconfig\'s server only');
    return null;
  }
  await balancer.start();
  const local = `https://127.0.0.1:${balancer.port}`;
  const mine = loadKubeConfig(kubeconfig);
  mine.clusters = mine.clusters.map((c) => (c.name === cluster.name ? { ...c, server: local } : c));
  const file = `${runDir}/api-server.kubeconfig`;
  mkdirSync(runDir, { recursive: true });
  writeFileSync(file, mine.exportConfig(), { mode: 0o600 });
  const onSlice = (o: unknown) => balancer.setServers(serversFromSlice(o));
  const watch = new ClusterWatch({
    kubeconfig: loadKubeConfig(file), log: blog, clock: realClock,
    sources: [{ kind: 'endpointslices', name: 'kubernetes EndpointSlice', fieldSelector: 'metadata.namespace=default,metadata.name=kubernetes', handler: { add: onSlice, update: (_p, c) => onSlice(c), delete: () => {} } }],
  });
  await watch.start();
  blog.info({ server: cluster.server, local }, 'API clients go through the balancer');
  return {
    kubeconfig: file,
    async stop() {
      watch.stop();
      await balancer.stop();
    },
  };
}

/** What the Node has and what Pods may use of it, as the kubelet computes them (config/capacity.ts). */
function resourcesOf(cfg: AgentConfig): { capacity: Record<string, string>; allocatable: Record<string, string> } {
  return nodeResources(machineCapacity(cfg.runDir), { ...(cfg.capacity ? { capacity: cfg.capacity } : {}), ...(cfg.kubeReserved ? { kubeReserved: cfg.kubeReserved } : {}), ...(cfg.systemReserved ? { systemReserved: cfg.systemReserved } : {}) });
}

/** The Node's registration and Lease on the API server (watch/node-registration.ts), loaded when started. */
function registrationComponent(cfg: AgentConfig, node: NetlinkOps, log: Logger): AgentRegistration {
  let registration: NodeRegistration | null = null;
  return {
    async start() {
      const [{ NodeRegistration: Registration }, { loadKubeConfig }] = await Promise.all([nodeRegistration(), kubeWatch()]);
      const res = resourcesOf(cfg);
      registration = new Registration({ kubeconfig: loadKubeConfig(cfg.kubeconfig!), nodeName: cfg.nodeName, addresses: await internalIPs(node, cfg.bridge), capacity: res.capacity, allocatable: res.allocatable, clock: realClock, log, leaseSeconds: cfg.nodeLeaseDurationSeconds, leaseMs: (cfg.nodeLeaseDurationSeconds * 1000) / 4, ...(cfg.runPods ? { kubeletPort: cfg.kubeletPort } : {}) });
      await registration.start();
    },
    podCIDR: async () => registration?.podCIDR() ?? null,
    stop: () => registration?.stop(),
  };
}

/**
 * The overlay on real dependencies (its own netlink socket, nft, a watch of
 * every Node, the patch of this node's annotations). start() sets it up,
 * starts the watch and waits (at most 10 s) for its first sync, so pods
 * started right after the agent reach their peers; stop() stops it and
 * leaves the device and its entries in place.
 */
function overlayComponent(cfg: AgentConfig, log: Logger, runner: Runner, nodeIP: string | null): AgentOverlay {
  if (!cfg.kubeconfig || !cfg.podCIDR || !cfg.clusterCIDR) throw new NodenetError(ErrorCode.InvalidConfig, `overlay ${cfg.backend} needs kubeconfig, clusterCIDR and a pod CIDR`);
  const bgp = cfg.backend === 'bgp' && cfg.clusterCIDR
    ? bgpBackendType({ runDir: cfg.runDir, clusterCIDR: cfg.clusterCIDR, asn: cfg.bgpAsn, routeReflector: cfg.bgpRouteReflector, runner })
    : null;
  const backend = bgp ?? BACKENDS.get(cfg.backend);
  if (!backend) throw new NodenetError(ErrorCode.InvalidConfig, `config backend: nodenet has no overlay backend ${JSON.stringify(cfg.backend)} (${BACKENDS.names.join(', ')})`);
  const { kubeconfig, podCIDR, clusterCIDR } = cfg;
  let overlay: Overlay | null = null;
  let watch: { stop(): void } | null = null;
  let nl: NetlinkOps & { close(): void } | null = null;
  const stop = async () => {
    watch?.stop();
    await overlay?.stop();
    nl?.close();
    watch = null;
    nl = null;
  };
  return {
    async start() {
      const [{ ClusterWatch }, { loadKubeConfig }, { nodeAnnotationPatcher }] = await Promise.all([clusterWatch(), kubeWatch(), nodeAnnotations()]);
      const kc = loadKubeConfig(kubeconfig);
      nl = openNetlink();
      const o = new Overlay({
        nodeName: cfg.nodeName, podCIDR, clusterCIDR, backend, directRouting: cfg.directRouting, netlink: nl, nft: new NftExecutor({ runner }),
        underlayInterface: cfg.underlayInterface, nodeIP, publish: nodeAnnotationPatcher(kc, cfg.nodeName), clock: realClock, log,
        events: apiEventRecorder(async () => kc, 'nodenet-overlay', cfg.nodeName, log),
      });
      overlay = o;
      try {
        // Another backend than bgp: a BIRD an earlier agent ran here stops first (the setup then removes its routes).
        if (cfg.backend !== 'bgp' && await stopBird(cfg.runDir, { nodeRunner: runner, clusterCIDR })) log.info({ [F.subsys]: 'overlay' }, 'BIRD stopped: this node no longer runs the bgp backend');
        await o.setup();
        const w = new ClusterWatch({ kubeconfig: kc, log, clock: realClock, sources: [{ kind: 'nodes', name: 'nodes (overlay)', handler: o.handler, synced: () => o.synced() }] });
        watch = w;
        await w.start();
        if (!(await o.whenFirstSynced(10_000))) log.warn({ [F.subsys]: 'overlay' }, 'no overlay sync within 10 s of the start (is the API server reachable?); going on');
      } catch (e) {
        await stop();
        throw e;
      }
    },
    stop,
    get mtu() {
      if (!overlay) throw new Error('overlay: mtu before start()');
      return overlay.mtu;
    },
    rejectionCounts: () => (overlay ? [overlay.rejectionCounts()] : []),
    foreignNodes: () => overlay?.foreignNodes() ?? [],
    // Each call asks BIRD's socket (birdc: one process), only when /status or /overlay/status is asked for.
    async status() {
      const o = overlay;
      if (!o) return null;
      const base = { backend: o.backendType, peers: [...o.peers().keys()].sort(), unreachable: o.unreachable() };
      const b = bgp?.last();
      if (!b) return base;
      try {
        return { ...base, bgp: { sessions: await b.peerStatus() } };
      } catch (e) {
        return { ...base, bgp: { error: e instanceof Error ? e.message : String(e) } };
      }
    },
  };
}

/**
 * Warning Events from one of the agent's components (`nodenet-proxy`,
 * `nodenet-overlay`) on this node, written with the embedded kubelet's HTTP
 * calls (pods/kubelet-api.ts) and the node's kubeconfig, loaded when the
 * first Event is written (most agents never write one).
 */
export function apiEventRecorder(kubeconfig: () => Promise<KubeConfigLike>, component: string, nodeName: string, log: Logger): ApiEventRecorder {
  let sink: Promise<EventSink> | null = null;
  const get = () => (sink ??= Promise.all([kubeletApiModule(), kubeconfig()]).then(([{ kubeletApi }, kc]) => kubeletApi(kc)));
  return new ApiEventRecorder({
    sink: {
      createEvent: async (ns, event) => (await get()).createEvent(ns, event),
      patchEvent: async (ns, name, patch) => (await get()).patchEvent(ns, name, patch),
    },
    component,
    host: nodeName,
    clock: realClock,
    log: log.child({ [F.subsys]: 'events' }),
  });
}

type KubeConfigLike = Parameters<Awaited<ReturnType<typeof kubeletApiModule>>['kubeletApi']>[0];

/** Removes a node's overlay (kube-proxy --cleanup's counterpart): the VXLAN device, its entries, the masquerade table. Idempotent. */
export async function removeOverlay(o: { readonly runner: Runner; readonly netns?: string }): Promise<void> {
  const nl = openNetlink(o.netns ? toNetnsPath(o.netns) : undefined);
  try {
    await removeNodeOverlay(nl, new NftExecutor({ runner: o.runner, ...(o.netns ? { netns: o.netns } : {}) }));
  } finally {
    nl.close();
  }
}

/**
 * The Node's InternalIPs: the primary IP first (the control plane dials the first one, e.g. for logs), and
 * never the pod bridge's gateway address, which a restarted agent finds on cbr0 and which every node has.
 */
async function internalIPs(node: { listLinks(): Promise<NodeNetwork['links']>; listAddresses(): Promise<NodeNetwork['addresses']>; listRoutes(): Promise<NodeNetwork['routes']> }, bridge: string): Promise<IPv4[]> {
  const net: NodeNetwork = { links: await node.listLinks(), addresses: await node.listAddresses(), routes: await node.listRoutes() };
  const br = net.links.find((l) => l.name === bridge)?.index;
  const ips = nodeAddresses(net.addresses.filter((a) => a.ifIndex !== br));
  const primary = primaryNodeIP(net, bridge);
  return primary ? [primary, ...ips.filter((ip) => ip !== primary)] : ips;
}

/** How the Agent starts the embedded kubelet (runPods): on the node's primary IP, with the agent's CNI handler. */
async function kubeletStarter(cfg: AgentConfig, node: { listLinks(): Promise<NodeNetwork['links']>; listAddresses(): Promise<NodeNetwork['addresses']>; listRoutes(): Promise<NodeNetwork['routes']> }, log: Logger): Promise<(cni: CniHandler) => Promise<{ stop(): Promise<void> }>> {
  const net: NodeNetwork = { links: await node.listLinks(), addresses: await node.listAddresses(), routes: await node.listRoutes() };
  const hostIP = primaryNodeIP(net, cfg.bridge);
  if (!hostIP) throw new NodenetError(ErrorCode.InvalidConfig, 'runPods: the node has no primary IPv4 address for the kubelet to serve on');
  return async (cni) => {
    const [{ startKubelet }, { loadKubeConfig }] = await Promise.all([embeddedKubelet(), kubeWatch()]);
    return startKubelet({ kubeconfig: loadKubeConfig(cfg.kubeconfig!), nodeName: cfg.nodeName, hostIP, kubeletPort: cfg.kubeletPort, allocatable: resourcesOf(cfg).allocatable, runDir: cfg.runDir, pauseBin: pausePath(), bridge: cfg.bridge, cni, clock: realClock, log, clusterDNS: cfg.clusterDNS, clusterDomain: cfg.clusterDomain, resolvConf: cfg.resolvConf });
  };
}

export interface ProxyComposeOptions {
  readonly mode: 'iptables' | 'nftables' | 'ipvs';
  /** IPVS mode's options (scheduler rr, filter on, strict ARP off when absent). */
  readonly ipvs?: { readonly scheduler?: string; readonly filter?: boolean; readonly strictARP?: boolean };
  readonly nodeName: string;
  readonly clusterCIDR: AgentConfig['clusterCIDR'];
  readonly prefix: string;
  readonly clusterIPPing: AgentConfig['clusterIPPing'];
  /** nftables mode's shard tables (AgentConfig.nftablesShards; 1 when absent: kube-proxy's one table). */
  readonly nftablesShards?: number;
  readonly manifestsDir: string | null;
  /** Watch an API server instead: a kubeconfig file or 'in-cluster'. */
  readonly kubeconfig?: string | null;
  readonly statusFile: string | null;
  readonly minSyncIntervalMs: number;
  readonly maxSyncIntervalMs?: number;
  /** The node's namespace (a path) when it is not the caller's own: commands, sysctls and addresses are read there. */
  readonly netns?: string;
  /** The node's addresses; read from the namespace (netlink) when absent. */
  readonly nodeIPs?: readonly IPv4[];
  /** kube-proxy --nodeport-addresses (CIDRs or ['primary']); null or absent: the mode's default. */
  readonly nodePortAddresses?: readonly string[] | null;
  /** The Service CIDR: nftables mode drops traffic to its unallocated addresses. */
  readonly serviceCIDR?: Cidr | null;
  /** The pod bridge (never the primary IP's interface). Default cbr0. */
  readonly bridge?: string;
  readonly runner: Runner;
  readonly log: Logger;
}

/** The proxy host's real dependencies for a node (the agent's own namespace, or `netns`). */
export async function composeProxyHostDeps(o: ProxyComposeOptions): Promise<Omit<ProxyHostDeps, 'log' | 'clock'>> {
  const ns = o.netns ? { netns: o.netns } : {};
  const nl = openNetlink(o.netns ? toNetnsPath(o.netns) : undefined);
  let net: NodeNetwork;
  try {
    net = { links: await nl.listLinks(), addresses: await nl.listAddresses(), routes: await nl.listRoutes() };
  } finally {
    nl.close();
  }
  const split = splitDummyAddresses(net.links, net.addresses);
  const vips = new Set(split.vips.map((a) => parseIPNet(a.address).ip as string));
  net = { ...net, addresses: split.node };
  const nodeIPs = (o.nodeIPs ?? nodeAddresses(net.addresses)).filter((ip) => !vips.has(ip));
  // IPVS mode serves NodePorts on every node address by default, as kube-proxy's does (never on 127.0.0.1: IPVS cannot).
  const nodePorts = resolveNodePortAddresses(o.nodePortAddresses ? parseNodePortAddresses(o.nodePortAddresses) : null, o.mode === 'nftables' ? 'nftables' : 'iptables', net, { bridge: o.bridge ?? 'cbr0' });
  for (const w of nodePorts.warnings) o.log.warn(w);
  o.log.info(nodePorts.description);
  const nodeConfig: ProxyNodeConfig = {
    nodeName: o.nodeName,
    nodeIPs,
    clusterCIDR: o.clusterCIDR,
    prefix: o.prefix,
    masqueradeBit: 14,
    nodePortAddresses: nodePorts.cidrs,
    primaryIP: nodePorts.primaryIP,
    serviceCIDRs: o.serviceCIDR ? [o.serviceCIDR] : [],
  };
  const backend: ProxyBackend =
    o.mode === 'iptables'
      ? new IptablesBackend({ iptables: await createIptables({ runner: o.runner, log: o.log, prefix: o.prefix, ...ns }), nodeConfig, log: o.log })
      : o.mode === 'ipvs'
        ? await composeIpvsBackend(o, nodeConfig)
        : new NftablesBackend({ nft: new NftExecutor({ runner: o.runner, ...ns }), nodeConfig, log: o.log, options: { clusterIPPing: o.clusterIPPing, shards: o.nftablesShards ?? 1 } });
  const manifestsDir = o.manifestsDir;
  return {
    afterLargeFullSync: fullGc,
    mode: o.mode,
    nodeConfig,
    backend,
    conntrack: new ConntrackExecutor({ runner: o.runner, ...ns }),
    sysctl: new ProcSysctl(o.netns ? toNetnsPath(o.netns) : undefined),
    removeOtherMode: async () => {
      let any = false;
      // The iptables and IPVS checks both read the nat table: one `iptables -V` and one save for both.
      const rulesDeps = { runner: o.runner, log: o.log, prefix: o.prefix, ...ns };
      const nat = natProbe(rulesDeps);
      for (const m of (['iptables', 'nftables', 'ipvs'] as const).filter((x) => x !== o.mode)) {
        if (await removeProxyRules(rulesDeps, m, nat)) any = true;
      }
      return any;
    },
    ...(o.kubeconfig ? { events: apiEventRecorder(async () => (await kubeWatch()).loadKubeConfig(o.kubeconfig!), 'nodenet-proxy', o.nodeName, o.log) } : {}),
    startSource: o.kubeconfig
      ? async (h) => {
          const { KubeSource, loadKubeConfig } = await kubeWatch();
          const src = new KubeSource({ kubeconfig: loadKubeConfig(o.kubeconfig!), services: h.services, slices: h.slices, log: o.log, clock: realClock, onSynced: h.onScan });
          await src.start();
          return src;
        }
      : manifestsDir
        ? async (h) => {
            const src = new ManifestSource({ dir: manifestsDir, services: h.services, slices: h.slices, log: o.log, onScan: h.onScan, clock: realClock });
            await src.start();
            return src;
          }
        : null,
    statusFile: o.statusFile,
    minSyncIntervalMs: o.minSyncIntervalMs,
    healthCheckAddresses: nodePorts.healthCheckAddresses,
    ...(o.maxSyncIntervalMs === undefined ? {} : { maxSyncIntervalMs: o.maxSyncIntervalMs }),
  };
}

/**
 * IPVS mode on real dependencies: the kernel's IPVS family over generic
 * netlink (loaded with `modprobe ip_vs` first, where modules exist), ipset,
 * iptables, a netlink handle for kube-ipvs0, the sysctls, all in the node's
 * namespace. The sockets live as long as the process.
 * @throws NodenetError(NotAvailable) "this kernel has no IPVS ..." when it has none.
 */
export async function composeIpvsBackend(o: Pick<ProxyComposeOptions, 'runner' | 'log' | 'prefix' | 'netns' | 'ipvs'>, nodeConfig: ProxyNodeConfig): Promise<IpvsBackend> {
  const ns = o.netns ? { netns: o.netns } : {};
  ipvsNames(o.prefix); // a prefix too long for the set names fails before anything is opened
  for (const mod of ['ip_vs', `ip_vs_${o.ipvs?.scheduler ?? 'rr'}`]) await o.runner.run(['modprobe', mod], { allowFailure: true }).catch(() => undefined);
  const nsPath = o.netns ? toNetnsPath(o.netns) : undefined;
  const genl = await GenlIpvs.open(nsPath);
  // Each call on the path measured faster (netfilter/ipvs-hybrid.ts): small batches and one service's real servers
  // over genl, bulk batches and whole-table lists through ipvsadm.
  const ipvs = new HybridIpvs(genl, new IpvsadmExecutor({ runner: o.runner, ...ns }));
  const netlink = openNetlink(nsPath);
  o.log.info({ [F.mode]: 'ipvs' }, `IPVS ${genl.version ?? '(version unknown)'} over generic netlink, ipvsadm -R for batches of ${BULK_OPS}+ ops and full lists`);
  return new IpvsBackend({
    ipvs,
    ipset: new IpsetExecutor({ runner: o.runner, ...ns }),
    iptables: await createIptables({ runner: o.runner, log: o.log, prefix: o.prefix, ...ns }),
    netlink,
    sysctl: new ProcSysctl(nsPath),
    kernelRelease: release(),
    nodeConfig,
    log: o.log,
    options: o.ipvs ?? {},
    // Every sync reads the node's addresses, as kube-proxy's IPVS mode does (the start's list misses the pod bridge's).
    currentNodeIPs: async () => nodeAddresses(await ipvsNodeAddresses(netlink)),
  });
}

/** The VIPs IPVS mode puts on kube-ipvs0 are local addresses, not the node's: the two apart. */
function splitDummyAddresses(links: readonly { name: string; index: number }[], addresses: readonly AddressInfo[]): { node: AddressInfo[]; vips: AddressInfo[] } {
  const dummy = links.find((l) => l.name === DUMMY_DEVICE)?.index;
  return { node: addresses.filter((a) => a.ifIndex !== dummy), vips: addresses.filter((a) => a.ifIndex === dummy) };
}

/** The node's addresses but kube-ipvs0's, read now. */
async function ipvsNodeAddresses(nl: Pick<NetlinkOps, 'listLinks' | 'listAddresses'>): Promise<AddressInfo[]> {
  return splitDummyAddresses(await nl.listLinks(), await nl.listAddresses()).node;
}

/** A proxy host on real dependencies, started (the tests run one against a node's namespace). */
export async function startProxyHost(o: ProxyComposeOptions): Promise<ProxyHost> {
  return ProxyHost.start({ ...(await composeProxyHostDeps(o)), log: o.log, clock: realClock });
}

/** The backend `iptables` uses and its nat table's chains, read once for several removeProxyRules checks. */
export interface NatProbe {
  read(): Promise<{ readonly iptables: ExecIptables; readonly nat: ReadonlySet<string> }>;
  /** The nat table changed (a removal ran): the next read() reads it again. */
  invalidate(): void;
}

function natProbe(deps: { readonly runner: Runner; readonly log: Logger; readonly netns?: string }): NatProbe {
  let read: Promise<{ iptables: ExecIptables; nat: ReadonlySet<string> }> | null = null;
  return {
    read: () =>
      (read ??= (async () => {
        const iptables = new ExecIptables(deps, await detectBackend(deps));
        return { iptables, nat: await iptables.listChains('nat') };
      })()),
    invalidate: () => {
      read = null;
    },
  };
}

/**
 * Removes one mode's rules of `prefix` from a namespace (kube-proxy
 * --cleanup): iptables mode's chains and jumps in the backend `iptables`
 * uses, or nftables mode's table. Returns whether there was anything to
 * remove. Idempotent. `nat` shares the nat table's read between calls (one per call when absent).
 */
export async function removeProxyRules(
  o: { readonly runner: Runner; readonly log: Logger; readonly netns?: string; readonly prefix: string },
  mode: 'iptables' | 'nftables' | 'ipvs',
  nat: NatProbe = natProbe(o),
): Promise<boolean> {
  const ns = o.netns ? { netns: o.netns } : {};
  const nodeConfig: ProxyNodeConfig = { nodeName: '', nodeIPs: [], clusterCIDR: null, prefix: o.prefix, masqueradeBit: 14 };
  if (mode === 'iptables') {
    // No mixing check here: stale chains are what we came to remove.
    const { iptables, nat: chains } = await nat.read();
    // IPVS mode shares KUBE-SERVICES, KUBE-POSTROUTING and KUBE-MARK-MASQ: only a chain IPVS mode does not have says iptables mode.
    const shared = new Set(o.prefix.length <= 5 ? ipvsOwnedChains(ipvsNames(o.prefix)).nat : []);
    if (![...chains].some((c) => isOwnedChain(o.prefix, c) && !shared.has(c))) return false;
    nat.invalidate();
    await new IptablesBackend({ iptables, nodeConfig, log: o.log }).cleanup();
    return true;
  }
  if (mode === 'ipvs') {
    if (o.prefix.length > 5) return false; // no IPVS mode can have run with this prefix
    const names = ipvsNames(o.prefix);
    const nl = openNetlink(o.netns ? toNetnsPath(o.netns) : undefined);
    try {
      const ipset = new IpsetExecutor({ runner: o.runner, ...ns });
      // Read-only checks, side by side (each a process to wait for).
      const [{ iptables, nat: chains }, hasDevice, hasSets] = await Promise.all([
        nat.read(),
        nl.getLink(DUMMY_DEVICE).then((l) => l !== null),
        ipset.list((n) => isOurSet(names, n)).then((m) => m.size > 0, () => false),
      ]);
      const hasChains = chains.has(names.nat.nodePort) || chains.has(names.nat.loadBalancer);
      if (!hasDevice && !hasChains && !hasSets) return false;
      nat.invalidate();
      let ipvs: Ipvs;
      try {
        ipvs = await GenlIpvs.open(o.netns ? toNetnsPath(o.netns) : undefined);
      } catch {
        // No IPVS in this kernel: no virtual services to remove either.
        ipvs = { kind: 'genl', list: async () => [], listDests: async () => null, apply: async () => undefined, flush: async () => undefined, close: () => undefined };
      }
      try {
        await new IpvsBackend({ ipvs, ipset, iptables, netlink: nl, sysctl: new ProcSysctl(), kernelRelease: release(), nodeConfig, log: o.log }).cleanup();
      } finally {
        ipvs.close();
      }
      return true;
    } finally {
      nl.close();
    }
  }
  const nft = new NftExecutor({ runner: o.runner, ...ns });
  // The main table, or (left without it) the shard tables of the sharded layout: cleanup() removes them all.
  if (!(await nft.tableExists('ip', tableName(o.prefix))) && !(await nft.tableExists('ip', shardTableName(o.prefix, 0)))) return false;
  await new NftablesBackend({ nft, nodeConfig, log: o.log }).cleanup();
  return true;
}

/** The IPv4 addresses of a namespace (a path), or of the caller's, over netlink. */
export async function localAddresses(netns?: string): Promise<string[]> {
  const nl = openNetlink(netns ? toNetnsPath(netns) : undefined);
  try {
    return [...new Set((await nl.listAddresses()).map((a) => parseIPNet(a.address).ip))];
  } finally {
    nl.close();
  }
}

/** A node's network for `nodenet trace --lab`: links, addresses, routes, and the VXLAN devices' neighbour and FDB entries. */
export async function readNetwork(name: string, netns: string): Promise<TraceNetwork> {
  const nl = openNetlink(toNetnsPath(netns));
  try {
    const links = await nl.listLinks();
    const vxlans = links.filter((l) => l.kind === 'vxlan');
    const neighs = (await Promise.all(vxlans.map((l) => nl.listNeighs(l.name)))).flat();
    const fdb = (await Promise.all(vxlans.map((l) => nl.listFdb(l.name)))).flat();
    return { name, links, addresses: await nl.listAddresses(), routes: await nl.listRoutes(), neighs, fdb };
  } finally {
    nl.close();
  }
}

/** What the `nodenet` command line runs on (main.ts hands it to cli/'s runCli, which checks its shape). */
export function cliDeps() {
  const runner = new SpawnRunner();
  const quiet = silentLogger();
  return {
    runner,
    startAgent: async (cfg: AgentConfig) => {
      const agent = await composeAgent(cfg);
      await agent.start();
      return agent;
    },
    startControlPlane: async (a: Omit<ControlPlaneOptions, 'log' | 'clock'> & { readonly logLevel: string; readonly logFile?: string }) => {
      const { logLevel, logFile, ...rest } = a;
      const { startControlPlane } = await controlPlane();
      return startControlPlane({ ...rest, log: createLogger({ level: logLevel as LevelWithSilent, ...(logFile ? { destination: logFile } : {}) }) });
    },
    removeProxyRules: (o: { netns?: string; prefix: string }, mode: 'iptables' | 'nftables' | 'ipvs') => removeProxyRules({ ...o, runner, log: quiet }, mode),
    localAddresses,
    readNetwork,
    labNodes: (lab: string) => labNodes(labDir(lab)),
    createLab: (prefix: string) => Lab.create(uniqueTag(prefix), { runner }),
    cleanupLabs: async () => applyLeftovers(runner, planLeftovers(await readWorld(runner, [labRoot(), LEGACY_LAB_ROOT]))),
    stdout: (s: string) => void process.stdout.write(s),
    stderr: (s: string) => void process.stderr.write(s),
  };
}
