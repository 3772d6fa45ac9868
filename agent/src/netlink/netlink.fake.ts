/**
 * netlink.fake: a validating in-memory kernel for NetlinkOps, so the sandbox
 * and the overlay can be unit-tested without root.
 *
 * One FakeNetlinkKernel holds several namespaces (links, IPv4 addresses,
 * main-table routes, neighbours, fdb entries each). It rejects what the
 * kernel rejects, with the errno the kernel gives (checked against the real
 * kernel by the shared contract suite, netlink.contract.ts):
 *  - a link name taken in its namespace (createVeth checks both ends before
 *    creating either), bad names (> 15 chars, '/', whitespace), MTU out of
 *    range (68..65535; a vxlan bound to a device: at most device MTU - 50);
 *  - enslaving to a non-bridge (EOPNOTSUPP) or a bridge to a bridge (ELOOP);
 *    hairpin on a link that is not a bridge port (EOPNOTSUPP);
 *  - an address, route, neighbour or fdb entry on a missing link
 *    (LinkNotFoundError); a route through a down device (ENETDOWN); a route
 *    via a gateway no connected or device route covers (ENETUNREACH) unless
 *    onlink; a destination with host bits set (TypeError, before the kernel);
 *  - two vxlan devices with the same VNI, port and underlay device (EEXIST).
 * And it does what the kernel does on its own: connected routes for the
 * addresses of up links (not for /32), routes through a link vanish when it
 * goes down, deleting a link removes its addresses, routes, neighbours and
 * fdb entries, its veth peer (in whatever namespace) and the vxlan devices
 * bound to it, and un-enslaves a deleted bridge's ports; a bridge whose
 * address was never set takes its lowest port's MAC and changes it when
 * that port leaves (br_stp_recalculate_bridge_id).
 *
 * Not modelled: IPv6, routing tables other than main, the bridge adjusting
 * its MTU to its ports, carrier (a veth is "running" only if both ends are up).
 */
import { ErrorCode, LinkNotFoundError, NetnsNotFoundError, NodenetError } from '../../../lib/errors/errors.js';
import { cidrContains, parseIPNet, parseIPv4 } from '../../../lib/net/ip.js';
import type { NetnsPath } from '../netns/netns.js';
import { parseRouteDst } from './codec.js';
import { NetlinkError } from './netlink-error.js';
import type {
  AddressInfo, BridgeOptions, FdbEntry, LinkInfo, NeighInfo, NetlinkOps, RouteInfo, RouteScopeName, RouteSpec,
  VethSpec, VxlanInfo, VxlanSpec,
} from './ops.js';

interface FLink {
  index: number;
  name: string;
  mac: string;
  mtu: number;
  up: boolean;
  promisc: boolean;
  master?: number;
  kind?: string;
  hairpin: boolean;
  peer?: { ns: FakeNs; index: number };
  vxlan?: VxlanInfo;
  /** A bridge whose address was set (at creation or later) keeps it; otherwise it follows its ports, as the kernel's does. */
  addrSet?: boolean;
}

/**
 * The kernel's rule for a bridge without an assigned address
 * (br_stp_recalculate_bridge_id): it takes the lowest MAC among its ports,
 * and takes another when that port leaves.
 */
function recalcBridgeMac(ns: FakeNs, br: FLink | undefined): void {
  if (!br || br.kind !== 'bridge' || br.addrSet) return;
  const ports = [...ns.links.values()].filter((p) => p.master === br.index).map((p) => p.mac).sort();
  if (ports[0]) br.mac = ports[0];
}

interface FAddr { ifIndex: number; ip: string; prefix: number }
interface FRoute { dst: string; gw?: string; ifIndex: number; onlink: boolean; scope: RouteScopeName; protocol: number }
interface FNeigh { ifIndex: number; ip: string; mac: string; permanent: boolean }
interface FFdb { ifIndex: number; mac: string; dst?: string }

class FakeNs {
  readonly links = new Map<number, FLink>();
  addrs: FAddr[] = [];
  routes: FRoute[] = [];
  neighs: FNeigh[] = [];
  fdb: FFdb[] = [];
  private nextIndex = 2;
  constructor(readonly path: string) {
    this.links.set(1, { index: 1, name: 'lo', mac: '00:00:00:00:00:00', mtu: 65536, up: false, promisc: false, hairpin: false });
  }
  allocIndex(): number {
    return this.nextIndex++;
  }
  byName(name: string): FLink | undefined {
    for (const l of this.links.values()) if (l.name === name) return l;
    return undefined;
  }
}

