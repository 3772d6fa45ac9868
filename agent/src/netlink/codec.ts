/**
 * netlink/codec: conversions between our value types and the `netlink`
 * package's message structs, including the nested attributes that netlink
 * 0.3.0 leaves as raw Buffers (IFLA_LINKINFO and what nests in it: veth
 * peer, vxlan data, bridge-port slave data). No I/O here.
 */
import { AttrStream, ifla, rt, type StreamData } from 'netlink';
import { parseCidr, parseIPv4 } from '../../../lib/net/ip.js';
import type { AddressInfo, FdbEntry, LinkInfo, NeighInfo, RouteInfo, RouteScopeName, VxlanInfo } from './ops.js';

export const AF_INET = 2;
export const AF_BRIDGE = 7;
export const RT_TABLE_MAIN = 254;
/** rtm_flags bit RTNH_F_ONLINK; netlink 0.3.0 has no name for it (`__unknown`). */
export const RTNH_F_ONLINK = 4;
/** IFLA_INFO_DATA for veth: VETH_INFO_PEER. */
const VETH_INFO_PEER = 1;

export function streamToBuffer(data: StreamData): Buffer {
  const s = new AttrStream();
  s.emit(data);
  return Buffer.concat(s.bufs);
}

const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

export function macToBuffer(mac: string): Buffer {
  const m = mac.toLowerCase();
  if (!MAC_RE.test(m)) throw new TypeError(`not a MAC address: ${JSON.stringify(mac)}`);
  return Buffer.from(m.split(':').map((h) => parseInt(h, 16)));
}

export function bufferToMac(b: Uint8Array | undefined): string {
  if (!b) return '';
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(':');
}

export function ipToBuffer(ip: string): Buffer {
  return Buffer.from(parseIPv4(ip).split('.').map(Number));
}

export function bufferToIp(b: Uint8Array | undefined): string | undefined {
  if (!b || b.length !== 4) return undefined;
  return Array.from(b).join('.');
}

export function u16be(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}

/** IFLA_LINKINFO payload for creating a link of `kind` with IFLA_INFO_DATA `data`. */
export function encodeLinkInfo(info: ifla.Info): Buffer {
  return streamToBuffer(ifla.formatInfo(info));
}

/** IFLA_INFO_DATA of a veth: VETH_INFO_PEER = struct ifinfomsg + the peer's link attributes. */
export function encodeVethPeer(peer: ifla.LinkAttrs): Buffer {
  const s = new AttrStream();
  s.push(VETH_INFO_PEER, (out: AttrStream) => {
    out.emit(rt.formatLink({}));
    out.emit(ifla.formatLinkAttrs(peer));
  });
  return Buffer.concat(s.bufs);
}

export function encodeVxlanData(v: { vni: number; port: number; devIndex: number; local: string; learning: boolean }): Buffer {
  return streamToBuffer(
    ifla.formatVxlan({ id: v.vni, link: v.devIndex, local: ipToBuffer(v.local), port: u16be(v.port), learning: v.learning ? 1 : 0 }),
  );
}

export function encodeBridgePortData(p: { hairpin: boolean }): Buffer {
  return streamToBuffer(ifla.formatBridgePort({ mode: p.hairpin ? 1 : 0 }));
}

function parseVxlanInfo(data: Buffer): VxlanInfo {
  const v = ifla.parseVxlan(data);
  const info: VxlanInfo = {
    vni: v.id ?? 0,
    port: v.port && v.port.length === 2 ? v.port.readUInt16BE(0) : 0,
    learning: (v.learning ?? 0) !== 0,
  };
  if (v.link) info.dev = v.link;
  const local = bufferToIp(v.local);
  if (local && local !== '0.0.0.0') info.local = local;
  return info;
}

export function linkFromMessage(m: rt.LinkMessage): LinkInfo {
  const a = m.attrs;
  const info: LinkInfo = {
    index: m.data.index ?? 0,
    name: a.ifname ?? '',
    mac: bufferToMac(a.address),
    mtu: a.mtu ?? 0,
    up: m.data.flags?.up === true,
    promisc: m.data.flags?.promisc === true,
  };
  if (a.master) info.master = a.master;
  if (a.linkinfo) {
    const li = ifla.parseInfo(a.linkinfo);
    if (li.kind) info.kind = li.kind;
    if (li.slaveKind) info.slaveKind = li.slaveKind;
    if (li.slaveKind === 'bridge' && li.slaveData) {
      info.hairpin = (ifla.parseBridgePort(li.slaveData).mode ?? 0) !== 0;
    }
    if (li.kind === 'vxlan' && li.data) info.vxlan = parseVxlanInfo(li.data);
  }
  return info;
}

