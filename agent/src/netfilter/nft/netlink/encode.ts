/**
 * netfilter/nft/netlink/encode: typed commands (commands.ts) → one nf_tables
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
 * The CNI path's ipMasq set elements (nft-sets.ts) are written here too, as
 * element lists: one NEWSETELEM/DELSETELEM per set with every element of it,
 * and NFTA_SET_ELEM_KEY_END for a range in an interval set.
 *
 * Expressions use the legacy 16-byte registers (NFT_REG_1 = 1) as nft 1.0.6
 * does. Pure: no I/O.
 */
import type { NlCommand, NlKeyPart, NlMatch, NlRule, NlSetKey, NlVerdict } from './commands.js';

export const NFNL_SUBSYS_NFTABLES = 10;
export const NFNL_MSG_BATCH_BEGIN = 0x10;
export const NFNL_MSG_BATCH_END = 0x11;
export const NFT_MSG = { NEWTABLE: 0, DELTABLE: 2, NEWCHAIN: 3, DELCHAIN: 5, NEWRULE: 6, DELRULE: 8, NEWSET: 9, DELSET: 11, NEWSETELEM: 12, DELSETELEM: 14 } as const;
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
const ELEM_A = { KEY: 1, DATA: 2, USERDATA: 6, KEY_END: 10 } as const;
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

// --- the writer ---

/**
 * The output: one growing buffer that every message of a batch is written
 * straight into, with no object per attribute (at 30,000 Services a full
 * sync is ~465,000 messages and ~88 MB: building a closure per attribute
 * and a Buffer per value cost 2.3 s there; this writer ~0.3 s). Each
 * message reserves MSG_MAX bytes first, so the writes inside it need no
 * bounds checks.
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
  private u16le(at: number, v: number): void {
    this.buf[at] = v & 0xff;
    this.buf[at + 1] = (v >>> 8) & 0xff;
  }
  private pad(): void {
    while (this.off & 3) this.buf[this.off++] = 0;
  }
  /** A nested attribute's header (NLA_F_NESTED set); end() fills in its length. */
  begin(type: number): number {
    const at = this.off;
    this.u16le(at + 2, type | NLA_F_NESTED);
    this.off += 4;
    return at;
  }
  end(at: number): void {
    if (this.off - at > 0xffff) throw new RangeError(`netlink attribute of ${this.off - at} bytes: more than its u16 length holds`);
    this.u16le(at, this.off - at);
    this.pad();
  }
  /** An attribute: u16 len (header + payload, unpadded), u16 type, payload padded to 4. */
  bytes(type: number, payload: Uint8Array): void {
    const at = this.off;
    this.u16le(at, 4 + payload.length);
    this.u16le(at + 2, type);
    this.buf.set(payload, at + 4);
    this.off = at + 4 + payload.length;
    this.pad();
  }
  /**
   * A NUL-terminated string attribute. The same names recur in every message
   * (the table, each chain three to five times), so each string's bytes are
   * kept for the life of the writer (one batch).
   */
  str(type: number, s: string): void {
    let enc = this.strings.get(s);
    if (enc === undefined) {
      enc = Buffer.from(`${s}\0`, 'utf8');
      this.strings.set(s, enc);
    }
    this.bytes(type, enc);
  }
  private readonly strings = new Map<string, Buffer>();
  /** A big-endian u32 attribute. */
  u32(type: number, n: number): void {
    const at = this.off;
    const b = this.buf;
    b[at] = 8;
    b[at + 1] = 0;
    this.u16le(at + 2, type);
    b[at + 4] = (n >>> 24) & 0xff;
    b[at + 5] = (n >>> 16) & 0xff;
    b[at + 6] = (n >>> 8) & 0xff;
    b[at + 7] = n & 0xff;
    this.off = at + 8;
  }
  /** A big-endian u64 attribute (n below 2^53). */
  u64(type: number, n: number): void {
    const at = this.off;
    this.buf[at] = 12;
    this.buf[at + 1] = 0;
    this.u16le(at + 2, type);
    this.buf.writeUInt32BE(Math.floor(n / 0x100000000), at + 4);
    this.buf.writeUInt32BE(n >>> 0, at + 8);
    this.off = at + 12;
  }
  /** Bytes written as they are (a fragment built once by blob()). */
  raw(b: Uint8Array): void {
    this.buf.set(b, this.off);
    this.off += b.length;
  }
}

