/**
 * overlay/lease: a node's subnet lease as flannel's kube subnet manager
 * keeps it, on the Node object itself: spec.podCIDR (node IPAM's) plus the
 * annotations the node's own agent publishes:
 *
 *   flannel.alpha.coreos.com/backend-type: vxlan
 *   flannel.alpha.coreos.com/backend-data: {"VNI":1,"VtepMAC":"aa:bb:.."}
 *   flannel.alpha.coreos.com/public-ip: <underlay IP>
 *   flannel.alpha.coreos.com/kube-subnet-manager: "true"
 *
 * An admin may set flannel.alpha.coreos.com/public-ip-overwrite on a Node:
 * its agent then publishes that address as its public IP (flannel's
 * behaviour), and its peers send to it.
 *
 * Pure: Node objects in (unknown, from the watch), leases out; every reason
 * a Node is not a peer is reported, never thrown, with its field and its
 * class, which decides what the overlay does with a peer it follows
 * (overlay.ts):
 * - 'pending': a value not written yet (no spec.podCIDR, no backend
 *   annotations, no public-ip): a node joining;
 * - 'elsewhere': well-formed values that say the node is on another network
 *   (another backend type, another VNI);
 * - 'invalid': a value that is there but malformed (a podCIDR that is no
 *   CIDR or has host bits set, backend-data that is not JSON or has no valid
 *   VtepMAC, a public-ip that is no IPv4 address).
 */
import { createHash } from 'node:crypto';
import { isIPv4, parseCidr, parseIPv4, type Cidr, type IPv4 } from '../../../lib/net/ip.js';

export const ANNOTATION_PREFIX = 'flannel.alpha.coreos.com';
export const A_BACKEND_TYPE = `${ANNOTATION_PREFIX}/backend-type`;
export const A_BACKEND_DATA = `${ANNOTATION_PREFIX}/backend-data`;
export const A_PUBLIC_IP = `${ANNOTATION_PREFIX}/public-ip`;
export const A_PUBLIC_IP_OVERWRITE = `${ANNOTATION_PREFIX}/public-ip-overwrite`;
export const A_SUBNET_MANAGER = `${ANNOTATION_PREFIX}/kube-subnet-manager`;

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

/** The annotations a node publishes on its own Node (what flannel's kube subnet manager writes). */
export function leaseAnnotations(o: { readonly vtepMac: string; readonly publicIP: string }): Record<string, string> {
  return {
    [A_BACKEND_TYPE]: 'vxlan',
    [A_BACKEND_DATA]: JSON.stringify({ VNI: VXLAN_VNI, VtepMAC: o.vtepMac }),
    [A_PUBLIC_IP]: o.publicIP,
    [A_SUBNET_MANAGER]: 'true',
  };
}

/** Whether `current` (a Node's annotations) already holds every one of `wanted`. */
export function annotationsHold(current: Readonly<Record<string, string>> | undefined, wanted: Readonly<Record<string, string>>): boolean {
  return Object.entries(wanted).every(([k, v]) => current?.[k] === v);
}

function obj(v: unknown): Record<string, unknown> | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

/** A Node's name and annotations (strings only), from an unknown object. */
export function nodeMeta(node: unknown): { name: string | null; annotations: Record<string, string> } {
  const meta = obj(obj(node)?.['metadata']);
  const name = typeof meta?.['name'] === 'string' ? meta['name'] : null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj(meta?.['annotations']) ?? {})) if (typeof v === 'string') out[k] = v;
  return { name, annotations: out };
}

/** Why a Node has no lease: see the header. */
export type SkipClass = 'pending' | 'elsewhere' | 'invalid';

export type LeaseResult = { readonly lease: Lease } | { readonly skip: string; readonly class: SkipClass; readonly field: string };

/** The field path of an annotation, as the API server's errors name it. */
export const annotationField = (key: string): string => `metadata.annotations[${key}]`;

/** A Node's lease, or why it has none (no podCIDR yet, not annotated yet, another backend, a malformed value). */
export function leaseFromNode(node: unknown): LeaseResult {
  const skip = (c: SkipClass, field: string, why: string): LeaseResult => ({ skip: why, class: c, field });
  const { name, annotations: a } = nodeMeta(node);
  if (!name) return skip('invalid', 'metadata.name', 'no metadata.name');
  const podCIDR = obj(obj(node)?.['spec'])?.['podCIDR'];
  if (podCIDR === undefined || podCIDR === null || podCIDR === '') return skip('pending', 'spec.podCIDR', 'no spec.podCIDR yet');
  let cidr: Cidr;
  try {
    if (typeof podCIDR !== 'string') throw new Error('not a string');
    const p = parseCidr(podCIDR);
    if (p.cidr !== podCIDR) return skip('invalid', 'spec.podCIDR', `spec.podCIDR ${podCIDR} has host bits set`);
    cidr = p.cidr;
  } catch {
    return skip('invalid', 'spec.podCIDR', `spec.podCIDR ${JSON.stringify(podCIDR)} is not an IPv4 CIDR`);
  }
  const type = a[A_BACKEND_TYPE];
  if (type === undefined) return skip('pending', annotationField(A_BACKEND_TYPE), `no ${A_BACKEND_TYPE} annotation yet`);
  if (type !== 'vxlan') return skip('elsewhere', annotationField(A_BACKEND_TYPE), `backend ${JSON.stringify(type)}, not vxlan`);
  const raw = a[A_BACKEND_DATA];
  if (raw === undefined) return skip('pending', annotationField(A_BACKEND_DATA), `no ${A_BACKEND_DATA} annotation yet`);
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return skip('invalid', annotationField(A_BACKEND_DATA), `${A_BACKEND_DATA} is not JSON`);
  }
  const d = obj(data);
  const vni = d?.['VNI'] ?? d?.['vni'];
  const mac = d?.['VtepMAC'] ?? d?.['vtepMAC'];
  if (vni !== undefined && typeof vni !== 'number') return skip('invalid', annotationField(A_BACKEND_DATA), `${A_BACKEND_DATA} has a VNI that is not a number`);
  if (vni !== undefined && vni !== VXLAN_VNI) return skip('elsewhere', annotationField(A_BACKEND_DATA), `VNI ${JSON.stringify(vni)}, this network's is ${VXLAN_VNI}`);
  if (typeof mac !== 'string' || !MAC_RE.test(mac.toLowerCase())) return skip('invalid', annotationField(A_BACKEND_DATA), `${A_BACKEND_DATA} has no valid VtepMAC`);
  const ipKey = a[A_PUBLIC_IP_OVERWRITE] !== undefined ? A_PUBLIC_IP_OVERWRITE : A_PUBLIC_IP;
  const ip = a[ipKey];
  if (ip === undefined) return skip('pending', annotationField(A_PUBLIC_IP), `no ${A_PUBLIC_IP} annotation yet`);
  if (!isIPv4(ip)) return skip('invalid', annotationField(ipKey), `${ipKey} ${JSON.stringify(ip)} is not an IPv4 address`);
  return { lease: { node: name, podCIDR: cidr, vtepMac: mac.toLowerCase(), publicIP: parseIPv4(ip) } };
}
