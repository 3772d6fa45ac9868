/**
 * overlay/bgp/lease: what the bgp backend keeps in flannel's backend-data,
 * {"ASN":64512,"RouteReflector":false}, and its reader of a peer's (pure).
 *
 * This is how a node learns which Nodes are route reflectors: a node started
 * with --bgp-route-reflector publishes "RouteReflector":true on its own
 * Node, with the rest of its lease (Calico keeps the same fact on the Node
 * too: spec.bgp.routeReflectorClusterID, with a `route-reflector` label for
 * the BGPPeer selectors). Every agent then derives the sessions from the
 * Nodes it watches (config.ts sessions()): nothing is configured twice, and
 * a reflector added or removed is followed like any other lease change.
 *
 * A Node with another ASN is 'elsewhere' (another AS: nodenet speaks iBGP
 * only, one ASN per cluster); a backend-data without a numeric ASN or with
 * a RouteReflector that is no boolean is 'invalid'.
 */
import type { LeaseReader } from '../subnet.js';
import { A_BACKEND_DATA } from '../subnet.js';

export const BGP_TYPE = 'bgp';

export interface BgpData {
  readonly asn: number;
  readonly routeReflector: boolean;
}

/** This node's backend-data. */
export function bgpBackendData(o: BgpData): { readonly ASN: number; readonly RouteReflector: boolean } {
  return { ASN: o.asn, RouteReflector: o.routeReflector };
}

/** Whether n is an AS number BIRD takes (1..4294967295). */
export const validAsn = (n: number): boolean => Number.isInteger(n) && n >= 1 && n <= 0xffffffff;

/** The reader of a peer's backend-data, for this node's ASN. */
export function bgpLeases(asn: number): LeaseReader<BgpData> {
  return {
    type: BGP_TYPE,
    serves: 'BGP session',
    readData(data) {
      const d = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : null;
      const a = d?.['ASN'];
      const rr = d?.['RouteReflector'] ?? false;
      if (typeof a !== 'number' || !validAsn(a)) return { skip: `${A_BACKEND_DATA} has no valid ASN`, class: 'invalid' };
      if (typeof rr !== 'boolean') return { skip: `${A_BACKEND_DATA} has a RouteReflector that is not a boolean`, class: 'invalid' };
      if (a !== asn) return { skip: `AS ${a}, this node's is ${asn} (nodenet speaks iBGP within one AS)`, class: 'elsewhere' };
      return { data: { asn: a, routeReflector: rr } };
    },
  };
}
