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
import { cidrContains } from '../../../../lib/net/ip.js';
import type { IpsetType } from '../../netfilter/iptables/ipset-parse.js';
import type { RealServer, VirtualServer, VsKey } from '../../netfilter/ipvs/ipvs-types.js';
import { vsKey } from '../../netfilter/ipvs/ipvs-types.js';
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
  /** @internal what planIpvsPartial needs (each ServicePort's share, the members' counts). */
  readonly state: PlanState;
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

/** What one ServicePort puts into the plan: kept, so that a partial plan redoes only the changed ones. */
interface Contribution {
  readonly vs: readonly (readonly [VsKey, DesiredService])[];
  readonly entries: readonly (readonly [SetId, string])[];
  readonly vips: readonly string[];
  readonly noNodeAccess: readonly { readonly ip: string; readonly protocol: string; readonly port: number }[];
}

/** A plan's own bookkeeping for partial plans (planIpvsPartial). */
interface PlanState {
  readonly contrib: Map<string, Contribution>;
  /** How many ServicePorts put each member in each set, and each VIP on the device. */
  readonly counts: Map<SetId, Map<string, number>>;
  readonly vipCount: Map<string, number>;
  /** The node IPs NodePorts were planned on, and the config's they came from. */
  readonly nodeIPs: readonly string[];
  readonly cfgNodeIPs: string;
  readonly cfgNodePortAddresses: string;
  readonly primary: string | null;
  readonly options: Required<IpvsOptions>;
}

