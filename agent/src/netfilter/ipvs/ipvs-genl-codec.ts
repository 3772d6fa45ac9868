/**
 * netfilter/ipvs-genl-codec: the kernel's "IPVS" generic netlink family
 * (include/uapi/linux/ip_vs.h), encoded and decoded by hand. Pure: buffers
 * in, buffers out; ipvs-genl.ts does the I/O.
 *
 * The `netlink` package (0.3.0) speaks generic netlink (header, family
 * lookup, dumps) but knows no IPVS attributes, so they are written here:
 * a netlink attribute is {u16 len, u16 type, payload, pad to 4}; the
 * service and destination are nested attributes (NLA_F_NESTED set; the
 * kernel's IPVS ops parse them non-strictly either way).
 *
 * Byte order, as the kernel reads each field: ports are __be16 and the
 * netmask __be32 (network order); everything else (af, protocol, flags,
 * timeout, forwarding method, weight, thresholds, counters) is host order.
 * Addresses are 4 bytes for IPv4 on the way in; the kernel answers with the
 * 16-byte union nf_inet_addr, IPv4 in its first 4 bytes.
 *
 * A NEW or SET of a service must carry scheduler, flags, timeout and
 * netmask; a NEW or SET of a destination forwarding method, weight and both
 * thresholds: the kernel answers EINVAL otherwise (ip_vs_genl_parse_*).
 */
import type { ForwardMethod, IpvsOp, IpvsProtocol, RealServer, RealServerState, VirtualServer } from './ipvs-types.js';

export const IPVS_GENL_NAME = 'IPVS';
export const IPVS_GENL_VERSION = 1;

export const IPVS_CMD = {
  NEW_SERVICE: 1, SET_SERVICE: 2, DEL_SERVICE: 3, GET_SERVICE: 4,
  NEW_DEST: 5, SET_DEST: 6, DEL_DEST: 7, GET_DEST: 8,
  GET_INFO: 15, FLUSH: 17,
} as const;

const CMD_ATTR_SERVICE = 1;
const CMD_ATTR_DEST = 2;

const SVC = { AF: 1, PROTOCOL: 2, ADDR: 3, PORT: 4, FWMARK: 5, SCHED_NAME: 6, FLAGS: 7, TIMEOUT: 8, NETMASK: 9 } as const;
const DEST = { ADDR: 1, PORT: 2, FWD_METHOD: 3, WEIGHT: 4, U_THRESH: 5, L_THRESH: 6, ACTIVE_CONNS: 7, INACT_CONNS: 8, PERSIST_CONNS: 9, ADDR_FAMILY: 11 } as const;
const INFO = { VERSION: 1, CONN_TAB_SIZE: 2 } as const;

export const NLA_F_NESTED = 0x8000;
const NLA_TYPE_MASK = 0x3fff;
const AF_INET = 2;
export const IP_VS_SVC_F_PERSISTENT = 0x0001;
const PROTO_NUM: Readonly<Record<IpvsProtocol, number>> = { TCP: 6, UDP: 17, SCTP: 132 };
const FWD_NUM: Readonly<Record<ForwardMethod, number>> = { masq: 0, local: 1, tunnel: 2, route: 3 };
/** IP_VS_SCHEDNAME_MAXLEN, with the NUL. */
const SCHEDNAME_MAX = 16;

const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  if (LITTLE) b.writeUInt16LE(n);
  else b.writeUInt16BE(n);
  return b;
}
function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  if (LITTLE) b.writeUInt32LE(n >>> 0);
  else b.writeUInt32BE(n >>> 0);
  return b;
}
function be16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}
function be32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}
function readU16(b: Buffer): number {
  return LITTLE ? b.readUInt16LE(0) : b.readUInt16BE(0);
}
function readU32(b: Buffer): number {
  return LITTLE ? b.readUInt32LE(0) : b.readUInt32BE(0);
}
function ip4(ip: string): Buffer {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new TypeError(`not an IPv4 address: ${JSON.stringify(ip)}`);
  return Buffer.from(parts);
}

/** One attribute: header, payload, padding to 4 bytes. */
export function attr(type: number, payload: Buffer, nested = false): Buffer {
  const len = 4 + payload.length;
  const pad = (4 - (len % 4)) % 4;
  const out = Buffer.alloc(len + pad);
  // The header is host order too.
  u16(len).copy(out, 0);
  u16(type | (nested ? NLA_F_NESTED : 0)).copy(out, 2);
  payload.copy(out, 4);
  return out;
}

