/**
 * netfilter/nft/netlink/dump: reading names from nf_tables over netlink:
 * whether a table exists, and the names of its chains and sets (no rules, no
 * elements).
 *
 * Why: nft 1.0.6 builds its whole cache for `nft -j list tables` (13 s with
 * 30,000 Services, every rule and element fetched and discarded) and for
 * `list chains` (0.8 s, 12 MB of JSON). A restarted agent needs only the
 * names, which the kernel dumps in a few milliseconds.
 *
 * Requests are plain (non-batch) nfnetlink messages: NFT_MSG_GETTABLE for
 * one table (answered by NEWTABLE then an ack, or ENOENT), NFT_MSG_GETCHAIN
 * and NFT_MSG_GETSET with NLM_F_DUMP (answered by NEWCHAIN / NEWSET parts
 * and NLMSG_DONE). Encoding and decoding here are pure; NfnlSocket.request
 * does the I/O.
 */
import { NFNL_SUBSYS_NFTABLES } from './encode.js';

export const NFT_MSG_GET = { TABLE: 1, CHAIN: 4, SET: 10 } as const;
const NFT_MSG_NEW = { TABLE: 0, CHAIN: 3, SET: 9 } as const;
const NLM_F_REQUEST = 0x1;
const NLM_F_ACK = 0x4;
const NLM_F_DUMP = 0x300;
export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;

/** nfgenmsg families (NFPROTO_*). */
export const NFPROTO: Readonly<Record<'ip' | 'ip6' | 'inet', number>> = { ip: 2, ip6: 10, inet: 1 };

// Attribute numbers (nf_tables.h).
const TABLE_NAME = 1;
const CHAIN_TABLE = 1;
const CHAIN_NAME = 3;
const SET_TABLE = 1;
const SET_NAME = 2;
const SET_FLAGS = 3;
const SET_TIMEOUT = 11;

/**
 * Set flags (NFT_SET_*), and the names nft 1.0.6's JSON gives the ones it
 * shows (it does not show NFT_SET_EVAL, "dynamic", in `-j list sets`).
 */
const NFT_SET_ANONYMOUS = 0x1;
const NFT_SET_MAP = 0x8;
const NFT_SET_OBJECT = 0x40;
const SET_FLAG_NAMES: readonly [number, string][] = [
  [0x2, 'constant'],
  [0x4, 'interval'],
  [0x10, 'timeout'],
];

function strAttr(type: number, s: string): Buffer {
  const v = Buffer.from(`${s}\0`);
  const a = Buffer.alloc((4 + v.length + 3) & ~3);
  a.writeUInt16LE(4 + v.length, 0);
  a.writeUInt16LE(type, 2);
  v.copy(a, 4);
  return a;
}

/** One request: nlmsghdr, nfgenmsg (family, version 0, res_id 0), attributes. */
function request(msg: number, flags: number, seq: number, family: number, attrs: readonly Buffer[]): Buffer {
  const body = Buffer.concat(attrs);
  const h = Buffer.alloc(20);
  h.writeUInt32LE(20 + body.length, 0);
  h.writeUInt16LE((NFNL_SUBSYS_NFTABLES << 8) | msg, 4);
  h.writeUInt16LE(flags, 6);
  h.writeUInt32LE(seq >>> 0, 8);
  h[16] = family;
  return Buffer.concat([h, body]);
}

/** GETTABLE for one table, with an ack: NEWTABLE then the ack, or ENOENT. */
export function getTableRequest(seq: number, family: number, table: string): Buffer {
  return request(NFT_MSG_GET.TABLE, NLM_F_REQUEST | NLM_F_ACK, seq, family, [strAttr(TABLE_NAME, table)]);
}

/** GET of one chain, set or map by name, with an ack: its NEW* message then the ack, or ENOENT. */
export function getObjectRequest(seq: number, family: number, table: string, kind: 'chain' | 'set' | 'map', name: string): Buffer {
  if (kind === 'chain') return request(NFT_MSG_GET.CHAIN, NLM_F_REQUEST | NLM_F_ACK, seq, family, [strAttr(CHAIN_TABLE, table), strAttr(CHAIN_NAME, name)]);
  return request(NFT_MSG_GET.SET, NLM_F_REQUEST | NLM_F_ACK, seq, family, [strAttr(SET_TABLE, table), strAttr(SET_NAME, name)]);
}

/** A dump of the family's chains (the kernel does not filter by table: the decoder does). */
export function dumpChainsRequest(seq: number, family: number): Buffer {
  return request(NFT_MSG_GET.CHAIN, NLM_F_REQUEST | NLM_F_DUMP, seq, family, []);
}

/** A dump of one table's sets and maps (ENOENT when the table is missing). */
export function dumpSetsRequest(seq: number, family: number, table: string): Buffer {
  return request(NFT_MSG_GET.SET, NLM_F_REQUEST | NLM_F_DUMP, seq, family, [strAttr(SET_TABLE, table)]);
}

/** One received netlink message: its type and its payload after nlmsghdr. */
export interface NlMessage {
  readonly type: number;
  readonly seq: number;
  readonly payload: Buffer;
}

