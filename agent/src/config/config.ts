/**
 * config: the agent's configuration. One JSON file (--config) whose fields
 * command-line flags override. Parsed from unknown; every error names the field.
 *
 * Paths default to the usual places on a real node (/run/nodenet,
 * /var/lib/nodenet). Tests and the demo give every virtual node its own.
 */
import { parseResourceMap } from './capacity.js';
import { isIP } from 'node:net';
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { parseCidr, type Cidr } from '../../../lib/net/ip.js';
import { fieldReaders, type JsonObject } from '../../../lib/json/read.js';
import { validatePrefix } from '../proxy/iptables/chains.js';
import { parseNodePortAddresses } from '../proxy/node-port-addresses.js';
import { KNOWN_SCHEDULERS } from '../netfilter/ipvs/ipvs-types.js';
import { MAX_SHARDS } from '../proxy/nftables/names.js';

export type ProxyMode = 'iptables' | 'nftables' | 'ipvs' | 'none';

/**
 * The overlay backends (overlay/backend.ts's registry, by flannel's names) and 'none': the one list the config,
 * the flags and `lab up` accept. A new backend is added here.
 */
export const OVERLAY_BACKENDS = ['vxlan', 'host-gw', 'bgp', 'none'] as const;
export type OverlayBackendName = (typeof OVERLAY_BACKENDS)[number];

/** Whether `s` names an overlay backend (or 'none'). */
export function isOverlayBackend(s: string): s is OverlayBackendName {
  return (OVERLAY_BACKENDS as readonly string[]).includes(s);
}