/** The largest message the encoder writes: names are at most 256 bytes (NFT_NAME_MAXLEN), comments 128, a rule a few expressions. */
const MSG_MAX = 4096;

/** The bytes `write` produces, computed once (constant expressions and attributes). */
function blob(write: (w: Writer) => void): Buffer {
  const w = new Writer(MSG_MAX);
  write(w);
  return Buffer.from(w.buf.subarray(0, w.off));
}

/** libnftnl's userdata: TLVs of u8 type, u8 len, value. */
function udata(type: number, value: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from([type, value.length]), value]);
}

/** A comment's userdata attribute (a TLV of u8 type, u8 len, the NUL-terminated text). */
function commentAttr(w: Writer, type: number, c: string): void {
  const at = w.off;
  const b = w.buf;
  const n = b.write(c, at + 6, 'utf8') + 1; // the text and its NUL
  b[at + 6 + n - 1] = 0;
  b[at] = (6 + n) & 0xff;
  b[at + 1] = ((6 + n) >>> 8) & 0xff;
  b[at + 2] = type & 0xff;
  b[at + 3] = (type >>> 8) & 0xff;
  b[at + 4] = UDATA_COMMENT;
  b[at + 5] = n;
  w.off = at + 6 + n;
  while (w.off & 3) b[w.off++] = 0;
}

// --- expressions (the attribute order is nft's) ---

/** An expression: NFTA_LIST_ELEM { NAME, DATA { ... } }. Returns the two nests' offsets for endExpr. */
function beginExpr(w: Writer, name: string): number {
  const at = w.begin(NFTA_LIST_ELEM);
  w.str(EXPR_A.NAME, name);
  w.begin(EXPR_A.DATA);
  return at;
}
/** Closes the DATA nest (which began right after the name) and the element. */
function endExpr(w: Writer, at: number, dataAt: number): void {
  w.end(dataAt);
  w.end(at);
}
/** The offset of the DATA nest of the expression begun at `at` with `name`. */
function dataAtOf(at: number, name: string): number {
  // LIST_ELEM header (4) + NAME attribute (4 + name + NUL, padded).
  return at + 4 + ((4 + name.length + 1 + 3) & ~3);
}
function expr(w: Writer, name: string, data: (w: Writer) => void): void {
  const at = beginExpr(w, name);
  data(w);
  endExpr(w, at, dataAtOf(at, name));
}
/** NFTA_DATA_VALUE inside a nest of `type`. */
function value(w: Writer, type: number, v: Uint8Array): void {
  const at = w.begin(type);
  w.bytes(DATA_A.VALUE, v);
  w.end(at);
}
function verdictData(w: Writer, type: number, v: NlVerdict): void {
  const at = w.begin(type);
  const vat = w.begin(DATA_A.VERDICT);
  w.u32(VERDICT_A.CODE, VERDICT_CODE[v.kind]);
  if (v.kind === 'jump' || v.kind === 'goto') w.str(VERDICT_A.CHAIN, v.chain);
  w.end(vat);
  w.end(at);
}

// DREG BASE OFFSET LEN
const payload = (w: Writer, offset: number, len: number, reg: number = NFT_REG_1, base: number = NFT_PAYLOAD_NETWORK_HEADER) =>
  expr(w, 'payload', (w) => {
    w.u32(1, reg);
    w.u32(2, base);
    w.u32(3, offset);
    w.u32(4, len);
  });
