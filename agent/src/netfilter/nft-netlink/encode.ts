/**
 * netfilter/nft-netlink/encode: typed commands (commands.ts) → one nf_tables
 * netlink batch, the bytes `nft -f` would send for the same script.
 *
 * Layout (include/uapi/linux/netfilter/nfnetlink.h, nf_tables.h): each
 * message is a struct nlmsghdr (len, type = NFNL_SUBSYS_NFTABLES << 8 | msg,
 * flags, seq, portid; host order), a struct nfgenmsg (family, version 0,
 * res_id 0, big endian), then netlink attributes (u16 len, u16 type, payload
 * padded to 4; nested ones have NLA_F_NESTED in the type). nf_tables numbers
 * are big endian. The batch is NFNL_MSG_BATCH_BEGIN (res_id
 * NFNL_SUBSYS_NFTABLES), the commands, NFNL_MSG_BATCH_END; the kernel applies
 * it all or nothing. By default every command message carries NLM_F_ACK, so
 * the kernel answers each seq (0 or an errno) and an error maps back to its
 * line; a big batch (acks 'last') asks only on its last message, since the
 * kernel reports an error for any message whatever its flags.
 *
 * Expressions use the legacy 16-byte registers (NFT_REG_1 = 1) as nft 1.0.6
 * does. Pure: no I/O.
 */
import type { NlCommand, NlKeyPart, NlMatch, NlRule, NlSetKey, NlVerdict } from './commands.js';

export const NFNL_SUBSYS_NFTABLES = 10;
export const NFNL_MSG_BATCH_BEGIN = 0x10;
export const NFNL_MSG_BATCH_END = 0x11;
export const NFT_MSG = { NEWTABLE: 0, NEWCHAIN: 3, DELCHAIN: 5, NEWRULE: 6, DELRULE: 8, NEWSET: 9, DELSET: 11, NEWSETELEM: 12, DELSETELEM: 14 } as const;
export const NLM_F = { REQUEST: 0x1, ACK: 0x4, CREATE: 0x400, APPEND: 0x800 } as const;
export const NLA_F_NESTED = 0x8000;
const NFPROTO_IPV4 = 2;

// Attribute numbers (nf_tables.h).
const TABLE_A = { NAME: 1, FLAGS: 2, USERDATA: 6 } as const;
const CHAIN_A = { TABLE: 1, NAME: 3, HOOK: 4, TYPE: 7, USERDATA: 12 } as const;
const HOOK_A = { NUM: 1, PRIORITY: 2 } as const;
const HOOK_NUM = { prerouting: 0, input: 1, forward: 2, output: 3, postrouting: 4 } as const;
const RULE_A = { TABLE: 1, CHAIN: 2, EXPRESSIONS: 4, USERDATA: 7 } as const;
const SET_A = { TABLE: 1, NAME: 2, FLAGS: 3, KEY_TYPE: 4, KEY_LEN: 5, DATA_TYPE: 6, DATA_LEN: 7, ID: 10, TIMEOUT: 11, USERDATA: 13 } as const;
const ELEM_LIST_A = { TABLE: 1, SET: 2, ELEMENTS: 3 } as const;
const ELEM_A = { KEY: 1, DATA: 2, USERDATA: 6 } as const;
const NFTA_LIST_ELEM = 1;
const EXPR_A = { NAME: 1, DATA: 2 } as const;
const DATA_A = { VALUE: 1, VERDICT: 2 } as const;
const VERDICT_A = { CODE: 1, CHAIN: 2 } as const;
const VERDICT_CODE = { drop: 0, jump: -3, goto: -4, return: -5 } as const;