/** pino's levels, and silent. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface AgentConfig {
  readonly nodeName: string;
  /** This node's pod CIDR, used by IPAM when a CNI config gives no subnet; on an API server, when none is configured, it comes from the Node's spec.podCIDR (node IPAM). */
  readonly podCIDR: Cidr | null;
  readonly clusterCIDR: Cidr | null;
  /** Durable state: IPAM reservations, attachment records. */
  readonly stateDir: string;
  /** Volatile state: the CNI socket, the deletion queue, pod sandboxes. */
  readonly runDir: string;
  /** The gRPC socket the nodenet-cni shim calls. */
  readonly cniSocket: string;
  readonly bridge: string;
  readonly mtu: number | null;
  readonly proxyMode: ProxyMode;
  /** Chain / table name prefix of the proxy's rules: 'KUBE' gives kube-proxy's names; another keeps clear of a real kube-proxy. */
  readonly proxyPrefix: string;
  /** A directory of Service / EndpointSlice JSON manifests the proxy follows (when there is no API server). */
  readonly manifestsDir: string | null;
  /** The API server the proxy watches: a kubeconfig file, or 'in-cluster' (a Pod's service account). */
  readonly kubeconfig: string | null;
  /**
   * Client-side failover over every API server (watch/api-balancer.ts, k3s's agent load balancer): the
   * agent's clients dial a balancer on 127.0.0.1 that follows the kubernetes EndpointSlice. Only with a
   * kubeconfig file whose server is https.
   */
  readonly apiServerFailover: boolean;
  /** nftables mode: a ping to a ClusterIP is rejected at once ('reject', kube-proxy's behaviour) or silently dropped ('drop'). */
  readonly clusterIPPing: 'reject' | 'drop';
  /**
   * nftables mode: 1 is kube-proxy's layout, one table; K (2-64) spreads the Services' DNAT chains over K more
   * tables (kube-proxy-0 ...), so that a change makes the kernel revalidate a K-th of them (render.ts).
   */
  readonly nftablesShards: number;
  /** IPVS mode: the virtual services' scheduler (kube-proxy --ipvs-scheduler): rr, lc, sh, mh, ... as the kernel has them. */
  readonly ipvsScheduler: string;
  /** IPVS mode: KUBE-IPVS-FILTER, rejecting traffic to a VIP on kube-ipvs0 that is not a service port (a ping included). */
  readonly ipvsFilter: boolean;
  /** IPVS mode: arp_ignore=1 / arp_announce=2, so the node does not answer ARP for the VIPs (kube-proxy --ipvs-strict-arp). */
  readonly ipvsStrictARP: boolean;
  /** At least this long between two proxy syncs (kube-proxy --iptables-min-sync-period), ms. */
  readonly proxyMinSyncMs: number;
  /**
   * At most this long between two proxy syncs (kube-proxy --iptables-sync-period / syncPeriod), ms: each
   * checks the canary (rules flushed by someone else are rewritten) and drains what is pending.
   */
  readonly proxySyncPeriodMs: number;
  /**
   * Which node addresses serve NodePorts (kube-proxy --nodeport-addresses):
   * CIDRs, or ['primary'] (the node's primary IP: see proxy/node-port-addresses.ts).
   * null: the mode's default (nftables: primary; iptables: every local address).
   */
  readonly nodePortAddresses: readonly string[] | null;
  /** The Service CIDR (kube-apiserver --service-cluster-ip-range): nftables mode drops traffic to its unallocated addresses. */
  readonly serviceCIDR: Cidr | null;
  /** Where /metrics and /status listen, "IP:PORT" (kube-proxy's metricsBindAddress; port 0 picks one); null: off. */
  readonly metricsBindAddress: string | null;
  /** Where /healthz, /livez and /readyz listen, "IP:PORT" (kube-proxy's healthzBindAddress); null: off. */
  readonly healthzBindAddress: string | null;
  /** On an API server: the node Lease's duration (s); it is renewed every quarter of it, as the kubelet's. */
  readonly nodeLeaseDurationSeconds: number;
  /**
   * The pod network between nodes (flannel's backends; each needs an API server and the cluster CIDR):
   * 'vxlan' (a VXLAN device, and an FDB entry, a neighbour and a route per other Node, from their annotations),
   * 'host-gw' (a route per other Node via its underlay IP, no device; the nodes on one L2 network),
   * 'bgp' (Calico's way: the node's own BIRD 2 exchanges the podCIDRs by iBGP and installs the routes) or 'none'.
   * `overlay` is its older spelling (the config key and --overlay): both given, they must agree.
   */
  readonly backend: OverlayBackendName;
  /** vxlan only (flannel's DirectRouting): the other Nodes on this node's L2 network get a plain route, the rest VXLAN. */
  readonly directRouting: boolean;
  /** bgp only: the cluster's AS number (--bgp-asn; Calico's default 64512). */
  readonly bgpAsn: number;
  /** bgp only: this node is a route reflector (--bgp-route-reflector); the others then peer only with the reflectors. */
  readonly bgpRouteReflector: boolean;
  /** The underlay interface the overlay runs on (flannel --iface); null: the one holding the node's primary IP. */
  readonly underlayInterface: string | null;
  /** Run the Pods bound to this node (the embedded kubelet, pods/); needs an API server. Off on a real cluster. */
  readonly runPods: boolean;
  /** Where the embedded kubelet serves the API server's log requests, on the node's primary IP (kubelet's 10250). */
  readonly kubeletPort: number;
  /**
   * What the Node reports it has, replacing the machine's (cpu, memory, ephemeral-storage, pods, extended
   * resources): lab nodes share one machine. null: the machine's (config/capacity.ts).
   */
  readonly capacity: Readonly<Record<string, string>> | null;
  /** The kubelet's --kube-reserved and --system-reserved: taken from capacity to make allocatable. */
  readonly kubeReserved: Readonly<Record<string, string>> | null;
  readonly systemReserved: Readonly<Record<string, string>> | null;
  /**
   * The cluster DNS servers the embedded kubelet gives ClusterFirst Pods (the kubelet's --cluster-dns /
   * KubeletConfiguration clusterDNS: the kube-dns Service's ClusterIP, the tenth address of the service CIDR).
   * Empty: such Pods get the node's resolv.conf and a MissingClusterDNS Warning, as the kubelet's.
   */
  readonly clusterDNS: readonly string[];
  /** The cluster's DNS domain (the kubelet's --cluster-domain / clusterDomain): Pods' search paths and /etc/hosts FQDNs. */
  readonly clusterDomain: string;
  /**
   * The node's resolv.conf for Pods (the kubelet's --resolv-conf / resolvConf, default /etc/resolv.conf): the
   * nameservers of Default Pods (the DNS replicas' upstream) and the search domains ClusterFirst adds. '' means
   * none: a lab's nodes, which reach nothing outside, get that, so a name outside the cluster fails at once.
   */
  readonly resolvConf: string;
  readonly logLevel: LogLevel;
  /** A file for the agent's logs; stderr when null. */
  readonly logFile: string | null;
}