// KEY DREG
const metaLoad = (w: Writer, key: number, reg: number) =>
  expr(w, 'meta', (w) => {
    w.u32(2, key);
    w.u32(1, reg);
  });
// KEY SREG
const metaSet = (w: Writer, key: number) =>
  expr(w, 'meta', (w) => {
    w.u32(2, key);
    w.u32(3, NFT_REG_1);
  });
/** The bitwise nft writes for a meta mark operation (with NFTA_BITWISE_OP): SREG DREG OP LEN MASK XOR. */
const bitwiseBool = (w: Writer, mask: Uint8Array, xor: Uint8Array) =>
  expr(w, 'bitwise', (w) => {
    w.u32(1, NFT_REG_1);
    w.u32(2, NFT_REG_1);
    w.u32(6, NFT_BITWISE_BOOL);
    w.u32(3, mask.length);
    value(w, 4, mask);
    value(w, 5, xor);
  });
// SREG OP DATA
const cmp = (w: Writer, op: number, data: Uint8Array) =>
  expr(w, 'cmp', (w) => {
    w.u32(1, NFT_REG_1);
    w.u32(2, op);
    value(w, 3, data);
  });
/** cmp against a host-order u32, written in place (numgen's value: one per endpoint rule). */
function cmpHostU32(w: Writer, op: number, n: number): void {
  expr(w, 'cmp', (w) => {
    w.u32(1, NFT_REG_1);
    w.u32(2, op);
    const at = w.begin(3);
    w.bytes(DATA_A.VALUE, hostU32Scratch(n));
    w.end(at);
  });
}
const hostScratch = new Uint32Array(1);
const hostScratchBytes = new Uint8Array(hostScratch.buffer);
/** `n` as host-order bytes in one shared buffer (copied into the message at once): no allocation per rule. */
function hostU32Scratch(n: number): Uint8Array {
  hostScratch[0] = n >>> 0;
  return hostScratchBytes;
}
// SREG DREG LEN MASK XOR
const bitwise = (w: Writer, mask: Uint8Array, xor: Uint8Array) =>
  expr(w, 'bitwise', (w) => {
    w.u32(1, NFT_REG_1);
    w.u32(2, NFT_REG_1);
    w.u32(3, mask.length);
    value(w, 4, mask);
    value(w, 5, xor);
  });
// DREG DATA
const immediateVerdict = (w: Writer, v: NlVerdict) =>
  expr(w, 'immediate', (w) => {
    w.u32(1, NFT_REG_VERDICT);
    verdictData(w, 2, v);
  });
const immediateValue = (w: Writer, reg: number, v: Uint8Array) =>
  expr(w, 'immediate', (w) => {
    w.u32(1, reg);
    value(w, 2, v);
  });
const be32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};
/** A register value the kernel writes in host order (numgen's number, fib's address type): compared as host-order bytes. */
function hostU32(n: number): Buffer {
  return Buffer.from(Uint32Array.of(n >>> 0).buffer);
}
const ZERO4 = Buffer.alloc(4);
const portScratch = new Uint8Array(2);