/** Attributes of a buffer by type (flags stripped; the last of a repeated type wins). Throws on a truncated attribute. */
export function parseAttrs(buf: Buffer): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  let off = 0;
  while (off + 4 <= buf.length) {
    const len = LITTLE ? buf.readUInt16LE(off) : buf.readUInt16BE(off);
    const type = (LITTLE ? buf.readUInt16LE(off + 2) : buf.readUInt16BE(off + 2)) & NLA_TYPE_MASK;
    if (len < 4 || off + len > buf.length) throw new RangeError(`netlink attribute at offset ${off}: length ${len} overruns ${buf.length} bytes`);
    out.set(type, buf.subarray(off + 4, off + len));
    off += len + ((4 - (len % 4)) % 4);
  }
  return out;
}

type VsId = Pick<VirtualServer, 'protocol' | 'address' | 'port'>;

/** The nested service attribute: the key alone (DEL, GET_DEST, dest ops) or the full entry (NEW, SET). */
export function encodeService(vs: VsId | VirtualServer, full: boolean): Buffer {
  const parts = [attr(SVC.AF, u16(AF_INET)), attr(SVC.PROTOCOL, u16(PROTO_NUM[vs.protocol])), attr(SVC.ADDR, ip4(vs.address)), attr(SVC.PORT, be16(vs.port))];
  if (full) {
    const v = vs as VirtualServer;
    if (v.scheduler.length === 0 || v.scheduler.length >= SCHEDNAME_MAX) throw new TypeError(`IPVS scheduler name ${JSON.stringify(v.scheduler)} must be 1-${SCHEDNAME_MAX - 1} characters`);
    const flags = v.persistentTimeout > 0 ? IP_VS_SVC_F_PERSISTENT : 0;
    parts.push(
      attr(SVC.SCHED_NAME, Buffer.from(`${v.scheduler}\0`, 'latin1')),
      attr(SVC.FLAGS, Buffer.concat([u32(flags), u32(0xffffffff)])),
      attr(SVC.TIMEOUT, u32(v.persistentTimeout)),
      attr(SVC.NETMASK, be32(0xffffffff)),
    );
  }
  return attr(CMD_ATTR_SERVICE, Buffer.concat(parts), true);
}

/** The nested destination attribute: address and port alone (DEL), or the full entry (NEW, SET). */
export function encodeDest(rs: Pick<RealServer, 'address' | 'port'> | RealServer, full: boolean): Buffer {
  const parts = [attr(DEST.ADDR, ip4(rs.address)), attr(DEST.PORT, be16(rs.port))];
  if (full) {
    const r = rs as RealServer;
    parts.push(attr(DEST.FWD_METHOD, u32(FWD_NUM[r.forward])), attr(DEST.WEIGHT, u32(r.weight)), attr(DEST.U_THRESH, u32(0)), attr(DEST.L_THRESH, u32(0)), attr(DEST.ADDR_FAMILY, u16(AF_INET)));
  }
  return attr(CMD_ATTR_DEST, Buffer.concat(parts), true);
}

/** One op as a generic netlink request: the command and its attributes. */
export function encodeOp(o: IpvsOp): { readonly cmd: number; readonly data: Buffer } {
  switch (o.op) {
    case 'add-service': return { cmd: IPVS_CMD.NEW_SERVICE, data: encodeService(o.vs, true) };
    case 'edit-service': return { cmd: IPVS_CMD.SET_SERVICE, data: encodeService(o.vs, true) };
    case 'del-service': return { cmd: IPVS_CMD.DEL_SERVICE, data: encodeService(o.vs, false) };
    case 'add-dest': return { cmd: IPVS_CMD.NEW_DEST, data: Buffer.concat([encodeService(o.vs, false), encodeDest(o.rs, true)]) };
    case 'edit-dest': return { cmd: IPVS_CMD.SET_DEST, data: Buffer.concat([encodeService(o.vs, false), encodeDest(o.rs, true)]) };
    case 'del-dest': return { cmd: IPVS_CMD.DEL_DEST, data: Buffer.concat([encodeService(o.vs, false), encodeDest(o.rs, false)]) };
  }
}

/** The request that lists one service's destinations (IPVS_CMD_GET_DEST, dumped). */
export function encodeGetDests(vs: VsId): Buffer {
  return encodeService(vs, false);
}

function addrOf(b: Buffer | undefined): string | null {
  if (!b || b.length < 4) return null;
  return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
}

const PROTO_NAME = new Map(Object.entries(PROTO_NUM).map(([k, v]) => [v, k as IpvsProtocol]));
const FWD_NAME = new Map(Object.entries(FWD_NUM).map(([k, v]) => [v, k as ForwardMethod]));

/**
 * A service from one GET_SERVICE reply's attributes; null for what nodenet
 * does not model (IPv6, firewall-mark services, unknown protocols).
 */
