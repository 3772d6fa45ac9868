/**
 * controlplane/controllers/node-ipam: kube-controller-manager's node IPAM
 * (the range allocator) for the embedded control plane: every Node gets a
 * `spec.podCIDR` (and `podCIDRs`) of `maskSize` bits from the cluster CIDR.
 *
 * Watch → compare → act, through the REST layer (validated, watched like
 * any client's write):
 * - the Nodes' own `spec.podCIDR`s are the record: at start the table is
 *   rebuilt from them, so no two Nodes ever share one across restarts;
 * - a Node without one gets the lowest free block; a Node that comes with
 *   one keeps it when it is inside the cluster CIDR, of the right size and
 *   free (a conflict is logged and the Node left as it is, as upstream
 *   reports CIDRNotAvailable);
 * - a deleted Node's block is free again once its deletion is seen.
 * `spec.podCIDR` is immutable once set (validation), as upstream.
 */
import { ErrorCode, isNodenetError } from '../../errors/errors.js';
import { F } from '../../log/fields.js';
import { WorkQueue } from './work-queue.js';
import type { Logger } from '../../log/log.js';
import { intToIp, ipToInt, parseCidr } from '../../net/ip.js';
import type { Clock } from '../../reconcile/clock.js';
import type { Rest } from '../api/rest.js';
import { RESOURCES } from '../api/resources.js';
import type { WatchCache } from '../store/watch-cache.js';
import type { KObject, StoreEvent } from '../store/types.js';

type O = Record<string, unknown>;
const NODES = RESOURCES.find((r) => r.resource === 'nodes')!;

export const DEFAULT_CLUSTER_CIDR = '10.244.0.0/16';
export const DEFAULT_NODE_MASK = 24;

export interface NodeIpamOptions {
  readonly rest: Rest;
  readonly cache: WatchCache;
  readonly clock: Clock;
  readonly log: Logger;
  readonly clusterCIDR?: string;
  readonly maskSize?: number;
  readonly retryMs?: number;
}

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

  start(): void {
    const { items, rev } = this.o.cache.list('nodes');
    for (const s of items) {
      const name = String(s.object.metadata?.['name']);
      const cidr = podCIDROf(s.object);
      const b = cidr ? this.blockOf(cidr) : undefined;
      if (b !== undefined && !this.used.has(b)) this.used.set(b, name);
      this.work.add(name);
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
      for (const [b, n] of this.used) if (n === name) this.used.delete(b);
      return;
    }
    const cidr = podCIDROf(ev.cur.object);
    const b = cidr ? this.blockOf(cidr) : undefined;
    if (b !== undefined && !this.used.has(b)) this.used.set(b, name);
    if (!cidr) this.work.add(name);
  }

  private async process(name: string): Promise<void> {
    const s = this.o.cache.get(`nodes//${name}`);
    if (!s || s.object.metadata?.['deletionTimestamp']) return;
    const have = podCIDROf(s.object);
    if (have) {
      const b = this.blockOf(have);
      if (b === undefined) this.o.log.warn({ [F.name]: name, podCIDR: have, clusterCIDR: this.clusterCIDR }, `node ${name}'s podCIDR ${have} is not a /${this.maskSize} of the cluster CIDR; left as it is`);
      else if (this.used.get(b) !== name) this.o.log.warn({ [F.name]: name, podCIDR: have, holder: this.used.get(b) }, `node ${name}'s podCIDR ${have} is taken by ${this.used.get(b)}: CIDRNotAvailable`);
      return;
    }
    let block: number | undefined;
    for (let i = 0; i < this.blocks; i++) {
      if (!this.used.has(i)) {
        block = i;
        break;
      }
    }
    if (block === undefined) {
      this.o.log.error({ [F.name]: name, clusterCIDR: this.clusterCIDR }, `no pod CIDR left for node ${name}: the cluster CIDR ${this.clusterCIDR} has ${this.blocks} /${this.maskSize}s, all taken`);
      return;
    }
    const cidr = this.cidrOf(block);
    this.used.set(block, name); // held while the write is in flight; the watch confirms it
    const next = structuredClone(s.object) as KObject;
    const spec = ((next['spec'] as O | undefined) ?? (next['spec'] = {})) as O;
    spec['podCIDR'] = cidr;
    spec['podCIDRs'] = [cidr];
    try {
      await this.o.rest.update(NODES, '', name, next, { fieldManager: 'nodenet-node-ipam' });
      this.o.log.info({ [F.name]: name, podCIDR: cidr }, 'pod CIDR assigned');
    } catch (e) {
      if (this.used.get(block) === name && !podCIDROf(this.o.cache.get(`nodes//${name}`)?.object ?? {})) this.used.delete(block);
      if (isNodenetError(e) && e.code === ErrorCode.NotFound) return;
      throw e;
    }
  }
}
