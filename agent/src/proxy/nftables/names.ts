/**
 * proxy/nftables/names: the names of nodenet's nftables objects.
 *
 * Objects live in one table (`kube-proxy` by default), or in the sharded
 * layout in it and its shard tables (`kube-proxy-0` ...), so their names need
 * no prefix of their own; a per-service object's table follows from its name. Per-ServicePort and per-endpoint objects follow
 * kube-proxy's nftables mode (KEP-3866): `<kind>-<HASH>-<ns>/<svc>/<proto>/<port>`
 * and `...__<ip>/<port>` for endpoints, where HASH is the first 8 base32
 * characters of the sha256 of the rest. The hash keeps names unique if one is
 * ever truncated, and tells apart endpoint chains that differ in one digit.
 * Names contain '/', which no fixed object name does: that is how stale
 * per-service objects are recognised. Pure.
 */
import type { EndpointInfo, ServicePortName } from '../types.js';
import { base32Prefix, flat } from '../flat.js';
import { sha256Short } from '../../../../lib/json/digest.js';

/** nft accepts names up to 255 bytes; keep room for the longest kind prefix. */
const NAME_MAX = 256;
const KIND_PREFIX_MAX = 16;
const BASE_MAX = NAME_MAX - KIND_PREFIX_MAX;

/**
 * 8 base32 characters are 40 bits: the first 5 bytes of the digest. Not memoised: only a
 * full sync names every object (a partial one plans the changed Services alone), and a memo
 * of 93,000 names held 10 MiB at 30,000 Services to save ~0.1 s of an hourly full sync.
 */
export function hashPrefix(name: string): string {
  return base32Prefix(sha256Short(name), 8);
}

/** "HASH-name", truncated with "..." past the length limit (the hash keeps it unique). */
export function hashedBase(name: string): string {
  const h = hashPrefix(name);
  return h.length + 1 + name.length > BASE_MAX ? flat(h, '-', name.slice(0, BASE_MAX - 4 - h.length), '...') : flat(h, '-', name);
}

/** The table for a chain-name prefix: 'KUBE' gives kube-proxy's `kube-proxy`. */
export function tableName(prefix: string): string {
  return prefix === 'KUBE' ? 'kube-proxy' : `${prefix.toLowerCase()}-proxy`;
}

function spnPath(spn: ServicePortName): string {
  return `${spn.namespace}/${spn.name}/${spn.protocol.toLowerCase()}/${spn.port}`;
}

export interface ServicePortChains {
  /** Endpoints for "Cluster" traffic policy. */
  readonly cluster: string;
  /** Endpoints for "Local" traffic policy. */
  readonly local: string;
  /** Entry for NodePort, external IP and load-balancer VIP traffic. */
  readonly external: string;
  /** loadBalancerSourceRanges of the VIPs (reached through @firewall-ips, before DNAT). */
  readonly firewall: string;
}

export function servicePortChains(spn: ServicePortName): ServicePortChains {
  const base = hashedBase(spnPath(spn));
  // Flat strings: the backend keeps every name until the next sync (proxy/flat.ts).
  return { cluster: flat('service-', base), local: flat('local-', base), external: flat('external-', base), firewall: flat('firewall-', base) };
}

export interface EndpointObjects {
  readonly chain: string;
  readonly affinitySet: string;
}

export function endpointObjects(spn: ServicePortName, ep: Pick<EndpointInfo, 'ip' | 'port'>): EndpointObjects {
  const base = hashedBase(`${spnPath(spn)}__${ep.ip}/${ep.port}`);
  return { chain: flat('endpoint-', base), affinitySet: flat('affinity-', base) };
}

/** True for names of per-service objects (they, and only they, contain '/'). */
export function isServiceObjectName(name: string): boolean {
  return name.includes('/');
}

export function isAffinitySetName(name: string): boolean {
  return name.startsWith('affinity-') && name.includes('/');
}

/**
 * The table of shard `i` of the sharded layout (NftablesRenderOptions.shards > 1): `kube-proxy-3`. Each shard
 * holds a share of the Services' DNAT objects (render.ts says why); the table of tableName() keeps the rest.
 */
export function shardTableName(prefix: string, i: number): string {
  return `${tableName(prefix)}-${i}`;
}

/** The highest shard count (the shard tables the backend looks for and removes). */
export const MAX_SHARDS = 64;

/** Which of `shards` shards the Service "ns/name" lives in: FNV-1a of the key. Stable across restarts. */
export function shardOf(serviceKey: string, shards: number): number {
  if (shards <= 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < serviceKey.length; i++) {
    h ^= serviceKey.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % shards;
}

/** The Service key ("ns/name") a per-service object name embeds (`kind-HASH-ns/name/...`), or null. */
export function serviceKeyOfObject(name: string): string | null {
  const dash = name.indexOf('-');
  if (dash < 0) return null;
  const rest = name.slice(dash + 10);
  const a = rest.indexOf('/');
  if (a <= 0) return null;
  const b = rest.indexOf('/', a + 1);
  return b < 0 ? rest : rest.slice(0, b);
}
