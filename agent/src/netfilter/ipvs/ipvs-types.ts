/**
 * netfilter/ipvs-types: the IPVS executor's interface and the shapes shared
 * by its implementations (ipvs-genl.ts: the kernel's "IPVS" generic netlink
 * family; ipvsadm.ts: `ipvsadm -R` batches; ipvs.fake.ts: the validating
 * fake) and the proxy's IPVS mode. Types and tiny pure helpers only, so pure
 * modules may import it.
 *
 * One virtual service is keyed by protocol, address and port ("TCP/10.96.0.10:80");
 * a real server by its address and port inside its service. nodenet uses NAT
 * (masquerading) real servers only, as kube-proxy does; the other forwarding
 * methods are modelled so a listing of a foreign table reads back faithfully.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';

export type IpvsProtocol = 'TCP' | 'UDP' | 'SCTP';
/** ipvsadm's names: -m masq (NAT), -g route (direct routing), -i tunnel, and the kernel's local node. */
export type ForwardMethod = 'masq' | 'local' | 'tunnel' | 'route';

/** Scheduler names the kernel ships (net/netfilter/ipvs/ip_vs_*.c). */
export const KNOWN_SCHEDULERS: readonly string[] = ['rr', 'wrr', 'lc', 'wlc', 'lblc', 'lblcr', 'dh', 'sh', 'sed', 'nq', 'fo', 'ovf', 'mh', 'twos'];

export interface VirtualServer {
  readonly protocol: IpvsProtocol;
  readonly address: string;
  readonly port: number;
  readonly scheduler: string;
  /** ClientIP affinity: IP_VS_SVC_F_PERSISTENT with this timeout in seconds; 0: not persistent. */
  readonly persistentTimeout: number;
}

export interface RealServer {
  readonly address: string;
  readonly port: number;
  readonly weight: number;
  readonly forward: ForwardMethod;
}

/** A real server as the kernel lists it, with its connection counters. */
export interface RealServerState extends RealServer {
  readonly activeConns: number;
  readonly inactiveConns: number;
}

export interface VirtualServerState extends VirtualServer {
  readonly dests: readonly RealServerState[];
}

export type VsKey = string;
export type RsKey = string;

export function vsKey(v: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): VsKey {
  return `${v.protocol}/${v.address}:${v.port}`;
}

export function rsKey(r: Pick<RealServer, 'address' | 'port'>): RsKey {
  return `${r.address}:${r.port}`;
}

/** One change to the kernel's IPVS table; a batch is applied in order. */
export type IpvsOp =
  | { readonly op: 'add-service'; readonly vs: VirtualServer }
  /** Changes the scheduler or persistence of an existing service (its real servers stay). */
  | { readonly op: 'edit-service'; readonly vs: VirtualServer }
  /** Deletes the service and its real servers. */
  | { readonly op: 'del-service'; readonly vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'> }
  | { readonly op: 'add-dest'; readonly vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>; readonly rs: RealServer }
  /** Changes an existing real server's weight (0 drains it: no new connections, the existing ones go on). */
  | { readonly op: 'edit-dest'; readonly vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>; readonly rs: RealServer }
  | { readonly op: 'del-dest'; readonly vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>; readonly rs: Pick<RealServer, 'address' | 'port'> };

/**
 * The IPVS executor, bound to one network namespace (IPVS tables are per
 * namespace). Calls are serialised by the implementations.
 */
export interface Ipvs {
  /** 'genl' (netlink) or 'ipvsadm' (batches through the tool), for logs and stats. */
  readonly kind: 'genl' | 'ipvsadm' | 'hybrid' | 'fake';
  /**
   * Every virtual service with its real servers and their connection counters.
   * @throws NodenetError(NotAvailable) when the kernel has no IPVS.
   */
  list(): Promise<VirtualServerState[]>;
  /** The real servers of one service (null when the service does not exist). */
  listDests(vs: Pick<VirtualServer, 'protocol' | 'address' | 'port'>): Promise<RealServerState[] | null>;
  /**
   * Applies a batch in order. Not a transaction: the kernel has none for
   * IPVS. On failure it throws IpvsApplyError naming the failed op and how
   * many ops before it were applied; the caller then lists the kernel again.
   */
  apply(ops: readonly IpvsOp[]): Promise<void>;
  /** Deletes every virtual service of this namespace (ipvsadm -C). Idempotent. */
  flush(): Promise<void>;
  /** Releases the socket, if any. Idempotent. */
  close(): void;
}

export class IpvsApplyError extends NodenetError {
  override name = 'IpvsApplyError';
  /** `applied`: how many ops of the batch took effect before the failure, null when the tool does not say. */
  constructor(msg: string, readonly applied: number | null, opts?: { cause?: unknown; details?: string }) {
    super(ErrorCode.RuleApply, msg, opts);
  }
}

/** The message agent start gives when the kernel has no IPVS. */
export const NO_IPVS_MESSAGE = 'this kernel has no IPVS (modprobe ip_vs failed): use iptables or nftables, or run in a VM (test-vm/)';

export function noIpvsError(detail: string, cause?: unknown): NodenetError {
  return new NodenetError(ErrorCode.NotAvailable, `${NO_IPVS_MESSAGE}; ${detail}`, cause === undefined ? {} : { cause });
}

/** Human form of one op, as `ipvsadm` would spell it; for logs and errors. */
export function describeOp(o: IpvsOp): string {
  const k = vsKey(o.vs);
  switch (o.op) {
    case 'add-service': return `add service ${k} ${o.vs.scheduler}${o.vs.persistentTimeout ? ` persistent ${o.vs.persistentTimeout}` : ''}`;
    case 'edit-service': return `edit service ${k} ${o.vs.scheduler}${o.vs.persistentTimeout ? ` persistent ${o.vs.persistentTimeout}` : ''}`;
    case 'del-service': return `delete service ${k}`;
    case 'add-dest': return `add ${k} -> ${rsKey(o.rs)} ${o.rs.forward} weight ${o.rs.weight}`;
    case 'edit-dest': return `edit ${k} -> ${rsKey(o.rs)} ${o.rs.forward} weight ${o.rs.weight}`;
    case 'del-dest': return `delete ${k} -> ${rsKey(o.rs)}`;
  }
}
