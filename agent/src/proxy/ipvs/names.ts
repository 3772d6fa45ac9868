/**
 * proxy/ipvs/names: the ipsets, chains and device IPVS mode writes, by
 * kube-proxy's names (pkg/proxy/ipvs/ipset.go, proxier.go) with the prefix
 * in place of KUBE: `KUBE-CLUSTER-IP`, `KUBE-NODE-PORT`, `kube-ipvs0`.
 * ipset names are limited to 31 characters, which limits the prefix to 5
 * (`KUBE-LOAD-BALANCER-SOURCE-CIDR` is 30). Pure.
 */
import { ErrorCode, NodenetError } from '../../../../lib/errors/errors.js';
import type { IpsetType } from '../../netfilter/iptables/ipset-parse.js';
import { MAX_SET_NAME } from '../../netfilter/iptables/ipset-parse.js';
import { validatePrefix } from '../iptables/chains.js';

export const DUMMY_DEVICE = 'kube-ipvs0';
export const DEFAULT_SCHEDULER = 'rr';

/** Every set, in kube-proxy's ipsetInfo order, with its type and the comment its rules carry. */
export const SET_INFO = [
  { id: 'loopBack', suffix: 'LOOP-BACK', type: 'hash:ip,port,ip', comment: 'Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose' },
  { id: 'clusterIP', suffix: 'CLUSTER-IP', type: 'hash:ip,port', comment: 'Kubernetes service cluster ip + port for masquerade purpose' },
  { id: 'externalIP', suffix: 'EXTERNAL-IP', type: 'hash:ip,port', comment: 'Kubernetes service external ip + port for masquerade and filter purpose' },
  { id: 'externalIPLocal', suffix: 'EXTERNAL-IP-LOCAL', type: 'hash:ip,port', comment: 'Kubernetes service external ip + port with externalTrafficPolicy=local' },
  { id: 'loadBalancer', suffix: 'LOAD-BALANCER', type: 'hash:ip,port', comment: 'Kubernetes service lb portal' },
  { id: 'loadBalancerFW', suffix: 'LOAD-BALANCER-FW', type: 'hash:ip,port', comment: 'Kubernetes service load balancer ip + port for load balancer with sourceRange' },
  { id: 'loadBalancerLocal', suffix: 'LOAD-BALANCER-LOCAL', type: 'hash:ip,port', comment: 'Kubernetes service load balancer ip + port with externalTrafficPolicy=local' },
  { id: 'loadBalancerSourceIP', suffix: 'LOAD-BALANCER-SOURCE-IP', type: 'hash:ip,port,ip', comment: 'Kubernetes service load balancer ip + port + source IP for packet filter purpose' },
  { id: 'loadBalancerSourceCIDR', suffix: 'LOAD-BALANCER-SOURCE-CIDR', type: 'hash:ip,port,net', comment: 'Kubernetes service load balancer ip + port + source cidr for packet filter purpose' },
  { id: 'nodePortTCP', suffix: 'NODE-PORT-TCP', type: 'bitmap:port', comment: 'Kubernetes nodeport TCP port for masquerade purpose' },
  { id: 'nodePortLocalTCP', suffix: 'NODE-PORT-LOCAL-TCP', type: 'bitmap:port', comment: 'Kubernetes nodeport TCP port with externalTrafficPolicy=local' },
  { id: 'nodePortUDP', suffix: 'NODE-PORT-UDP', type: 'bitmap:port', comment: 'Kubernetes nodeport UDP port for masquerade purpose' },
  { id: 'nodePortLocalUDP', suffix: 'NODE-PORT-LOCAL-UDP', type: 'bitmap:port', comment: 'Kubernetes nodeport UDP port with externalTrafficPolicy=local' },
  { id: 'nodePortSCTP', suffix: 'NODE-PORT-SCTP-HASH', type: 'hash:ip,port', comment: 'Kubernetes nodeport SCTP port for masquerade purpose with type \'hash ip:port\'' },
  { id: 'nodePortLocalSCTP', suffix: 'NODE-PORT-LOCAL-SCTP-HASH', type: 'hash:ip,port', comment: 'Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type \'hash ip:port\'' },
  { id: 'healthCheckNodePort', suffix: 'HEALTH-CHECK-NODE-PORT', type: 'bitmap:port', comment: 'Kubernetes health check node port' },
  { id: 'ipvsIPs', suffix: 'IPVS-IPS', type: 'hash:ip', comment: 'Addresses on the ipvs interface' },
] as const satisfies readonly { id: string; suffix: string; type: IpsetType; comment: string }[];

export type SetId = (typeof SET_INFO)[number]['id'];

export interface IpvsNames {
  readonly prefix: string;
  /** Set id → its name with this prefix. */
  readonly sets: Readonly<Record<SetId, string>>;
  readonly nat: { readonly services: string; readonly postrouting: string; readonly nodePort: string; readonly loadBalancer: string; readonly markMasq: string };
  readonly filter: {
    readonly forward: string; readonly nodePort: string; readonly proxyFirewall: string; readonly sourceRangesFirewall: string;
    readonly ipvsFilter: string; readonly ipvsOutFilter: string;
  };
  /** nat and filter: empty; gone means someone flushed our rules. */
  readonly canary: string;
}

export function ipvsNames(prefix: string): IpvsNames {
  const p = validatePrefix(prefix);
  const sets = Object.fromEntries(SET_INFO.map((s) => [s.id, `${p}-${s.suffix}`])) as Record<SetId, string>;
  for (const n of Object.values(sets)) {
    if (n.length > MAX_SET_NAME) {
      throw new NodenetError(ErrorCode.InvalidConfig, `proxy prefix ${JSON.stringify(prefix)} is too long for IPVS mode: ipset ${n} would be longer than ${MAX_SET_NAME} characters (use at most 5 characters, e.g. KUBE or NN)`);
    }
  }
  return {
    prefix: p,
    sets,
    nat: { services: `${p}-SERVICES`, postrouting: `${p}-POSTROUTING`, nodePort: `${p}-NODE-PORT`, loadBalancer: `${p}-LOAD-BALANCER`, markMasq: `${p}-MARK-MASQ` },
    filter: {
      forward: `${p}-FORWARD`, nodePort: `${p}-NODE-PORT`, proxyFirewall: `${p}-PROXY-FIREWALL`, sourceRangesFirewall: `${p}-SOURCE-RANGES-FIREWALL`,
      ipvsFilter: `${p}-IPVS-FILTER`, ipvsOutFilter: `${p}-IPVS-OUT-FILTER`,
    },
    canary: `${p}-PROXY-CANARY`,
  };
}

/** Every set name of this prefix (a listing filter). */
export function isOurSet(names: IpvsNames, name: string): boolean {
  return (Object.values(names.sets) as string[]).includes(name);
}