const NFT_REG_VERDICT = 0;
const NFT_REG_1 = 1;
const NFT_REG_2 = 2;
/** The 32-bit registers after NFT_REG_1's four (NFT_REG32_01, _02): the later parts of a concatenated key. */
const NFT_REG32_01 = 9;
const NFT_REG32_02 = 10;
const NFT_PAYLOAD_NETWORK_HEADER = 1;
const NFT_PAYLOAD_TRANSPORT_HEADER = 2;
const NFT_META_MARK = 3;
const NFT_CT_STATE = 0;
/** NF_CT_STATE_NEW_BIT, in the host-order register ct writes. */
const CT_STATE_NEW = 8;
const NFTA_FIB_F_DADDR = 2;
const NFT_REJECT_ICMP_UNREACH = 0;
const ICMP_PORT_UNREACH = 3;
const NFT_BITWISE_BOOL = 0;
const NF_NAT_RANGE_PROTO_RANDOM_FULLY = 0x10;
/** Set flag NFT_SET_MAP; a verdict map's data type (NFT_DATA_VERDICT). */
const NFT_SET_MAP = 0x8;
const NFT_DATA_VERDICT = 0xffffff00;
/** nft's datatype numbers: a concatenation is (a << 6 | b) << 6 | c (TYPE_BITS). */
const TYPE_INET_PROTOCOL = 12;
const TYPE_INET_SERVICE = 13;
const NFT_CMP_EQ = 0;
const NFT_CMP_NEQ = 1;
const NFT_META_L4PROTO = 16;
const NFT_NG_RANDOM = 1;
const NFTA_FIB_F_SADDR = 1;
const NFT_FIB_RESULT_ADDRTYPE = 3;
const RTN_LOCAL = 2;
const NFT_DYNSET_OP_UPDATE = 1;
const NFT_NAT_DNAT = 1;
const NF_NAT_RANGE_PROTO_SPECIFIED = 2;
/** Set flags: NFT_SET_TIMEOUT | NFT_SET_EVAL (`flags dynamic,timeout`). */
const NFT_SET_TIMEOUT = 0x10;
const NFT_SET_EVAL = 0x20;
/** nft's datatype number for ipv4_addr (TYPE_IPADDR). */
const TYPE_IPADDR = 7;
/** libnftnl userdata TLV types: a rule's or element's comment; a set's key byte order. */
const UDATA_COMMENT = 0;
const UDATA_SET_KEYBYTEORDER = 0;
const UDATA_SET_COMMENT = 7;
const BYTEORDER_BIG_ENDIAN = 2;
/**
 * The userdata nft 1.0.6 writes for a concatenated-key verdict map before its
 * comment: key and data byte order (0: a concatenation, a verdict), the
 * verdict data's typeof description and the data-interval flag (0). Copied
 * from its messages (testdata-full.ts); the same for both of the render's maps.
 */
const VMAP_UDATA_PREFIX = Buffer.from('000400000000010400000000030800040d0000000100060400000000', 'hex');

// --- attribute builders ---

/**
 * The output: one growing buffer that every message of a batch is written
 * into (at 30,000 Services a full sync is ~300,000 messages and ~60 MB;
 * a Buffer per attribute and a concat per nest cost seconds there).
 */
class Writer {
  buf: Buffer;
  off = 0;
  constructor(size = 1 << 16) {
    this.buf = Buffer.allocUnsafe(size);
  }
  ensure(n: number): void {
    if (this.off + n <= this.buf.length) return;
    const b = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.off + n));
    this.buf.copy(b, 0, 0, this.off);
    this.buf = b;
  }
  private pad(): void {
    while (this.off & 3) this.buf[this.off++] = 0;
  }
  /** An attribute header whose length end() fills in. */
  begin(type: number): number {
    this.ensure(4);
    const at = this.off;
    this.buf.writeUInt16LE(type, at + 2);
    this.off += 4;
    return at;
  }
  end(at: number): void {
    this.buf.writeUInt16LE(this.off - at, at);
    this.ensure(3);
    this.pad();
  }
  bytes(type: number, payload: Uint8Array): void {
    this.ensure(8 + payload.length);
    this.buf.writeUInt16LE(4 + payload.length, this.off);
    this.buf.writeUInt16LE(type, this.off + 2);
    this.buf.set(payload, this.off + 4);
    this.off += 4 + payload.length;
    this.pad();
  }
  str(type: number, s: string): void {
    const n = Buffer.byteLength(s);
    this.ensure(8 + n + 1);
    this.buf.writeUInt16LE(4 + n + 1, this.off);
    this.buf.writeUInt16LE(type, this.off + 2);
    this.buf.write(s, this.off + 4, n, 'utf8');
    this.buf[this.off + 4 + n] = 0;
    this.off += 5 + n;
    this.pad();
  }
  u32(type: number, n: number): void {
    this.ensure(8);
    this.buf.writeUInt16LE(8, this.off);
    this.buf.writeUInt16LE(type, this.off + 2);
    this.buf.writeInt32BE(n | 0, this.off + 4);
    this.off += 8;
  }
}

/** Writes part of a message. */
type Emit = (w: Writer) => void;

