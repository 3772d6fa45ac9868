/**
 * netlink/ops: the interface the sandbox and the overlay code against, and the
 * value types it speaks. Two implementations: netlink.ts (real rtnetlink
 * socket) and netlink.fake.ts (validating, in memory).
 *
 * All addresses are IPv4 strings; prefixes are 'a.b.c.d/nn'. MACs are
 * lower-case 'aa:bb:cc:dd:ee:ff'. Links are named, as `ip` names them; a
 * name that does not exist is a LinkNotFoundError unless stated otherwise.
 * Every other kernel refusal is a NetlinkError (code NN_ERR_NETLINK) carrying
 * the operation and, when known, the errno name.
 *
 * One NetlinkOps is bound to one network namespace for its whole life.
 * Calls may be issued concurrently; implementations serialise them.
 */
import type { NetnsPath } from '../netns/netns.js';

export interface LinkInfo {
  index: number;
  name: string;
  mac: string;
  mtu: number;
  /** Administratively up (IFF_UP). */
  up: boolean;
  promisc: boolean;
  /** ifindex of the master (bridge) if enslaved. */
  master?: number;
  /** IFLA_INFO_KIND: 'bridge', 'veth', 'vxlan', ...; absent for lo and physical devices. */
  kind?: string;
  /** IFLA_INFO_SLAVE_KIND, e.g. 'bridge' for a bridge port. */
  slaveKind?: string;
  /** Bridge ports only: hairpin mode (IFLA_BRPORT_MODE). */
  hairpin?: boolean;
  /** vxlan devices only. */
  vxlan?: VxlanInfo;
}

export interface VxlanInfo {
  vni: number;
  /** UDP destination port. */
  port: number;
  /** ifindex of the underlay device, if bound to one. */
  dev?: number;
  local?: string;
  learning: boolean;
}

export interface AddressInfo {
  ifIndex: number;
  /** 'a.b.c.d/nn', host part kept. */
  address: string;
}

export type RouteScopeName = 'universe' | 'site' | 'link' | 'host' | 'nowhere';

export interface RouteSpec {
  /** 'a.b.c.d/nn' with no host bits set, or 'default'. */
  dst: string;
  gw?: string;
  dev?: string;
  /** Treat gw as directly reachable on dev (RTNH_F_ONLINK); needs dev and gw. */
  onlink?: boolean;
  scope?: RouteScopeName;
  /**
   * rtm_protocol: who made the route (listRoutes reports it). Added routes default to 3 (boot, what `ip route add`
   * writes); a delete given one removes only a route of that protocol (the kernel matches it), so a component
   * that marks its routes with a number of its own never removes anyone else's.
   */
  protocol?: number;
}

export interface RouteInfo {
  /** 'a.b.c.d/nn' or 'default'. */
  dst: string;
  gw?: string;
  ifIndex?: number;
  dev?: string;
  onlink: boolean;
  scope: RouteScopeName;
  /** 'kernel' for connected routes added with an address, 'boot' for `ip route add`, 'static', or the number. */
  protocol: string;
  /** Preferred source (connected routes). */
  src?: string;
}

export interface NeighInfo {
  ifIndex: number;
  ip: string;
  mac?: string;
  permanent: boolean;
}

export interface FdbEntry {
  ifIndex: number;
  mac: string;
  /** Remote underlay IP (vxlan). */
  dst?: string;
  permanent: boolean;
}

export interface VethSpec {
  /** Host-side name, in this handle's namespace. */
  name: string;
  /** Peer name, final (e.g. 'eth0'): the peer is created directly inside peerNetns. */
  peerName: string;
  /** Where the peer lives; default: this handle's namespace. */
  peerNetns?: NetnsPath;
  mtu?: number;
  /** MAC of the host side; the kernel picks one when absent. */
  mac?: string;
  /** MAC of the peer, e.g. to keep a pod's MAC stable across retries. */
  peerMac?: string;
  /** Enslave the host side to this bridge at creation. */
  master?: string;
  /** Bring the host side up at creation. (Not the peer: the kernel opens it before the pair is linked, ENOTCONN.) */
  up?: boolean;
}

export interface VxlanSpec {
  name: string;
  vni: number;
  /** UDP destination port (flannel: 8472). */
  port: number;
  /** Underlay device name. */
  dev: string;
  /** Local underlay IP. */
  local: string;
  learning: boolean;
  mtu?: number;
  mac?: string;
}

export interface BridgeOptions {
  mtu?: number;
  promisc?: boolean;
  mac?: string;
}

export interface NetlinkOps {
  /** The link named `name`, or null if there is none. */
  getLink(name: string): Promise<LinkInfo | null>;
  /** The link with ifindex `index`, or null. */
  getLinkByIndex(index: number): Promise<LinkInfo | null>;
  listLinks(): Promise<LinkInfo[]>;

