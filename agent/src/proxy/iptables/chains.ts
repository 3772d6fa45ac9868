/**
 * proxy/iptables/chains: every chain name the iptables mode writes.
 *
 * Names follow kube-proxy so that `iptables-save | grep KUBE-SVC` debugging
 * works as users know it: fixed chains `<PREFIX>-SERVICES`, `-NODEPORTS`, ...
 * and per-ServicePort chains `<PREFIX>-SVC-` / `-SVL-` / `-EXT-` / `-FW-` +
 * 16 chars of base32(sha256(spnString + lowercase protocol)), per-endpoint
 * `<PREFIX>-SEP-` + 16 chars of base32(sha256(spnString + protocol +
 * "ip:port")). With the 'KUBE' prefix the hashes are byte-for-byte
 * kube-proxy's (servicePortChainName / servicePortEndpointChainName).
 *
 * iptables limits chain names to 28 characters; the prefix is therefore at
 * most 7 characters ("PREFIX-SVC-" + 16 ≤ 28). Pure: the digest is json/digest's sha256.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { Protocol } from '../types.js';
import { MAX_CHAIN_NAME } from '../../netfilter/iptables/iptables-parse.js';
import { base32Prefix, flat } from '../flat.js';
import { sha256Short } from '../../../../lib/json/digest.js';

declare const chainBrand: unique symbol;
/** A validated iptables chain name (≤ 28 chars). */
export type ChainName = string & { readonly [chainBrand]: true };

export { MAX_CHAIN_NAME };
const PREFIX_RE = /^[A-Z][A-Z0-9]{0,6}$/;

/** The fixed chains of one prefix. */
export interface FixedChains {
  readonly prefix: string;
  /** nat and filter: the ClusterIP / external IP dispatch (nat), and REJECT/DROP for no endpoints (filter). */
  readonly services: ChainName;
  /** filter: REJECT/DROP for NodePorts and external IPs without usable endpoints. */
  readonly externalServices: ChainName;
  /** nat: NodePort dispatch, jumped to from the end of SERVICES; filter: ACCEPT for health check NodePorts (from INPUT). */
  readonly nodePorts: ChainName;
  /** filter: DROP for load-balancer VIP traffic the per-service FW chain did not let through to DNAT. */
  readonly proxyFirewall: ChainName;
  /** nat: masquerade marked packets, jumped to from POSTROUTING. */
  readonly postrouting: ChainName;
  /** nat: sets the masquerade mark bit. */
  readonly markMasq: ChainName;
  /** filter: accept marked and established forwarded traffic. */
  readonly forward: ChainName;
  /** filter: drops martian localhost traffic (route_localnet hole, kubernetes#90259). */
  readonly firewall: ChainName;
  /** mangle, nat, filter: an empty chain whose absence means someone flushed our rules. */
  readonly canary: ChainName;
}

function asChain(name: string): ChainName {
  if (name.length > MAX_CHAIN_NAME) {
    throw new NodenetError(ErrorCode.InvalidConfig, `iptables chain name ${name} is longer than ${MAX_CHAIN_NAME} characters`);
  }
  return name as ChainName;
}

/** The last prefix that passed (every chain name checks it: one regex test per name was measurable at 30,000 Services). */
let lastValid: string | null = null;

/** Throws NodenetError(InvalidConfig) unless prefix is 1-7 chars of [A-Z0-9] starting with a letter. */
export function validatePrefix(prefix: string): string {
  if (prefix === lastValid) return prefix;
  if (!PREFIX_RE.test(prefix)) {
    throw new NodenetError(
      ErrorCode.InvalidConfig,
      `proxy chain prefix ${JSON.stringify(prefix)} must be 1-7 characters of A-Z0-9 starting with a letter (chain names are limited to ${MAX_CHAIN_NAME} characters)`,
    );
  }
  lastValid = prefix;
  return prefix;
}

export function fixedChains(prefix: string): FixedChains {
  const p = validatePrefix(prefix);
  return {
    prefix: p,
    services: asChain(`${p}-SERVICES`),
    externalServices: asChain(`${p}-EXTERNAL-SERVICES`),
    nodePorts: asChain(`${p}-NODEPORTS`),
    proxyFirewall: asChain(`${p}-PROXY-FIREWALL`),
    postrouting: asChain(`${p}-POSTROUTING`),
    markMasq: asChain(`${p}-MARK-MASQ`),
    forward: asChain(`${p}-FORWARD`),
    firewall: asChain(`${p}-FIREWALL`),
    canary: asChain(`${p}-PROXY-CANARY`),
  };
}

/**
 * The first 16 characters of base32.StdEncoding(sha256(input)), i.e. the first 80 bits.
 * Not memoised: only a full sync names every chain (a partial one reuses the unchanged
 * Services' lines, render.ts), and a memo of 90,000 names held 22 MiB at 30,000 Services
 * to save ~0.15 s of an hourly full sync of several seconds.
 */
export function hash16(input: string): string {
  return base32Prefix(sha256Short(input), 16);
}

export type ServiceChainKind = 'SVC' | 'SVL' | 'EXT' | 'FW';

/** kube-proxy's portProtoHash: hash of spnString + lowercase protocol. */
export function servicePortChain(prefix: string, kind: ServiceChainKind, spn: string, protocol: Protocol): ChainName {
  return asChain(flat(validatePrefix(prefix), '-', kind, '-', hash16(spn + protocol.toLowerCase())));
}

/** The four per-ServicePort chains at once: one hash, one prefix check (the renderer's hot path at 30,000 Services). */
export function servicePortChains(prefix: string, spn: string, protocol: Protocol): Readonly<Record<ServiceChainKind, ChainName>> {
  const p = validatePrefix(prefix);
  const h = hash16(spn + protocol.toLowerCase());
  // Flat strings: the backend keeps every chain name until the next sync (proxy/flat.ts).
  return { SVC: flat(p, '-SVC-', h) as ChainName, SVL: flat(p, '-SVL-', h) as ChainName, EXT: flat(p, '-EXT-', h) as ChainName, FW: flat(p, '-FW-', h) as ChainName };
}

/** kube-proxy's servicePortEndpointChainName: hash of spnString + lowercase protocol + "ip:port". */
export function endpointChain(prefix: string, spn: string, protocol: Protocol, endpoint: string): ChainName {
  return asChain(flat(validatePrefix(prefix), '-SEP-', hash16(spn + protocol.toLowerCase() + endpoint)));
}

const SERVICE_KINDS = ['SVC', 'SVL', 'EXT', 'FW', 'SEP'] as const;

/** True for a per-service or per-endpoint chain of this prefix (the chains stale-chain cleanup may delete). */
export function isServiceChain(prefix: string, name: string): boolean {
  return SERVICE_KINDS.some((k) => name.startsWith(`${prefix}-${k}-`));
}

/** True for any chain this prefix's iptables mode owns, fixed or per-service. */
export function isOwnedChain(prefix: string, name: string): boolean {
  if (isServiceChain(prefix, name)) return true;
  const f = fixedChains(prefix);
  return [f.services, f.externalServices, f.nodePorts, f.proxyFirewall, f.postrouting, f.markMasq, f.forward, f.firewall, f.canary].includes(name as ChainName);
}