export const DEFAULTS: AgentConfig = {
  nodeName: 'node',
  podCIDR: null,
  clusterCIDR: null,
  stateDir: '/var/lib/nodenet',
  runDir: '/run/nodenet',
  cniSocket: '/run/nodenet/cni.sock',
  bridge: 'cbr0',
  mtu: null,
  proxyMode: 'none',
  proxyPrefix: 'KUBE',
  manifestsDir: null,
  kubeconfig: null,
  apiServerFailover: true,
  clusterIPPing: 'reject',
  nftablesShards: 8,
  ipvsScheduler: 'rr',
  ipvsFilter: true,
  ipvsStrictARP: false,
  proxyMinSyncMs: 1000,
  proxySyncPeriodMs: 30_000,
  nodePortAddresses: null,
  serviceCIDR: null,
  metricsBindAddress: '127.0.0.1:10249',
  healthzBindAddress: '127.0.0.1:10256',
  nodeLeaseDurationSeconds: 40,
  backend: 'none',
  directRouting: false,
  bgpAsn: 64512,
  bgpRouteReflector: false,
  underlayInterface: null,
  runPods: false,
  kubeletPort: 10250,
  capacity: null,
  kubeReserved: null,
  systemReserved: null,
  clusterDNS: [],
  clusterDomain: 'cluster.local',
  resolvConf: '/etc/resolv.conf',
  logLevel: 'info',
  logFile: null,
};

/** `name=quantity,...` (a flag) or an object of quantities (the config file): config/capacity.ts's rules. */
function resourceMapField(o: Record<string, unknown>, key: string, flag: string): Record<string, string> | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  const text = typeof v === 'string' ? v : typeof v === 'object' && !Array.isArray(v) ? Object.entries(v).map(([k, q]) => `${k}=${String(q)}`).join(',') : null;
  if (text === null) throw bad(key, 'must be name=quantity,... or an object of quantities');
  try {
    return parseResourceMap(flag, text);
  } catch (e) {
    throw bad(key, (e as Error).message);
  }
}

function bad(field: string, msg: string): NodenetError {
  return new NodenetError(ErrorCode.InvalidConfig, `config ${field}: ${msg}`);
}

const read = fieldReaders(bad);

function str(o: JsonObject, k: string): string | undefined {
  const v = read.optString(o, k, '');
  if (v === '') throw bad(k, 'must not be empty');
  return v;
}

function cidr(o: JsonObject, k: string): Cidr | null | undefined {
  const v = str(o, k);
  if (v === undefined) return undefined;
  try {
    return parseCidr(v).cidr;
  } catch {
    throw bad(k, `must be an IPv4 CIDR such as 10.244.1.0/24, got ${JSON.stringify(v)}`);
  }
}

