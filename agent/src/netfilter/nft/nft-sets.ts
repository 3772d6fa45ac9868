/**
 * netfilter/nft-sets: adding and deleting elements of existing nftables sets
 * over netlink (nfnetlink, NFNL_SUBSYS_NFTABLES), without spawning `nft`.
 *
 * Why: the CNI ADD/DEL path must not spawn (a spawn costs 20-50 ms here,
 * more than the whole ADD). Tables, chains and sets are created once with
 * `nft -f` (the Nft executor); what changes per pod is set membership, and a
 * set element is one small netlink message. Only what nodenet needs is
 * encoded: IPv4 address keys, plain or concatenated ("a . b"), where a part
 * may be a prefix ("10.244.1.0/24") in an interval set.
 *
 * Wire format, as nft(8) and libnftnl send it:
 *   NFNL_MSG_BATCH_BEGIN (res_id = NFNL_SUBSYS_NFTABLES)
 *   NFT_MSG_NEWSETELEM / NFT_MSG_DELSETELEM, one per op, each with
 *     NFTA_SET_ELEM_LIST_TABLE, _SET, _ELEMENTS { NFTA_LIST_ELEM {
 *       NFTA_SET_ELEM_KEY { NFTA_DATA_VALUE }, [NFTA_SET_ELEM_KEY_END { ... }] } ... }
 *   NFNL_MSG_BATCH_END
 * sent in one sendmsg, so the kernel applies the batch as one transaction:
 * every op or none. Each op asks for an ACK; the kernel answers every one
 * (an error, or 0), and the batch's fate is known when all have come back.
 * Concatenated keys are the fields' bytes back to back, each padded to 4
 * bytes (IPv4 needs none); an interval set with concatenation (pipapo) takes
 * the range's first key as KEY and its last as KEY_END.
 *
 * Errors keep the kernel's errno name (ENOENT: no such table, set or
 * element; EEXIST; EINVAL: a key that does not fit the set).
 */
import { getSystemErrorName } from 'node:util';
import { RawNetlinkSocket } from 'netlink';
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { broadcast, parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import { withNetnsSync, type NetnsPath } from '../../netns/netns.js';

export interface NftElementOp {
  readonly op: 'add' | 'delete';
  readonly family: 'ip';
  readonly table: string;
  readonly set: string;
  /** Whether the set has `flags interval` (then every element carries a key end). */
  readonly interval: boolean;
  /** Elements as nft prints them: "10.244.1.5", "10.244.1.5 . 10.244.1.0/24". */
  readonly elements: readonly string[];
}

export interface NftSets {
  /**
   * Applies the ops as one transaction: all or none.
   * Adding an element that exists is success; deleting one that does not
   * fails with errno ENOENT (the kernel's answer), as does naming a missing
   * table or set.
   * @throws NftSetsError
   */
  applyElements(ops: readonly NftElementOp[]): Promise<void>;
  close(): void;
}

export class NftSetsError extends NodenetError {
  override name = 'NftSetsError';
  constructor(readonly errno: string, msg: string, opts?: { cause?: unknown }) {
    super(ErrorCode.Masquerade, msg, opts);
  }
}

// ---- codec (pure) ----

export const NETLINK_NETFILTER = 12;
const NFNL_SUBSYS_NFTABLES = 10;
const NFNL_MSG_BATCH_BEGIN = 0x10;
const NFNL_MSG_BATCH_END = 0x11;
const NFT_MSG_NEWSETELEM = 12;
const NFT_MSG_DELSETELEM = 14;
const NLM_F_REQUEST = 0x1;
const NLM_F_ACK = 0x4;
const NLM_F_CREATE = 0x400;
const NLMSG_ERROR = 0x2;
const NLA_F_NESTED = 0x8000;
const AF_UNSPEC = 0;
const AF_INET = 2;
const NFTA_SET_ELEM_LIST_TABLE = 1;
const NFTA_SET_ELEM_LIST_SET = 2;
const NFTA_SET_ELEM_LIST_ELEMENTS = 3;
const NFTA_LIST_ELEM = 1;
const NFTA_SET_ELEM_KEY = 1;
const NFTA_SET_ELEM_KEY_END = 10;
const NFTA_DATA_VALUE = 1;

const align4 = (n: number): number => (n + 3) & ~3;

function attr(type: number, payload: Buffer): Buffer {
  const len = 4 + payload.length;
  const out = Buffer.alloc(align4(len));
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type, 2);
  payload.copy(out, 4);
  return out;
}
const nested = (type: number, children: readonly Buffer[]): Buffer => attr(type | NLA_F_NESTED, Buffer.concat(children));
const cstring = (s: string): Buffer => Buffer.concat([Buffer.from(s, 'utf8'), Buffer.alloc(1)]);