const NAME_RE = /^[^/\s:]{1,15}$/;
const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;
const VXLAN_OVERHEAD = 50;

export class FakeNetlinkKernel {
  private readonly spaces = new Map<string, FakeNs>();
  private macCounter = 0;
  /** Every mutating call, in order, as 'ns op args' (for tests that assert order). */
  readonly journal: string[] = [];

  constructor() {
    this.spaces.set('', new FakeNs(''));
  }

  /** Creates an empty namespace (only `lo`, down) and returns its path. */
  createNetns(name: string): NetnsPath {
    const path = `/fake/netns/${name}`;
    if (this.spaces.has(path)) throw new Error(`fake netns ${path} exists`);
    this.spaces.set(path, new FakeNs(path));
    return path as NetnsPath;
  }

  /** Like toNetnsPath: mints a NetnsPath for a namespace of this kernel, else NetnsNotFoundError. */
  netnsPath(p: string): NetnsPath {
    if (!p || !this.spaces.has(p)) throw new NetnsNotFoundError(p || '(empty)');
    return p as NetnsPath;
  }

  /** Destroys a namespace as the kernel does when its last reference goes: its veths take their peers along. */
  deleteNetns(path: NetnsPath): void {
    const ns = this.spaces.get(path);
    if (!ns) return;
    for (const l of [...ns.links.values()]) if (l.index !== 1) this.removeLink(ns, l);
    this.spaces.delete(path);
  }

  /** A NetlinkOps bound to `netns` (default: the initial namespace). */
  open(netns?: NetnsPath): NetlinkOps {
    return new FakeNetlink(this, this.space(netns));
  }

  /** @internal */
  space(netns?: NetnsPath): FakeNs {
    const ns = this.spaces.get(netns ?? '');
    if (!ns) throw new NetnsNotFoundError(netns ?? '(initial)');
    return ns;
  }

  /** @internal */
  hasSpace(ns: FakeNs): boolean {
    return this.spaces.get(ns.path) === ns;
  }

  /** @internal */
  newMac(): string {
    const n = ++this.macCounter;
    return `02:fa:ce:${((n >> 16) & 255).toString(16).padStart(2, '0')}:${((n >> 8) & 255).toString(16).padStart(2, '0')}:${(n & 255).toString(16).padStart(2, '0')}`;
  }

  /** @internal Removes a link and everything the kernel removes with it. */
  removeLink(ns: FakeNs, l: FLink): void {
    if (!ns.links.delete(l.index)) return;
    ns.addrs = ns.addrs.filter((a) => a.ifIndex !== l.index);
    ns.routes = ns.routes.filter((r) => r.ifIndex !== l.index);
    ns.neighs = ns.neighs.filter((n) => n.ifIndex !== l.index);
    ns.fdb = ns.fdb.filter((f) => f.ifIndex !== l.index);
    for (const other of [...ns.links.values()]) {
      if (other.master === l.index) { delete other.master; other.hairpin = false; }
      if (other.vxlan?.dev === l.index) this.removeLink(ns, other);
    }
    if (l.peer) {
      const peer = l.peer.ns.links.get(l.peer.index);
      if (peer) { delete peer.peer; this.removeLink(l.peer.ns, peer); }
    }
    if (l.master !== undefined) recalcBridgeMac(ns, ns.links.get(l.master));
  }
}

function view(l: FLink): LinkInfo {
  const info: LinkInfo = { index: l.index, name: l.name, mac: l.mac, mtu: l.mtu, up: l.up, promisc: l.promisc };
  if (l.master !== undefined) { info.master = l.master; info.slaveKind = 'bridge'; info.hairpin = l.hairpin; }
  if (l.kind !== undefined) info.kind = l.kind;
  if (l.vxlan) info.vxlan = { ...l.vxlan };
  return info;
}

function checkName(op: string, name: string): void {
  if (!NAME_RE.test(name) || name === '.' || name === '..') throw new NetlinkError(op, 'EINVAL', { details: `invalid name ${JSON.stringify(name)}` });
}