/** An "IP:PORT" or "[IPv6]:PORT" split, or null when it is not one (port 0-65535; 0 asks the kernel for a free one). */
export function splitBindAddress(s: string): { host: string; port: number } | null {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):(\d{1,5})$/.exec(s);
  if (!m) return null;
  const host = m[1] ?? m[2]!;
  const port = Number(m[3]);
  if (port > 65535 || isIP(host) !== (m[1] ? 6 : 4)) return null;
  return { host, port };
}

/** A bind address field: absent is the default; "" or 0 (kube-proxy's "disabled") is null. */
function bindAddress(o: JsonObject, k: 'metricsBindAddress' | 'healthzBindAddress'): string | null {
  const v = o[k];
  if (v === undefined) return DEFAULTS[k];
  if (v === '' || v === '0' || v === 0) return null;
  if (typeof v !== 'string' || !splitBindAddress(v)) {
    throw bad(k, `must be IP:PORT such as 127.0.0.1:${k === 'metricsBindAddress' ? 10249 : 10256} or [::1]:10249 (port 0 picks a free one), or "" or "0" to disable, got ${JSON.stringify(v)}`);
  }
  return v;
}

/** nodePortAddresses: a list of strings, or one comma-separated string (the flag's form); validated as the proxy reads it. */
function nodePortAddressesField(o: JsonObject): readonly string[] | null {
  const v = o['nodePortAddresses'];
  if (v === undefined || v === null) return null;
  const list = typeof v === 'string' ? v.split(',') : Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : null;
  if (!list) throw bad('nodePortAddresses', `must be a list of CIDRs or "primary" (or one comma-separated string), got ${JSON.stringify(v)}`);
  const values = list.map((x) => x.trim()).filter((x) => x !== '');
  if (values.length === 0) return null;
  try {
    parseNodePortAddresses(values);
  } catch (e) {
    throw bad('nodePortAddresses', (e as Error).message.replace(/^nodePortAddresses: /, ''));
  }
  return values;
}

/** serviceCIDR: one IPv4 CIDR, or the API server's dual-stack "v4,v6" form (the IPv6 one is left out). */
function serviceCIDRField(o: JsonObject): Cidr | null {
  const v = str(o, 'serviceCIDR');
  if (v === undefined) return null;
  const v4 = v.split(',').map((x) => x.trim()).filter((x) => x !== '' && !x.includes(':'));
  if (v4.length !== 1) throw bad('serviceCIDR', `must be one IPv4 CIDR such as 10.96.0.0/12 (optionally with an IPv6 one after a comma), got ${JSON.stringify(v)}`);
  try {
    return parseCidr(v4[0]!).cidr;
  } catch {
    throw bad('serviceCIDR', `must be an IPv4 CIDR such as 10.96.0.0/12, got ${JSON.stringify(v4[0])}`);
  }
}

/** clusterDNS: a list of IP addresses (IPv4 or IPv6), or one comma-separated string (--cluster-dns's form). */
function clusterDNSField(o: JsonObject): readonly string[] {
  const v = o['clusterDNS'];
  if (v === undefined || v === null) return DEFAULTS.clusterDNS;
  const list = typeof v === 'string' ? v.split(',') : Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : null;
  if (!list) throw bad('clusterDNS', `must be a list of IP addresses such as ["10.96.0.10"] (--cluster-dns 10.96.0.10[,IP]), got ${JSON.stringify(v)}`);
  const ips = list.map((x) => x.trim()).filter((x) => x !== '');
  for (const ip of ips) if (!isIP(ip)) throw bad('clusterDNS', `${JSON.stringify(ip)} is not an IP address (--cluster-dns takes IPv4 or IPv6 addresses, comma-separated, such as 10.96.0.10)`);
  return ips;
}

const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

/** clusterDomain: a DNS name (lowercase RFC 1123 subdomain); a trailing dot is dropped. */
function clusterDomainField(o: JsonObject): string {
  const v = str(o, 'clusterDomain');
  if (v === undefined) return DEFAULTS.clusterDomain;
  const d = v.endsWith('.') ? v.slice(0, -1) : v;
  if (!DNS_SUBDOMAIN.test(d)) throw bad('clusterDomain', `must be a DNS name such as cluster.local (lowercase letters, digits, '-' and '.'), got ${JSON.stringify(v)}`);
  return d;
}