function message(type: number, flags: number, seq: number, family: number, resId: number, body: Buffer): Buffer {
  const nfgen = Buffer.alloc(4);
  nfgen.writeUInt8(family, 0);
  nfgen.writeUInt8(0, 1); // NFNETLINK_V0
  nfgen.writeUInt16BE(resId, 2);
  const len = 16 + 4 + body.length;
  const hdr = Buffer.alloc(16);
  hdr.writeUInt32LE(len, 0);
  hdr.writeUInt16LE(type, 4);
  hdr.writeUInt16LE(flags, 6);
  hdr.writeUInt32LE(seq >>> 0, 8);
  hdr.writeUInt32LE(0, 12);
  return Buffer.concat([hdr, nfgen, body]);
}

const ipBytes = (ip: string): Buffer => {
  const b = Buffer.alloc(4);
  parseIPv4(ip)
    .split('.')
    .forEach((o, i) => b.writeUInt8(Number(o), i));
  return b;
};

/** The KEY and KEY_END bytes of one element ("a", "a . b/24"). Throws on a part that is not IPv4 (or a prefix in an interval set). */
export function elementKey(element: string, interval: boolean): { key: Buffer; keyEnd: Buffer | null } {
  const parts = element.split(' . ').map((p) => p.trim());
  const start: Buffer[] = [];
  const end: Buffer[] = [];
  for (const p of parts) {
    if (p.includes('/')) {
      if (!interval) throw new NftSetsError('EINVAL', `element ${element}: a prefix needs an interval set`);
      const c = parseCidr(p);
      if (p.split('/')[0] !== c.ip) throw new NftSetsError('EINVAL', `element ${element}: ${p} has host bits set`);
      start.push(ipBytes(c.ip));
      end.push(ipBytes(broadcast(c.cidr)));
    } else {
      const b = ipBytes(p);
      start.push(b);
      end.push(b);
    }
  }
  return { key: Buffer.concat(start), keyEnd: interval ? Buffer.concat(end) : null };
}

/** One batch for the ops; the op messages get seq, seq+1, ... Returns the bytes and the seqs to wait for. */
export function encodeBatch(ops: readonly NftElementOp[], seq: number): { bytes: Buffer; seqs: number[] } {
  const msgs: Buffer[] = [message(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, seq, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, Buffer.alloc(0))];
  const seqs: number[] = [];
  ops.forEach((op, i) => {
    const elems = op.elements.map((e) => {
      const { key, keyEnd } = elementKey(e, op.interval);
      const children = [nested(NFTA_SET_ELEM_KEY, [attr(NFTA_DATA_VALUE, key)])];
      if (keyEnd) children.push(nested(NFTA_SET_ELEM_KEY_END, [attr(NFTA_DATA_VALUE, keyEnd)]));
      return nested(NFTA_LIST_ELEM, children);
    });
    const body = Buffer.concat([
      attr(NFTA_SET_ELEM_LIST_TABLE, cstring(op.table)),
      attr(NFTA_SET_ELEM_LIST_SET, cstring(op.set)),
      nested(NFTA_SET_ELEM_LIST_ELEMENTS, elems),
    ]);
    const type = (NFNL_SUBSYS_NFTABLES << 8) | (op.op === 'add' ? NFT_MSG_NEWSETELEM : NFT_MSG_DELSETELEM);
    const flags = NLM_F_REQUEST | NLM_F_ACK | (op.op === 'add' ? NLM_F_CREATE : 0);
    const s = seq + 1 + i;
    seqs.push(s >>> 0);
    msgs.push(message(type, flags, s, AF_INET, 0, body));
  });
  msgs.push(message(NFNL_MSG_BATCH_END, NLM_F_REQUEST, seq + 1 + ops.length, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, Buffer.alloc(0)));
  return { bytes: Buffer.concat(msgs), seqs };
}

