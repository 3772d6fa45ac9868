/**
 * netlink: NetlinkOps over a real rtnetlink socket (the `netlink` npm
 * package, 0.3.0), bound to one network namespace.
 *
 * Opening inside another namespace: the socket is created between a
 * setns(target) and a setns(back) on the main thread (withNetnsSync); a
 * netlink socket talks to the namespace it was created in for its whole
 * life, so everything sent on it afterwards acts there. No process spawns.
 *
 * What 0.3.0 needs from us (measured, see MEASURED.md):
 *  - IFLA_LINKINFO and everything nested in it is a raw Buffer: codec.ts
 *    encodes the veth peer (with IFLA_NET_NS_FD so the peer is born inside
 *    the pod namespace under its final name), vxlan data and bridge-port
 *    slave data. Hairpin goes through IFLA_INFO_SLAVE_DATA on RTM_NEWLINK;
 *    IFLA_PROTINFO is rejected with EINVAL (the library drops NLA_F_NESTED).
 *  - Kernel NACKs are plain Errors "Request rejected: EXXX"; errnoOf() digs
 *    the errno name out so callers can branch on it.
 *  - Two dumps in flight on one socket fail, so requests on a handle are
 *    serialised (one outstanding request at a time).
 *  - Onlink routes have no named flag: rtm_flags `__unknown: RTNH_F_ONLINK`.
 *
 * Cost: a request that only changes something is ~0.08 ms here, a getLink
 * ~0.26 ms (the kernel builds, and the package parses, a full link message).
 * So link changes address the link by name (RTM_NEWLINK without CREATE
 * looks it up by IFLA_IFNAME) and the ifindexes that addresses and routes
 * need are cached per handle: the kernel never reuses an ifindex soon, and
 * an ENODEV on a cached index drops it and retries once with a fresh lookup.
 * A veth is created with its master, its up flag and both MACs in the one
 * RTM_NEWLINK, so a pod's veth costs two requests (the peer is brought up
 * apart: the kernel opens it before the pair is linked), not eight.
 */
import { closeSync, openSync } from 'node:fs';
import { createRtNetlink, FlagsNew, type rt, type RtNetlinkSocket } from 'netlink';
import { ErrorCode, LinkNotFoundError, NetnsNotFoundError, NodenetError } from '../../../lib/errors/errors.js';
import { parseIPNet, parseIPv4, broadcast } from '../../../lib/net/ip.js';
import { withNetnsSync, type NetnsPath } from '../netns/netns.js';
import {
  AF_BRIDGE, AF_INET, RT_TABLE_MAIN, RTNH_F_ONLINK,
  addressFromMessage, encodeBridgePortData, encodeLinkInfo, encodeVethPeer, encodeVxlanData, fdbFromMessage,
  ipToBuffer, linkFromMessage, macToBuffer, neighFromMessage, parseRouteDst, routeFromMessage, scopeNumber,
} from './codec.js';
import { NetlinkError, errnoOf } from './netlink-error.js';
import type { LinkDeleter } from './link-deleter.js';
import type {
  AddressInfo, BridgeOptions, FdbEntry, LinkInfo, NeighInfo, NetlinkOps, RouteInfo, RouteSpec, VethSpec, VxlanSpec,
} from './ops.js';

const CREATE_EXCL = FlagsNew.CREATE | FlagsNew.EXCL;
const CREATE_REPLACE = FlagsNew.CREATE | FlagsNew.REPLACE;
const CREATE_APPEND = FlagsNew.CREATE | FlagsNew.APPEND;
const RTPROT_BOOT = 3;
const RTN_UNICAST = 1;

/**
 * Opens an rtnetlink socket in `netns` (or in the caller's namespace).
 * @throws NetnsNotFoundError if netns cannot be entered.
 */
export function openNetlink(netns?: NetnsPath, opts: { deleter?: LinkDeleter } = {}): NetlinkHandle {
  if (netns && opts.deleter) throw new TypeError('openNetlink: a link deleter works in the caller\'s own namespace only');
  const sock = netns ? withNetnsSync(netns, () => createRtNetlink()) : createRtNetlink();
  return new NetlinkHandle(sock, netns, opts.deleter);
}

