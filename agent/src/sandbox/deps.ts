/**
 * The narrow interfaces the sandbox needs from the layers below it. main.ts
 * adapts the real netlink, IPAM and iptables executors to these; tests use
 * their validating fakes.
 */
import type { NetnsPath } from '../netns/netns.js';
import type { VethSpec } from '../netlink/ops.js';
import type { Logger } from '../../../lib/log/log.js';
import type { Sysctl } from '../netns/sysctl.js';

export type { Sysctl };

export interface LinkInfo {
  readonly index: number;
  readonly name: string;
  readonly mac: string;
  readonly mtu: number;
  readonly up: boolean;
  /** ifindex of the master (bridge), if enslaved. */
  readonly master?: number | null | undefined;
}

export interface RouteInfo {
  readonly dst: string;
  readonly gw?: string | undefined;
  readonly ifIndex?: number | undefined;
}

/** Link, address and route operations inside one network namespace. */
export interface NetOps {
  getLink(name: string): Promise<LinkInfo | null>;
  /** Idempotent: creates the bridge if missing, pins its MAC (when given) and brings it up. */
  ensureBridge(name: string, opts: { mtu?: number; promisc?: boolean; mac?: string }): Promise<LinkInfo>;
  /** Creates a veth pair whose peer is created directly inside peerNetns as peerName, with master, up flags and MACs, in one request. */
  createVeth(o: VethSpec): Promise<void>;
  setMaster(name: string, bridge: string): Promise<void>;
  setUp(name: string): Promise<void>;
  setHairpin(name: string, on: boolean): Promise<void>;
  /** @throws LinkNotFoundError when missing. */
  deleteLink(name: string): Promise<void>;
  /** Idempotent (an existing address is success). */
  addAddress(name: string, cidr: string): Promise<void>;
  /** Idempotent (a missing address is success). */
  delAddress(name: string, cidr: string): Promise<void>;
  listAddresses(name?: string): Promise<readonly { ifIndex: number; address: string }[]>;
  /** Idempotent (an existing route is success). */
  addRoute(r: { dst: string; gw?: string; dev?: string }): Promise<void>;
  listRoutes(): Promise<readonly RouteInfo[]>;
  close(): void;
}

export interface IpamResult {
  readonly ips: readonly { address: string; gateway?: string | undefined }[];
  readonly routes: readonly { dst: string; gw?: string | undefined }[];
  /** From ipam.resolvConf, when set. */
  readonly dns?: Readonly<Record<string, unknown>> | undefined;
}

/** IPAM as the sandbox sees it: `raw` is the CNI config's ipam section; `network` the config's name. */
export interface SandboxIpam {
  add(raw: unknown, network: string, id: string, ifName: string, requestedIPs: readonly string[]): Promise<IpamResult>;
  /** Idempotent: an unknown attachment is success. */
  del(raw: unknown, network: string, id: string, ifName: string): Promise<void>;
  /** The IPs held by the attachment (empty if none). */
  get(raw: unknown, network: string, id: string, ifName: string): Promise<readonly string[]>;
  /** Releases every attachment of `network` not in `valid`; returns the released IPs. */
  gc(raw: unknown, network: string, valid: readonly { id: string; ifName: string }[]): Promise<readonly string[]>;
  /** Every network of the node's store in which the attachment holds IPs (a DEL that knows no network). */
  find(id: string, ifName: string): Promise<readonly { network: string; ips: readonly string[] }[]>;
  /** The IPs with their subnet's prefix ("10.244.1.5/24"), from the config's ranges; an IP it cannot place stays bare. Pure. */
  addresses(raw: unknown, network: string, ips: readonly string[]): readonly string[];
}

/** One pod address with ipMasq: its traffic leaving `subnet` is masqueraded. */
export interface MasqueradeEntry {
  readonly ip: string;
  /** The pod's own subnet ("10.244.1.0/24"), never masqueraded. */
  readonly subnet: string;
}

/** The bridge plugin's ipMasq, per pod address. No process spawn (the CNI hot path). */
export interface Masquerade {
  /** Idempotent. */
  add(a: MasqueradeEntry): Promise<void>;
  /** Idempotent: nothing to remove is success. Without the subnet, what is keyed by the IP alone goes. */
  del(a: { readonly ip: string; readonly subnet?: string | undefined }): Promise<void>;
}

/**
 * A durable record of one attachment, written while its ADD runs (and removed if the ADD fails). The IPs
 * are not in it: the IPAM store holds them, so the record does not wait for the reservation.
 */
export interface AttachmentRecord {
  readonly containerId: string;
  readonly ifName: string;
  readonly network: string;
  readonly netns: string;
  readonly hostIf: string;
  readonly ipMasq: boolean;
  /** The raw ipam section, so DEL and GC reach the same store even without a config. */
  readonly ipam: unknown;
}

export interface AttachmentStore {
  put(r: AttachmentRecord): Promise<void>;
  get(containerId: string, ifName: string): Promise<AttachmentRecord | null>;
  /** Idempotent. */
  delete(containerId: string, ifName: string): Promise<void>;
  list(): Promise<readonly AttachmentRecord[]>;
}

export interface SandboxDeps {
  /** The node namespace (where the agent runs and cbr0 lives). */
  readonly node: NetOps;
  /** Opens NetOps inside a pod namespace; the caller closes it. */
  openPod(netns: NetnsPath): NetOps;
  /** Mints a NetnsPath; throws NetnsNotFoundError. */
  resolveNetns(path: string): NetnsPath;
  readonly ipam: SandboxIpam;
  readonly masq: Masquerade;
  readonly sysctl: Sysctl;
  readonly records: AttachmentStore;
  /** The MAC a bridge is pinned to: stable for the node, so the gateway's MAC never changes under the pods. */
  bridgeMac(bridge: string): string;
  readonly log: Logger;
}