function checkMac(op: string, mac: string | undefined): void {
  if (mac !== undefined && !MAC_RE.test(mac)) throw new TypeError(`${op}: not a MAC address: ${JSON.stringify(mac)}`);
}

function checkMtu(op: string, mtu: number | undefined, max = 65535): void {
  if (mtu === undefined) return;
  if (!Number.isInteger(mtu) || mtu < 68 || mtu > max) throw new NetlinkError(op, 'EINVAL', { details: `mtu ${mtu} outside 68..${max}` });
}

class FakeNetlink implements NetlinkOps {
  private closed = false;
  constructor(private readonly kernel: FakeNetlinkKernel, private readonly ns: FakeNs) {}

  private enter(op: string): FakeNs {
    if (this.closed) throw new NodenetError(ErrorCode.Netlink, `netlink ${op}: socket closed`);
    if (!this.kernel.hasSpace(this.ns)) throw new NetlinkError(op, 'ENODEV', { details: 'namespace destroyed' });
    return this.ns;
  }

  private log(op: string): void {
    this.kernel.journal.push(`${this.ns.path || '(init)'} ${op}`);
  }

  private must(name: string): FLink {
    const l = this.ns.byName(name);
    if (!l) throw new LinkNotFoundError(name);
    return l;
  }

  async getLink(name: string): Promise<LinkInfo | null> {
    const ns = this.enter(`getLink ${name}`);
    const l = ns.byName(name);
    return l ? view(l) : null;
  }

  async getLinkByIndex(index: number): Promise<LinkInfo | null> {
    const ns = this.enter(`getLinkByIndex ${index}`);
    const l = ns.links.get(index);
    return l ? view(l) : null;
  }

  async listLinks(): Promise<LinkInfo[]> {
    const ns = this.enter('listLinks');
    return [...ns.links.values()].sort((a, b) => a.index - b.index).map(view);
  }

  async ensureBridge(name: string, opts: BridgeOptions = {}): Promise<LinkInfo> {
    const op = `ensureBridge ${name}`;
    const ns = this.enter(op);
    checkName(op, name);
    checkMtu(op, opts.mtu);
    checkMac(op, opts.mac);
    let l = ns.byName(name);
    if (l && l.kind !== 'bridge') {
      throw new NodenetError(ErrorCode.LinkExists, `${op}: a link of kind ${l.kind ?? 'none'} has that name`);
    }
    if (!l) {
      l = { index: ns.allocIndex(), name, mac: opts.mac ?? this.kernel.newMac(), mtu: 1500, up: false, promisc: false, kind: 'bridge', hairpin: false, addrSet: opts.mac !== undefined };
      ns.links.set(l.index, l);
      this.log(`link add ${name} type bridge`);
    }
    if (opts.mac !== undefined && (l.mac !== opts.mac.toLowerCase() || !l.addrSet)) {
      l.mac = opts.mac.toLowerCase();
      l.addrSet = true;
      this.log(`link set ${name} address ${l.mac}`);
    }
    if (opts.mtu !== undefined) l.mtu = opts.mtu;
    if (opts.promisc !== undefined) l.promisc = opts.promisc;
    l.up = true;
    return view(l);
  }

  async ensureDummy(name: string): Promise<LinkInfo> {
    const op = `ensureDummy ${name}`;
    const ns = this.enter(op);
    checkName(op, name);
    const l = ns.byName(name);
    if (l) {
      if (l.kind !== 'dummy') throw new NodenetError(ErrorCode.LinkExists, `${op}: a link of kind ${l.kind ?? 'none'} has that name`);
      return view(l);
    }
    const made: FLink = { index: ns.allocIndex(), name, mac: this.kernel.newMac(), mtu: 1500, up: false, promisc: false, kind: 'dummy', hairpin: false };
    ns.links.set(made.index, made);
    this.log(`link add ${name} type dummy`);
    return view(made);
  }