/** One attribute: u16 len (header + payload, unpadded), u16 type, payload padded to 4. */
export const attr = (type: number, payload: Uint8Array): Emit => (w) => w.bytes(type, payload);
const nest =
  (type: number, children: readonly Emit[]): Emit =>
  (w) => {
    const at = w.begin(type | NLA_F_NESTED);
    for (const c of children) c(w);
    w.end(at);
  };
const str = (type: number, s: string): Emit => (w) => w.str(type, s);
const u32 = (type: number, n: number): Emit => (w) => w.u32(type, n);
function u64(type: number, n: number): Emit {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return attr(type, b);
}
/** libnftnl's userdata: TLVs of u8 type, u8 len, value. */
function udata(type: number, value: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([type, value.length]), value]);
}
const commentUdata = (c: string) => udata(UDATA_COMMENT, Buffer.from(`${c}\0`));

function expr(name: string, data: readonly Emit[]): Emit {
  return nest(NFTA_LIST_ELEM, [str(EXPR_A.NAME, name), nest(EXPR_A.DATA, data)]);
}
const value = (type: number, v: Uint8Array) => nest(type, [attr(DATA_A.VALUE, v)]);
function verdictData(type: number, v: NlVerdict): Emit {
  const parts = [u32(VERDICT_A.CODE, VERDICT_CODE[v.kind])];
  if (v.kind === 'jump' || v.kind === 'goto') parts.push(str(VERDICT_A.CHAIN, v.chain));
  return nest(type, [nest(DATA_A.VERDICT, parts)]);
}

// --- expressions (the attribute order is nft's) ---

const payload = (offset: number, len: number, reg: number = NFT_REG_1, base: number = NFT_PAYLOAD_NETWORK_HEADER) =>
  expr('payload', [u32(1, reg), u32(2, base), u32(3, offset), u32(4, len)]); // DREG BASE OFFSET LEN
const metaLoad = (key: number, reg: number) => expr('meta', [u32(2, key), u32(1, reg)]); // KEY DREG
const metaSet = (key: number) => expr('meta', [u32(2, key), u32(3, NFT_REG_1)]); // KEY SREG
/** The bitwise nft writes for a meta mark operation (with NFTA_BITWISE_OP). */
const bitwiseBool = (mask: Uint8Array, xor: Uint8Array) =>
  expr('bitwise', [u32(1, NFT_REG_1), u32(2, NFT_REG_1), u32(6, NFT_BITWISE_BOOL), u32(3, mask.length), value(4, mask), value(5, xor)]); // SREG DREG OP LEN MASK XOR
const cmp = (op: number, data: Uint8Array) => expr('cmp', [u32(1, NFT_REG_1), u32(2, op), value(3, data)]); // SREG OP DATA
const bitwise = (mask: Uint8Array, xor: Uint8Array) =>
  expr('bitwise', [u32(1, NFT_REG_1), u32(2, NFT_REG_1), u32(3, mask.length), value(4, mask), value(5, xor)]); // SREG DREG LEN MASK XOR
const immediateVerdict = (v: NlVerdict) => expr('immediate', [u32(1, NFT_REG_VERDICT), verdictData(2, v)]); // DREG DATA
const immediateValue = (reg: number, v: Uint8Array) => expr('immediate', [u32(1, reg), value(2, v)]);
const be32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};

/** Set ids of the sets this batch creates, for the expressions that refer to them (as nft sends them). */
type SetIds = ReadonlyMap<string, number>;

function ipOffset(field: 'saddr' | 'daddr'): number {
  return field === 'saddr' ? 12 : 16;
}

