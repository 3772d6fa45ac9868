/**
 * proxy/ipvs/plan: snapshot + node config → the desired IPVS-mode state, in
 * kube-proxy's layout (pkg/proxy/ipvs/proxier.go syncProxyRules). Pure.
 *
 * - addresses: every ClusterIP, external IP and load-balancer VIP, as /32
 *   on the `kube-ipvs0` dummy device, so the node accepts packets to them
 *   and IPVS (at LOCAL_IN) takes them;
 * - virtual services: ClusterIP:port, each external IP and LB VIP :port,
 *   and the NodePort on each node address (nodePortAddresses applied), with
 *   the scheduler and, for ClientIP affinity, persistence with its timeout;
 * - real servers: NAT (masquerade), weight 1 for the endpoints traffic may
 *   use (proxy/categorize.ts: ready ones, else serving-terminating ones);
 *   a terminating endpoint that still serves gets weight 0 (kept for its
 *   connections, given no new ones); ClusterIP services follow the
 *   internal traffic policy, the others the external one (Local: this
 *   node's endpoints only);
 * - ipsets: kube-proxy's, with canonical `ipset save` members;
 * - sysctls the mode needs (ipvsSysctls).
 * The iptables rules are rendered from the sets by render.ts, the changes
 * against the kernel by diff.ts.
 *
 * Deterministic: Services in snapshot order, addresses and members sorted.
 * Two Services claiming one virtual service (the same external IP:port):
 * the first keeps it, the second is reported in `conflicts`.
 */
import { cidrContains, parseCidr } from '../../net/ip.js';
import type { IpsetType } from '../../netfilter/ipset-parse.js';
import type { RealServer, VirtualServer, VsKey } from '../../netfilter/ipvs-types.js';
import { vsKey } from '../../netfilter/ipvs-types.js';
import { categorizeEndpoints, externalPolicyLocal, internalPolicyLocal } from '../categorize.js';
import { spnString, type EndpointInfo, type ProxyNodeConfig, type ProxySnapshot, type ServicePortInfo } from '../types.js';
import { DEFAULT_SCHEDULER, DUMMY_DEVICE, ipvsNames, SET_INFO, type IpvsNames, type SetId } from './names.js';

export interface IpvsOptions {
  /** --ipvs-scheduler; default rr. */
  readonly scheduler?: string;
  /** KUBE-IPVS-FILTER (on by default): reject traffic to a VIP that is not a service port. */
  readonly filter?: boolean;
  /** --ipvs-strict-arp: arp_ignore=1, arp_announce=2, so the node does not answer ARP for its VIPs. */
  readonly strictARP?: boolean;
}

export interface DesiredService {
  readonly vs: VirtualServer;
  /** By "ip:port", sorted. */
  readonly dests: readonly RealServer[];
  /** The Service port it serves ("ns/name:port"). */
  readonly svc: string;
  readonly kind: 'cluster-ip' | 'external-ip' | 'load-balancer' | 'node-port';
}

export interface DesiredSet {
  readonly name: string;
  readonly type: IpsetType;
  readonly comment: string;
  readonly entries: ReadonlySet<string>;
}

export interface IpvsPlan {
  readonly names: IpvsNames;
  readonly device: string;
  /** "a.b.c.d/32", sorted. */
  readonly addresses: readonly string[];
  readonly services: ReadonlyMap<VsKey, DesiredService>;
  /** Every set of the mode, also when empty (the rules reference them). */
  readonly sets: ReadonlyMap<SetId, DesiredSet>;
  /** Service ports whose virtual service another took: "ns/svc:port: TCP/1.2.3.4:80 already served for ns/other:port". */
  readonly conflicts: readonly string[];
  /**
   * LB VIP:ports with source ranges none of which holds the node: the node's
   * own connections to them are dropped in filter OUTPUT (kube-proxy's
   * lbNoNodeAccess entries for KUBE-IPVS-OUT-FILTER, kubernetes#119656).
   * IPVS takes such a connection on LOCAL_OUT, before any INPUT rule could
   * see its source. Sorted.
   */
  readonly noNodeAccess: readonly { readonly ip: string; readonly protocol: string; readonly port: number }[];
  /** Service port → the virtual service keys it owns (for partial syncs). */
  readonly byService: ReadonlyMap<string, readonly VsKey[]>;
  readonly options: Required<IpvsOptions>;
}