  async createVeth(spec: VethSpec): Promise<void> {
    const op = `createVeth ${spec.name}/${spec.peerName}`;
    const ns = this.enter(op);
    const peerNs = spec.peerNetns === undefined ? ns : this.kernel.space(spec.peerNetns);
    checkName(op, spec.name);
    checkName(op, spec.peerName);
    checkMtu(op, spec.mtu);
    checkMac(op, spec.peerMac);
    checkMac(op, spec.mac);
    if (ns.byName(spec.name) || peerNs.byName(spec.peerName) || (peerNs === ns && spec.name === spec.peerName)) {
      throw new NodenetError(ErrorCode.LinkExists, `${op}: a link with one of these names exists`);
    }
    let master: FLink | undefined;
    if (spec.master !== undefined) {
      master = ns.byName(spec.master);
      if (!master) throw new LinkNotFoundError(spec.master);
      if (master.kind !== 'bridge') throw new NetlinkError(op, 'EOPNOTSUPP', { details: `${spec.master} is not a bridge` });
    }
    const mtu = spec.mtu ?? 1500;
    const host: FLink = { index: ns.allocIndex(), name: spec.name, mac: spec.mac ?? this.kernel.newMac(), mtu, up: spec.up ?? false, promisc: false, kind: 'veth', hairpin: false };
    if (master) host.master = master.index;
    ns.links.set(host.index, host);
    const peer: FLink = { index: peerNs.allocIndex(), name: spec.peerName, mac: spec.peerMac ?? this.kernel.newMac(), mtu, up: false, promisc: false, kind: 'veth', hairpin: false };
    peerNs.links.set(peer.index, peer);
    host.peer = { ns: peerNs, index: peer.index };
    peer.peer = { ns, index: host.index };
    recalcBridgeMac(ns, master);
    this.log(`link add ${spec.name} type veth peer ${spec.peerName} netns ${peerNs.path || '(init)'}${master ? ` master ${master.name}` : ''}`);
  }

  async createVxlan(spec: VxlanSpec): Promise<LinkInfo> {
    const op = `createVxlan ${spec.name}`;
    const ns = this.enter(op);
    checkName(op, spec.name);
    checkMac(op, spec.mac);
    parseIPv4(spec.local);
    const dev = this.must(spec.dev);
    if (!Number.isInteger(spec.vni) || spec.vni < 0 || spec.vni >= 1 << 24) throw new NetlinkError(op, 'ERANGE');
    if (!Number.isInteger(spec.port) || spec.port < 1 || spec.port > 65535) throw new NetlinkError(op, 'EINVAL');
    const max = dev.mtu - VXLAN_OVERHEAD;
    checkMtu(op, spec.mtu, max);
    if (ns.byName(spec.name)) throw new NodenetError(ErrorCode.LinkExists, `${op}: a link with that name exists`);
    for (const o of ns.links.values()) {
      if (o.vxlan && o.vxlan.vni === spec.vni && o.vxlan.port === spec.port && o.vxlan.dev === dev.index) {
        throw new NetlinkError(op, 'EEXIST', { details: `${o.name} has VNI ${spec.vni}` });
      }
    }
    const l: FLink = {
      index: ns.allocIndex(), name: spec.name, mac: spec.mac ?? this.kernel.newMac(), mtu: spec.mtu ?? max, up: false, promisc: false,
      kind: 'vxlan', hairpin: false, vxlan: { vni: spec.vni, port: spec.port, dev: dev.index, local: spec.local, learning: spec.learning },
    };
    ns.links.set(l.index, l);
    this.log(`link add ${spec.name} type vxlan id ${spec.vni} dstport ${spec.port} dev ${spec.dev} local ${spec.local}`);
    return view(l);
  }

  async setMaster(name: string, bridgeName: string): Promise<void> {
    const op = `setMaster ${name} ${bridgeName}`;
    this.enter(op);
    const l = this.must(name);
    const br = this.must(bridgeName);
    if (l.kind === 'bridge') throw new NetlinkError(op, 'ELOOP', { details: 'can not enslave a bridge to a bridge' });
    if (br.kind !== 'bridge') throw new NetlinkError(op, 'EOPNOTSUPP', { details: `${bridgeName} is not a bridge` });
    if (l.master === br.index) return;
    const old = l.master;
    l.master = br.index;
    l.hairpin = false;
    if (old !== undefined) recalcBridgeMac(this.ns, this.ns.links.get(old));
    recalcBridgeMac(this.ns, br);
    this.log(`link set ${name} master ${bridgeName}`);
  }

  async setNoMaster(name: string): Promise<void> {
    this.enter(`setNoMaster ${name}`);
    const l = this.must(name);
    if (l.master === undefined) return;
    const old = l.master;
    delete l.master;
    l.hairpin = false;
    recalcBridgeMac(this.ns, this.ns.links.get(old));
    this.log(`link set ${name} nomaster`);
  }

