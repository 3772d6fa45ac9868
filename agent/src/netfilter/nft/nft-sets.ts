/**
 * netfilter/nft-sets: adding and deleting elements of existing nftables sets
 * over netlink (nfnetlink, NFNL_SUBSYS_NFTABLES), without spawning `nft`.
 *
 * Why: the CNI ADD/DEL path must not spawn (a spawn costs 20-50 ms here,
 * more than the whole ADD). Tables, chains and sets are created once with
 * `nft -f` (the Nft executor); what changes per pod is set membership, and a
 * set element is one small netlink message. Only what nodenet needs is
 * parsed: IPv4 address keys, plain or concatenated ("a . b"), where a part
 * may be a prefix ("10.244.1.0/24") in an interval set.
 *
 * One nfnetlink path: the ops become element-list commands of
 * nft/netlink/commands.ts, encoded by nft/netlink/encode.ts and sent on a
 * kept NfnlSocket (nft/netlink/socket.ts), the encoder and socket the
 * nftables proxy uses. The wire format is what nft(8) and libnftnl send:
 *   NFNL_MSG_BATCH_BEGIN (res_id = NFNL_SUBSYS_NFTABLES)
 *   NFT_MSG_NEWSETELEM / NFT_MSG_DELSETELEM, one per op, each with
 *     NFTA_SET_ELEM_LIST_TABLE, _SET, _ELEMENTS { NFTA_LIST_ELEM {
 *       NFTA_SET_ELEM_KEY { NFTA_DATA_VALUE }, [NFTA_SET_ELEM_KEY_END { ... }] } ... }
 *   NFNL_MSG_BATCH_END
 * in one sendto(2), so the kernel applies the batch as one transaction:
 * every op or none. Each op asks for an ACK. The send runs on a worker
 * thread (sendInBackground): the kernel processes the batch inside it and
 * has queued every answer when it returns (a proxy sync holding the
 * nf_tables mutex delays the ADD, never the event loop). Concatenated keys
 * are the fields' bytes back to back, each padded to 4 bytes (IPv4 needs
 * none); an interval set with concatenation (pipapo) takes the range's first
 * key as KEY and its last as KEY_END.
 *
 * Errors keep the kernel's errno name (ENOENT: no such table, set or
 * element; EEXIST; EINVAL: a key that does not fit the set).
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import { broadcast, parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import { errnoName } from '../../netns/libc.js';
import type { NlCommand, NlElement, NlKeyPart } from './netlink/commands.js';
import { encodeBatch } from './netlink/encode.js';
import { NfnlSocket, type NetlinkAnswer } from './netlink/socket.js';

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

// ---- ops to commands (pure) ----

const ipv4Part = (ip: string): NlKeyPart => ({ kind: 'ipv4', addr: Uint8Array.from(parseIPv4(ip).split('.'), Number) });

/** The KEY and KEY_END of one element ("a", "a . b/24"). Throws on a part that is not IPv4 (or a prefix in an interval set). */
export function elementKey(element: string, interval: boolean): NlElement {
  const parts = element.split(' . ').map((p) => p.trim());
  const start: NlKeyPart[] = [];
  const end: NlKeyPart[] = [];
  for (const p of parts) {
    if (p.includes('/')) {
      if (!interval) throw new NftSetsError('EINVAL', `element ${element}: a prefix needs an interval set`);
      const c = parseCidr(p);
      if (p.split('/')[0] !== c.ip) throw new NftSetsError('EINVAL', `element ${element}: ${p} has host bits set`);
      start.push(ipv4Part(c.ip));
      end.push(ipv4Part(broadcast(c.cidr)));
    } else {
      const k = ipv4Part(p);
      start.push(k);
      end.push(k);
    }
  }
  return { key: start, keyEnd: interval ? end : null };
}

/** One element-list command per op, in order (command i is op i). @throws NftSetsError on an element elementKey refuses */
export function elementCommands(ops: readonly NftElementOp[]): NlCommand[] {
  return ops.map((op, i) => ({
    line: i + 1,
    table: op.table,
    op: op.op === 'add' ? 'add-elements' : 'delete-elements',
    set: op.set,
    elements: op.elements.map((e) => elementKey(e, op.interval)),
  }));
}