  /**
   * Idempotent: creates the bridge if missing, then sets mtu/promisc/mac if given and brings it up.
   * A bridge whose address was never set follows its ports (the kernel gives it the lowest port MAC,
   * and changes it as ports come and go); `mac` pins it.
   * @throws NodenetError(LinkExists) if `name` exists and is not a bridge.
   */
  ensureBridge(name: string, opts?: BridgeOptions): Promise<LinkInfo>;
  /**
   * Idempotent: creates a dummy device (RTM_NEWLINK kind dummy) if missing, left as it is otherwise (IPVS
   * mode's kube-ipvs0, which kube-proxy leaves down: the addresses on it are local either way).
   * @throws NodenetError(LinkExists) if `name` exists and is not a dummy device.
   * @throws NetlinkError(EOPNOTSUPP) on a kernel without the dummy driver.
   */
  ensureDummy(name: string): Promise<LinkInfo>;
  /**
   * Creates a veth pair in one request; the peer is created inside spec.peerNetns under its final name,
   * with the master, the host end's up flag and the MACs the spec gives; the peer is left down.
   * Not idempotent.
   * @throws NodenetError(LinkExists) if either name is taken in its namespace (nothing is created then).
   * @throws NetnsNotFoundError if peerNetns cannot be opened.
   * @throws LinkNotFoundError if the master does not exist.
   */
  createVeth(spec: VethSpec): Promise<void>;
  /**
   * Creates a vxlan device (left down). Not idempotent.
   * @throws NodenetError(LinkExists) on a name clash; NetlinkError(EEXIST) if another device has the same vni+port.
   */
  createVxlan(spec: VxlanSpec): Promise<LinkInfo>;

  /** Enslaves `name` to bridge `bridgeName`. Idempotent. Throws NetlinkError if the master is not a bridge. */
  setMaster(name: string, bridgeName: string): Promise<void>;
  /** Clears the master. Idempotent. */
  setNoMaster(name: string): Promise<void>;
  /** Brings the link up. Idempotent. */
  setUp(name: string): Promise<void>;
  /** Brings the link down. Idempotent. */
  setDown(name: string): Promise<void>;
  setMtu(name: string, mtu: number): Promise<void>;
  /** Sets the link's hardware address (a bridge then keeps it whatever its ports). Idempotent. */
  setMac(name: string, mac: string): Promise<void>;
  /** Bridge port hairpin mode. Precondition: `name` is enslaved to a bridge. Idempotent. */
  setHairpin(name: string, on: boolean): Promise<void>;
  setPromisc(name: string, on: boolean): Promise<void>;
  /** Deletes a link (a veth takes its peer with it). @throws LinkNotFoundError if missing, so DEL can treat that as success. */
  deleteLink(name: string): Promise<void>;

  /** Idempotent (an existing identical address is success). The connected route appears once the link is up. */
  addAddress(name: string, cidr: string): Promise<void>;
  /** Idempotent (a missing address is success). */
  delAddress(name: string, cidr: string): Promise<void>;
  /** IPv4 addresses, of one link or all. */
  listAddresses(name?: string): Promise<AddressInfo[]>;

  /**
   * Adds or replaces (`ip route replace`) a route in the main table. Idempotent.
   * Precondition: dev (if given) is up; gw is reachable through a connected route unless onlink.
   */
  addRoute(spec: RouteSpec): Promise<void>;
  /** Deletes a main-table route matching dst (and gw/dev if given). Idempotent. */
  delRoute(spec: RouteSpec): Promise<void>;
  /** IPv4 unicast routes of the main table. */
  listRoutes(): Promise<RouteInfo[]>;

  /** Adds or replaces an ARP entry. Idempotent. */
  addNeigh(n: { dev: string; ip: string; mac: string; permanent: boolean }): Promise<void>;
  /** Idempotent. */
  delNeigh(n: { dev: string; ip: string }): Promise<void>;
  listNeighs(dev?: string): Promise<NeighInfo[]>;

  /** `bridge fdb append MAC dev DEV dst IP` (vxlan devices). Idempotent. */
  appendFdb(e: { dev: string; mac: string; dst: string }): Promise<void>;
  /**
   * `bridge fdb replace MAC dev DEV dst IP` (vxlan devices): the MAC's entry points at dst afterwards, created
   * or its destination replaced in one request (an append to a unicast MAC that has a destination changes
   * nothing). Idempotent.
   */
  replaceFdb(e: { dev: string; mac: string; dst: string }): Promise<void>;
  /** Deletes the entry for mac (and dst if given). Idempotent. */
  delFdb(e: { dev: string; mac: string; dst?: string }): Promise<void>;
  /** Static fdb entries of a device (NTF_SELF). */
  listFdb(dev: string): Promise<FdbEntry[]>;

  /** Closes the socket. Later calls fail. Idempotent. */
  close(): void;
}