function matchExprs(m: NlMatch, ids: SetIds): Emit[] {
  switch (m.kind) {
    case 'ip': {
      const op = m.neq ? NFT_CMP_NEQ : NFT_CMP_EQ;
      // A whole-byte prefix loads only those bytes; any other masks the address first (what nft does).
      if (m.prefix % 8 === 0) return [payload(ipOffset(m.field), m.prefix / 8), cmp(op, m.addr.subarray(0, m.prefix / 8))];
      const mask = be32(m.prefix === 0 ? 0 : (0xffffffff << (32 - m.prefix)) >>> 0);
      return [payload(ipOffset(m.field), 4), bitwise(mask, Buffer.alloc(4)), cmp(op, m.addr)];
    }
    case 'ip-in-set': {
      const id = ids.get(m.set);
      const data = [u32(2, NFT_REG_1), str(1, m.set)]; // SREG SET [SET_ID]
      if (id !== undefined) data.push(u32(4, id));
      return [payload(ipOffset(m.field), 4), expr('lookup', data)];
    }
    case 'fib-saddr-local':
      return [expr('fib', [u32(3, NFTA_FIB_F_SADDR), u32(2, NFT_FIB_RESULT_ADDRTYPE), u32(1, NFT_REG_1)]), cmp(NFT_CMP_EQ, hostU32(RTN_LOCAL))]; // FLAGS RESULT DREG
    case 'numgen':
      return [expr('numgen', [u32(1, NFT_REG_1), u32(2, m.mod), u32(3, NFT_NG_RANDOM), u32(4, 0)]), cmp(NFT_CMP_EQ, hostU32(m.value))]; // DREG MODULUS TYPE OFFSET
    case 'l4proto':
      return [metaLoad(NFT_META_L4PROTO, NFT_REG_1), cmp(NFT_CMP_EQ, Uint8Array.of(m.proto))];
    case 'ct-state-new':
      return [expr('ct', [u32(2, NFT_CT_STATE), u32(1, NFT_REG_1)]), bitwise(hostU32(CT_STATE_NEW), Buffer.alloc(4)), cmp(NFT_CMP_NEQ, Buffer.alloc(4))]; // KEY DREG
    case 'fib-daddr-local':
      return [expr('fib', [u32(3, NFTA_FIB_F_DADDR), u32(2, NFT_FIB_RESULT_ADDRTYPE), u32(1, NFT_REG_1)]), cmp(NFT_CMP_EQ, hostU32(RTN_LOCAL))];
    case 'mark-and-zero':
      return [metaLoad(NFT_META_MARK, NFT_REG_1), bitwiseBool(hostU32(m.mask), Buffer.alloc(4)), cmp(NFT_CMP_EQ, Buffer.alloc(4))];
  }
}

/** A register value the kernel writes in host order (numgen's number, fib's address type): compared as host-order bytes. */
function hostU32(n: number): Buffer {
  return Buffer.from(Uint32Array.of(n >>> 0).buffer);
}

function ruleExprs(r: NlRule, ids: SetIds): Emit[] {
  const out: Emit[] = [];
  for (const m of r.matches) out.push(...matchExprs(m, ids));
  const s = r.stmt;
  if (s.kind === 'verdict') out.push(immediateVerdict(s.verdict));
  else if (s.kind === 'reject') {
    out.push(expr('reject', [u32(1, NFT_REJECT_ICMP_UNREACH), attr(2, Uint8Array.of(ICMP_PORT_UNREACH))])); // TYPE ICMP_CODE
  } else if (s.kind === 'masquerade-fully-random') {
    out.push(expr('masq', [u32(1, NF_NAT_RANGE_PROTO_RANDOM_FULLY)])); // FLAGS
  } else if (s.kind === 'mark-set') {
    // or: (mark & ~v) ^ v; xor: (mark & ~0) ^ v.
    const mask = s.op === 'or' ? hostU32(~s.value) : hostU32(0xffffffff);
    out.push(metaLoad(NFT_META_MARK, NFT_REG_1), bitwiseBool(mask, hostU32(s.value)), metaSet(NFT_META_MARK));
  } else if (s.kind === 'vmap') {
    // The key's parts in consecutive 32-bit registers, then a lookup whose result is the verdict.
    if (s.key === 'daddr-proto-port') {
      out.push(payload(16, 4), metaLoad(NFT_META_L4PROTO, NFT_REG32_01), payload(2, 2, NFT_REG32_02, NFT_PAYLOAD_TRANSPORT_HEADER));
    } else {
      out.push(metaLoad(NFT_META_L4PROTO, NFT_REG_1), payload(2, 2, NFT_REG32_01, NFT_PAYLOAD_TRANSPORT_HEADER));
    }
    const id = ids.get(s.set);
    const data = [u32(2, NFT_REG_1), u32(3, NFT_REG_VERDICT), str(1, s.set)]; // SREG DREG SET [SET_ID]
    if (id !== undefined) data.push(u32(4, id));
    out.push(expr('lookup', data));
  } else if (s.kind === 'update-saddr') {
    const id = ids.get(s.set);
    const data = [u32(4, NFT_REG_1), u32(3, NFT_DYNSET_OP_UPDATE), str(1, s.set)]; // SREG_KEY OP SET_NAME [SET_ID]
    if (id !== undefined) data.push(u32(2, id));
    out.push(payload(12, 4), expr('dynset', data));
  } else {
    const p = Buffer.alloc(2);
    p.writeUInt16BE(s.port);
    out.push(
      immediateValue(NFT_REG_1, s.addr),
      immediateValue(NFT_REG_2, p),
      // TYPE FAMILY REG_ADDR_MIN REG_PROTO_MIN FLAGS
      expr('nat', [u32(1, NFT_NAT_DNAT), u32(2, NFPROTO_IPV4), u32(3, NFT_REG_1), u32(5, NFT_REG_2), u32(7, NF_NAT_RANGE_PROTO_SPECIFIED)]),
    );
  }
  return out;
}