/**
 * The outcome of a batch from the kernel's answers: op i's answer has seq
 * firstSeq + 1 + i; an error on BATCH_BEGIN (firstSeq) is a failed commit.
 * @throws NftSetsError naming the first failed op, or EIO when answers are missing (the outcome is unknown)
 */
export function checkElementAnswers(ops: readonly NftElementOp[], firstSeq: number, answers: readonly NetlinkAnswer[]): void {
  const bySeq = new Map<number, NetlinkAnswer>();
  for (const a of answers) if (a.error !== 0 || !bySeq.has(a.seq)) bySeq.set(a.seq, a);
  const why = (a: NetlinkAnswer): string => kernelErrno(a.error) + (a.message ? ` (${a.message})` : '');
  const begin = bySeq.get(firstSeq);
  if (begin && begin.error !== 0) throw new NftSetsError(kernelErrno(begin.error), `nfnetlink: the element batch did not commit: ${why(begin)}`);
  let missing = 0;
  for (let i = 0; i < ops.length; i++) {
    const a = bySeq.get((firstSeq + 1 + i) >>> 0);
    if (!a) {
      missing++;
      continue;
    }
    if (a.error === 0) continue;
    const op = ops[i]!;
    throw new NftSetsError(kernelErrno(a.error), `nft ${op.op} element ${op.family} ${op.table} ${op.set} { ${op.elements.join(', ')} }: ${why(a)}`);
  }
  if (missing) throw new NftSetsError('EIO', `nfnetlink: ${missing} of ${ops.length} element messages unanswered; state unknown`);
}

/** The errno name of a kernel answer's negative errno (EOPNOTSUPP as the kernel names it, not ENOTSUP). */
function kernelErrno(error: number): string {
  const name = errnoName(-error);
  return name === 'ENOTSUP' ? 'EOPNOTSUPP' : name;
}

// ---- the socket ----

/** What NetlinkNftSets uses of netlink/socket.ts's NfnlSocket (a fake in the unit test). */
export type ElementSocket = Pick<NfnlSocket, 'prepare' | 'sendInBackground' | 'collect' | 'close'>;

export interface NetlinkNftSetsDeps {
  /** Default: an NfnlSocket opened in the namespace on first use and kept. */
  readonly socket?: ElementSocket;
  /** The first batch's BATCH_BEGIN seq (default: random). */
  readonly firstSeq?: number;
}

/**
 * NftSets over one NETLINK_NETFILTER socket (nft/netlink/socket.ts), made in
 * `netns` (or the caller's namespace) on first use and kept. Batches run one
 * at a time.
 */
export class NetlinkNftSets implements NftSets {
  private readonly sock: ElementSocket;
  private seq: number;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(netns?: string, deps: NetlinkNftSetsDeps = {}) {
    this.sock = deps.socket ?? new NfnlSocket(netns);
    this.seq = deps.firstSeq ?? Math.floor(Math.random() * 0x3fffffff);
  }

  applyElements(ops: readonly NftElementOp[]): Promise<void> {
    if (ops.length === 0) return Promise.resolve();
    const run = () => this.applyNow(ops);
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => undefined);
    return p;
  }

  private async applyNow(ops: readonly NftElementOp[]): Promise<void> {
    if (this.closed) throw new NftSetsError('EBADF', 'nfnetlink socket closed');
    const commands = elementCommands(ops);
    const firstSeq = this.seq;
    this.seq = (this.seq + ops.length + 2) & 0x3fffffff;
    let bytes: Buffer;
    try {
      bytes = encodeBatch(commands, firstSeq).bytes;
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      throw new NftSetsError('EMSGSIZE', `nfnetlink: element batch too big for one message per set: ${e.message}`, { cause: e });
    }
    let answers: NetlinkAnswer[];
    try {
      this.sock.prepare(bytes.length);
      const failed = await this.sock.sendInBackground(bytes);
      if (failed !== null) throw new NftSetsError('EIO', failed);
      answers = this.sock.collect();
    } catch (e) {
      if (e instanceof NftSetsError) throw e;
      throw new NftSetsError('EIO', `nfnetlink: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
    checkElementAnswers(ops, firstSeq, answers);
  }

  /** Closes the socket once the batch in flight (if any) is done; later applyElements calls fail with EBADF. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    void this.queue.then(() => this.sock.close());
  }
}
