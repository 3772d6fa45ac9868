/**
 * lab/plan: the addresses a lab uses, fixed in one place. Every lab (the
 * demo, the tests, `nodenet lab`) lives inside namespaces of its own, so the
 * same plan is reused by every run without clashing:
 * - underlay 192.168.77.0/24: its router (the underlay namespace's ul0) at
 *   .1, node N at .(10+N), clients outside the cluster from .200;
 * - cluster pod CIDR 10.244.0.0/16, node N's podCIDR 10.244.N.0/24;
 * - Service ClusterIPs from 10.96.0.0/16, the cluster DNS (kube-dns) at
 *   its tenth address, 10.96.0.10, under the domain cluster.local.
 * testing/addresses.ts builds the tests' conventions on top of these.
 */
import { cidrContains, nthIp, parseCidr, parseIPv4, type Cidr, type IPv4 } from '../../../lib/net/ip.js';

export const UNDERLAY_CIDR = parseCidr('192.168.77.0/24').cidr;
export const UNDERLAY_PREFIX = 24;
/** The underlay's router (the underlay namespace's ul0): every node's default gateway, as a real node has one. */
export const UNDERLAY_GATEWAY = parseIPv4('192.168.77.1');
export const CLUSTER_CIDR = parseCidr('10.244.0.0/16').cidr;
export const SERVICE_CIDR = parseCidr('10.96.0.0/16').cidr;
/**
 * The `kubernetes` Service's ClusterIP (the first address of the control plane's service CIDR), which
 * in-cluster clients dial (KUBERNETES_SERVICE_HOST): the lab's API servers name it in their serving
 * certificate (--host), as kube-apiserver names its own first service IP.
 */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';
/**
 * The cluster DNS's ClusterIP (the kube-dns Service the control plane makes): the tenth address of the service
 * CIDR, as kubeadm puts it. Every lab node's agent gives it to ClusterFirst Pods (--cluster-dns).
 */
export const CLUSTER_DNS_IP: IPv4 = clusterDNSIP(SERVICE_CIDR);
/** The cluster's DNS domain (--cluster-domain). */
export const CLUSTER_DOMAIN = 'cluster.local';

/** The tenth address of a service CIDR: where kubeadm (and nodenet's control plane) puts the kube-dns Service. */
export function clusterDNSIP(serviceCIDR: string): IPv4 {
  return nthIp(serviceCIDR, 10);
}

/** Where labs keep their run directories: $NODENET_LAB_ROOT, else /run/nodenet/lab. */
export function labRoot(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return env['NODENET_LAB_ROOT'] || '/run/nodenet/lab';
}

function checkNode(node: number, max: number): void {
  if (!Number.isInteger(node) || node < 1 || node > max) throw new RangeError(`node must be an integer in 1..${max}, got ${node}`);
}

/** Node N's underlay address: 192.168.77.(10+N). */
export function nodeUnderlayIP(node: number): IPv4 {
  checkNode(node, 189);
  return parseIPv4(`192.168.77.${10 + node}`);
}

/** Node N's podCIDR: 10.244.N.0/24. */
export function nodePodCIDR(node: number): Cidr {
  checkNode(node, 254);
  return parseCidr(`10.244.${node}.0/24`).cidr;
}

/** Whether an address (bare or with a prefix) sits on the lab's underlay. */
export function onUnderlay(addr: string): boolean {
  return cidrContains(UNDERLAY_CIDR, parseIPv4(addr.split('/')[0]!));
}