/** The NLMSG_ERROR answers in a datagram: seq → errno (0 for an ACK). Other messages are skipped. */
export function decodeAcks(buf: Buffer): Map<number, number> {
  const out = new Map<number, number>();
  let off = 0;
  while (off + 16 <= buf.length) {
    const len = buf.readUInt32LE(off);
    if (len < 16 || off + len > buf.length) break;
    const type = buf.readUInt16LE(off + 4);
    const seq = buf.readUInt32LE(off + 8);
    if (type === NLMSG_ERROR && len >= 20) out.set(seq, -buf.readInt32LE(off + 16));
    off += align4(len);
  }
  return out;
}

function errnoName(n: number): string {
  try {
    const name = getSystemErrorName(-n);
    return name === 'ENOTSUP' ? 'EOPNOTSUPP' : name;
  } catch {
    return `errno ${n}`;
  }
}

// ---- the socket ----

/**
 * NftSets over one NETLINK_NETFILTER socket, opened in `netns` (or the
 * caller's namespace). Batches run one at a time.
 */
export class NetlinkNftSets implements NftSets {
  private readonly sock: RawNetlinkSocket;
  private seq = Math.floor(Math.random() * 0x7fffffff);
  private queue: Promise<unknown> = Promise.resolve();
  private waiting: { seqs: Set<number>; errors: Map<number, number>; done: (err?: Error) => void } | null = null;
  private closed = false;

  constructor(netns?: NetnsPath, private readonly timeoutMs = 5000) {
    this.sock = netns ? withNetnsSync(netns, () => new RawNetlinkSocket(NETLINK_NETFILTER)) : new RawNetlinkSocket(NETLINK_NETFILTER);
    this.sock.unref();
    this.sock.on('message', (msg: Buffer) => this.receive(msg));
    this.sock.on('error', (e: Error) => this.waiting?.done(new NftSetsError('EIO', `nfnetlink socket: ${e.message}`, { cause: e })));
  }

  private receive(msg: Buffer): void {
    const w = this.waiting;
    if (!w) return;
    for (const [seq, errno] of decodeAcks(msg)) {
      if (!w.seqs.delete(seq)) continue;
      if (errno !== 0) w.errors.set(seq, errno);
    }
    if (w.seqs.size === 0) w.done();
  }

  applyElements(ops: readonly NftElementOp[]): Promise<void> {
    if (ops.length === 0) return Promise.resolve();
    const run = () => this.applyNow(ops);
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }

  private applyNow(ops: readonly NftElementOp[]): Promise<void> {
    if (this.closed) return Promise.reject(new NftSetsError('EBADF', 'nfnetlink socket closed'));
    const { bytes, seqs } = encodeBatch(ops, this.seq);
    this.seq = (this.seq + ops.length + 2) % 0x7fffffff;
    return new Promise<void>((resolve, reject) => {
      const errors = new Map<number, number>();
      const timer = setTimeout(() => w.done(new NftSetsError('ETIMEDOUT', `nfnetlink: no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      const w = {
        seqs: new Set(seqs),
        errors,
        done: (err?: Error) => {
          clearTimeout(timer);
          this.waiting = null;
          this.sock.unref();
          if (err) return reject(err);
          const first = seqs.findIndex((s) => errors.has(s));
          if (first < 0) return resolve();
          const op = ops[first]!;
          const errno = errnoName(errors.get(seqs[first]!)!);
          reject(new NftSetsError(errno, `nft ${op.op} element ${op.family} ${op.table} ${op.set} { ${op.elements.join(', ')} }: ${errno}`));
        },
      };
      this.waiting = w;
      this.sock.ref();
      this.sock.send(bytes, {}, (e) => {
        if (e) w.done(new NftSetsError(e.code ?? 'EIO', `nfnetlink send: ${e.message}`, { cause: e }));
      });
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sock.close();
  }
}
