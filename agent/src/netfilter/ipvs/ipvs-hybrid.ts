/**
 * netfilter/ipvs-hybrid: the IPVS executor the agent uses, each call on the
 * path that measured faster (test-vm suite `ipvs-programming`, Debian's
 * 6.1 kernel under qemu TCG; 2 real servers per virtual server):
 *
 *   virtual servers  executor  add all   list    1 change  flush
 *   100              genl      1975 ms   498 ms  11.5 ms     9 ms
 *   100              ipvsadm    414 ms   349 ms   181 ms   126 ms
 *   1000             genl     13642 ms  3627 ms  10.9 ms    21 ms
 *   1000             ipvsadm   3741 ms  2112 ms   212 ms   166 ms
 *   5000             genl     53838 ms 18355 ms   7.4 ms    30 ms
 *   5000             ipvsadm  21059 ms  9856 ms   169 ms   174 ms
 *
 * Generic netlink costs no process but about 3.6 ms per op there (one
 * request and its ack at a time, encoded in JavaScript); `ipvsadm -R` costs
 * a spawn (~170 ms there) and then about 1.2 ms per op in C. So: a batch of
 * BULK_OPS or more (a full sync from nothing, a big change) goes to
 * `ipvsadm -R`, a smaller one (a partial sync's usual few ops) to genl;
 * listing the whole table (full syncs) parses `ipvsadm -Ln`, one service's
 * real servers (partial syncs) come over genl; flush is genl's.
 */
import type { Ipvs, IpvsOp, RealServerState, VirtualServer, VirtualServerState } from './ipvs-types.js';

/** Where ipvsadm's spawn pays for itself: 170 ms / (3.6 - 1.2) ms per op, about 70 ops; rounded down. */
export const BULK_OPS = 64;

export class HybridIpvs implements Ipvs {
  readonly kind = 'hybrid' as const;

  constructor(private readonly genl: Ipvs, private readonly ipvsadm: Ipvs, private readonly bulkOps = BULK_OPS) {}

  list(): Promise<VirtualServerState[]> {
    return this.ipvsadm.list();
  }

  listDests(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): Promise<RealServerState[] | null> {
    return this.genl.listDests(vs);
  }

  apply(ops: readonly IpvsOp[]): Promise<void> {
    return ops.length >= this.bulkOps ? this.ipvsadm.apply(ops) : this.genl.apply(ops);
  }

  flush(): Promise<void> {
    return this.genl.flush();
  }

  close(): void {
    this.genl.close();
    this.ipvsadm.close();
  }
}