/** Splits received bytes into messages (a truncated tail is dropped). */
export function splitMessages(buf: Buffer, out: NlMessage[]): void {
  for (let off = 0; off + 16 <= buf.length; ) {
    const len = buf.readUInt32LE(off);
    if (len < 16 || off + len > buf.length) break;
    out.push({ type: buf.readUInt16LE(off + 4), seq: buf.readUInt32LE(off + 8), payload: buf.subarray(off + 16, off + len) });
    off += (len + 3) & ~3;
  }
}

/** The top-level attributes of an nf_tables message (after its 4-byte nfgenmsg), by type. */
function attrs(payload: Buffer): Map<number, Buffer> {
  const m = new Map<number, Buffer>();
  for (let off = 4; off + 4 <= payload.length; ) {
    const len = payload.readUInt16LE(off);
    if (len < 4 || off + len > payload.length) break;
    m.set(payload.readUInt16LE(off + 2) & 0x3fff, payload.subarray(off + 4, off + len));
    off += (len + 3) & ~3;
  }
  return m;
}

const cstr = (b: Buffer | undefined): string | null => {
  if (!b) return null;
  const z = b.indexOf(0);
  return b.subarray(0, z < 0 ? b.length : z).toString('utf8');
};

/** The errno of an NLMSG_ERROR message (0 for an ack, negative for an error). */
export function errorOf(m: NlMessage): number {
  return m.payload.length >= 4 ? m.payload.readInt32LE(0) : 0;
}

const nftType = (msg: number) => (NFNL_SUBSYS_NFTABLES << 8) | msg;

/**
 * Whether a GET's answers hold what it asked for: `hit` tells of a NEW*
 * message whether it is the object (true), another kind of it (false), or
 * something else to skip (null). ENOENT is "not there".
 * @throws Error with the errno for any other error
 */
function found(answers: readonly NlMessage[], what: string, hit: (m: NlMessage) => boolean | null): boolean {
  for (const m of answers) {
    if (m.type === NLMSG_ERROR) {
      const e = errorOf(m);
      if (e === -2) return false; // ENOENT: no such table or object
      if (e !== 0) throw Object.assign(new Error(`${what}: errno ${-e}`), { errno: -e });
      continue;
    }
    const h = hit(m);
    if (h !== null) return h;
  }
  return false;
}

/** Whether a GETTABLE's answers hold the table. @throws Error with the errno for anything but ENOENT */
export function tableFound(answers: readonly NlMessage[]): boolean {
  return found(answers, 'GETTABLE', (m) => (m.type === nftType(NFT_MSG_NEW.TABLE) ? true : null));
}

/**
 * Whether a getObjectRequest's answers hold the object; a set asked for as
 * a map (or a map as a set) is not found, as `nft list map` of a set fails.
 * @throws Error with the errno for anything but ENOENT
 */
export function objectFound(answers: readonly NlMessage[], kind: 'chain' | 'set' | 'map'): boolean {
  return found(answers, `GET ${kind}`, (m) => {
    if (kind === 'chain') return m.type === nftType(NFT_MSG_NEW.CHAIN) ? true : null;
    if (m.type !== nftType(NFT_MSG_NEW.SET)) return null;
    const fb = attrs(m.payload).get(SET_FLAGS);
    const isMap = fb !== undefined && fb.length >= 4 && (fb.readUInt32BE(0) & NFT_SET_MAP) !== 0;
    return isMap === (kind === 'map');
  });
}

/** The names of `table`'s chains in a chain dump's answers. */
export function chainNames(answers: readonly NlMessage[], table: string): string[] {
  const out: string[] = [];
  for (const m of answers) {
    if (m.type !== nftType(NFT_MSG_NEW.CHAIN)) continue;
    const a = attrs(m.payload);
    if (cstr(a.get(CHAIN_TABLE)) !== table) continue;
    const name = cstr(a.get(CHAIN_NAME));
    if (name !== null) out.push(name);
  }
  return out;
}

export interface SetName {
  readonly name: string;
  readonly flags: readonly string[];
  /** Seconds, as nft's JSON gives it; null without a timeout. */
  readonly timeout: number | null;
}

/** The named sets (not maps, not anonymous sets: what `nft list sets` shows as sets) of `table` in a set dump's answers. */
export function setNames(answers: readonly NlMessage[], table: string): SetName[] {
  const out: SetName[] = [];
  for (const m of answers) {
    if (m.type !== nftType(NFT_MSG_NEW.SET)) continue;
    const a = attrs(m.payload);
    if (cstr(a.get(SET_TABLE)) !== table) continue;
    const name = cstr(a.get(SET_NAME));
    const fb = a.get(SET_FLAGS);
    const flags = fb && fb.length >= 4 ? fb.readUInt32BE(0) : 0;
    if (name === null || flags & (NFT_SET_ANONYMOUS | NFT_SET_MAP | NFT_SET_OBJECT)) continue;
    const tb = a.get(SET_TIMEOUT);
    const timeout = tb && tb.length >= 8 ? Math.round(Number(tb.readBigUInt64BE(0)) / 1000) : null;
    out.push({ name, flags: SET_FLAG_NAMES.filter(([bit]) => flags & bit).map(([, n]) => n), timeout });
  }
  return out;
}

/** The first error (negative errno) among the answers, or 0. */
export function firstError(answers: readonly NlMessage[]): number {
  for (const m of answers) if (m.type === NLMSG_ERROR && errorOf(m) !== 0) return errorOf(m);
  return 0;
}