const SET_KEY_TYPE: Readonly<Record<NlSetKey, number>> = {
  ipv4: TYPE_IPADDR,
  'ipv4-proto-port': (((TYPE_IPADDR << 6) | TYPE_INET_PROTOCOL) << 6) | TYPE_INET_SERVICE,
  'proto-port': (TYPE_INET_PROTOCOL << 6) | TYPE_INET_SERVICE,
};
const SET_KEY_LEN: Readonly<Record<NlSetKey, number>> = { ipv4: 4, 'ipv4-proto-port': 12, 'proto-port': 8 };

/** An element key: each part in a 4-byte slot (nft's concatenation layout), network order. */
export function encodeKey(parts: readonly NlKeyPart[]): Buffer {
  const b = Buffer.alloc(parts.length * 4);
  parts.forEach((p, i) => {
    if (p.kind === 'ipv4') b.set(p.addr, i * 4);
    else if (p.kind === 'proto') b[i * 4] = p.proto;
    else b.writeUInt16BE(p.port, i * 4);
  });
  return b;
}

// --- messages ---

/** One message: struct nlmsghdr, struct nfgenmsg, the attributes. */
function message(w: Writer, type: number, flags: number, seq: number, family: number, resId: number, attrs: readonly Emit[]): void {
  w.ensure(20);
  const at = w.off;
  const b = w.buf;
  b.writeUInt16LE(type, at + 4);
  b.writeUInt16LE(flags, at + 6);
  b.writeUInt32LE(seq >>> 0, at + 8);
  b.writeUInt32LE(0, at + 12);
  b[at + 16] = family;
  b[at + 17] = 0;
  b.writeUInt16BE(resId, at + 18);
  w.off += 20;
  for (const e of attrs) e(w);
  w.buf.writeUInt32LE(w.off - at, at);
}

const nft = (msg: number) => (NFNL_SUBSYS_NFTABLES << 8) | msg;

/**
 * A fresh id for a set this batch declares (nft numbers every `add set` of a
 * batch from 1, a set declared twice getting a second id); the last one is
 * kept under the name "", which no set has.
 */
function nextSetId(ids: Map<string, number>, set: string): number {
  const id = (ids.get('') ?? 0) + 1;
  ids.set('', id);
  ids.set(set, id);
  return id;
}