// Constant fragments, built once.
const LOAD_SADDR = blob((w) => payload(w, 12, 4));
const LOAD_DADDR = blob((w) => payload(w, 16, 4));
const LOAD_L4PROTO = blob((w) => metaLoad(w, NFT_META_L4PROTO, NFT_REG_1));
const FIB_LOCAL = {
  saddr: blob((w) => {
    expr(w, 'fib', (w) => {
      w.u32(3, NFTA_FIB_F_SADDR); // FLAGS RESULT DREG
      w.u32(2, NFT_FIB_RESULT_ADDRTYPE);
      w.u32(1, NFT_REG_1);
    });
    cmp(w, NFT_CMP_EQ, hostU32(RTN_LOCAL));
  }),
  daddr: blob((w) => {
    expr(w, 'fib', (w) => {
      w.u32(3, NFTA_FIB_F_DADDR);
      w.u32(2, NFT_FIB_RESULT_ADDRTYPE);
      w.u32(1, NFT_REG_1);
    });
    cmp(w, NFT_CMP_EQ, hostU32(RTN_LOCAL));
  }),
};
const CT_STATE_NEW_MATCH = blob((w) => {
  expr(w, 'ct', (w) => {
    w.u32(2, NFT_CT_STATE); // KEY DREG
    w.u32(1, NFT_REG_1);
  });
  bitwise(w, hostU32(CT_STATE_NEW), ZERO4);
  cmp(w, NFT_CMP_NEQ, ZERO4);
});
const L4PROTO_MATCH = new Map<number, Buffer>();
function l4protoMatch(proto: number): Buffer {
  let b = L4PROTO_MATCH.get(proto);
  if (!b) {
    b = blob((w) => {
      w.raw(LOAD_L4PROTO);
      cmp(w, NFT_CMP_EQ, Uint8Array.of(proto));
    });
    L4PROTO_MATCH.set(proto, b);
  }
  return b;
}
const REJECT = blob((w) =>
  expr(w, 'reject', (w) => {
    w.u32(1, NFT_REJECT_ICMP_UNREACH); // TYPE ICMP_CODE
    w.bytes(2, Uint8Array.of(ICMP_PORT_UNREACH));
  }),
);
const MASQ_FULLY_RANDOM = blob((w) => expr(w, 'masq', (w) => w.u32(1, NF_NAT_RANGE_PROTO_RANDOM_FULLY))); // FLAGS
const DNAT = blob((w) =>
  // TYPE FAMILY REG_ADDR_MIN REG_PROTO_MIN FLAGS
  expr(w, 'nat', (w) => {
    w.u32(1, NFT_NAT_DNAT);
    w.u32(2, NFPROTO_IPV4);
    w.u32(3, NFT_REG_1);
    w.u32(5, NFT_REG_2);
    w.u32(7, NF_NAT_RANGE_PROTO_SPECIFIED);
  }),
);
const VMAP_KEY = {
  'daddr-proto-port': blob((w) => {
    payload(w, 16, 4);
    metaLoad(w, NFT_META_L4PROTO, NFT_REG32_01);
    payload(w, 2, 2, NFT_REG32_02, NFT_PAYLOAD_TRANSPORT_HEADER);
  }),
  'proto-port': blob((w) => {
    metaLoad(w, NFT_META_L4PROTO, NFT_REG_1);
    payload(w, 2, 2, NFT_REG32_01, NFT_PAYLOAD_TRANSPORT_HEADER);
  }),
} as const;

/** Set ids of the sets this batch creates, for the expressions that refer to them (as nft sends them). */
type SetIds = ReadonlyMap<string, number>;

function ipOffset(field: 'saddr' | 'daddr'): number {
  return field === 'saddr' ? 12 : 16;
}