  async setMac(name: string, mac: string): Promise<void> {
    this.enter(`setMac ${name} ${mac}`);
    checkMac('setMac', mac);
    const l = this.must(name);
    l.mac = mac.toLowerCase();
    if (l.kind === 'bridge') l.addrSet = true;
    this.log(`link set ${name} address ${l.mac}`);
  }

  async setUp(name: string): Promise<void> {
    this.enter(`setUp ${name}`);
    const l = this.must(name);
    l.up = true;
    this.log(`link set ${name} up`);
  }

  async setDown(name: string): Promise<void> {
    this.enter(`setDown ${name}`);
    const l = this.must(name);
    l.up = false;
    // The kernel flushes the routes through a link that goes down.
    this.ns.routes = this.ns.routes.filter((r) => r.ifIndex !== l.index);
    this.log(`link set ${name} down`);
  }

  async setMtu(name: string, mtu: number): Promise<void> {
    const op = `setMtu ${name} ${mtu}`;
    this.enter(op);
    const l = this.must(name);
    let max = 65535;
    if (l.vxlan?.dev !== undefined) {
      const dev = this.ns.links.get(l.vxlan.dev);
      if (dev) max = dev.mtu - VXLAN_OVERHEAD;
    }
    checkMtu(op, mtu, max);
    l.mtu = mtu;
    this.log(`link set ${name} mtu ${mtu}`);
  }

  async setHairpin(name: string, on: boolean): Promise<void> {
    const op = `setHairpin ${name} ${on}`;
    this.enter(op);
    const l = this.must(name);
    if (l.master === undefined) throw new NetlinkError(op, 'EOPNOTSUPP', { details: `${name} is not a bridge port` });
    l.hairpin = on;
    this.log(`link set ${name} type bridge_slave hairpin ${on ? 'on' : 'off'}`);
  }

  async setPromisc(name: string, on: boolean): Promise<void> {
    this.enter(`setPromisc ${name}`);
    const l = this.must(name);
    l.promisc = on;
    this.log(`link set ${name} promisc ${on ? 'on' : 'off'}`);
  }

  async deleteLink(name: string): Promise<void> {
    const ns = this.enter(`deleteLink ${name}`);
    const l = this.must(name);
    if (l.index === 1) throw new NetlinkError(`deleteLink ${name}`, 'EOPNOTSUPP');
    this.kernel.removeLink(ns, l);
    this.log(`link del ${name}`);
  }

  async addAddress(name: string, cidr: string): Promise<void> {
    const ns = this.enter(`addAddress ${name} ${cidr}`);
    const n = parseIPNet(cidr);
    const l = this.must(name);
    if (ns.addrs.some((a) => a.ifIndex === l.index && a.ip === n.ip && a.prefix === n.prefix)) return;
    ns.addrs.push({ ifIndex: l.index, ip: n.ip, prefix: n.prefix });
    this.log(`addr add ${cidr} dev ${name}`);
  }

  async delAddress(name: string, cidr: string): Promise<void> {
    const ns = this.enter(`delAddress ${name} ${cidr}`);
    const n = parseIPNet(cidr);
    const l = this.must(name);
    const before = ns.addrs.length;
    ns.addrs = ns.addrs.filter((a) => !(a.ifIndex === l.index && a.ip === n.ip && a.prefix === n.prefix));
    if (ns.addrs.length !== before) this.log(`addr del ${cidr} dev ${name}`);
  }

  async listAddresses(name?: string): Promise<AddressInfo[]> {
    const ns = this.enter('listAddresses');
    const index = name === undefined ? undefined : this.must(name).index;
    return ns.addrs
      .filter((a) => index === undefined || a.ifIndex === index)
      .map((a) => ({ ifIndex: a.ifIndex, address: `${a.ip}/${a.prefix}` }));
  }