/** The attributes and type of one command's message. */
function commandMessage(c: NlCommand, ids: Map<string, number>): { type: number; flags: number; attrs: Emit[] } {
  const R = NLM_F.REQUEST | NLM_F.ACK;
  switch (c.op) {
    case 'add-table': {
      // nft sends no NLM_F_CREATE here: the kernel creates a missing table either way.
      const attrs = [str(TABLE_A.NAME, c.table), u32(TABLE_A.FLAGS, 0)];
      if (c.comment !== null) attrs.push(attr(TABLE_A.USERDATA, commentUdata(c.comment)));
      return { type: nft(NFT_MSG.NEWTABLE), flags: R, attrs };
    }
    case 'add-chain': {
      const attrs = [str(CHAIN_A.TABLE, c.table), str(CHAIN_A.NAME, c.chain)];
      if (c.comment != null) attrs.push(attr(CHAIN_A.USERDATA, commentUdata(c.comment)));
      return { type: nft(NFT_MSG.NEWCHAIN), flags: R | NLM_F.CREATE, attrs };
    }
    case 'add-base-chain':
      return {
        type: nft(NFT_MSG.NEWCHAIN),
        flags: R | NLM_F.CREATE,
        attrs: [
          str(CHAIN_A.TABLE, c.table),
          str(CHAIN_A.NAME, c.chain),
          str(CHAIN_A.TYPE, c.type),
          nest(CHAIN_A.HOOK, [u32(HOOK_A.NUM, HOOK_NUM[c.hook]), u32(HOOK_A.PRIORITY, c.priority)]),
        ],
      };
    case 'add-set': {
      const id = nextSetId(ids, c.set);
      const attrs = [str(SET_A.TABLE, c.table), str(SET_A.NAME, c.set), u32(SET_A.FLAGS, c.map ? NFT_SET_MAP : 0)];
      attrs.push(u32(SET_A.KEY_TYPE, SET_KEY_TYPE[c.key]), u32(SET_A.KEY_LEN, SET_KEY_LEN[c.key]));
      if (c.map) attrs.push(u32(SET_A.DATA_TYPE, NFT_DATA_VERDICT), u32(SET_A.DATA_LEN, 0));
      attrs.push(u32(SET_A.ID, id));
      const ud = [c.map ? VMAP_UDATA_PREFIX : udata(UDATA_SET_KEYBYTEORDER, hostU32(BYTEORDER_BIG_ENDIAN))];
      if (c.comment !== null) ud.push(udata(UDATA_SET_COMMENT, Buffer.from(`${c.comment}\0`)));
      attrs.push(attr(SET_A.USERDATA, Buffer.concat(ud)));
      return { type: nft(NFT_MSG.NEWSET), flags: R | NLM_F.CREATE, attrs };
    }
    case 'flush-set':
      // A DELSETELEM without elements empties the set (nft names the set first).
      return { type: nft(NFT_MSG.DELSETELEM), flags: R, attrs: [str(ELEM_LIST_A.SET, c.set), str(ELEM_LIST_A.TABLE, c.table)] };
    case 'delete-chain':
      return { type: nft(NFT_MSG.DELCHAIN), flags: R, attrs: [str(CHAIN_A.TABLE, c.table), str(CHAIN_A.NAME, c.chain)] };
    case 'flush-chain':
      return { type: nft(NFT_MSG.DELRULE), flags: R, attrs: [str(RULE_A.TABLE, c.table), str(RULE_A.CHAIN, c.chain)] };
    case 'add-rule': {
      const attrs = [str(RULE_A.TABLE, c.table), str(RULE_A.CHAIN, c.chain), nest(RULE_A.EXPRESSIONS, ruleExprs(c.rule, ids))];
      if (c.rule.comment !== null) attrs.push(attr(RULE_A.USERDATA, commentUdata(c.rule.comment)));
      return { type: nft(NFT_MSG.NEWRULE), flags: R | NLM_F.CREATE | NLM_F.APPEND, attrs };
    }
    case 'add-timeout-set': {
      const id = nextSetId(ids, c.set);
      const order = hostU32(BYTEORDER_BIG_ENDIAN); // libnftnl writes this u32 in host order
      return {
        type: nft(NFT_MSG.NEWSET),
        flags: R | NLM_F.CREATE,
        attrs: [
          str(SET_A.TABLE, c.table),
          str(SET_A.NAME, c.set),
          u32(SET_A.FLAGS, NFT_SET_TIMEOUT | NFT_SET_EVAL),
          u32(SET_A.KEY_TYPE, TYPE_IPADDR),
          u32(SET_A.KEY_LEN, 4),
          u32(SET_A.ID, id),
          u64(SET_A.TIMEOUT, c.timeoutSec * 1000),
          attr(SET_A.USERDATA, udata(UDATA_SET_KEYBYTEORDER, order)),
        ],
      };
    }
    case 'delete-set':
      return { type: nft(NFT_MSG.DELSET), flags: R, attrs: [str(SET_A.TABLE, c.table), str(SET_A.NAME, c.set)] };
    case 'add-element': {
      const el = [value(ELEM_A.KEY, encodeKey(c.key))];
      if (c.value !== null) el.push(verdictData(ELEM_A.DATA, c.value));
      if (c.comment !== null) el.push(attr(ELEM_A.USERDATA, commentUdata(c.comment)));
      return {
        type: nft(NFT_MSG.NEWSETELEM),
        flags: R | NLM_F.CREATE,
        attrs: [str(ELEM_LIST_A.TABLE, c.table), str(ELEM_LIST_A.SET, c.set), nest(ELEM_LIST_A.ELEMENTS, [nest(NFTA_LIST_ELEM, el)])],
      };
    }
    case 'delete-element':
      return {
        type: nft(NFT_MSG.DELSETELEM),
        flags: R,
        attrs: [
          str(ELEM_LIST_A.TABLE, c.table),
          str(ELEM_LIST_A.SET, c.set),
          nest(ELEM_LIST_A.ELEMENTS, [nest(NFTA_LIST_ELEM, [value(ELEM_A.KEY, encodeKey(c.key))])]),
        ],
      };
  }
}