/** resolvConf: an absolute path, or '' for none (the kubelet's). */
function resolvConfField(o: JsonObject): string {
  const v = o['resolvConf'];
  if (v === undefined || v === null) return DEFAULTS.resolvConf;
  if (typeof v !== 'string') throw bad('resolvConf', `must be a path, got ${JSON.stringify(v)}`);
  if (v !== '' && !v.startsWith('/')) throw bad('resolvConf', `must be an absolute path (or "" for none), got ${JSON.stringify(v)}`);
  return v;
}

/** A boolean field: true/false, or the flag's "true"/"false". */
function boolField(o: JsonObject, k: string): boolean | undefined {
  const v = o[k];
  if (v === undefined) return undefined;
  if (v === true || v === 'true') return true;
  if (v === false || v === 'false') return false;
  throw bad(k, `must be true or false, got ${JSON.stringify(v)}`);
}

/** Parses a config object (from the file, merged with flags). Unknown keys are rejected so typos do not pass silently. */
/** Keys read beside AgentConfig's own: older spellings. */
const ALIASES: ReadonlySet<string> = new Set(['overlay']);

/** `backend`, or its older spelling `overlay`; both given, they must say the same. */
function backendField(o: JsonObject): OverlayBackendName {
  const b = str(o, 'backend');
  const ov = str(o, 'overlay');
  if (b !== undefined && ov !== undefined && b !== ov) throw bad('backend', `backend ${JSON.stringify(b)} and overlay ${JSON.stringify(ov)} disagree: overlay is the older name of backend; give one`);
  const v = b ?? ov ?? DEFAULTS.backend;
  if (!isOverlayBackend(v)) throw bad(b !== undefined ? 'backend' : 'overlay', `must be ${OVERLAY_BACKENDS.join(', ').replace(/, (?=[^,]*$)/, ' or ')}, got ${JSON.stringify(v)}`);
  return v;
}