export function resolveOptions(o: IpvsOptions = {}): Required<IpvsOptions> {
  return { scheduler: o.scheduler ?? DEFAULT_SCHEDULER, filter: o.filter ?? true, strictARP: o.strictARP ?? false };
}

const proto = (s: ServicePortInfo): string => s.protocol.toLowerCase();
const byStr = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The node addresses NodePorts are served on: the node IPs inside nodePortAddresses (all when unset), VIPs excluded. */
export function nodePortIPs(cfg: ProxyNodeConfig, vips: ReadonlySet<string>): string[] {
  const cidrs = cfg.nodePortAddresses ?? null;
  return [...new Set(cfg.nodeIPs)].filter((ip) => !vips.has(ip) && (cidrs === null || cidrs.some((c) => cidrContains(c, ip)))).sort(byStr);
}

function realServers(usable: readonly EndpointInfo[], pool: readonly EndpointInfo[]): RealServer[] {
  const out = new Map<string, RealServer>();
  for (const e of usable) out.set(`${e.ip}:${e.port}`, { address: e.ip, port: e.port, weight: 1, forward: 'masq' });
  // Terminating but still serving, not chosen: weight 0, so their connections go on and no new ones come.
  for (const e of pool) {
    const k = `${e.ip}:${e.port}`;
    if (e.serving && e.terminating && !out.has(k)) out.set(k, { address: e.ip, port: e.port, weight: 0, forward: 'masq' });
  }
  return [...out.entries()].sort(([a], [b]) => byStr(a, b)).map(([, r]) => r);
}

export function planIpvs(snapshot: ProxySnapshot, cfg: ProxyNodeConfig, options: IpvsOptions = {}): IpvsPlan {
  const opts = resolveOptions(options);
  const names = ipvsNames(cfg.prefix);
  const entries = new Map<SetId, Set<string>>(SET_INFO.map((s) => [s.id, new Set<string>()]));
  const add = (id: SetId, e: string): void => void entries.get(id)!.add(e);
  const services = new Map<VsKey, DesiredService>();
  const byService = new Map<string, VsKey[]>();
  const conflicts: string[] = [];
  const noNodeAccess: { ip: string; protocol: string; port: number }[] = [];
  const vips = new Set<string>();
  for (const s of snapshot.services.values()) {
    vips.add(s.clusterIP);
    for (const ip of s.externalIPs) vips.add(ip);
    for (const ip of s.loadBalancerVIPs) vips.add(ip);
  }
  const nodeIPs = nodePortIPs(cfg, vips);
  const primary = cfg.primaryIP ?? null;

  for (const [key, s] of snapshot.services) {
    const svcName = spnString(s.spn);
    const eps = snapshot.endpoints.get(key) ?? [];
    const cat = categorizeEndpoints(eps, s);
    const internal = internalPolicyLocal(s) ? realServers(cat.local, eps.filter((e) => e.isLocal)) : realServers(cat.cluster, eps);
    const external = externalPolicyLocal(s) ? realServers(cat.local, eps.filter((e) => e.isLocal)) : realServers(cat.cluster, eps);
    const owned: VsKey[] = [];
    const put = (address: string, port: number, dests: readonly RealServer[], kind: DesiredService['kind']): void => {
      const vs: VirtualServer = { protocol: s.protocol, address, port, scheduler: opts.scheduler, persistentTimeout: s.affinityTimeoutSeconds ?? 0 };
      const k = vsKey(vs);
      const had = services.get(k);
      if (had) {
        conflicts.push(`${svcName}: ${k} already served for ${had.svc}`);
        return;
      }
      services.set(k, { vs, dests, svc: svcName, kind });
      owned.push(k);
    };
    const pp = `${proto(s)}:${s.port}`;

    put(s.clusterIP, s.port, internal, 'cluster-ip');
    add('clusterIP', `${s.clusterIP},${pp}`);
    // Hairpin: a local endpoint reaching itself through the service is masqueraded (KUBE-LOOP-BACK).
    for (const d of [...internal, ...external]) {
      const e = eps.find((x) => x.ip === d.address && x.port === d.port);
      if (e?.isLocal) add('loopBack', `${e.ip},${proto(s)}:${e.port},${e.ip}`);
    }
    const etpLocal = s.externalTrafficPolicy === 'Local';
    for (const ip of s.externalIPs) {
      put(ip, s.port, external, 'external-ip');
      add(etpLocal ? 'externalIPLocal' : 'externalIP', `${ip},${pp}`);
    }
    for (const ip of s.loadBalancerVIPs) {
      put(ip, s.port, external, 'load-balancer');
      add('loadBalancer', `${ip},${pp}`);
      if (etpLocal) add('loadBalancerLocal', `${ip},${pp}`);
      if (s.loadBalancerSourceRanges.length > 0) {
        add('loadBalancerFW', `${ip},${pp}`);
        for (const c of s.loadBalancerSourceRanges) add('loadBalancerSourceCIDR', `${ip},${pp},${c.replace(/\/32$/, '')}`);
        // The node reaches its own VIP with the VIP as source (it is a local address): let it through when a range holds the node.
        if (primary && s.loadBalancerSourceRanges.some((c) => cidrContains(c, primary))) add('loadBalancerSourceIP', `${ip},${pp},${ip}`);
        else noNodeAccess.push({ ip, protocol: proto(s), port: s.port });
      }
    }
    if (s.nodePort !== 0) {
      for (const ip of nodeIPs) put(ip, s.nodePort, external, 'node-port');
      if (s.protocol === 'SCTP') {
        for (const ip of nodeIPs) add('nodePortSCTP', `${ip},sctp:${s.nodePort}`);
        if (etpLocal) for (const ip of nodeIPs) add('nodePortLocalSCTP', `${ip},sctp:${s.nodePort}`);
      } else {
        const tcp = s.protocol === 'TCP';
        add(tcp ? 'nodePortTCP' : 'nodePortUDP', String(s.nodePort));
        if (etpLocal) add(tcp ? 'nodePortLocalTCP' : 'nodePortLocalUDP', String(s.nodePort));
      }
    }
    if (s.healthCheckNodePort !== 0) add('healthCheckNodePort', String(s.healthCheckNodePort));
    byService.set(key, owned);
  }

  const addresses = [...vips].sort(byStr).map((ip) => `${ip}/32`);
  for (const a of addresses) add('ipvsIPs', a.slice(0, -3));
  const sets = new Map<SetId, DesiredSet>();
  for (const info of SET_INFO) sets.set(info.id, { name: names.sets[info.id], type: info.type, comment: info.comment, entries: new Set([...entries.get(info.id)!].sort(byStr)) });
  noNodeAccess.sort((a, b) => byStr(`${a.ip},${a.protocol}:${a.port}`, `${b.ip},${b.protocol}:${b.port}`));
  return { names, device: DUMMY_DEVICE, addresses, services, sets, conflicts, noNodeAccess, byService, options: opts };
}