/** One ServicePort's virtual services, set members, VIPs and LB entries without node access. */
function contribute(s: ServicePortInfo, eps: readonly EndpointInfo[], nodeIPs: readonly string[], primary: string | null, opts: Required<IpvsOptions>): Contribution {
  const svcName = spnString(s.spn);
  const cat = categorizeEndpoints(eps, s);
  const internal = internalPolicyLocal(s) ? realServers(cat.local, eps.filter((e) => e.isLocal)) : realServers(cat.cluster, eps);
  const external = externalPolicyLocal(s) ? realServers(cat.local, eps.filter((e) => e.isLocal)) : realServers(cat.cluster, eps);
  const vs: [VsKey, DesiredService][] = [];
  const entries: [SetId, string][] = [];
  const noNodeAccess: { ip: string; protocol: string; port: number }[] = [];
  const add = (id: SetId, e: string): void => void entries.push([id, e]);
  const put = (address: string, port: number, dests: readonly RealServer[], kind: DesiredService['kind']): void => {
    const v: VirtualServer = { protocol: s.protocol, address, port, scheduler: opts.scheduler, persistentTimeout: s.affinityTimeoutSeconds ?? 0 };
    vs.push([vsKey(v), { vs: v, dests, svc: svcName, kind }]);
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
  return { vs, entries, vips: [s.clusterIP, ...s.externalIPs, ...s.loadBalancerVIPs], noNodeAccess };
}

const naKey = (a: { ip: string; protocol: string; port: number }): string => `${a.ip},${a.protocol}:${a.port}`;

export function planIpvs(snapshot: ProxySnapshot, cfg: ProxyNodeConfig, options: IpvsOptions = {}): IpvsPlan {
  const opts = resolveOptions(options);
  const names = ipvsNames(cfg.prefix);
  const counts = new Map<SetId, Map<string, number>>(SET_INFO.map((s) => [s.id, new Map<string, number>()]));
  const services = new Map<VsKey, DesiredService>();
  const byService = new Map<string, VsKey[]>();
  const conflicts: string[] = [];
  const noNodeAccess: { ip: string; protocol: string; port: number }[] = [];
  const vipCount = new Map<string, number>();
  for (const s of snapshot.services.values()) {
    for (const ip of [s.clusterIP, ...s.externalIPs, ...s.loadBalancerVIPs]) vipCount.set(ip, (vipCount.get(ip) ?? 0) + 1);
  }
  const nodeIPs = nodePortIPs(cfg, new Set(vipCount.keys()));
  const primary = cfg.primaryIP ?? null;
  const contrib = new Map<string, Contribution>();

  for (const [key, s] of snapshot.services) {
    const c = contribute(s, snapshot.endpoints.get(key) ?? [], nodeIPs, primary, opts);
    contrib.set(key, c);
    const owned: VsKey[] = [];
    for (const [k, d] of c.vs) {
      const had = services.get(k);
      if (had) {
        conflicts.push(`${d.svc}: ${k} already served for ${had.svc}`);
        continue;
      }
      services.set(k, d);
      owned.push(k);
    }
    for (const [id, e] of c.entries) {
      const m = counts.get(id)!;
      m.set(e, (m.get(e) ?? 0) + 1);
    }
    for (const a of c.noNodeAccess) noNodeAccess.push(a);
    byService.set(key, owned);
  }

  const addresses = [...vipCount.keys()].sort(byStr).map((ip) => `${ip}/32`);
  const ipvsIPs = counts.get('ipvsIPs')!;
  for (const [ip, n] of vipCount) ipvsIPs.set(ip, n);
  const sets = new Map<SetId, DesiredSet>();
  for (const info of SET_INFO) sets.set(info.id, { name: names.sets[info.id], type: info.type, comment: info.comment, entries: new Set([...counts.get(info.id)!.keys()].sort(byStr)) });
  noNodeAccess.sort((a, b) => byStr(naKey(a), naKey(b)));
  const state: PlanState = {
    contrib, counts, vipCount, nodeIPs, cfgNodeIPs: cfg.nodeIPs.join(','), cfgNodePortAddresses: JSON.stringify(cfg.nodePortAddresses ?? null), primary, options: opts,
  };
  return { names, device: DUMMY_DEVICE, addresses, services, sets, conflicts, noNodeAccess, byService, options: opts, state };
}

/** What a partial plan changed: the set members and device addresses to add and delete. */
export interface IpvsPlanDelta {
  readonly setAdds: readonly (readonly [string, string])[];
  readonly setDels: readonly (readonly [string, string])[];
  readonly addressAdds: readonly string[];
  readonly addressDels: readonly string[];
  /** The virtual services the changed ServicePorts had or have now. */
  readonly keys: ReadonlySet<VsKey>;
  /** Those they had, as the last plan had them (what the last sync wrote). */
  readonly before: ReadonlyMap<VsKey, VirtualServer>;
}

/**
 * The plan after `changed` Services (keys "ns/name") changed, made from `prev` by redoing only their
 * ServicePorts: what a partial sync needs at 30,000 Services without planning the 29,999 others again.
 * `prev` is updated in place and returned with the delta (the caller keeps one plan and drops it when a
 * sync fails). Null when the change reaches beyond its Services, and the whole plan must be made again:
 * a virtual service claimed twice (before or after), other node IPs or NodePort addresses, a VIP that is a
 * node IP, other options.
 */
export function planIpvsPartial(prev: IpvsPlan, snapshot: ProxySnapshot, cfg: ProxyNodeConfig, options: IpvsOptions, changed: ReadonlySet<string>): { plan: IpvsPlan; delta: IpvsPlanDelta } | null {
  const st = prev.state;
  const opts = resolveOptions(options);
  if (prev.conflicts.length || st.cfgNodeIPs !== cfg.nodeIPs.join(',') || st.cfgNodePortAddresses !== JSON.stringify(cfg.nodePortAddresses ?? null)) return null;
  if ((cfg.primaryIP ?? null) !== st.primary || JSON.stringify(opts) !== JSON.stringify(st.options)) return null;
  // The ServicePorts of the changed Services, before and now.
  const spns = new Set<string>();
  const ofChanged = (k: string): boolean => {
    const slash = k.indexOf('/');
    const colon = k.indexOf(':', slash);
    return changed.has(colon < 0 ? k : k.slice(0, colon));
  };
  for (const k of st.contrib.keys()) if (ofChanged(k)) spns.add(k);
  for (const k of snapshot.services.keys()) if (ofChanged(k)) spns.add(k);
  const nodeIPs = new Set(st.nodeIPs);
  const fresh = new Map<string, Contribution | null>();
  for (const k of spns) {
    const s = snapshot.services.get(k);
    const c = s ? contribute(s, snapshot.endpoints.get(k) ?? [], st.nodeIPs, st.primary, opts) : null;
    // A VIP that is a node IP changes the NodePorts of every Service.
    if ([...(c?.vips ?? []), ...(st.contrib.get(k)?.vips ?? [])].some((ip) => nodeIPs.has(ip) || (cfg.nodeIPs as readonly string[]).includes(ip))) return null;
    fresh.set(k, c);
  }
  // A virtual service another ServicePort owns: the order of the whole snapshot decides who keeps it.
  const services = prev.services as Map<VsKey, DesiredService>;
  // (A DesiredService's svc is its ServicePort's snapshot key, spnString.)
  for (const c of fresh.values()) for (const [vk] of c?.vs ?? []) {
    const owner = services.get(vk);
    if (owner && !spns.has(owner.svc)) return null;
  }
  // Two of the changed ServicePorts claiming one virtual service between them.
  const claimed = new Set<VsKey>();
  for (const c of fresh.values()) for (const [vk] of c?.vs ?? []) {
    if (claimed.has(vk)) return null;
    claimed.add(vk);
  }
  const keys = new Set<VsKey>();
  const before = new Map<VsKey, VirtualServer>();
  const setTouch = new Map<SetId, Set<string>>();
  const vipTouch = new Set<string>();
  const byService = prev.byService as Map<string, VsKey[]>;
  const na = new Map(prev.noNodeAccess.map((a) => [naKey(a), a]));
  const bump = (id: SetId, e: string, by: number): void => {
    const m = st.counts.get(id)!;
    const n = (m.get(e) ?? 0) + by;
    if (n > 0) m.set(e, n);
    else m.delete(e);
    let t = setTouch.get(id);
    if (!t) setTouch.set(id, (t = new Set()));
    t.add(e);
  };
  const bumpVip = (ip: string, by: number): void => {
    const n = (st.vipCount.get(ip) ?? 0) + by;
    if (n > 0) st.vipCount.set(ip, n);
    else st.vipCount.delete(ip);
    vipTouch.add(ip);
    bump('ipvsIPs', ip, by);
  };
  for (const [k, c] of fresh) {
    const old = st.contrib.get(k);
    if (old) {
      for (const [vk, d] of old.vs) {
        services.delete(vk);
        keys.add(vk);
        before.set(vk, d.vs);
      }
      for (const [id, e] of old.entries) bump(id, e, -1);
      for (const ip of old.vips) bumpVip(ip, -1);
      for (const a of old.noNodeAccess) na.delete(naKey(a));
    }
    if (c) {
      for (const [vk, d] of c.vs) {
        services.set(vk, d);
        keys.add(vk);
      }
      for (const [id, e] of c.entries) bump(id, e, 1);
      for (const ip of c.vips) bumpVip(ip, 1);
      for (const a of c.noNodeAccess) na.set(naKey(a), a);
      st.contrib.set(k, c);
      byService.set(k, c.vs.map(([vk]) => vk));
    } else {
      st.contrib.delete(k);
      byService.delete(k);
    }
  }
  const setAdds: [string, string][] = [];
  const setDels: [string, string][] = [];
  const sets = prev.sets as Map<SetId, DesiredSet>;
  for (const [id, touched] of setTouch) {
    const d = sets.get(id)!;
    const entries = d.entries as Set<string>;
    const now = st.counts.get(id)!;
    let grew = false;
    for (const e of touched) {
      const want = now.has(e);
      if (want && !entries.has(e)) {
        setAdds.push([d.name, e]);
        entries.add(e);
        grew = true;
      } else if (!want && entries.has(e)) {
        setDels.push([d.name, e]);
        entries.delete(e);
      }
    }
    // Members stay sorted (ipset save's order, which the tests and a restart's comparison read).
    if (grew) sets.set(id, { ...d, entries: new Set([...entries].sort(byStr)) });
  }
  const addressAdds: string[] = [];
  const addressDels: string[] = [];
  const had = new Set(prev.addresses);
  let addresses = prev.addresses;
  for (const ip of vipTouch) {
    const a = `${ip}/32`;
    if (st.vipCount.has(ip) && !had.has(a)) addressAdds.push(a);
    else if (!st.vipCount.has(ip) && had.has(a)) addressDels.push(a);
  }
  if (addressAdds.length || addressDels.length) addresses = [...st.vipCount.keys()].sort(byStr).map((ip) => `${ip}/32`);
  const noNodeAccess = na.size === prev.noNodeAccess.length && [...na.keys()].every((k, i) => k === naKey(prev.noNodeAccess[i]!)) ? prev.noNodeAccess : [...na.values()].sort((a, b) => byStr(naKey(a), naKey(b)));
  const plan: IpvsPlan = { ...prev, addresses, sets, noNodeAccess, services, byService };
  return { plan, delta: { setAdds, setDels, addressAdds, addressDels, keys, before } };
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