export interface EncodedBatch {
  /** BATCH_BEGIN, one message per command, BATCH_END. */
  readonly bytes: Buffer;
  /** Sequence number of BATCH_BEGIN; command i has `firstSeq + 1 + i`. */
  readonly firstSeq: number;
  readonly count: number;
}

/** One command's message alone (for tests and error reports); `ack` false drops NLM_F_ACK. */
export function encodeCommand(c: NlCommand, seq: number, setIds: Map<string, number> = new Map(), ack = true): Buffer {
  const w = new Writer(1024);
  writeCommand(w, c, seq, setIds, ack);
  return Buffer.from(w.buf.subarray(0, w.off));
}

function writeCommand(w: Writer, c: NlCommand, seq: number, setIds: Map<string, number>, ack: boolean): void {
  const m = commandMessage(c, setIds);
  message(w, m.type, ack ? m.flags : m.flags & ~NLM_F.ACK, seq, NFPROTO_IPV4, 0, m.attrs);
}

export interface EncodeOptions {
  /**
   * Which commands ask for an ack. 'all' (default): every one, so each
   * answers 0 or its errno. 'last': only the last command; the kernel
   * reports an error for any message whatever its flags, and the last one's
   * ack, delivered after the commit, says the batch went through. A full
   * sync's ~300,000 acks would cost a socket buffer entry each.
   */
  readonly acks?: 'all' | 'last';
}

/**
 * A batch written one command at a time (commands are not kept): BATCH_BEGIN
 * at construction, add() per command, finish() for BATCH_END. With acks
 * 'last' only the last command gets NLM_F_ACK (set at finish()).
 */
export class BatchEncoder {
  private readonly w: Writer;
  private readonly ids = new Map<string, number>();
  private readonly last: boolean;
  private count = 0;
  private lastAt = -1;

  constructor(
    private readonly firstSeq: number,
    opts: EncodeOptions = {},
    sizeHint = 1 << 16,
  ) {
    this.w = new Writer(Math.max(1 << 16, sizeHint));
    this.last = opts.acks === 'last';
    message(this.w, NFNL_MSG_BATCH_BEGIN, NLM_F.REQUEST, firstSeq, 0, NFNL_SUBSYS_NFTABLES, []);
  }

  add(c: NlCommand): void {
    this.lastAt = this.w.off;
    writeCommand(this.w, c, this.firstSeq + 1 + this.count, this.ids, !this.last);
    this.count++;
  }

  finish(): EncodedBatch {
    const b = this.w.buf;
    if (this.last && this.lastAt >= 0) b.writeUInt16LE(b.readUInt16LE(this.lastAt + 6) | NLM_F.ACK, this.lastAt + 6);
    message(this.w, NFNL_MSG_BATCH_END, NLM_F.REQUEST, this.firstSeq + 1 + this.count, 0, NFNL_SUBSYS_NFTABLES, []);
    return { bytes: this.w.buf.subarray(0, this.w.off), firstSeq: this.firstSeq, count: this.count };
  }
}

/** The whole batch for `commands`, seq numbers from `firstSeq`. */
export function encodeBatch(commands: readonly NlCommand[], firstSeq: number, opts: EncodeOptions = {}): EncodedBatch {
  const ids = new Map<string, number>();
  const last = opts.acks === 'last';
  // ~200 bytes a message on average at scale.
  const w = new Writer(Math.max(1 << 16, commands.length * 224));
  message(w, NFNL_MSG_BATCH_BEGIN, NLM_F.REQUEST, firstSeq, 0, NFNL_SUBSYS_NFTABLES, []);
  commands.forEach((c, i) => writeCommand(w, c, firstSeq + 1 + i, ids, !last || i === commands.length - 1));
  message(w, NFNL_MSG_BATCH_END, NLM_F.REQUEST, firstSeq + 1 + commands.length, 0, NFNL_SUBSYS_NFTABLES, []);
  return { bytes: w.buf.subarray(0, w.off), firstSeq, count: commands.length };
}
