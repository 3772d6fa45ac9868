/**
 * overlay/vxlan/lease: what the VXLAN backend keeps in flannel's
 * backend-data, {"VNI":1,"VtepMAC":"aa:bb:.."}, and its peers' leases (the
 * subnet manager's lease, subnet.ts, with the VTEP MAC). Pure.
 *
 * backend-data another VNI is 'elsewhere' (another VXLAN network: its agent
 * left this one); without a valid VtepMAC, or a VNI that is no number, it
 * is 'invalid'. flannel's own (Go) JSON writes the MAC in upper case: it is
 * normalised.
 */
import { createHash } from 'node:crypto';
import type { Cidr, IPv4 } from '../../../../lib/net/ip.js';
import { A_BACKEND_DATA, subnetAnnotations, subnetLeaseFromNode, type LeaseReader, type Skip } from '../subnet.js';

export const VXLAN_TYPE = 'vxlan';
/** flannel.1's name, VNI and port, ours. */
export const VXLAN_DEVICE = 'nodenet.1';
export const VXLAN_VNI = 1;
/** The Linux kernel's historic VXLAN port, flannel's default (IANA's is 4789). */
export const VXLAN_PORT = 8472;
/** Outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14. */
export const VXLAN_OVERHEAD = 50;

/** A peer node, as the plan needs it. */
export interface Lease {
  readonly node: string;
  readonly podCIDR: Cidr;
  /** The remote VTEP (its nodenet.1) MAC. */
  readonly vtepMac: string;
  /** Where its VXLAN packets go: the remote node's underlay address. */
  readonly publicIP: IPv4;
}

/** The VXLAN backend's data of a peer. */
export interface VxlanData {
  readonly vtepMac: string;
}

const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

/**
 * The VTEP MAC of a node: locally administered, unicast, derived from the
 * node's name, so it is the same across agent restarts (and a re-created
 * device), and the peers' neighbour and FDB entries stay right.
 */
export function vtepMacFor(nodeName: string): string {
  const h = createHash('sha256').update(`nodenet vxlan ${nodeName}/${VXLAN_DEVICE}`).digest();
  h[0] = (h[0]! & 0xfe) | 0x02;
  return [...h.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** This node's backend-data. */
export function vxlanBackendData(vtepMac: string): { readonly VNI: number; readonly VtepMAC: string } {
  return { VNI: VXLAN_VNI, VtepMAC: vtepMac };
}

/** The reader of a peer's backend-data, for the subnet manager. */
export const VXLAN_LEASES: LeaseReader<VxlanData> = {
  type: VXLAN_TYPE,
  serves: 'route, FDB entry and neighbour',
  readData(data) {
    const d = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : null;
    const vni = d?.['VNI'] ?? d?.['vni'];
    const mac = d?.['VtepMAC'] ?? d?.['vtepMAC'];
    if (vni !== undefined && typeof vni !== 'number') return { skip: `${A_BACKEND_DATA} has a VNI that is not a number`, class: 'invalid' };
    if (vni !== undefined && vni !== VXLAN_VNI) return { skip: `VNI ${JSON.stringify(vni)}, this network's is ${VXLAN_VNI}`, class: 'elsewhere' };
    if (typeof mac !== 'string' || !MAC_RE.test(mac.toLowerCase())) return { skip: `${A_BACKEND_DATA} has no valid VtepMAC`, class: 'invalid' };
    return { data: { vtepMac: mac.toLowerCase() } };
  },
};

/** The annotations a VXLAN node publishes on its own Node. */
export function leaseAnnotations(o: { readonly vtepMac: string; readonly publicIP: string }): Record<string, string> {
  return subnetAnnotations({ backendType: VXLAN_TYPE, backendData: vxlanBackendData(o.vtepMac), publicIP: o.publicIP });
}

/** A Node's VXLAN lease, or why it has none (subnet.ts's classes). */
export function leaseFromNode(node: unknown): { readonly lease: Lease } | Skip {
  const r = subnetLeaseFromNode(node, VXLAN_LEASES);
  if ('skip' in r) return r;
  return { lease: toLease(r.lease) };
}

/** The plan's peer from a subnet lease. */
export const toLease = (l: { readonly node: string; readonly podCIDR: Cidr; readonly publicIP: IPv4; readonly data: VxlanData }): Lease =>
  ({ node: l.node, podCIDR: l.podCIDR, vtepMac: l.data.vtepMac, publicIP: l.publicIP });