export function decodeService(data: Buffer): VirtualServer | null {
  const top = parseAttrs(data).get(CMD_ATTR_SERVICE);
  if (!top) return null;
  const a = parseAttrs(top);
  const af = a.get(SVC.AF);
  if (!af || readU16(af) !== AF_INET || a.has(SVC.FWMARK) && readU32(a.get(SVC.FWMARK)!) !== 0) return null;
  const proto = PROTO_NAME.get(readU16(a.get(SVC.PROTOCOL) ?? u16(0)));
  const address = addrOf(a.get(SVC.ADDR));
  const port = a.get(SVC.PORT);
  if (!proto || !address || !port) return null;
  const flagsBuf = a.get(SVC.FLAGS);
  const flags = flagsBuf && flagsBuf.length >= 4 ? readU32(flagsBuf) : 0;
  const sched = (a.get(SVC.SCHED_NAME) ?? Buffer.alloc(0)).toString('latin1').replace(/\0.*$/s, '');
  const timeout = a.get(SVC.TIMEOUT);
  return {
    protocol: proto,
    address,
    port: port.readUInt16BE(0),
    scheduler: sched,
    persistentTimeout: flags & IP_VS_SVC_F_PERSISTENT && timeout ? readU32(timeout) : 0,
  };
}

/** A destination from one GET_DEST reply's attributes; null when it is not IPv4. */
export function decodeDest(data: Buffer): RealServerState | null {
  const top = parseAttrs(data).get(CMD_ATTR_DEST);
  if (!top) return null;
  const a = parseAttrs(top);
  const fam = a.get(DEST.ADDR_FAMILY);
  if (fam && readU16(fam) !== AF_INET) return null;
  const address = addrOf(a.get(DEST.ADDR));
  const port = a.get(DEST.PORT);
  if (!address || !port) return null;
  const n = (k: number): number => {
    const b = a.get(k);
    return b && b.length >= 4 ? readU32(b) : 0;
  };
  // IP_VS_CONN_F_FWD_MASK is 0x7: the attribute may carry other connection flags above it.
  return { address, port: port.readUInt16BE(0), weight: n(DEST.WEIGHT), forward: FWD_NAME.get(n(DEST.FWD_METHOD) & 7) ?? 'masq', activeConns: n(DEST.ACTIVE_CONNS), inactiveConns: n(DEST.INACT_CONNS) };
}

/** The kernel's IPVS version from a GET_INFO reply ("1.2.1"), null if absent. */
export function decodeInfoVersion(data: Buffer): string | null {
  const v = parseAttrs(data).get(INFO.VERSION);
  if (!v || v.length < 4) return null;
  const n = readU32(v);
  return `${(n >> 16) & 0xff}.${(n >> 8) & 0xff}.${n & 0xff}`;
}

/** For tests and the fake: builds a kernel-style GET_SERVICE reply (16-byte address, flags with HASHED). */
export function encodeServiceReply(vs: VirtualServer): Buffer {
  const addr = Buffer.alloc(16);
  ip4(vs.address).copy(addr);
  const flags = (vs.persistentTimeout > 0 ? IP_VS_SVC_F_PERSISTENT : 0) | 0x2;
  return attr(
    CMD_ATTR_SERVICE,
    Buffer.concat([
      attr(SVC.AF, u16(AF_INET)), attr(SVC.PROTOCOL, u16(PROTO_NUM[vs.protocol])), attr(SVC.ADDR, addr), attr(SVC.PORT, be16(vs.port)),
      attr(SVC.SCHED_NAME, Buffer.from(`${vs.scheduler}\0`, 'latin1')), attr(SVC.FLAGS, Buffer.concat([u32(flags), u32(0xffffffff)])),
      attr(SVC.TIMEOUT, u32(vs.persistentTimeout)), attr(SVC.NETMASK, be32(0xffffffff)),
    ]),
    true,
  );
}

/** For tests and the fake: a kernel-style GET_DEST reply. */
export function encodeDestReply(rs: RealServerState): Buffer {
  const addr = Buffer.alloc(16);
  ip4(rs.address).copy(addr);
  return attr(
    CMD_ATTR_DEST,
    Buffer.concat([
      attr(DEST.ADDR, addr), attr(DEST.PORT, be16(rs.port)), attr(DEST.FWD_METHOD, u32(FWD_NUM[rs.forward])), attr(DEST.WEIGHT, u32(rs.weight)),
      attr(DEST.U_THRESH, u32(0)), attr(DEST.L_THRESH, u32(0)), attr(DEST.ACTIVE_CONNS, u32(rs.activeConns)), attr(DEST.INACT_CONNS, u32(rs.inactiveConns)),
      attr(DEST.PERSIST_CONNS, u32(0)), attr(DEST.ADDR_FAMILY, u16(AF_INET)),
    ]),
    true,
  );
}