/**
 * The sysctls IPVS mode sets in the node's namespace (kube-proxy's
 * NewProxier): conntrack=1 (IPVS connections pass conntrack, so the
 * iptables masquerade rules see them), expire_nodest_conn=1 (a packet for
 * a deleted real server ends the connection at once), expire_quiescent_template=1
 * (persistence templates of a weight-0 server expire), conn_reuse_mode=0
 * only on kernels 4.1 to 5.8 (from 5.9 the kernel's default is right and
 * kube-proxy leaves it, kubernetes#93297); with strict ARP arp_ignore=1 and
 * arp_announce=2 on all interfaces. `kernelRelease` is `uname -r`.
 */
export function ipvsSysctls(kernelRelease: string, strictARP: boolean): [string, string][] {
  const out: [string, string][] = [['net.ipv4.vs.conntrack', '1']];
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease);
  const v = m ? Number(m[1]) * 1000 + Number(m[2]) : 0;
  if (v >= 4001 && v < 5009) out.push(['net.ipv4.vs.conn_reuse_mode', '0']);
  out.push(['net.ipv4.vs.expire_nodest_conn', '1'], ['net.ipv4.vs.expire_quiescent_template', '1']);
  if (strictARP) out.push(['net.ipv4.conf.all.arp_ignore', '1'], ['net.ipv4.conf.all.arp_announce', '2']);
  return out;
}

/** True for an address this plan puts on the device (the cidr form "a.b.c.d/32"). */
export function isPlannedAddress(plan: IpvsPlan, cidr: string): boolean {
  return plan.addresses.includes(`${parseCidr(cidr).ip}/32`);
}