export function parseAgentConfig(raw: unknown): AgentConfig {
  const o = read.objectAt(raw, '');
  for (const k of Object.keys(o)) if (!(k in DEFAULTS) && !ALIASES.has(k)) throw bad(k, 'unknown field');
  const runDir = str(o, 'runDir') ?? DEFAULTS.runDir;
  const mtu = read.optInt(o, 'mtu', '', { min: 576, max: 65535 }) ?? null;
  const mode = str(o, 'proxyMode') ?? DEFAULTS.proxyMode;
  if (!['iptables', 'nftables', 'ipvs', 'none'].includes(mode)) throw bad('proxyMode', `must be iptables, nftables, ipvs or none, got ${JSON.stringify(mode)}`);
  const scheduler = str(o, 'ipvsScheduler') ?? DEFAULTS.ipvsScheduler;
  if (!KNOWN_SCHEDULERS.includes(scheduler)) throw bad('ipvsScheduler', `must be one of the kernel's IPVS schedulers (${KNOWN_SCHEDULERS.join(', ')}), got ${JSON.stringify(scheduler)}`);
  const logLevel = str(o, 'logLevel') ?? DEFAULTS.logLevel;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) throw bad('logLevel', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
  const prefix = str(o, 'proxyPrefix') ?? DEFAULTS.proxyPrefix;
  try {
    validatePrefix(prefix);
  } catch (e) {
    throw bad('proxyPrefix', `${(e as Error).message} (e.g. KUBE, NN)`);
  }
  const ping = str(o, 'clusterIPPing') ?? DEFAULTS.clusterIPPing;
  if (ping !== 'reject' && ping !== 'drop') throw bad('clusterIPPing', 'must be reject or drop');
  const nftablesShards = read.optInt(o, 'nftablesShards', '', { min: 1, max: MAX_SHARDS }) ?? DEFAULTS.nftablesShards;
  const minSyncRaw = read.optInt(o, 'proxyMinSyncMs', '', { min: 0, max: 600_000 }) ?? DEFAULTS.proxyMinSyncMs;
  const syncPeriod = read.optInt(o, 'proxySyncPeriodMs', '', { min: 100, max: 3_600_000 }) ?? DEFAULTS.proxySyncPeriodMs;
  if (syncPeriod < minSyncRaw) throw bad('proxySyncPeriodMs', `must be at least proxyMinSyncMs (${minSyncRaw}), got ${syncPeriod}`);
  const leaseSeconds = read.optInt(o, 'nodeLeaseDurationSeconds', '', { min: 4, max: 3600 }) ?? DEFAULTS.nodeLeaseDurationSeconds;
  const bridge = str(o, 'bridge') ?? DEFAULTS.bridge;
  const manifestsDir = str(o, 'manifestsDir') ?? null;
  const kubeconfig = str(o, 'kubeconfig') ?? null;
  if (kubeconfig && manifestsDir) throw bad('kubeconfig', 'the proxy follows one source: a kubeconfig (an API server) or manifestsDir, not both');
  if (bridge.length > 15 || /[\s/]/.test(bridge)) throw bad('bridge', 'must be a valid interface name (at most 15 characters)');
  const backend = backendField(o);
  const backendKey = o['backend'] !== undefined ? 'backend' : 'overlay';
  if (backend !== 'none' && !kubeconfig) throw bad(backendKey, `${backend} follows the Node objects of an API server: it needs kubeconfig`);
  if (backend !== 'none' && (o['clusterCIDR'] === undefined || o['clusterCIDR'] === null)) {
    throw bad('clusterCIDR', `overlay ${backend} needs the cluster CIDR (--cluster-cidr, e.g. 10.244.0.0/16): traffic between pods keeps its source, the rest leaving it is masqueraded`);
  }
  const directRouting = boolField(o, 'directRouting') ?? DEFAULTS.directRouting;
  if (directRouting && backend !== 'vxlan') throw bad('directRouting', `is vxlan's (flannel's hybrid: plain routes to the Nodes on this L2 network, VXLAN to the others), not ${backend}'s${backend === 'host-gw' ? ': host-gw routes every Node directly already' : ''}`);
  const bgpAsn = read.optInt(o, 'bgpAsn', '', { min: 1, max: 4_294_967_295 }) ?? DEFAULTS.bgpAsn;
  const bgpRouteReflector = boolField(o, 'bgpRouteReflector') ?? DEFAULTS.bgpRouteReflector;
  for (const k of ['bgpAsn', 'bgpRouteReflector']) if (o[k] !== undefined && backend !== 'bgp') throw bad(k, `is the bgp backend's, not ${backend}'s`);
  const underlayInterface = str(o, 'underlayInterface') ?? null;
  if (underlayInterface !== null && (underlayInterface.length > 15 || /[\s/]/.test(underlayInterface))) throw bad('underlayInterface', 'must be a valid interface name (at most 15 characters)');
  const runPods = boolField(o, 'runPods') ?? DEFAULTS.runPods;
  if (runPods && !kubeconfig) throw bad('runPods', 'the embedded kubelet runs the Pods an API server binds to this node: it needs kubeconfig');
  const kubeletPort = read.optInt(o, 'kubeletPort', '', { min: 1, max: 65535 }) ?? DEFAULTS.kubeletPort;
  return {
    nodeName: str(o, 'nodeName') ?? DEFAULTS.nodeName,
    podCIDR: cidr(o, 'podCIDR') ?? null,
    clusterCIDR: cidr(o, 'clusterCIDR') ?? null,
    stateDir: str(o, 'stateDir') ?? DEFAULTS.stateDir,
    runDir,
    cniSocket: str(o, 'cniSocket') ?? `${runDir}/cni.sock`,
    bridge,
    mtu,
    proxyMode: mode as ProxyMode,
    proxyPrefix: prefix,
    manifestsDir,
    kubeconfig,
    apiServerFailover: boolField(o, 'apiServerFailover') ?? DEFAULTS.apiServerFailover,
    clusterIPPing: ping,
    nftablesShards,
    ipvsScheduler: scheduler,
    ipvsFilter: boolField(o, 'ipvsFilter') ?? DEFAULTS.ipvsFilter,
    ipvsStrictARP: boolField(o, 'ipvsStrictARP') ?? DEFAULTS.ipvsStrictARP,
    proxyMinSyncMs: minSyncRaw,
    proxySyncPeriodMs: syncPeriod,
    nodePortAddresses: nodePortAddressesField(o),
    serviceCIDR: serviceCIDRField(o),
    metricsBindAddress: bindAddress(o, 'metricsBindAddress'),
    healthzBindAddress: bindAddress(o, 'healthzBindAddress'),
    nodeLeaseDurationSeconds: leaseSeconds,
    backend,
    directRouting,
    bgpAsn,
    bgpRouteReflector,
    underlayInterface,
    runPods,
    kubeletPort,
    capacity: resourceMapField(o, 'capacity', '--capacity'),
    kubeReserved: resourceMapField(o, 'kubeReserved', '--kube-reserved'),
    systemReserved: resourceMapField(o, 'systemReserved', '--system-reserved'),
    clusterDNS: clusterDNSField(o),
    clusterDomain: clusterDomainField(o),
    resolvConf: resolvConfField(o),
    logLevel: logLevel as LogLevel,
    logFile: str(o, 'logFile') ?? null,
  };
}