function writeMatch(w: Writer, m: NlMatch, ids: SetIds): void {
  switch (m.kind) {
    case 'ip': {
      const op = m.neq ? NFT_CMP_NEQ : NFT_CMP_EQ;
      if (m.prefix === 32) {
        w.raw(m.field === 'saddr' ? LOAD_SADDR : LOAD_DADDR);
        cmp(w, op, m.addr);
      } else if (m.prefix % 8 === 0) {
        // A whole-byte prefix loads only those bytes; any other masks the address first (what nft does).
        payload(w, ipOffset(m.field), m.prefix / 8);
        cmp(w, op, m.addr.subarray(0, m.prefix / 8));
      } else {
        w.raw(m.field === 'saddr' ? LOAD_SADDR : LOAD_DADDR);
        bitwise(w, be32(m.prefix === 0 ? 0 : (0xffffffff << (32 - m.prefix)) >>> 0), ZERO4);
        cmp(w, op, m.addr);
      }
      return;
    }
    case 'ip-in-set': {
      w.raw(m.field === 'saddr' ? LOAD_SADDR : LOAD_DADDR);
      const id = ids.get(m.set);
      expr(w, 'lookup', (w) => {
        w.u32(2, NFT_REG_1); // SREG SET [SET_ID]
        w.str(1, m.set);
        if (id !== undefined) w.u32(4, id);
      });
      return;
    }
    case 'fib-saddr-local':
      w.raw(FIB_LOCAL.saddr);
      return;
    case 'numgen':
      expr(w, 'numgen', (w) => {
        w.u32(1, NFT_REG_1); // DREG MODULUS TYPE OFFSET
        w.u32(2, m.mod);
        w.u32(3, NFT_NG_RANDOM);
        w.u32(4, 0);
      });
      cmpHostU32(w, NFT_CMP_EQ, m.value);
      return;
    case 'l4proto':
      w.raw(l4protoMatch(m.proto));
      return;
    case 'ct-state-new':
      w.raw(CT_STATE_NEW_MATCH);
      return;
    case 'fib-daddr-local':
      w.raw(FIB_LOCAL.daddr);
      return;
    case 'mark-and-zero':
      metaLoad(w, NFT_META_MARK, NFT_REG_1);
      bitwiseBool(w, hostU32(m.mask), ZERO4);
      cmp(w, NFT_CMP_EQ, ZERO4);
      return;
  }
}

function writeRuleExprs(w: Writer, r: NlRule, ids: SetIds): void {
  for (const m of r.matches) writeMatch(w, m, ids);
  const s = r.stmt;
  switch (s.kind) {
    case 'verdict':
      immediateVerdict(w, s.verdict);
      return;
    case 'reject':
      w.raw(REJECT);
      return;
    case 'masquerade-fully-random':
      w.raw(MASQ_FULLY_RANDOM);
      return;
    case 'mark-set':
      // or: (mark & ~v) ^ v; xor: (mark & ~0) ^ v.
      metaLoad(w, NFT_META_MARK, NFT_REG_1);
      bitwiseBool(w, s.op === 'or' ? hostU32(~s.value) : hostU32(0xffffffff), hostU32(s.value));
      metaSet(w, NFT_META_MARK);
      return;
    case 'vmap': {
      // The key's parts in consecutive 32-bit registers, then a lookup whose result is the verdict.
      w.raw(VMAP_KEY[s.key]);
      const id = ids.get(s.set);
      expr(w, 'lookup', (w) => {
        w.u32(2, NFT_REG_1); // SREG DREG SET [SET_ID]
        w.u32(3, NFT_REG_VERDICT);
        w.str(1, s.set);
        if (id !== undefined) w.u32(4, id);
      });
      return;
    }
    case 'update-saddr': {
      const id = ids.get(s.set);
      w.raw(LOAD_SADDR);
      expr(w, 'dynset', (w) => {
        w.u32(4, NFT_REG_1); // SREG_KEY OP SET_NAME [SET_ID]
        w.u32(3, NFT_DYNSET_OP_UPDATE);
        w.str(1, s.set);
        if (id !== undefined) w.u32(2, id);
      });
      return;
    }
    case 'dnat': {
      immediateValue(w, NFT_REG_1, s.addr);
      portScratch[0] = (s.port >>> 8) & 0xff;
      portScratch[1] = s.port & 0xff;
      immediateValue(w, NFT_REG_2, portScratch);
      w.raw(DNAT);
      return;
    }
  }
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

/** NFTA_SET_ELEM_KEY (or _KEY_END) { NFTA_DATA_VALUE { the key } }, written in place. */
function writeKey(w: Writer, parts: readonly NlKeyPart[], type: number = ELEM_A.KEY): void {
  const at = w.begin(type);
  const v = w.off;
  const n = parts.length * 4;
  const b = w.buf;
  b[v] = (4 + n) & 0xff;
  b[v + 1] = 0;
  b[v + 2] = DATA_A.VALUE;
  b[v + 3] = 0;
  b.fill(0, v + 4, v + 4 + n);
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    const o = v + 4 + i * 4;
    if (p.kind === 'ipv4') b.set(p.addr, o);
    else if (p.kind === 'proto') b[o] = p.proto;
    else {
      b[o] = (p.port >>> 8) & 0xff;
      b[o + 1] = p.port & 0xff;
    }
  }
  w.off = v + 4 + n;
  w.end(at);
}

