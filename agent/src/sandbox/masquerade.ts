/**
 * sandbox/masquerade: the bridge plugin's ipMasq, for every attachment of a
 * node at once, in one nftables table set up when the agent starts:
 *
 *   table ip nodenet-cni {
 *     set masq-pods   { type ipv4_addr; }                          # pods with ipMasq
 *     set masq-exempt { type ipv4_addr . ipv4_addr; flags interval; }  # pod . its own subnet
 *     chain postrouting {
 *       type nat hook postrouting priority srcnat; policy accept;
 *       ip saddr . ip daddr @masq-exempt return
 *       ip saddr @masq-pods ip daddr != 224.0.0.0/4 masquerade
 *     }
 *   }
 *
 * which is what the reference plugin's per-pod chain does (traffic to the
 * pod's own subnet untouched, multicast untouched, the rest masqueraded),
 * without a chain per pod. An ADD with ipMasq adds two set elements and a
 * DEL removes them, over netlink (netfilter/nft/nft-sets.ts): no process is
 * spawned on the CNI path, and the cost does not grow with the rules of the
 * node (the old per-pod `iptables-save` + `iptables-restore` took 0.9-1.1 s
 * with 10,000 Services in iptables mode).
 *
 * setup() writes the table with one `nft -f` (idempotent: the sets keep
 * their elements, the chain's rules are rewritten). reconcile() makes the
 * sets match the attachment records after a restart: a crash between the
 * element add and the record write leaves an element no record explains,
 * and it is removed. If setup fails (no nft on the node), the agent keeps
 * serving ADDs without ipMasq; one with ipMasq fails, naming the cause.
 */
import { ErrorCode, NodenetError } from '../../../lib/errors/errors.js';
import { F } from '../../../lib/log/fields.js';
import type { Logger } from '../../../lib/log/log.js';
import { parseIPNet } from '../../../lib/net/ip.js';
import type { Nft } from '../netfilter/nft/nft.js';
import { NftSetsError, type NftElementOp, type NftSets } from '../netfilter/nft/nft-sets.js';
import type { Masquerade, MasqueradeEntry } from './deps.js';

export const MASQ_TABLE = 'nodenet-cni';
const PODS = 'masq-pods';
const EXEMPT = 'masq-exempt';

/** The set-up script. Pure. */
export function masqueradeScript(): string {
  const t = `ip ${MASQ_TABLE}`;
  return [
    `add table ${t} { comment "nodenet CNI: ipMasq for pods on this node"; }`,
    `add set ${t} ${PODS} { type ipv4_addr; comment "pods whose traffic leaving their subnet is masqueraded"; }`,
    `add set ${t} ${EXEMPT} { type ipv4_addr . ipv4_addr; flags interval; comment "pod . its own subnet: not masqueraded"; }`,
    `add chain ${t} postrouting { type nat hook postrouting priority srcnat; policy accept; }`,
    `flush chain ${t} postrouting`,
    `add rule ${t} postrouting ip saddr . ip daddr @${EXEMPT} return`,
    `add rule ${t} postrouting ip saddr @${PODS} ip daddr != 224.0.0.0/4 masquerade`,
    '',
  ].join('\n');
}

const op = (o: 'add' | 'delete', set: string, elements: string[]): NftElementOp => ({
  op: o,
  family: 'ip',
  table: MASQ_TABLE,
  set,
  interval: set === EXEMPT,
  elements,
});

export class NftMasquerade implements Masquerade {
  private ready: Error | true | null = null;

  constructor(private readonly deps: { readonly nft: Nft; readonly sets: NftSets; readonly log: Logger }) {}

  /** Writes the table (one `nft -f`). A failure is kept and reported by later add() calls. */
  async setup(): Promise<void> {
    try {
      await this.deps.nft.apply(masqueradeScript());
      this.ready = true;
    } catch (e) {
      this.ready = e instanceof Error ? e : new Error(String(e));
      this.deps.log.error({ [F.err]: e }, 'cannot set up the ipMasq table; ADDs with ipMasq will fail');
    }
  }

  private check(): void {
    if (this.ready === true) return;
    const why = this.ready === null ? 'setup() was not run' : this.ready.message;
    throw new NodenetError(ErrorCode.Masquerade, `ipMasq is not available on this node: ${why}`, { cause: this.ready ?? undefined });
  }

  async add(a: MasqueradeEntry): Promise<void> {
    this.check();
    await this.deps.sets.applyElements([op('add', PODS, [a.ip]), op('add', EXEMPT, [`${a.ip} . ${a.subnet}`])]);
  }

  /** Idempotent. Without the subnet only the pod's membership goes (its exempt element is harmless and reconcile() removes it). */
  async del(a: { readonly ip: string; readonly subnet?: string | undefined }): Promise<void> {
    if (this.ready !== true) return; // nothing was ever added
    const ops = [op('delete', PODS, [a.ip])];
    if (a.subnet) ops.push(op('delete', EXEMPT, [`${a.ip} . ${a.subnet}`]));
    try {
      await this.deps.sets.applyElements(ops);
    } catch (e) {
      if (!(e instanceof NftSetsError) || e.errno !== 'ENOENT') throw e;
      // One of them was gone (the batch is all or nothing): delete each alone.
      for (const o of ops) {
        await this.deps.sets.applyElements([o]).catch((e2: unknown) => {
          if (!(e2 instanceof NftSetsError) || e2.errno !== 'ENOENT') throw e2;
        });
      }
    }
  }

  /**
   * Makes the sets hold exactly `entries` (the attachments with ipMasq).
   * Lists the table once (a spawn): start-up only.
   */
  async reconcile(entries: readonly MasqueradeEntry[]): Promise<{ added: number; removed: number }> {
    if (this.ready !== true) return { added: 0, removed: 0 };
    const info = await this.deps.nft.listTable('ip', MASQ_TABLE);
    const have = (set: string): Set<string> => new Set(info?.sets.get(set)?.elements.keys() ?? []);
    const pods = have(PODS);
    const exempt = have(EXEMPT);
    const wantPods = new Set(entries.map((e) => e.ip));
    const wantExempt = new Set(entries.map((e) => `${e.ip} . ${e.subnet}`));
    const ops: NftElementOp[] = [];
    const add = (set: string, want: Set<string>, cur: Set<string>) => {
      const missing = [...want].filter((x) => !cur.has(x));
      if (missing.length) ops.push(op('add', set, missing));
      return missing.length;
    };
    const remove = (set: string, want: Set<string>, cur: Set<string>) => {
      const extra = [...cur].filter((x) => !want.has(x));
      if (extra.length) ops.push(op('delete', set, extra));
      return extra.length;
    };
    const added = add(PODS, wantPods, pods) + add(EXEMPT, wantExempt, exempt);
    const removed = remove(PODS, wantPods, pods) + remove(EXEMPT, wantExempt, exempt);
    await this.deps.sets.applyElements(ops);
    if (added || removed) this.deps.log.info({ added, removed }, 'ipMasq sets reconciled with the attachment records');
    return { added, removed };
  }

  /** Removes the table (tests, and a node leaving nodenet). Idempotent. */
  async cleanup(): Promise<void> {
    await this.deps.nft.deleteTable('ip', MASQ_TABLE);
  }
}

/** The masquerade entry of an attachment's address ("10.244.1.5/24"). */
export function masqueradeEntry(address: string): MasqueradeEntry {
  const net = parseIPNet(address);
  return { ip: net.ip, subnet: net.network.cidr };
}