/** Flag name (--pod-cidr) → config key (podCIDR). */
export const FLAG_KEYS: Readonly<Record<string, keyof AgentConfig | 'overlay'>> = {
  'node-name': 'nodeName',
  'pod-cidr': 'podCIDR',
  'cluster-cidr': 'clusterCIDR',
  'state-dir': 'stateDir',
  'run-dir': 'runDir',
  'cni-socket': 'cniSocket',
  bridge: 'bridge',
  mtu: 'mtu',
  'proxy-mode': 'proxyMode',
  'proxy-prefix': 'proxyPrefix',
  manifests: 'manifestsDir',
  kubeconfig: 'kubeconfig',
  'api-server-failover': 'apiServerFailover',
  'cluster-ip-ping': 'clusterIPPing',
  'nftables-shards': 'nftablesShards',
  'ipvs-scheduler': 'ipvsScheduler',
  'ipvs-filter': 'ipvsFilter',
  'ipvs-strict-arp': 'ipvsStrictARP',
  'proxy-min-sync-ms': 'proxyMinSyncMs',
  'proxy-sync-period-ms': 'proxySyncPeriodMs',
  'nodeport-addresses': 'nodePortAddresses',
  'service-cluster-ip-range': 'serviceCIDR',
  'metrics-bind-address': 'metricsBindAddress',
  'healthz-bind-address': 'healthzBindAddress',
  'node-lease-duration-seconds': 'nodeLeaseDurationSeconds',
  backend: 'backend',
  overlay: 'overlay',
  'direct-routing': 'directRouting',
  'bgp-asn': 'bgpAsn',
  'bgp-route-reflector': 'bgpRouteReflector',
  iface: 'underlayInterface',
  'run-pods': 'runPods',
  'kubelet-port': 'kubeletPort',
  capacity: 'capacity',
  'kube-reserved': 'kubeReserved',
  'system-reserved': 'systemReserved',
  'cluster-dns': 'clusterDNS',
  'cluster-domain': 'clusterDomain',
  'resolv-conf': 'resolvConf',
  'log-level': 'logLevel',
  'log-file': 'logFile',
};