export class NetlinkHandle implements NetlinkOps {
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** name → ifindex, filled by lookups; dropped on delete and on ENODEV. */
  private readonly indexes = new Map<string, number>();
  /** The last socket-level error, reported with the next failing request. */
  private socketError: unknown;

  /** @param deleter creates veths and deletes links off the main thread (the kernel's work blocks the sender for milliseconds). */
  constructor(private readonly sock: RtNetlinkSocket, readonly netns: NetnsPath | undefined, private readonly deleter?: LinkDeleter) {
    // An unhandled 'error' event would crash the process.
    sock.socket.on('error', (e) => { this.socketError = e; });
  }

  /** Runs one request at a time on this socket; maps failures to NetlinkError. */
  private req<T>(op: string, f: (s: RtNetlinkSocket) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      if (this.closed) throw new NodenetError(ErrorCode.Netlink, `netlink ${op}: socket closed`);
      try {
        return await f(this.sock);
      } catch (e) {
        if (e instanceof NodenetError) throw e;
        throw new NetlinkError(op, errnoOf(e), { cause: e, details: this.socketError ? String(this.socketError) : '' });
      }
    };
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }

  private async linkOrThrow(name: string): Promise<LinkInfo> {
    const l = await this.getLink(name);
    if (!l) throw new LinkNotFoundError(name);
    return l;
  }

  /** The ifindex of `name`, from the cache or a lookup. @throws LinkNotFoundError */
  private async indexOf(name: string): Promise<number> {
    const cached = this.indexes.get(name);
    if (cached !== undefined) return cached;
    return (await this.linkOrThrow(name)).index;
  }

  /** Runs `f` with the ifindexes of `names`; if a cached one is stale (ENODEV), looks them up again and retries once. */
  private async withIndexes<T>(names: readonly string[], f: (idx: number[]) => Promise<T>): Promise<T> {
    const fromCache = names.some((n) => this.indexes.has(n));
    try {
      return await f(await Promise.all(names.map((n) => this.indexOf(n))));
    } catch (e) {
      if (!fromCache || errnoOf(e) !== 'ENODEV') throw e;
      for (const n of names) this.indexes.delete(n);
      return f(await Promise.all(names.map((n) => this.indexOf(n))));
    }
  }

  /** RTM_NEWLINK without CREATE on the link named `name`: the kernel finds it by IFLA_IFNAME. */
  private async changeLink(op: string, name: string, data: Parameters<RtNetlinkSocket['newLink']>[0], attrs: Parameters<RtNetlinkSocket['newLink']>[1] = {}): Promise<void> {
    try {
      await this.req(op, (s) => s.newLink(data, { ...attrs, ifname: name }));
    } catch (e) {
      if (errnoOf(e) === 'ENODEV') throw new LinkNotFoundError(name, { cause: e });
      throw e;
    }
  }

  async getLink(name: string): Promise<LinkInfo | null> {
    try {
      const msgs = await this.req(`getLink ${name}`, (s) => s.getLink({}, { ifname: name }));
      const l = msgs[0] ? linkFromMessage(msgs[0]) : null;
      if (l) this.indexes.set(l.name, l.index);
      else this.indexes.delete(name);
      return l;
    } catch (e) {
      if (errnoOf(e) === 'ENODEV') {
        this.indexes.delete(name);
        return null;
      }
      throw e;
    }
  }

  async getLinkByIndex(index: number): Promise<LinkInfo | null> {
    try {
      const msgs = await this.req(`getLinkByIndex ${index}`, (s) => s.getLink({ index }));
      return msgs[0] ? linkFromMessage(msgs[0]) : null;
    } catch (e) {
      if (errnoOf(e) === 'ENODEV') return null;
      throw e;
    }
  }

  async listLinks(): Promise<LinkInfo[]> {
    const msgs = await this.req('listLinks', (s) => s.getLinks());
    return msgs.map(linkFromMessage);
  }

  async ensureBridge(name: string, opts: BridgeOptions = {}): Promise<LinkInfo> {
    let link = await this.getLink(name);
    if (link && link.kind !== 'bridge') {
      throw new NodenetError(ErrorCode.LinkExists, `ensureBridge ${name}: a link of kind ${link.kind ?? 'none'} has that name`);
    }
    if (!link) {
      const attrs: Parameters<RtNetlinkSocket['newLink']>[1] = { ifname: name, linkinfo: encodeLinkInfo({ kind: 'bridge' }) };
      if (opts.mtu !== undefined) attrs.mtu = opts.mtu;
      if (opts.mac !== undefined) attrs.address = macToBuffer(opts.mac);
      try {
        await this.req(`ensureBridge ${name}`, (s) => s.newLink({}, attrs, { flags: CREATE_EXCL }));
      } catch (e) {
        if (errnoOf(e) !== 'EEXIST') throw e; // lost a race with another creator: fine if it is a bridge
      }
      link = await this.linkOrThrow(name);
      if (link.kind !== 'bridge') throw new NodenetError(ErrorCode.LinkExists, `ensureBridge ${name}: a non-bridge link took the name`);
    }
    if (opts.mtu !== undefined && link.mtu !== opts.mtu) await this.setMtu(name, opts.mtu);
    if (opts.mac !== undefined && link.mac.toLowerCase() !== opts.mac.toLowerCase()) await this.setMac(name, opts.mac);
    if (opts.promisc !== undefined && link.promisc !== opts.promisc) await this.setPromisc(name, opts.promisc);
    if (!link.up) await this.setUp(name);
    return this.linkOrThrow(name);
  }

  async ensureDummy(name: string): Promise<LinkInfo> {
    const link = await this.getLink(name);
    if (link) {
      if (link.kind !== 'dummy') throw new NodenetError(ErrorCode.LinkExists, `ensureDummy ${name}: a link of kind ${link.kind ?? 'none'} has that name`);
      return link;
    }
    try {
      await this.req(`ensureDummy ${name}`, (s) => s.newLink({}, { ifname: name, linkinfo: encodeLinkInfo({ kind: 'dummy' }) }, { flags: CREATE_EXCL }));
    } catch (e) {
      if (errnoOf(e) !== 'EEXIST') throw e; // lost a race with another creator: fine if it is a dummy
    }
    const made = await this.linkOrThrow(name);
    if (made.kind !== 'dummy') throw new NodenetError(ErrorCode.LinkExists, `ensureDummy ${name}: a non-dummy link took the name`);
    return made;
  }

  async createVeth(spec: VethSpec): Promise<void> {
    const op = `createVeth ${spec.name}/${spec.peerName}`;
    let peerFd: number | undefined;
    if (spec.peerNetns) {
      try {
        peerFd = openSync(spec.peerNetns, 'r');
      } catch (e) {
        throw new NetnsNotFoundError(spec.peerNetns, { cause: e });
      }
    }
    try {
      const peer: Parameters<RtNetlinkSocket['newLink']>[1] = { ifname: spec.peerName };
      if (peerFd !== undefined) peer.netNsFd = peerFd;
      if (spec.mtu !== undefined) peer.mtu = spec.mtu;
      if (spec.peerMac !== undefined) peer.address = macToBuffer(spec.peerMac);
      const attrs: Parameters<RtNetlinkSocket['newLink']>[1] = {
        ifname: spec.name,
        linkinfo: encodeLinkInfo({ kind: 'veth', data: encodeVethPeer(peer) }),
      };
      if (spec.mtu !== undefined) attrs.mtu = spec.mtu;
      if (spec.mac !== undefined) attrs.address = macToBuffer(spec.mac);
      const data: Parameters<RtNetlinkSocket['newLink']>[0] = spec.up ? { flags: { up: true }, change: { up: true } } : {};
      const create = async () => {
        if (spec.master !== undefined) attrs.master = await this.indexOf(spec.master);
        if (this.deleter) await this.deleter.newLink(op, data, attrs, CREATE_EXCL);
        else await this.req(op, (s) => s.newLink(data, attrs, { flags: CREATE_EXCL }));
      };
      try {
        await create();
      } catch (e) {
        // A cached master index whose bridge is gone: the kernel says EINVAL; look the master up again.
        if (spec.master === undefined || !this.indexes.has(spec.master) || errnoOf(e) !== 'EINVAL') throw e;
        this.indexes.delete(spec.master);
        await create();
      }
    } catch (e) {
      const errno = errnoOf(e);
      if (errno === 'EEXIST') {
        throw new NodenetError(ErrorCode.LinkExists, `${op}: a link with one of these names exists`, { cause: e });
      }
      if (errno === 'EINVAL' && spec.peerNetns) {
        // IFLA_NET_NS_FD that is not a network namespace (a placeholder whose mount is gone).
        throw new NetnsNotFoundError(spec.peerNetns, { cause: e });
      }
      throw e;
    } finally {
      if (peerFd !== undefined) closeSync(peerFd);
    }
  }

  async createVxlan(spec: VxlanSpec): Promise<LinkInfo> {
    const op = `createVxlan ${spec.name}`;
    const dev = await this.linkOrThrow(spec.dev);
    const attrs: Parameters<RtNetlinkSocket['newLink']>[1] = {
      ifname: spec.name,
      linkinfo: encodeLinkInfo({
        kind: 'vxlan',
        data: encodeVxlanData({ vni: spec.vni, port: spec.port, devIndex: dev.index, local: spec.local, learning: spec.learning }),
      }),
    };
    if (spec.mtu !== undefined) attrs.mtu = spec.mtu;
    if (spec.mac !== undefined) attrs.address = macToBuffer(spec.mac);
    try {
      await this.req(op, (s) => s.newLink({}, attrs, { flags: CREATE_EXCL }));
    } catch (e) {
      if (errnoOf(e) === 'EEXIST' && (await this.getLink(spec.name))) {
        throw new NodenetError(ErrorCode.LinkExists, `${op}: a link with that name exists`, { cause: e });
      }
      throw e;
    }
    return this.linkOrThrow(spec.name);
  }

  async setMaster(name: string, bridgeName: string): Promise<void> {
    const [l, br] = [await this.linkOrThrow(name), await this.linkOrThrow(bridgeName)];
    if (l.master === br.index) return;
    await this.req(`setMaster ${name} ${bridgeName}`, (s) => s.setLink({ index: l.index }, { master: br.index }));
  }

  /** Idempotent: setting an unchanged master is a no-op in the kernel. One request when the bridge's index is known. */

  async setNoMaster(name: string): Promise<void> {
    const l = await this.linkOrThrow(name);
    if (l.master === undefined) return;
    await this.req(`setNoMaster ${name}`, (s) => s.setLink({ index: l.index }, { master: 0 }));
  }

  async setUp(name: string): Promise<void> {
    await this.changeLink(`setUp ${name}`, name, { flags: { up: true }, change: { up: true } });
  }

  async setDown(name: string): Promise<void> {
    await this.changeLink(`setDown ${name}`, name, { flags: {}, change: { up: true } });
  }

  async setMtu(name: string, mtu: number): Promise<void> {
    await this.changeLink(`setMtu ${name} ${mtu}`, name, {}, { mtu });
  }

  async setMac(name: string, mac: string): Promise<void> {
    await this.changeLink(`setMac ${name} ${mac}`, name, {}, { address: macToBuffer(mac) });
  }

  async setHairpin(name: string, on: boolean): Promise<void> {
    // RTM_NEWLINK on an existing link (no CREATE) carrying IFLA_INFO_SLAVE_DATA; RTM_SETLINK ignores IFLA_LINKINFO.
    const linkinfo = encodeLinkInfo({ slaveKind: 'bridge', slaveData: encodeBridgePortData({ hairpin: on }) });
    await this.changeLink(`setHairpin ${name} ${on}`, name, {}, { linkinfo });
  }

  async setPromisc(name: string, on: boolean): Promise<void> {
    await this.changeLink(`setPromisc ${name} ${on}`, name, { flags: on ? { promisc: true } : {}, change: { promisc: true } });
  }

  async deleteLink(name: string): Promise<void> {
    this.indexes.delete(name);
    if (this.deleter) return this.deleter.delete(name);
    try {
      await this.req(`deleteLink ${name}`, (s) => s.delLink({}, { ifname: name }));
    } catch (e) {
      if (errnoOf(e) === 'ENODEV') throw new LinkNotFoundError(name, { cause: e });
      throw e;
    }
  }

  private addrMsg(index: number, cidr: string): { data: rt.Address; attrs: rt.AddressAttrs } {
    const n = parseIPNet(cidr);
    const attrs: rt.AddressAttrs = { local: ipToBuffer(n.ip), address: ipToBuffer(n.ip) };
    if (n.prefix < 31) attrs.broadcast = ipToBuffer(broadcast(n.network.cidr));
    return { data: { family: AF_INET, prefixlen: n.prefix, index }, attrs };
  }

  async addAddress(name: string, cidr: string): Promise<void> {
    await this.withIndexes([name], async ([index]) => {
      const m = this.addrMsg(index!, cidr);
      try {
        await this.req(`addAddress ${name} ${cidr}`, (s) => s.newAddress(m.data, m.attrs, { flags: CREATE_EXCL }));
      } catch (e) {
        if (errnoOf(e) !== 'EEXIST') throw e;
      }
    });
  }

  async delAddress(name: string, cidr: string): Promise<void> {
    const l = await this.linkOrThrow(name);
    const m = this.addrMsg(l.index, cidr);
    try {
      await this.req(`delAddress ${name} ${cidr}`, (s) => s.delAddress(m.data, m.attrs));
    } catch (e) {
      if (errnoOf(e) !== 'EADDRNOTAVAIL') throw e;
    }
  }

  async listAddresses(name?: string): Promise<AddressInfo[]> {
    const index = name === undefined ? undefined : (await this.linkOrThrow(name)).index;
    const msgs = await this.req('listAddresses', (s) => s.getAddresses({ family: AF_INET }));
    const out: AddressInfo[] = [];
    for (const m of msgs) {
      const a = addressFromMessage(m);
      if (a && (index === undefined || a.ifIndex === index)) out.push(a);
    }
    return out;
  }

  private async routeMsg(spec: RouteSpec, forDelete: boolean): Promise<{ data: rt.Route; attrs: rt.RouteAttrs }> {
    const dst = parseRouteDst(spec.dst);
    if (spec.onlink && (!spec.gw || !spec.dev)) throw new TypeError(`route ${spec.dst}: onlink needs gw and dev`);
    const attrs: rt.RouteAttrs = {};
    if (dst.len > 0) attrs.dst = ipToBuffer(dst.ip);
    if (spec.gw !== undefined) attrs.gateway = ipToBuffer(parseIPv4(spec.gw));
    if (spec.dev !== undefined) attrs.oif = await this.indexOf(spec.dev);
    const scope = forDelete ? 'nowhere' : (spec.scope ?? (spec.gw !== undefined ? 'universe' : 'link'));
    const data: rt.Route = {
      family: AF_INET,
      dstLen: dst.len,
      table: RT_TABLE_MAIN,
      scope: scopeNumber(scope),
    };
    if (forDelete) {
      if (spec.protocol !== undefined) data.protocol = spec.protocol;
    } else {
      data.protocol = spec.protocol ?? RTPROT_BOOT;
      data.type = RTN_UNICAST;
      if (spec.onlink) data.flags = { __unknown: RTNH_F_ONLINK };
    }
    return { data, attrs };
  }

  async addRoute(spec: RouteSpec): Promise<void> {
    await this.withIndexes(spec.dev === undefined ? [] : [spec.dev], async () => {
      const m = await this.routeMsg(spec, false);
      await this.req(`addRoute ${describeRoute(spec)}`, (s) => s.newRoute(m.data, m.attrs, { flags: CREATE_REPLACE }));
    });
  }

  async delRoute(spec: RouteSpec): Promise<void> {
    let m: { data: rt.Route; attrs: rt.RouteAttrs };
    try {
      m = await this.routeMsg(spec, true);
    } catch (e) {
      if (e instanceof LinkNotFoundError) return; // its routes went with the link
      throw e;
    }
    try {
      await this.req(`delRoute ${describeRoute(spec)}`, (s) => s.delRoute(m.data, m.attrs));
    } catch (e) {
      if (errnoOf(e) !== 'ESRCH') throw e;
    }
  }

  async listRoutes(): Promise<RouteInfo[]> {
    const names = new Map((await this.listLinks()).map((l) => [l.index, l.name] as const));
    const msgs = await this.req('listRoutes', (s) => s.getRoutes({ family: AF_INET }));
    const out: RouteInfo[] = [];
    for (const m of msgs) {
      const r = routeFromMessage(m, names);
      if (r) out.push(r);
    }
    return out;
  }

  async addNeigh(n: { dev: string; ip: string; mac: string; permanent: boolean }): Promise<void> {
    const l = await this.linkOrThrow(n.dev);
    const data: rt.Neighbor = { family: AF_INET, ifindex: l.index, state: n.permanent ? { permanent: true } : { reachable: true } };
    const attrs: rt.NeighborAttrs = { dst: ipToBuffer(n.ip), lladdr: macToBuffer(n.mac) };
    await this.req(`addNeigh ${n.ip} dev ${n.dev}`, (s) => s.newNeighbor(data, attrs, { flags: CREATE_REPLACE }));
  }

  async delNeigh(n: { dev: string; ip: string }): Promise<void> {
    const l = await this.getLink(n.dev);
    if (!l) return;
    try {
      await this.req(`delNeigh ${n.ip} dev ${n.dev}`, (s) => s.delNeighbor({ family: AF_INET, ifindex: l.index }, { dst: ipToBuffer(n.ip) }));
    } catch (e) {
      if (errnoOf(e) !== 'ENOENT') throw e;
    }
  }

  async listNeighs(dev?: string): Promise<NeighInfo[]> {
    const index = dev === undefined ? undefined : (await this.linkOrThrow(dev)).index;
    const msgs = await this.req('listNeighs', (s) => s.getNeighbors({ family: AF_INET }));
    const out: NeighInfo[] = [];
    for (const m of msgs) {
      const n = neighFromMessage(m);
      if (n && (index === undefined || n.ifIndex === index)) out.push(n);
    }
    return out;
  }

  async appendFdb(e: { dev: string; mac: string; dst: string }): Promise<void> {
    const l = await this.linkOrThrow(e.dev);
    const data: rt.Neighbor = { family: AF_BRIDGE, ifindex: l.index, state: { permanent: true }, flags: { self: true } };
    const attrs: rt.NeighborAttrs = { lladdr: macToBuffer(e.mac), dst: ipToBuffer(e.dst) };
    await this.req(`appendFdb ${e.mac} dev ${e.dev} dst ${e.dst}`, (s) => s.newNeighbor(data, attrs, { flags: CREATE_APPEND }));
  }

  async replaceFdb(e: { dev: string; mac: string; dst: string }): Promise<void> {
    const l = await this.linkOrThrow(e.dev);
    const data: rt.Neighbor = { family: AF_BRIDGE, ifindex: l.index, state: { permanent: true }, flags: { self: true } };
    const attrs: rt.NeighborAttrs = { lladdr: macToBuffer(e.mac), dst: ipToBuffer(e.dst) };
    await this.req(`replaceFdb ${e.mac} dev ${e.dev} dst ${e.dst}`, (s) => s.newNeighbor(data, attrs, { flags: CREATE_REPLACE }));
  }

  async delFdb(e: { dev: string; mac: string; dst?: string }): Promise<void> {
    const l = await this.getLink(e.dev);
    if (!l) return;
    const attrs: rt.NeighborAttrs = { lladdr: macToBuffer(e.mac) };
    if (e.dst !== undefined) attrs.dst = ipToBuffer(e.dst);
    try {
      await this.req(`delFdb ${e.mac} dev ${e.dev}`, (s) =>
        s.delNeighbor({ family: AF_BRIDGE, ifindex: l.index, flags: { self: true } }, attrs));
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
    }
  }

  async listFdb(dev: string): Promise<FdbEntry[]> {
    const l = await this.linkOrThrow(dev);
    const msgs = await this.req(`listFdb ${dev}`, (s) => s.getNeighbors({ family: AF_BRIDGE }));
    const out: FdbEntry[] = [];
    for (const m of msgs) {
      const f = fdbFromMessage(m);
      if (f && f.ifIndex === l.index && m.data.flags?.self === true) out.push(f);
    }
    return out;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sock.socket.close();
  }
}

function describeRoute(r: RouteSpec): string {
  return [r.dst, r.gw ? `via ${r.gw}` : '', r.dev ? `dev ${r.dev}` : '', r.onlink ? 'onlink' : ''].filter(Boolean).join(' ');
}