// --- messages ---

/** A message's headers: struct nlmsghdr (its length filled in by endMessage) and struct nfgenmsg. */
function beginMessage(w: Writer, type: number, flags: number, seq: number, family: number, resId: number): number {
  w.ensure(MSG_MAX);
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
  return at;
}
function endMessage(w: Writer, at: number, max = MSG_MAX): void {
  if (w.off - at > max) throw new RangeError(`nf_tables message of ${w.off - at} bytes: more than the ${MSG_MAX} the encoder reserves`);
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

const R = NLM_F.REQUEST | NLM_F.ACK;

/** The type and flags of one command's message. */
function typeAndFlags(c: NlCommand): [number, number] {
  switch (c.op) {
    case 'add-table':
      // nft sends no NLM_F_CREATE here: the kernel creates a missing table either way.
      return [nft(NFT_MSG.NEWTABLE), R];
    case 'delete-table':
      return [nft(NFT_MSG.DELTABLE), R];
    case 'add-chain':
    case 'add-base-chain':
      return [nft(NFT_MSG.NEWCHAIN), R | NLM_F.CREATE];
    case 'add-set':
    case 'add-timeout-set':
      return [nft(NFT_MSG.NEWSET), R | NLM_F.CREATE];
    case 'flush-set':
      return [nft(NFT_MSG.DELSETELEM), R];
    case 'delete-chain':
      return [nft(NFT_MSG.DELCHAIN), R];
    case 'flush-chain':
      return [nft(NFT_MSG.DELRULE), R];
    case 'add-rule':
      return [nft(NFT_MSG.NEWRULE), R | NLM_F.CREATE | NLM_F.APPEND];
    case 'delete-set':
      return [nft(NFT_MSG.DELSET), R];
    case 'add-element':
      return [nft(NFT_MSG.NEWSETELEM), R | NLM_F.CREATE];
    case 'delete-element':
    case 'delete-elements':
      return [nft(NFT_MSG.DELSETELEM), R];
    case 'add-elements':
      return [nft(NFT_MSG.NEWSETELEM), R | NLM_F.CREATE];
  }
}

/** One command's attributes. */
function writeAttrs(w: Writer, c: NlCommand, ids: Map<string, number>): void {
  switch (c.op) {
    case 'add-table':
      w.str(TABLE_A.NAME, c.table);
      w.u32(TABLE_A.FLAGS, 0);
      if (c.comment !== null) commentAttr(w, TABLE_A.USERDATA, c.comment);
      return;
    case 'delete-table':
      w.str(TABLE_A.NAME, c.table);
      return;
    case 'add-chain':
      w.str(CHAIN_A.TABLE, c.table);
      w.str(CHAIN_A.NAME, c.chain);
      if (c.comment != null) commentAttr(w, CHAIN_A.USERDATA, c.comment);
      return;
    case 'add-base-chain': {
      w.str(CHAIN_A.TABLE, c.table);
      w.str(CHAIN_A.NAME, c.chain);
      w.str(CHAIN_A.TYPE, c.type);
      const at = w.begin(CHAIN_A.HOOK);
      w.u32(HOOK_A.NUM, HOOK_NUM[c.hook]);
      w.u32(HOOK_A.PRIORITY, c.priority);
      w.end(at);
      return;
    }
    case 'add-set': {
      const id = nextSetId(ids, c.set);
      w.str(SET_A.TABLE, c.table);
      w.str(SET_A.NAME, c.set);
      w.u32(SET_A.FLAGS, c.map ? NFT_SET_MAP : 0);
      w.u32(SET_A.KEY_TYPE, SET_KEY_TYPE[c.key]);
      w.u32(SET_A.KEY_LEN, SET_KEY_LEN[c.key]);
      if (c.map) {
        w.u32(SET_A.DATA_TYPE, NFT_DATA_VERDICT);
        w.u32(SET_A.DATA_LEN, 0);
      }
      w.u32(SET_A.ID, id);
      const ud = [c.map ? VMAP_UDATA_PREFIX : udata(UDATA_SET_KEYBYTEORDER, hostU32(BYTEORDER_BIG_ENDIAN))];
      if (c.comment !== null) ud.push(udata(UDATA_SET_COMMENT, Buffer.from(`${c.comment}\0`)));
      w.bytes(SET_A.USERDATA, Buffer.concat(ud));
      return;
    }
    case 'flush-set':
      // A DELSETELEM without elements empties the set (nft names the set first).
      w.str(ELEM_LIST_A.SET, c.set);
      w.str(ELEM_LIST_A.TABLE, c.table);
      return;
    case 'delete-chain':
      w.str(CHAIN_A.TABLE, c.table);
      w.str(CHAIN_A.NAME, c.chain);
      return;
    case 'flush-chain':
      w.str(RULE_A.TABLE, c.table);
      w.str(RULE_A.CHAIN, c.chain);
      return;
    case 'add-rule': {
      w.str(RULE_A.TABLE, c.table);
      w.str(RULE_A.CHAIN, c.chain);
      const at = w.begin(RULE_A.EXPRESSIONS);
      writeRuleExprs(w, c.rule, ids);
      w.end(at);
      if (c.rule.comment !== null) commentAttr(w, RULE_A.USERDATA, c.rule.comment);
      return;
    }
    case 'add-timeout-set': {
      const id = nextSetId(ids, c.set);
      w.str(SET_A.TABLE, c.table);
      w.str(SET_A.NAME, c.set);
      w.u32(SET_A.FLAGS, NFT_SET_TIMEOUT | NFT_SET_EVAL);
      w.u32(SET_A.KEY_TYPE, TYPE_IPADDR);
      w.u32(SET_A.KEY_LEN, 4);
      w.u32(SET_A.ID, id);
      w.u64(SET_A.TIMEOUT, c.timeoutSec * 1000);
      w.raw(TIMEOUT_SET_UDATA);
      return;
    }
    case 'delete-set':
      w.str(SET_A.TABLE, c.table);
      w.str(SET_A.NAME, c.set);
      return;
    case 'add-element':
      writeElementList(w, c.table, c.set, c.key, c.value, c.comment);
      return;
    case 'delete-element':
      writeElementList(w, c.table, c.set, c.key, null, null);
      return;
    case 'add-elements':
    case 'delete-elements': {
      // Any number of elements: room is made for each as it comes (the message may pass MSG_MAX; the
      // ELEMENTS nest's u16 length is the limit, and end() refuses more).
      w.str(ELEM_LIST_A.TABLE, c.table);
      w.str(ELEM_LIST_A.SET, c.set);
      const list = w.begin(ELEM_LIST_A.ELEMENTS);
      for (const e of c.elements) {
        w.ensure(4 + 2 * 8 + 4 * (e.key.length + (e.keyEnd?.length ?? 0)));
        const el = w.begin(NFTA_LIST_ELEM);
        writeKey(w, e.key);
        if (e.keyEnd !== null) writeKey(w, e.keyEnd, ELEM_A.KEY_END);
        w.end(el);
      }
      w.end(list);
      return;
    }
  }
}

/** TABLE, SET, then ELEMENTS holding one element: its key, and its verdict and comment when it has them. */
function writeElementList(w: Writer, table: string, set: string, key: readonly NlKeyPart[], value: NlVerdict | null, comment: string | null): void {
  w.str(ELEM_LIST_A.TABLE, table);
  w.str(ELEM_LIST_A.SET, set);
  const list = w.begin(ELEM_LIST_A.ELEMENTS);
  const el = w.begin(NFTA_LIST_ELEM);
  writeKey(w, key);
  if (value !== null) verdictData(w, ELEM_A.DATA, value);
  if (comment !== null) commentAttr(w, ELEM_A.USERDATA, comment);
  w.end(el);
  w.end(list);
}

/** A timeout set's userdata: the key byte order (libnftnl writes this u32 in host order). */
const TIMEOUT_SET_UDATA = blob((w) => w.bytes(SET_A.USERDATA, udata(UDATA_SET_KEYBYTEORDER, hostU32(BYTEORDER_BIG_ENDIAN))));

export interface EncodedBatch {
  /** BATCH_BEGIN, one message per command, BATCH_END. */
  readonly bytes: Buffer;
  /** Sequence number of BATCH_BEGIN; command i has `firstSeq + 1 + i`. */
  readonly firstSeq: number;
  readonly count: number;
}

/** One command's message alone (for tests and error reports); `ack` false drops NLM_F_ACK. */
export function encodeCommand(c: NlCommand, seq: number, setIds: Map<string, number> = new Map(), ack = true): Buffer {
  const w = new Writer(MSG_MAX);
  writeCommand(w, c, seq, setIds, ack);
  return Buffer.from(w.buf.subarray(0, w.off));
}

function writeCommand(w: Writer, c: NlCommand, seq: number, setIds: Map<string, number>, ack: boolean): void {
  const [type, flags] = typeAndFlags(c);
  const at = beginMessage(w, type, ack ? flags : flags & ~NLM_F.ACK, seq, NFPROTO_IPV4, 0);
  writeAttrs(w, c, setIds);
  // An element list reserves room as it goes; every other message fits the MSG_MAX beginMessage reserved.
  endMessage(w, at, c.op === 'add-elements' || c.op === 'delete-elements' ? Infinity : MSG_MAX);
}

/** BATCH_BEGIN or BATCH_END. */
function batchMarker(w: Writer, type: number, seq: number): void {
  endMessage(w, beginMessage(w, type, NLM_F.REQUEST, seq, 0, NFNL_SUBSYS_NFTABLES));
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
    batchMarker(this.w, NFNL_MSG_BATCH_BEGIN, firstSeq);
  }

  add(c: NlCommand): void {
    this.lastAt = this.w.off;
    writeCommand(this.w, c, this.firstSeq + 1 + this.count, this.ids, !this.last);
    this.count++;
  }

  finish(): EncodedBatch {
    const b = this.w.buf;
    if (this.last && this.lastAt >= 0) b.writeUInt16LE(b.readUInt16LE(this.lastAt + 6) | NLM_F.ACK, this.lastAt + 6);
    batchMarker(this.w, NFNL_MSG_BATCH_END, this.firstSeq + 1 + this.count);
    return { bytes: this.w.buf.subarray(0, this.w.off), firstSeq: this.firstSeq, count: this.count };
  }
}

/** The whole batch for `commands`, seq numbers from `firstSeq`. */
export function encodeBatch(commands: readonly NlCommand[], firstSeq: number, opts: EncodeOptions = {}): EncodedBatch {
  const ids = new Map<string, number>();
  const last = opts.acks === 'last';
  // ~200 bytes a message on average at scale.
  const w = new Writer(Math.max(1 << 16, commands.length * 224));
  batchMarker(w, NFNL_MSG_BATCH_BEGIN, firstSeq);
  commands.forEach((c, i) => writeCommand(w, c, firstSeq + 1 + i, ids, !last || i === commands.length - 1));
  batchMarker(w, NFNL_MSG_BATCH_END, firstSeq + 1 + commands.length);
  return { bytes: w.buf.subarray(0, w.off), firstSeq, count: commands.length };
}
