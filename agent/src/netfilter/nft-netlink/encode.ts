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
 * it all or nothing. Every command message carries NLM_F_ACK, so the kernel
 * answers each seq (0 or an errno) and an error maps back to its line.
 *
 * Expressions use the legacy 16-byte registers (NFT_REG_1 = 1) as nft 1.0.6
 * does. Pure: no I/O.
 */
import type { NlCommand, NlKeyPart, NlMatch, NlRule, NlVerdict } from './commands.js';

export const NFNL_SUBSYS_NFTABLES = 10;
export const NFNL_MSG_BATCH_BEGIN = 0x10;
export const NFNL_MSG_BATCH_END = 0x11;
export const NFT_MSG = { NEWCHAIN: 3, DELCHAIN: 5, NEWRULE: 6, DELRULE: 8, NEWSET: 9, DELSET: 11, NEWSETELEM: 12, DELSETELEM: 14 } as const;
export const NLM_F = { REQUEST: 0x1, ACK: 0x4, CREATE: 0x400, APPEND: 0x800 } as const;
export const NLA_F_NESTED = 0x8000;
const NFPROTO_IPV4 = 2;

// Attribute numbers (nf_tables.h).
const CHAIN_A = { TABLE: 1, NAME: 3 } as const;
const RULE_A = { TABLE: 1, CHAIN: 2, EXPRESSIONS: 4, USERDATA: 7 } as const;
const SET_A = { TABLE: 1, NAME: 2, FLAGS: 3, KEY_TYPE: 4, KEY_LEN: 5, ID: 10, TIMEOUT: 11, USERDATA: 13 } as const;
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
const NFT_PAYLOAD_NETWORK_HEADER = 1;
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
const BYTEORDER_BIG_ENDIAN = 2;

// --- attribute builders ---

/** One attribute: u16 len (header + payload, unpadded), u16 type, payload padded to 4. */
export function attr(type: number, payload: Uint8Array): Buffer {
  const len = 4 + payload.length;
  const b = Buffer.alloc((len + 3) & ~3);
  b.writeUInt16LE(len, 0);
  b.writeUInt16LE(type, 2);
  b.set(payload, 4);
  return b;
}
const nest = (type: number, children: readonly Buffer[]) => attr(type | NLA_F_NESTED, Buffer.concat(children));
const str = (type: number, s: string) => attr(type, Buffer.from(`${s}\0`));
function u32(type: number, n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n | 0);
  return attr(type, b);
}
function u64(type: number, n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return attr(type, b);
}
/** libnftnl's userdata: TLVs of u8 type, u8 len, value. */
function udata(type: number, value: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([type, value.length]), value]);
}
const commentUdata = (c: string) => udata(UDATA_COMMENT, Buffer.from(`${c}\0`));

function expr(name: string, data: readonly Buffer[]): Buffer {
  return nest(NFTA_LIST_ELEM, [str(EXPR_A.NAME, name), nest(EXPR_A.DATA, data)]);
}
const value = (type: number, v: Uint8Array) => nest(type, [attr(DATA_A.VALUE, v)]);
function verdictData(type: number, v: NlVerdict): Buffer {
  const parts = [u32(VERDICT_A.CODE, VERDICT_CODE[v.kind])];
  if (v.kind === 'jump' || v.kind === 'goto') parts.push(str(VERDICT_A.CHAIN, v.chain));
  return nest(type, [nest(DATA_A.VERDICT, parts)]);
}

// --- expressions (the attribute order is nft's) ---

const payload = (offset: number, len: number) =>
  expr('payload', [u32(1, NFT_REG_1), u32(2, NFT_PAYLOAD_NETWORK_HEADER), u32(3, offset), u32(4, len)]); // DREG BASE OFFSET LEN
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

function matchExprs(m: NlMatch, ids: SetIds): Buffer[] {
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
      return [expr('meta', [u32(2, NFT_META_L4PROTO), u32(1, NFT_REG_1)]), cmp(NFT_CMP_EQ, Uint8Array.of(m.proto))]; // KEY DREG
  }
}

/** A register value the kernel writes in host order (numgen's number, fib's address type): compared as host-order bytes. */
function hostU32(n: number): Buffer {
  return Buffer.from(Uint32Array.of(n >>> 0).buffer);
}

function ruleExprs(r: NlRule, ids: SetIds): Buffer[] {
  const out: Buffer[] = [];
  for (const m of r.matches) out.push(...matchExprs(m, ids));
  const s = r.stmt;
  if (s.kind === 'verdict') out.push(immediateVerdict(s.verdict));
  else if (s.kind === 'update-saddr') {
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

function message(type: number, flags: number, seq: number, family: number, resId: number, attrs: readonly Buffer[]): Buffer {
  const body = Buffer.concat(attrs);
  const b = Buffer.alloc(20 + body.length);
  b.writeUInt32LE(b.length, 0);
  b.writeUInt16LE(type, 4);
  b.writeUInt16LE(flags, 6);
  b.writeUInt32LE(seq >>> 0, 8);
  b.writeUInt32LE(0, 12);
  b[16] = family;
  b[17] = 0;
  b.writeUInt16BE(resId, 18);
  body.copy(b, 20);
  return b;
}

const nft = (msg: number) => (NFNL_SUBSYS_NFTABLES << 8) | msg;

/** The attributes and type of one command's message. */
function commandMessage(c: NlCommand, ids: Map<string, number>): { type: number; flags: number; attrs: Buffer[] } {
  const R = NLM_F.REQUEST | NLM_F.ACK;
  switch (c.op) {
    case 'add-chain':
      return { type: nft(NFT_MSG.NEWCHAIN), flags: R | NLM_F.CREATE, attrs: [str(CHAIN_A.TABLE, c.table), str(CHAIN_A.NAME, c.chain)] };
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
      const id = ids.size + 1;
      ids.set(c.set, id);
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

/** One command's message alone (for tests and error reports). */
export function encodeCommand(c: NlCommand, seq: number, setIds: Map<string, number> = new Map()): Buffer {
  const m = commandMessage(c, setIds);
  return message(m.type, m.flags, seq, NFPROTO_IPV4, 0, m.attrs);
}

/** The whole batch for `commands`, seq numbers from `firstSeq`. */
export function encodeBatch(commands: readonly NlCommand[], firstSeq: number): EncodedBatch {
  const ids = new Map<string, number>();
  const parts: Buffer[] = [message(NFNL_MSG_BATCH_BEGIN, NLM_F.REQUEST, firstSeq, 0, NFNL_SUBSYS_NFTABLES, [])];
  commands.forEach((c, i) => parts.push(encodeCommand(c, firstSeq + 1 + i, ids)));
  parts.push(message(NFNL_MSG_BATCH_END, NLM_F.REQUEST, firstSeq + 1 + commands.length, 0, NFNL_SUBSYS_NFTABLES, []));
  return { bytes: Buffer.concat(parts), firstSeq, count: commands.length };
}