  /** Connected routes: one per address (not /32) on an up link. */
  private connected(): RouteInfo[] {
    const out: RouteInfo[] = [];
    const seen = new Set<string>();
    for (const a of this.ns.addrs) {
      const l = this.ns.links.get(a.ifIndex);
      if (!l?.up || a.prefix === 32) continue;
      const dst = parseIPNet(`${a.ip}/${a.prefix}`).network.cidr;
      const key = `${dst}@${a.ifIndex}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ dst, ifIndex: l.index, dev: l.name, onlink: false, scope: 'link', protocol: 'kernel', src: a.ip });
    }
    return out;
  }

  async addRoute(spec: RouteSpec): Promise<void> {
    const op = `addRoute ${spec.dst}${spec.gw ? ` via ${spec.gw}` : ''}${spec.dev ? ` dev ${spec.dev}` : ''}`;
    const ns = this.enter(op);
    const dst = parseRouteDst(spec.dst);
    if (spec.onlink && (!spec.gw || !spec.dev)) throw new TypeError(`route ${spec.dst}: onlink needs gw and dev`);
    if (spec.gw !== undefined) parseIPv4(spec.gw);
    const dev = spec.dev === undefined ? undefined : this.must(spec.dev);
    if (!dev && spec.gw === undefined) throw new NetlinkError(op, 'EINVAL', { details: 'a route needs a gateway or a device' });
    if (dev && !dev.up) throw new NetlinkError(op, 'ENETDOWN', { details: 'device for nexthop is not up' });
    let ifIndex = dev?.index;
    if (spec.gw !== undefined && !spec.onlink) {
      const gw = spec.gw;
      const candidates = [
        ...this.connected(),
        ...ns.routes.filter((r) => r.gw === undefined).map((r) => ({ dst: r.dst, ifIndex: r.ifIndex })),
      ].filter((r) => r.dst !== 'default' && cidrContains(r.dst, gw) && (dev === undefined || r.ifIndex === dev.index));
      candidates.sort((a, b) => parseRouteDst(b.dst).len - parseRouteDst(a.dst).len);
      const via = candidates[0];
      if (!via || via.ifIndex === undefined) throw new NetlinkError(op, 'ENETUNREACH', { details: `gateway ${gw} is not directly reachable` });
      const viaLink = ns.links.get(via.ifIndex);
      if (!viaLink?.up) throw new NetlinkError(op, 'ENETDOWN');
      ifIndex = via.ifIndex;
    }
    if (ifIndex === undefined) throw new NetlinkError(op, 'EINVAL');
    const norm = dst.len === 0 ? 'default' : `${dst.ip}/${dst.len}`;
    const route: FRoute = { dst: norm, ifIndex, onlink: spec.onlink === true, scope: spec.scope ?? (spec.gw !== undefined ? 'universe' : 'link'), protocol: spec.protocol ?? 3 };
    if (spec.gw !== undefined) route.gw = spec.gw;
    // NLM_F_REPLACE: a route to the same destination is replaced.
    ns.routes = ns.routes.filter((r) => r.dst !== norm);
    ns.routes.push(route);
    this.log(`route replace ${norm}${route.gw ? ` via ${route.gw}` : ''} dev ${ns.links.get(ifIndex)?.name ?? ifIndex}${route.onlink ? ' onlink' : ''}`);
  }

  async delRoute(spec: RouteSpec): Promise<void> {
    const ns = this.enter(`delRoute ${spec.dst}`);
    const dst = parseRouteDst(spec.dst);
    const norm = dst.len === 0 ? 'default' : `${dst.ip}/${dst.len}`;
    const dev = spec.dev === undefined ? undefined : ns.byName(spec.dev);
    if (spec.dev !== undefined && !dev) return;
    const before = ns.routes.length;
    ns.routes = ns.routes.filter((r) => !(r.dst === norm && (spec.gw === undefined || r.gw === spec.gw) && (dev === undefined || r.ifIndex === dev.index) && (spec.protocol === undefined || r.protocol === spec.protocol)));
    if (ns.routes.length !== before) this.log(`route del ${norm}`);
  }

  async listRoutes(): Promise<RouteInfo[]> {
    const ns = this.enter('listRoutes');
    const explicit = ns.routes.map((r): RouteInfo => {
      const info: RouteInfo = { dst: r.dst, ifIndex: r.ifIndex, onlink: r.onlink, scope: r.scope, protocol: r.protocol === 3 ? 'boot' : r.protocol === 4 ? 'static' : String(r.protocol) };
      const name = ns.links.get(r.ifIndex)?.name;
      if (name) info.dev = name;
      if (r.gw !== undefined) info.gw = r.gw;
      return info;
    });
    return [...explicit, ...this.connected()];
  }

  async addNeigh(n: { dev: string; ip: string; mac: string; permanent: boolean }): Promise<void> {
    const ns = this.enter(`addNeigh ${n.ip} dev ${n.dev}`);
    parseIPv4(n.ip);
    checkMac('addNeigh', n.mac);
    const l = this.must(n.dev);
    ns.neighs = ns.neighs.filter((x) => !(x.ifIndex === l.index && x.ip === n.ip));
    ns.neighs.push({ ifIndex: l.index, ip: n.ip, mac: n.mac, permanent: n.permanent });
    this.log(`neigh replace ${n.ip} lladdr ${n.mac} dev ${n.dev}`);
  }

  async delNeigh(n: { dev: string; ip: string }): Promise<void> {
    const ns = this.enter(`delNeigh ${n.ip} dev ${n.dev}`);
    const l = ns.byName(n.dev);
    if (!l) return;
    const before = ns.neighs.length;
    ns.neighs = ns.neighs.filter((x) => !(x.ifIndex === l.index && x.ip === n.ip));
    if (ns.neighs.length !== before) this.log(`neigh del ${n.ip} dev ${n.dev}`);
  }

  async listNeighs(dev?: string): Promise<NeighInfo[]> {
    const ns = this.enter('listNeighs');
    const index = dev === undefined ? undefined : this.must(dev).index;
    return ns.neighs.filter((n) => index === undefined || n.ifIndex === index).map((n) => ({ ...n }));
  }

  async appendFdb(e: { dev: string; mac: string; dst: string }): Promise<void> {
    const ns = this.enter(`appendFdb ${e.mac} dev ${e.dev}`);
    checkMac('appendFdb', e.mac);
    parseIPv4(e.dst);
    const l = this.must(e.dev);
    if (ns.fdb.some((f) => f.ifIndex === l.index && f.mac === e.mac && f.dst === e.dst)) return;
    // As the kernel's vxlan driver (measured): appending another destination to a unicast MAC that already
    // has one changes nothing and reports no error; only the all-zeros MAC (flooding) takes several.
    if (e.mac !== '00:00:00:00:00:00' && ns.fdb.some((f) => f.ifIndex === l.index && f.mac === e.mac)) return;
    ns.fdb.push({ ifIndex: l.index, mac: e.mac, dst: e.dst });
    this.log(`fdb append ${e.mac} dev ${e.dev} dst ${e.dst}`);
  }

  async replaceFdb(e: { dev: string; mac: string; dst: string }): Promise<void> {
    const ns = this.enter(`replaceFdb ${e.mac} dev ${e.dev}`);
    checkMac('replaceFdb', e.mac);
    parseIPv4(e.dst);
    const l = this.must(e.dev);
    if (ns.fdb.length === 1 + ns.fdb.filter((f) => !(f.ifIndex === l.index && f.mac === e.mac)).length && ns.fdb.some((f) => f.ifIndex === l.index && f.mac === e.mac && f.dst === e.dst)) return;
    ns.fdb = ns.fdb.filter((f) => !(f.ifIndex === l.index && f.mac === e.mac));
    ns.fdb.push({ ifIndex: l.index, mac: e.mac, dst: e.dst });
    this.log(`fdb replace ${e.mac} dev ${e.dev} dst ${e.dst}`);
  }

  async delFdb(e: { dev: string; mac: string; dst?: string }): Promise<void> {
    const ns = this.enter(`delFdb ${e.mac} dev ${e.dev}`);
    const l = ns.byName(e.dev);
    if (!l) return;
    const before = ns.fdb.length;
    ns.fdb = ns.fdb.filter((f) => !(f.ifIndex === l.index && f.mac === e.mac && (e.dst === undefined || f.dst === e.dst)));
    if (ns.fdb.length !== before) this.log(`fdb del ${e.mac} dev ${e.dev}`);
  }

  async listFdb(dev: string): Promise<FdbEntry[]> {
    const ns = this.enter(`listFdb ${dev}`);
    const l = this.must(dev);
    return ns.fdb.filter((f) => f.ifIndex === l.index).map((f) => {
      const out: FdbEntry = { ifIndex: f.ifIndex, mac: f.mac, permanent: true };
      if (f.dst !== undefined) out.dst = f.dst;
      return out;
    });
  }

  close(): void {
    this.closed = true;
  }
}
