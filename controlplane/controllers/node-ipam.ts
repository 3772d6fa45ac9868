/**
 * controlplane/controllers/node-ipam: kube-controller-manager's node IPAM
 * (the range allocator) for the embedded control plane: every Node gets a
 * `spec.podCIDR` (and `podCIDRs`) of `maskSize` bits from the cluster CIDR.
 *
 * Watch → compare → act, through the REST layer (validated, watched like
 * any client's write):
 * - each block a Node holds is a stored claim (alloc/claims.ts,
 *   `podcidrs.nodenet.io//<cidr>`), taken by create-if-absent before the
 *   Node is written: two controllers (a leader change that overlaps) never
 *   hand out one block; at start the claims are repaired from the Nodes'
 *   own `spec.podCIDR`s (a Node's CIDR without its claim gets it, a claim
 *   without its Node's CIDR goes);
 * - a Node without one gets the lowest free block; a Node that comes with
 *   one keeps it when it is inside the cluster CIDR, of the right size and
 *   free (a conflict is logged and the Node left as it is, as upstream
 *   reports CIDRNotAvailable);
 * - a deleted Node's block is free again once its deletion is seen (its
 *   claim is deleted).
 * `spec.podCIDR` is immutable once set (validation), as upstream.
 */
import { ErrorCode, isNodenetError } from '../../lib/errors/errors.js';
import { F } from '../../lib/log/fields.js';
import { WorkQueue } from './work-queue.js';
import type { Logger } from '../../lib/log/log.js';
import { intToIp, ipToInt, parseCidr } from '../../lib/net/ip.js';
import type { Clock } from '../../lib/reconcile/clock.js';
import type { RestClient } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { Claims, Owner } from '../alloc/claims.js';
import type { KObject, StoreEvent } from '../store/types.js';

type O = Record<string, unknown>;
const NODES = RESOURCES.find((r) => r.resource === 'nodes')!;

export const DEFAULT_CLUSTER_CIDR = '10.244.0.0/16';
export const DEFAULT_NODE_MASK = 24;

export interface NodeIpamOptions {
  readonly rest: RestClient;
  readonly cache: WatchCache;
  /** The stored claims on blocks (`podcidrs.nodenet.io`). */
  readonly claims: Claims;
  readonly clock: Clock;
  readonly log: Logger;
  readonly clusterCIDR?: string;
  readonly maskSize?: number;
  readonly retryMs?: number;
}

const owner = (node: string): Owner => ({ resource: 'nodes', namespace: '', name: node });

const podCIDROf = (o: Readonly<KObject>): string | undefined => {
  const v = (o['spec'] as O | undefined)?.['podCIDR'];
  return typeof v === 'string' && v !== '' ? v : undefined;
};

export class NodeIpam {
  readonly clusterCIDR: string;
  readonly maskSize: number;
  private readonly base: number;
  private readonly blocks: number;
  /** block index → the Node name holding it. */
  private readonly used = new Map<number, string>();
  private watch: { stop(): void } | null = null;
  private readonly work: WorkQueue;

  constructor(private readonly o: NodeIpamOptions) {
    const c = parseCidr(o.clusterCIDR ?? DEFAULT_CLUSTER_CIDR);
    const mask = o.maskSize ?? DEFAULT_NODE_MASK;
    if (!Number.isInteger(mask) || mask < c.prefix || mask > 30) throw new TypeError(`node CIDR mask /${mask} does not fit in ${c.cidr} (between /${c.prefix} and /30)`);
    this.clusterCIDR = c.cidr;
    this.maskSize = mask;
    this.base = ipToInt(c.ip);
    this.blocks = 2 ** (mask - c.prefix);
    this.work = new WorkQueue({ name: 'node IPAM', clock: o.clock, log: o.log, process: (name) => this.process(name), retryMs: o.retryMs ?? 500 });
  }

  private blockOf(cidr: string): number | undefined {
    try {
      const c = parseCidr(cidr);
      if (c.cidr !== cidr || c.prefix !== this.maskSize) return undefined;
      const off = ipToInt(c.ip) - this.base;
      const size = 2 ** (32 - this.maskSize);
      if (off < 0 || off % size !== 0 || off / size >= this.blocks) return undefined;
      return off / size;
    } catch {
      return undefined;
    }
  }

  private cidrOf(block: number): string {
    return `${intToIp(this.base + block * 2 ** (32 - this.maskSize))}/${this.maskSize}`;
  }