export function addressFromMessage(m: rt.AddressMessage): AddressInfo | null {
  if (m.data.family !== AF_INET) return null;
  const ip = bufferToIp(m.attrs.local ?? m.attrs.address);
  if (!ip) return null;
  return { ifIndex: m.data.index ?? 0, address: `${ip}/${m.data.prefixlen ?? 0}` };
}

const SCOPES: Record<RouteScopeName, number> = { universe: 0, site: 200, link: 253, host: 254, nowhere: 255 };

export function scopeNumber(s: RouteScopeName): number {
  return SCOPES[s];
}

function scopeName(v: unknown): RouteScopeName {
  if (typeof v === 'string') {
    const k = v.toLowerCase();
    if (k in SCOPES) return k as RouteScopeName;
  }
  if (typeof v === 'number') {
    for (const [k, n] of Object.entries(SCOPES)) if (n === v) return k as RouteScopeName;
  }
  return 'universe';
}

function enumNumber(map: Record<string, string | number>, v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const n = map[v];
    return typeof n === 'number' ? n : undefined;
  }
  return undefined;
}

function protocolName(v: unknown): string {
  const n = enumNumber(rt.RouteProtocol as unknown as Record<string, string | number>, v);
  switch (n) {
    case 2: return 'kernel';
    case 3: return 'boot';
    case 4: return 'static';
    default: return String(n ?? v);
  }
}

/** A main-table IPv4 unicast route, or null for anything else. `names` maps ifindex to name. */
export function routeFromMessage(m: rt.RouteMessage, names: ReadonlyMap<number, string>): RouteInfo | null {
  const d = m.data;
  if (d.family !== AF_INET) return null;
  const table = m.attrs.table ?? d.table;
  if (table !== RT_TABLE_MAIN) return null;
  if (enumNumber(rt.RouteType as unknown as Record<string, string | number>, d.type) !== 1) return null;
  const dstLen = d.dstLen ?? 0;
  const dstIp = bufferToIp(m.attrs.dst) ?? '0.0.0.0';
  const r: RouteInfo = {
    dst: dstLen === 0 ? 'default' : `${dstIp}/${dstLen}`,
    onlink: ((d.flags?.__unknown ?? 0) & RTNH_F_ONLINK) !== 0,
    scope: scopeName(d.scope),
    protocol: protocolName(d.protocol),
  };
  const gw = bufferToIp(m.attrs.gateway);
  if (gw) r.gw = gw;
  if (m.attrs.oif) {
    r.ifIndex = m.attrs.oif;
    const n = names.get(m.attrs.oif);
    if (n) r.dev = n;
  }
  const src = bufferToIp(m.attrs.prefsrc);
  if (src) r.src = src;
  return r;
}

/** Normalises a route destination: 'default' or '0.0.0.0/0' → 0-length; host bits set → TypeError. */
export function parseRouteDst(dst: string): { ip: string; len: number } {
  if (dst === 'default') return { ip: '0.0.0.0', len: 0 };
  const c = parseCidr(dst);
  if (`${c.ip}/${c.prefix}` !== dst) throw new TypeError(`route destination ${dst} has host bits set (use ${c.cidr})`);
  return { ip: c.ip, len: c.prefix };
}

export function neighFromMessage(m: rt.NeighborMessage): NeighInfo | null {
  if (m.data.family !== AF_INET) return null;
  const ip = bufferToIp(m.attrs.dst);
  if (!ip) return null;
  const n: NeighInfo = { ifIndex: m.data.ifindex ?? 0, ip, permanent: m.data.state?.permanent === true };
  if (m.attrs.lladdr) n.mac = bufferToMac(m.attrs.lladdr);
  return n;
}

export function fdbFromMessage(m: rt.NeighborMessage): FdbEntry | null {
  if (m.data.family !== AF_BRIDGE || !m.attrs.lladdr) return null;
  const e: FdbEntry = { ifIndex: m.data.ifindex ?? 0, mac: bufferToMac(m.attrs.lladdr), permanent: m.data.state?.permanent === true };
  const dst = bufferToIp(m.attrs.dst);
  if (dst) e.dst = dst;
  return e;
}
