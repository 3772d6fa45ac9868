/**
 * proxy/nftables/names: the names of nodenet's nftables objects.
 *
 * Objects live in one table (`kube-proxy` by default), so their names need no
 * prefix of their own. Per-ServicePort and per-endpoint objects follow
 * kube-proxy's nftables mode (KEP-3866): `<kind>-<HASH>-<ns>/<svc>/<proto>/<port>`
 * and `...__<ip>/<port>` for endpoints, where HASH is the first 8 base32
 * characters of the sha256 of the rest. The hash keeps names unique if one is
 * ever truncated, and tells apart endpoint chains that differ in one digit.
 * Names contain '/', which no fixed object name does: that is how stale
 * per-service objects are recognised. Pure.
 */
import { createHash, hash as oneShotHash } from 'node:crypto';
import type { EndpointInfo, ServicePortName } from '../types.js';

/** nft accepts names up to 255 bytes; keep room for the longest kind prefix. */
const NAME_MAX = 256;
const KIND_PREFIX_MAX = 16;
const BASE_MAX = NAME_MAX - KIND_PREFIX_MAX;

const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 (no padding needed for our prefix use). */
export function base32(buf: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += B32[(value << (5 - bits)) & 31];
  return out;
}

// Memo: a sync names every object again. Bounded: cleared when it grows past
// a large cluster's size (30,000 Services name about 93,000 objects).
const memo = new Map<string, string>();
const MEMO_MAX = 200_000;

/** sha256 of a string: the one-shot crypto.hash where Node has it (3x faster than a Hash object), else createHash. */
const sha256: (s: string) => Buffer =
  typeof oneShotHash === 'function' ? (s) => oneShotHash('sha256', s, 'buffer') : (s) => createHash('sha256').update(s).digest();

export function hashPrefix(name: string): string {
  let h = memo.get(name);
  if (h === undefined) {
    // 8 base32 characters are 40 bits: the first 5 bytes of the digest.
    h = base32(sha256(name).subarray(0, 5));
    if (memo.size >= MEMO_MAX) memo.clear();
    memo.set(name, h);
  }
  return h;
}

/** "HASH-name", truncated with "..." past the length limit (the hash keeps it unique). */
export function hashedBase(name: string): string {
  const full = `${hashPrefix(name)}-${name}`;
  return full.length > BASE_MAX ? `${full.slice(0, BASE_MAX - 3)}...` : full;
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
  return { cluster: `service-${base}`, local: `local-${base}`, external: `external-${base}`, firewall: `firewall-${base}` };
}

export interface EndpointObjects {
  readonly chain: string;
  readonly affinitySet: string;
}

export function endpointObjects(spn: ServicePortName, ep: Pick<EndpointInfo, 'ip' | 'port'>): EndpointObjects {
  const base = hashedBase(`${spnPath(spn)}__${ep.ip}/${ep.port}`);
  return { chain: `endpoint-${base}`, affinitySet: `affinity-${base}` };
}

/** True for names of per-service objects (they, and only they, contain '/'). */
export function isServiceObjectName(name: string): boolean {
  return name.includes('/');
}

export function isAffinitySetName(name: string): boolean {
  return name.startsWith('affinity-') && name.includes('/');
}