  /** The repair (claims agree with the Nodes), then the watch. */
  async start(): Promise<void> {
    const { items, rev } = this.o.cache.list('nodes');
    const shown = new Map<string, string>();
    for (const s of items) {
      const name = String(s.object.metadata?.['name']);
      const cidr = podCIDROf(s.object);
      const b = cidr ? this.blockOf(cidr) : undefined;
      if (b !== undefined && cidr) {
        shown.set(cidr, name);
        if (await this.o.claims.claim(cidr, owner(name))) this.used.set(b, name);
      }
      this.work.add(name);
    }
    for (const [cidr, holder] of this.o.claims.all()) {
      const name = holder.split('/')[2]!;
      if (shown.get(cidr) !== name) await this.o.claims.release(cidr, owner(name));
      else {
        const b = this.blockOf(cidr);
        if (b !== undefined) this.used.set(b, name);
      }
    }
    this.watch = this.o.cache.watch({ gr: 'nodes', afterRev: rev, onEvent: (ev) => this.onEvent(ev) });
  }

  stop(): void {
    this.watch?.stop();
    this.work.stop();
  }

  /** Resolves when nothing is queued or being worked on (tests). */
  idle(): Promise<void> {
    return this.work.idle();
  }

  /** Blocks left to hand out. */
  get free(): number {
    return this.blocks - this.used.size;
  }

  private onEvent(ev: StoreEvent): void {
    const name = String(ev.cur.object.metadata?.['name']);
    if (ev.type === 'DELETED') {
      for (const [b, n] of this.used) {
        if (n !== name) continue;
        this.used.delete(b);
        this.work.add(`release ${this.cidrOf(b)} ${name}`);
      }
      return;
    }
    const cidr = podCIDROf(ev.cur.object);
    const b = cidr ? this.blockOf(cidr) : undefined;
    if (b !== undefined && !this.used.has(b)) this.used.set(b, name);
    if (!cidr) this.work.add(name);
  }

  private async process(item: string): Promise<void> {
    if (item.startsWith('release ')) {
      // A deleted Node's claim goes (the block is free in the table already).
      const [, cidr, node] = item.split(' ');
      return this.o.claims.release(cidr!, owner(node!));
    }
    const name = item;
    const s = this.o.cache.get(`nodes//${name}`);
    if (!s || s.object.metadata?.['deletionTimestamp']) return;
    const have = podCIDROf(s.object);
    if (have) {
      const b = this.blockOf(have);
      if (b === undefined) this.o.log.warn({ [F.name]: name, podCIDR: have, clusterCIDR: this.clusterCIDR }, `node ${name}'s podCIDR ${have} is not a /${this.maskSize} of the cluster CIDR; left as it is`);
      else if (this.used.get(b) === name || (!this.used.has(b) && (await this.o.claims.claim(have, owner(name))))) this.used.set(b, name);
      else this.o.log.warn({ [F.name]: name, podCIDR: have, holder: this.used.get(b) ?? this.o.claims.holder(have) }, `node ${name}'s podCIDR ${have} is taken by ${this.used.get(b) ?? this.o.claims.holder(have)}: CIDRNotAvailable`);
      return;
    }
    let block: number | undefined;
    for (let i = 0; i < this.blocks && block === undefined; i++) {
      if (this.used.has(i)) continue;
      // The claim is the lock: another controller may hold the block though this one has not heard of it yet.
      this.used.set(i, name); // held while the claim and the write are in flight
      if (await this.o.claims.claim(this.cidrOf(i), owner(name))) block = i;
      else this.used.set(i, this.o.claims.holder(this.cidrOf(i))?.split('/')[2] ?? '(another controller)');
    }
    if (block === undefined) {
      this.o.log.error({ [F.name]: name, clusterCIDR: this.clusterCIDR }, `no pod CIDR left for node ${name}: the cluster CIDR ${this.clusterCIDR} has ${this.blocks} /${this.maskSize}s, all taken`);
      return;
    }
    const cidr = this.cidrOf(block);
    const next = structuredClone(s.object) as KObject;
    const spec = ((next['spec'] as O | undefined) ?? (next['spec'] = {})) as O;
    spec['podCIDR'] = cidr;
    spec['podCIDRs'] = [cidr];
    try {
      await this.o.rest.update(NODES, '', name, next, { fieldManager: 'nodenet-node-ipam' });
      this.o.log.info({ [F.name]: name, podCIDR: cidr }, 'pod CIDR assigned');
    } catch (e) {
      // The Node did not take this block (gone, or another controller gave it another first): the claim goes.
      if (this.used.get(block) === name && podCIDROf((await this.o.rest.get(NODES, '', name).catch(() => undefined))?.object ?? {}) !== cidr) {
        this.used.delete(block);
        await this.o.claims.release(cidr, owner(name));
      }
      if (isNodenetError(e) && e.code === ErrorCode.NotFound) return;
      throw e;
    }
  }
}
