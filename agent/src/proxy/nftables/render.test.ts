/**
 * Golden tests for the nftables renderer: the whole transaction text, line
 * for line, for each Service shape. The expected texts were reviewed against
 * kube-proxy's nftables proxier_test.go (same chain names, same hashes, same
 * element comments); the one deliberate difference is the endpoint choice,
 * chained `numgen random mod N == 0 goto` rules instead of an anonymous vmap
 * (see render.ts). Packet behaviour is in render-flow.test.ts.
 */
import t from 'tap';
import { renderNftables, EMPTY_APPLIED } from './render.js';
import { CFG, ep, nodeConfig, snapshot, svc } from '../test-fixtures.js';
import { parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import { NftFake } from '../../netfilter/nft/nft.fake.js';

/** Strips the first newline and the common indentation of a template literal. */
function golden(parts: TemplateStringsArray): string {
  const lines = parts.join('').replace(/^\n/, '').split('\n');
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
  return lines.map((l) => l.slice(indent)).join('\n');
}

const BASE = golden`
    add table ip kube-proxy { comment "rules for kube-proxy" ; }
    # base chains: recreated, so that changed hook facts cannot wedge a sync
    add chain ip kube-proxy filter-prerouting
    delete chain ip kube-proxy filter-prerouting
    add chain ip kube-proxy filter-prerouting { type filter hook prerouting priority -110 ; }
    add chain ip kube-proxy filter-output-pre-dnat
    delete chain ip kube-proxy filter-output-pre-dnat
    add chain ip kube-proxy filter-output-pre-dnat { type filter hook output priority -110 ; }
    add chain ip kube-proxy filter-input
    delete chain ip kube-proxy filter-input
    add chain ip kube-proxy filter-input { type filter hook input priority 0 ; }
    add chain ip kube-proxy filter-forward
    delete chain ip kube-proxy filter-forward
    add chain ip kube-proxy filter-forward { type filter hook forward priority 0 ; }
    add chain ip kube-proxy filter-output
    delete chain ip kube-proxy filter-output
    add chain ip kube-proxy filter-output { type filter hook output priority 0 ; }
    add chain ip kube-proxy nat-prerouting
    delete chain ip kube-proxy nat-prerouting
    add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }
    add chain ip kube-proxy nat-output
    delete chain ip kube-proxy nat-output
    add chain ip kube-proxy nat-output { type nat hook output priority -100 ; }
    add chain ip kube-proxy nat-postrouting
    delete chain ip kube-proxy nat-postrouting
    add chain ip kube-proxy nat-postrouting { type nat hook postrouting priority 100 ; }
    # fixed chains, sets and maps: created if missing, emptied
    add chain ip kube-proxy services
    flush chain ip kube-proxy services
    add chain ip kube-proxy service-endpoints-check
    flush chain ip kube-proxy service-endpoints-check
    add chain ip kube-proxy nodeport-endpoints-check
    flush chain ip kube-proxy nodeport-endpoints-check
    add chain ip kube-proxy cluster-ips-check
    flush chain ip kube-proxy cluster-ips-check
    add chain ip kube-proxy firewall-check
    flush chain ip kube-proxy firewall-check
    add chain ip kube-proxy reject-chain { comment "helper for @no-endpoint-services / @no-endpoint-nodeports" ; }
    flush chain ip kube-proxy reject-chain
    add chain ip kube-proxy mark-for-masquerade
    flush chain ip kube-proxy mark-for-masquerade
    add chain ip kube-proxy masquerading
    flush chain ip kube-proxy masquerading
    add set ip kube-proxy cluster-ips { type ipv4_addr ; comment "Active ClusterIPs" ; }
    flush set ip kube-proxy cluster-ips
    add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "ClusterIP and ExternalIP traffic" ; }
    flush map ip kube-proxy service-ips
    add map ip kube-proxy service-nodeports { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }
    flush map ip kube-proxy service-nodeports
    add map ip kube-proxy no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to services with no endpoints" ; }
    flush map ip kube-proxy no-endpoint-services
    add map ip kube-proxy no-endpoint-nodeports { type inet_proto . inet_service : verdict ; comment "vmap to drop or reject packets to service nodeports with no endpoints" ; }
    flush map ip kube-proxy no-endpoint-nodeports
    add map ip kube-proxy firewall-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "destinations that are subject to LoadBalancerSourceRanges" ; }
    flush map ip kube-proxy firewall-ips
    # hooks
    add rule ip kube-proxy filter-input ct state new jump nodeport-endpoints-check
    add rule ip kube-proxy filter-input ct state new jump service-endpoints-check
    add rule ip kube-proxy filter-forward ct state new jump service-endpoints-check
    add rule ip kube-proxy filter-forward ct state new jump cluster-ips-check
    add rule ip kube-proxy filter-output ct state new jump service-endpoints-check
    add rule ip kube-proxy filter-output ct state new jump cluster-ips-check
    add rule ip kube-proxy filter-prerouting ct state new jump firewall-check
    add rule ip kube-proxy filter-output-pre-dnat ct state new jump firewall-check
    add rule ip kube-proxy nat-prerouting jump services
    add rule ip kube-proxy nat-output jump services
    add rule ip kube-proxy nat-postrouting jump masquerading
    # dispatch
    add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
    add rule ip kube-proxy services fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports
    add rule ip kube-proxy service-endpoints-check ip daddr . meta l4proto . th dport vmap @no-endpoint-services
    add rule ip kube-proxy nodeport-endpoints-check ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports
    add rule ip kube-proxy firewall-check ip daddr . meta l4proto . th dport vmap @firewall-ips
    add rule ip kube-proxy reject-chain reject
    # traffic to a ClusterIP that no rule DNATed: a port the Service does not serve, or a ping
    add rule ip kube-proxy cluster-ips-check ip daddr @cluster-ips meta l4proto icmp reject comment "Reject ping to ClusterIPs"
    add rule ip kube-proxy cluster-ips-check ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"
    # masquerading
    add rule ip kube-proxy mark-for-masquerade mark set mark or 0x4000
    add rule ip kube-proxy masquerading mark and 0x4000 == 0 return
    add rule ip kube-proxy masquerading mark set mark xor 0x4000
    add rule ip kube-proxy masquerading masquerade fully-random
`;

const ONE_ENDPOINT = golden`
    # ns1/svc1
    add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    flush chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 ip saddr 10.180.0.1 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 meta l4proto tcp dnat to 10.180.0.1:80
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
`;

const THREE_ENDPOINTS = golden`
    # ns1/svc1
    add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    flush chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add chain ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    flush chain ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    add chain ip kube-proxy endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80
    flush chain ip kube-proxy endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 numgen random mod 3 == 0 goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 numgen random mod 2 == 0 goto endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 ip saddr 10.180.0.1 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 meta l4proto tcp dnat to 10.180.0.1:80
    add rule ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 ip saddr 10.180.0.2 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 meta l4proto tcp dnat to 10.180.0.2:80
    add rule ip kube-proxy endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80 ip saddr 10.180.0.3 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80 meta l4proto tcp dnat to 10.180.0.3:80
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
`;

const NO_ENDPOINTS = golden`
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy no-endpoint-services { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto reject-chain }
`;

const AFFINITY = golden`
    # ns1/svc1
    add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    flush chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add chain ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    flush chain ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    add set ip kube-proxy affinity-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 { type ipv4_addr ; flags dynamic,timeout ; timeout 300s ; }
    add set ip kube-proxy affinity-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 { type ipv4_addr ; flags dynamic,timeout ; timeout 300s ; }
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip saddr @affinity-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip saddr @affinity-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 goto endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 numgen random mod 2 == 0 goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 ip saddr 10.180.0.1 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 update @affinity-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 { ip saddr }
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 meta l4proto tcp dnat to 10.180.0.1:80
    add rule ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 ip saddr 10.180.0.2 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 update @affinity-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 { ip saddr }
    add rule ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 meta l4proto tcp dnat to 10.180.0.2:80
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
`;

const NODEPORT_CLUSTER = golden`
    # ns1/svc1
    add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080
    flush chain ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080
    add chain ip kube-proxy endpoint-COL4JORS-ns1/svc1/tcp/p80__10.180.0.2/8080
    flush chain ip kube-proxy endpoint-COL4JORS-ns1/svc1/tcp/p80__10.180.0.2/8080
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 numgen random mod 2 == 0 goto endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-COL4JORS-ns1/svc1/tcp/p80__10.180.0.2/8080
    add rule ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80 jump mark-for-masquerade
    add rule ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80 goto service-ULMVA6XW-ns1/svc1/tcp/p80
    add rule ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080 ip saddr 10.180.0.1 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080 meta l4proto tcp dnat to 10.180.0.1:8080
    add rule ip kube-proxy endpoint-COL4JORS-ns1/svc1/tcp/p80__10.180.0.2/8080 ip saddr 10.180.0.2 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-COL4JORS-ns1/svc1/tcp/p80__10.180.0.2/8080 meta l4proto tcp dnat to 10.180.0.2:8080
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
    add element ip kube-proxy service-ips { 192.168.99.11 . tcp . 80 comment "ns1/svc1:p80" : goto external-ULMVA6XW-ns1/svc1/tcp/p80 }
    add element ip kube-proxy service-nodeports { tcp . 30001 comment "ns1/svc1:p80" : goto external-ULMVA6XW-ns1/svc1/tcp/p80 }
`;

const NODEPORT_LOCAL = golden`
    # ns1/svc1
    add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy local-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy local-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080
    flush chain ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080
    add chain ip kube-proxy endpoint-COL4JORS-ns1/svc1/tcp/p80__10.180.0.2/8080
    flush chain ip kube-proxy endpoint-COL4JORS-ns1/svc1/tcp/p80__10.180.0.2/8080
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 numgen random mod 2 == 0 goto endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-COL4JORS-ns1/svc1/tcp/p80__10.180.0.2/8080
    add rule ip kube-proxy local-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080
    add rule ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80 ip saddr 10.0.0.0/8 goto service-ULMVA6XW-ns1/svc1/tcp/p80 comment "short-circuit pod traffic"
    add rule ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80 fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"
    add rule ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80 fib saddr type local goto service-ULMVA6XW-ns1/svc1/tcp/p80 comment "short-circuit local traffic"
    add rule ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80 goto local-ULMVA6XW-ns1/svc1/tcp/p80
    add rule ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080 ip saddr 10.180.0.1 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080 meta l4proto tcp dnat to 10.180.0.1:8080
    add rule ip kube-proxy endpoint-COL4JORS-ns1/svc1/tcp/p80__10.180.0.2/8080 ip saddr 10.180.0.2 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-COL4JORS-ns1/svc1/tcp/p80__10.180.0.2/8080 meta l4proto tcp dnat to 10.180.0.2:8080
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
    add element ip kube-proxy service-nodeports { tcp . 30001 comment "ns1/svc1:p80" : goto external-ULMVA6XW-ns1/svc1/tcp/p80 }
`;

const NODEPORT_LOCAL_NO_LOCAL_ENDPOINT = golden`
    # ns1/svc1
    add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080
    flush chain ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080
    add rule ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80 ip saddr 10.0.0.0/8 goto service-ULMVA6XW-ns1/svc1/tcp/p80 comment "short-circuit pod traffic"
    add rule ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80 fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"
    add rule ip kube-proxy external-ULMVA6XW-ns1/svc1/tcp/p80 fib saddr type local goto service-ULMVA6XW-ns1/svc1/tcp/p80 comment "short-circuit local traffic"
    add rule ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080 ip saddr 10.180.0.1 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-LIVTTPDC-ns1/svc1/tcp/p80__10.180.0.1/8080 meta l4proto tcp dnat to 10.180.0.1:8080
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
    add element ip kube-proxy service-nodeports { tcp . 30001 comment "ns1/svc1:p80" : goto external-ULMVA6XW-ns1/svc1/tcp/p80 }
    add element ip kube-proxy no-endpoint-nodeports { tcp . 30001 comment "ns1/svc1:p80" : drop }
`;

const INTERNAL_LOCAL = golden`
    # ns1/svc1
    add chain ip kube-proxy local-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy local-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    flush chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add rule ip kube-proxy local-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy local-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 ip saddr 10.180.0.1 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 meta l4proto tcp dnat to 10.180.0.1:80
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto local-ULMVA6XW-ns1/svc1/tcp/p80 }
`;

const INTERNAL_LOCAL_NONE_HERE = golden`
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy no-endpoint-services { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : drop }
`;

const TERMINATING_ONLY = golden`
    # ns1/svc1
    add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    flush chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 ip saddr 10.180.0.1 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 meta l4proto tcp dnat to 10.180.0.1:80
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
`;

const TERMINATING_AND_READY = golden`
    # ns1/svc1
    add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    flush chain ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    add rule ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 ip saddr 10.180.0.2 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 meta l4proto tcp dnat to 10.180.0.2:80
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.41 }
    add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
`;

const UDP = golden`
    # ns1/dns
    add chain ip kube-proxy service-X5NJHU2V-ns1/dns/udp/dns
    flush chain ip kube-proxy service-X5NJHU2V-ns1/dns/udp/dns
    add chain ip kube-proxy endpoint-PCBKZPLF-ns1/dns/udp/dns__10.180.0.1/53
    flush chain ip kube-proxy endpoint-PCBKZPLF-ns1/dns/udp/dns__10.180.0.1/53
    add rule ip kube-proxy service-X5NJHU2V-ns1/dns/udp/dns ip daddr 172.30.0.10 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-X5NJHU2V-ns1/dns/udp/dns goto endpoint-PCBKZPLF-ns1/dns/udp/dns__10.180.0.1/53
    add rule ip kube-proxy endpoint-PCBKZPLF-ns1/dns/udp/dns__10.180.0.1/53 ip saddr 10.180.0.1 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-PCBKZPLF-ns1/dns/udp/dns__10.180.0.1/53 meta l4proto udp dnat to 10.180.0.1:53
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.10 }
    add element ip kube-proxy service-ips { 172.30.0.10 . udp . 53 comment "ns1/dns:dns" : goto service-X5NJHU2V-ns1/dns/udp/dns }
`;

const PARTIAL = golden`
    # ns1/svc1
    add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    flush chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
    add chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    flush chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add chain ip kube-proxy endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80
    flush chain ip kube-proxy endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 numgen random mod 2 == 0 goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
    add rule ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80 goto endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 ip saddr 10.180.0.1 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 meta l4proto tcp dnat to 10.180.0.1:80
    add rule ip kube-proxy endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80 ip saddr 10.180.0.3 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80 meta l4proto tcp dnat to 10.180.0.3:80
    # ns3/svc3
    add chain ip kube-proxy service-4AT6LBPK-ns3/svc3/tcp/p80
    flush chain ip kube-proxy service-4AT6LBPK-ns3/svc3/tcp/p80
    add chain ip kube-proxy endpoint-D4B3VXFW-ns3/svc3/tcp/p80__10.180.0.9/80
    flush chain ip kube-proxy endpoint-D4B3VXFW-ns3/svc3/tcp/p80__10.180.0.9/80
    add rule ip kube-proxy service-4AT6LBPK-ns3/svc3/tcp/p80 ip daddr 172.30.0.43 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-4AT6LBPK-ns3/svc3/tcp/p80 goto endpoint-D4B3VXFW-ns3/svc3/tcp/p80__10.180.0.9/80
    add rule ip kube-proxy endpoint-D4B3VXFW-ns3/svc3/tcp/p80__10.180.0.9/80 ip saddr 10.180.0.9 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-D4B3VXFW-ns3/svc3/tcp/p80__10.180.0.9/80 meta l4proto tcp dnat to 10.180.0.9:80
    # elements removed or changed
    delete element ip kube-proxy cluster-ips { 172.30.0.42 }
    delete element ip kube-proxy service-ips { 172.30.0.42 . tcp . 80 }
    delete element ip kube-proxy service-nodeports { tcp . 30002 }
    delete element ip kube-proxy no-endpoint-services { 172.30.0.43 . tcp . 80 }
    # elements added or changed
    add element ip kube-proxy service-ips { 172.30.0.43 . tcp . 80 comment "ns3/svc3:p80" : goto service-4AT6LBPK-ns3/svc3/tcp/p80 }
    # stale per-service objects
    add chain ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    flush chain ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    add chain ip kube-proxy endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80
    flush chain ip kube-proxy endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80
    add chain ip kube-proxy external-42NFTM6N-ns2/svc2/tcp/p80
    flush chain ip kube-proxy external-42NFTM6N-ns2/svc2/tcp/p80
    add chain ip kube-proxy service-42NFTM6N-ns2/svc2/tcp/p80
    flush chain ip kube-proxy service-42NFTM6N-ns2/svc2/tcp/p80
    delete chain ip kube-proxy endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
    delete chain ip kube-proxy endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80
    delete chain ip kube-proxy external-42NFTM6N-ns2/svc2/tcp/p80
    delete chain ip kube-proxy service-42NFTM6N-ns2/svc2/tcp/p80
`;

const full = { full: true } as const;

t.test('base: the fixed part alone (no Services)', async (t) => {
  const r = renderNftables(snapshot(), CFG, full);
  t.equal(r.text, BASE);
  t.equal(r.ruleCount, 23);
  t.equal(r.elementCount, 0);
});

const cases: [string, ReturnType<typeof snapshot>, string][] = [
  ['ClusterIP, 1 endpoint', snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80')]]), ONE_ENDPOINT],
  // given out of order: the render sorts endpoints
  ['ClusterIP, 3 endpoints', snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.3:80'), ep('10.180.0.1:80'), ep('10.180.0.2:80')]]), THREE_ENDPOINTS],
  ['ClusterIP, no endpoints', snapshot([svc('ns1', 'svc1', '172.30.0.41'), []]), NO_ENDPOINTS],
  ['ClientIP affinity', snapshot([svc('ns1', 'svc1', '172.30.0.41', { affinity: 300 }), [ep('10.180.0.1:80'), ep('10.180.0.2:80')]]), AFFINITY],
  [
    'NodePort + external IP, Cluster policy',
    snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30001, externalIPs: ['192.168.99.11'] }), [ep('10.180.0.1:8080'), ep('10.180.0.2:8080')]]),
    NODEPORT_CLUSTER,
  ],
  [
    'NodePort, Local policy, one endpoint on this node',
    snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30001, etp: 'Local' }), [ep('10.180.0.1:8080', { local: true }), ep('10.180.0.2:8080')]]),
    NODEPORT_LOCAL,
  ],
  [
    'NodePort, Local policy, no endpoint on this node',
    snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30001, etp: 'Local' }), [ep('10.180.0.1:8080')]]),
    NODEPORT_LOCAL_NO_LOCAL_ENDPOINT,
  ],
  ['internalTrafficPolicy Local', snapshot([svc('ns1', 'svc1', '172.30.0.41', { itp: 'Local' }), [ep('10.180.0.1:80', { local: true }), ep('10.180.0.2:80')]]), INTERNAL_LOCAL],
  ['internalTrafficPolicy Local, none on this node', snapshot([svc('ns1', 'svc1', '172.30.0.41', { itp: 'Local' }), [ep('10.180.0.2:80')]]), INTERNAL_LOCAL_NONE_HERE],
  [
    'terminating endpoints when none is ready',
    snapshot([
      svc('ns1', 'svc1', '172.30.0.41'),
      [ep('10.180.0.1:80', { ready: false, serving: true, terminating: true }), ep('10.180.0.2:80', { ready: false, serving: false, terminating: true }), ep('10.180.0.3:80', { ready: false })],
    ]),
    TERMINATING_ONLY,
  ],
  [
    'terminating endpoints ignored while one is ready',
    snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80', { ready: false, serving: true, terminating: true }), ep('10.180.0.2:80')]]),
    TERMINATING_AND_READY,
  ],
  ['UDP, named port', snapshot([svc('ns1', 'dns', '172.30.0.10', { protocol: 'UDP', port: 53, portName: 'dns' }), [ep('10.180.0.1:53')]]), UDP],
];

for (const [name, snap, section] of cases) {
  t.test(`full sync golden: ${name}`, async (t) => {
    const r = renderNftables(snap, CFG, full);
    t.equal(r.text, BASE + section);
    t.equal(r.ruleCount, (r.text.match(/^add rule /gm) ?? []).length);
    // every golden is a valid transaction for the validating fake (and so, we checked, for the kernel)
    await new NftFake().apply(r.text);
  });
}

t.test('hairpin: every endpoint chain marks traffic from the endpoint itself', async (t) => {
  const r = renderNftables(snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80')]]), CFG, full);
  t.match(r.text, /^add rule ip kube-proxy endpoint-5OJB2KTY-ns1\/svc1\/tcp\/p80__10\.180\.0\.1\/80 ip saddr 10\.180\.0\.1 jump mark-for-masquerade$/m);
  // ...before the dnat, so the mark is set when the packet leaves
  const lines = r.text.split('\n').filter((l) => l.startsWith('add rule ip kube-proxy endpoint-5OJB2KTY'));
  t.same(lines.map((l) => l.split(' ').slice(5).join(' ')), ['ip saddr 10.180.0.1 jump mark-for-masquerade', 'meta l4proto tcp dnat to 10.180.0.1:80']);
});

t.test('wrong port / ping on a ClusterIP: cluster-ips-check, and the silent-drop option', async (t) => {
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80')]]);
  const reject = renderNftables(snap, CFG, full).text;
  t.match(reject, /^add rule ip kube-proxy cluster-ips-check ip daddr @cluster-ips meta l4proto icmp reject comment "Reject ping to ClusterIPs"$/m);
  t.match(reject, /^add rule ip kube-proxy cluster-ips-check ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"$/m);
  t.match(reject, /^add element ip kube-proxy cluster-ips \{ 172\.30\.0\.41 \}$/m);
  const drop = renderNftables(snap, CFG, full, undefined, { clusterIPPing: 'drop' }).text;
  const diff = drop.split('\n').filter((l, i) => l !== reject.split('\n')[i]);
  t.same(diff, ['add rule ip kube-proxy cluster-ips-check ip daddr @cluster-ips meta l4proto icmp drop comment "Drop ping to ClusterIPs silently"']);
});

t.test('prefix and masquerade bit', async (t) => {
  const r = renderNftables(snapshot(), { ...CFG, prefix: 'NN', masqueradeBit: 5 }, full);
  t.match(r.text, /^add table ip nn-proxy /);
  t.notMatch(r.text, /kube-proxy /);
  t.match(r.text, /^add rule ip nn-proxy mark-for-masquerade mark set mark or 0x20$/m);
  t.match(r.text, /^add rule ip nn-proxy masquerading mark and 0x20 == 0 return$/m);
});

t.test('no cluster CIDR: no masquerade rule for off-cluster ClusterIP traffic, no pod short-circuit', async (t) => {
  const r = renderNftables(snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30001, etp: 'Local' }), [ep('10.180.0.1:80', { local: true })]]), { ...CFG, clusterCIDR: null }, full);
  t.notMatch(r.text, /ip saddr != /);
  t.notMatch(r.text, /short-circuit pod traffic/);
  t.match(r.text, /short-circuit local traffic/);
});

t.test('a Service with two ports renders two ServicePorts sharing one ClusterIP element', async (t) => {
  const r = renderNftables(
    snapshot(
      [svc('ns1', 'web', '172.30.0.50', { portName: 'http', port: 80 }), [ep('10.180.0.1:8080')]],
      [svc('ns1', 'web', '172.30.0.50', { portName: 'https', port: 443 }), [ep('10.180.0.1:8443')]],
    ),
    CFG,
    full,
  );
  t.equal((r.text.match(/^add element ip kube-proxy cluster-ips /gm) ?? []).length, 1);
  t.match(r.text, /service-ips \{ 172\.30\.0\.50 \. tcp \. 80 comment "ns1\/web:http" : goto service-\w{8}-ns1\/web\/tcp\/http \}/);
  t.match(r.text, /service-ips \{ 172\.30\.0\.50 \. tcp \. 443 comment "ns1\/web:https" : goto service-\w{8}-ns1\/web\/tcp\/https \}/);
  t.equal(r.applied.services.get('ns1/web')!.chains.length, 4);
});

const LB_FIREWALL = golden`
    # ns5/svc5
    add chain ip kube-proxy service-HVFWP5L3-ns5/svc5/tcp/p80
    flush chain ip kube-proxy service-HVFWP5L3-ns5/svc5/tcp/p80
    add chain ip kube-proxy local-HVFWP5L3-ns5/svc5/tcp/p80
    flush chain ip kube-proxy local-HVFWP5L3-ns5/svc5/tcp/p80
    add chain ip kube-proxy external-HVFWP5L3-ns5/svc5/tcp/p80
    flush chain ip kube-proxy external-HVFWP5L3-ns5/svc5/tcp/p80
    add chain ip kube-proxy firewall-HVFWP5L3-ns5/svc5/tcp/p80
    flush chain ip kube-proxy firewall-HVFWP5L3-ns5/svc5/tcp/p80
    add chain ip kube-proxy endpoint-QR2OSYWX-ns5/svc5/tcp/p80__10.180.0.5/80
    flush chain ip kube-proxy endpoint-QR2OSYWX-ns5/svc5/tcp/p80__10.180.0.5/80
    add chain ip kube-proxy endpoint-WLGLN4N3-ns5/svc5/tcp/p80__10.180.0.6/80
    flush chain ip kube-proxy endpoint-WLGLN4N3-ns5/svc5/tcp/p80__10.180.0.6/80
    add rule ip kube-proxy service-HVFWP5L3-ns5/svc5/tcp/p80 ip daddr 172.30.0.45 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
    add rule ip kube-proxy service-HVFWP5L3-ns5/svc5/tcp/p80 numgen random mod 2 == 0 goto endpoint-QR2OSYWX-ns5/svc5/tcp/p80__10.180.0.5/80
    add rule ip kube-proxy service-HVFWP5L3-ns5/svc5/tcp/p80 goto endpoint-WLGLN4N3-ns5/svc5/tcp/p80__10.180.0.6/80
    add rule ip kube-proxy local-HVFWP5L3-ns5/svc5/tcp/p80 goto endpoint-QR2OSYWX-ns5/svc5/tcp/p80__10.180.0.5/80
    add rule ip kube-proxy external-HVFWP5L3-ns5/svc5/tcp/p80 ip saddr 10.0.0.0/8 goto service-HVFWP5L3-ns5/svc5/tcp/p80 comment "short-circuit pod traffic"
    add rule ip kube-proxy external-HVFWP5L3-ns5/svc5/tcp/p80 fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"
    add rule ip kube-proxy external-HVFWP5L3-ns5/svc5/tcp/p80 fib saddr type local goto service-HVFWP5L3-ns5/svc5/tcp/p80 comment "short-circuit local traffic"
    add rule ip kube-proxy external-HVFWP5L3-ns5/svc5/tcp/p80 goto local-HVFWP5L3-ns5/svc5/tcp/p80
    add rule ip kube-proxy firewall-HVFWP5L3-ns5/svc5/tcp/p80 ip saddr 203.0.113.0/25 return
    add rule ip kube-proxy firewall-HVFWP5L3-ns5/svc5/tcp/p80 ip saddr 192.168.0.0/24 return
    add rule ip kube-proxy firewall-HVFWP5L3-ns5/svc5/tcp/p80 ip saddr 1.2.3.4 return
    add rule ip kube-proxy firewall-HVFWP5L3-ns5/svc5/tcp/p80 drop comment "ns5/svc5:p80 traffic not in loadBalancerSourceRanges"
    add rule ip kube-proxy endpoint-QR2OSYWX-ns5/svc5/tcp/p80__10.180.0.5/80 ip saddr 10.180.0.5 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-QR2OSYWX-ns5/svc5/tcp/p80__10.180.0.5/80 meta l4proto tcp dnat to 10.180.0.5:80
    add rule ip kube-proxy endpoint-WLGLN4N3-ns5/svc5/tcp/p80__10.180.0.6/80 ip saddr 10.180.0.6 jump mark-for-masquerade
    add rule ip kube-proxy endpoint-WLGLN4N3-ns5/svc5/tcp/p80__10.180.0.6/80 meta l4proto tcp dnat to 10.180.0.6:80
    # elements
    add element ip kube-proxy cluster-ips { 172.30.0.45 }
    add element ip kube-proxy service-ips { 172.30.0.45 . tcp . 80 comment "ns5/svc5:p80" : goto service-HVFWP5L3-ns5/svc5/tcp/p80 }
    add element ip kube-proxy service-ips { 1.2.3.4 . tcp . 80 comment "ns5/svc5:p80" : goto external-HVFWP5L3-ns5/svc5/tcp/p80 }
    add element ip kube-proxy service-nodeports { tcp . 3002 comment "ns5/svc5:p80" : goto external-HVFWP5L3-ns5/svc5/tcp/p80 }
    add element ip kube-proxy firewall-ips { 1.2.3.4 . tcp . 80 comment "ns5/svc5:p80" : goto firewall-HVFWP5L3-ns5/svc5/tcp/p80 }
`;

t.test('full sync golden: LoadBalancer with source ranges, externalTrafficPolicy Local (kube-proxy\'s chain names)', async (t) => {
  const lb = svc('ns5', 'svc5', '172.30.0.45', { nodePort: 3002, lbVIPs: ['1.2.3.4'], sourceRanges: ['203.0.113.0/25', '192.168.0.0/24'], etp: 'Local', healthCheckNodePort: 30000 });
  // The node's primary IP is in 192.168.0.0/24, so the VIP is admitted as a source too.
  const r = renderNftables(snapshot([lb, [ep('10.180.0.5:80', { local: true }), ep('10.180.0.6:80')]]), nodeConfig({ primaryIP: parseIPv4('192.168.0.2') }), full);
  t.equal(r.text, BASE + LB_FIREWALL);
  await new NftFake().apply(r.text);
  // Without ranges: no firewall chain or element, the VIP goes straight to the external chain.
  const open = renderNftables(snapshot([svc('ns5', 'svc5', '172.30.0.45', { lbVIPs: ['1.2.3.4'] }), [ep('10.180.0.5:80')]]), CFG, full).text;
  t.notMatch(open, /firewall-\w{8}-|add element ip kube-proxy firewall-ips/);
  t.match(open, /^add element ip kube-proxy service-ips \{ 1\.2\.3\.4 \. tcp \. 80 comment "ns5\/svc5:p80" : goto external-HVFWP5L3-ns5\/svc5\/tcp\/p80 \}$/m);
  // No endpoints: the VIP is rejected for everyone, and the firewall element stays (kube-proxy keeps it too).
  const none = renderNftables(snapshot([svc('ns5', 'svc5', '172.30.0.45', { lbVIPs: ['1.2.3.4'], sourceRanges: ['203.0.113.0/25'] }), []]), CFG, full).text;
  t.match(none, /^add element ip kube-proxy no-endpoint-services \{ 1\.2\.3\.4 \. tcp \. 80 comment "ns5\/svc5:p80" : goto reject-chain \}$/m);
  t.match(none, /^add element ip kube-proxy firewall-ips \{ 1\.2\.3\.4 \. tcp \. 80 comment "ns5\/svc5:p80" : goto firewall-HVFWP5L3-ns5\/svc5\/tcp\/p80 \}$/m);
  await new NftFake().apply(none);
});

t.test('partial sync: source ranges removed take the firewall element and chain away', async (t) => {
  const cfg = nodeConfig({ primaryIP: parseIPv4('192.168.0.2') });
  const eps = [ep('10.180.0.5:80', { local: true })];
  const a = renderNftables(snapshot([svc('ns5', 'svc5', '172.30.0.45', { lbVIPs: ['1.2.3.4'], sourceRanges: ['203.0.113.0/25'] }), eps]), cfg, full);
  const f = new NftFake();
  await f.apply(a.text);
  const b = renderNftables(snapshot([svc('ns5', 'svc5', '172.30.0.45', { lbVIPs: ['1.2.3.4'] }), eps]), cfg, { full: false, changed: new Set(['ns5/svc5']) }, a.applied);
  t.match(b.text, /^delete element ip kube-proxy firewall-ips \{ 1\.2\.3\.4 \. tcp \. 80 \}$/m);
  t.match(b.text, /^delete chain ip kube-proxy firewall-HVFWP5L3-ns5\/svc5\/tcp\/p80$/m);
  await f.apply(b.text);
  t.equal(f.table('ip', 'kube-proxy')!.sets.get('firewall-ips')!.elements.size, 0);
});

t.test('nodePortAddresses: one NodePort rule per CIDR, never 127.0.0.0/8; service CIDRs: unallocated ClusterIPs dropped', async (t) => {
  const cfg = nodeConfig({ nodePortAddresses: ['192.168.0.2/32', '127.0.0.0/8', '0.0.0.0/1'].map((c) => parseCidr(c).cidr), serviceCIDRs: [parseCidr('172.30.0.0/16').cidr] });
  const r = renderNftables(snapshot(), cfg, full);
  const lines = r.text.split('\n').filter((l) => / (services|nodeport-endpoints-check|cluster-ips-check) /.test(l) && l.startsWith('add rule'));
  t.same(lines, [
    'add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips',
    'add rule ip kube-proxy services fib daddr type local ip daddr 192.168.0.2 meta l4proto . th dport vmap @service-nodeports',
    'add rule ip kube-proxy services fib daddr type local ip daddr 0.0.0.0/1 ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports',
    'add rule ip kube-proxy nodeport-endpoints-check ip daddr 192.168.0.2 meta l4proto . th dport vmap @no-endpoint-nodeports',
    'add rule ip kube-proxy nodeport-endpoints-check ip daddr 0.0.0.0/1 ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports',
    'add rule ip kube-proxy cluster-ips-check ip daddr @cluster-ips meta l4proto icmp reject comment "Reject ping to ClusterIPs"',
    'add rule ip kube-proxy cluster-ips-check ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"',
    'add rule ip kube-proxy cluster-ips-check ip daddr 172.30.0.0/16 drop comment "Drop traffic to unallocated ClusterIPs"',
  ]);
  await new NftFake().apply(r.text);
  t.equal(renderNftables(snapshot(), nodeConfig({ nodePortAddresses: null, serviceCIDRs: [] }), full).text, BASE, 'null and [] are the defaults');
});

t.test('partial sync golden: only the changed Services, their elements, and stale chains', async (t) => {
  const A = snapshot(
    [svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80'), ep('10.180.0.2:80')]],
    [svc('ns2', 'svc2', '172.30.0.42', { nodePort: 30002 }), [ep('10.180.0.5:80')]],
    [svc('ns3', 'svc3', '172.30.0.43'), []],
  );
  // svc1: endpoint .2 replaced by .3; svc2 deleted; svc3 gets an endpoint.
  const B = snapshot(
    [svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80'), ep('10.180.0.3:80')]],
    [svc('ns3', 'svc3', '172.30.0.43'), [ep('10.180.0.9:80')]],
  );
  const ra = renderNftables(A, CFG, full);
  const rb = renderNftables(B, CFG, { full: false, changed: new Set(['ns1/svc1', 'ns2/svc2', 'ns3/svc3']) }, ra.applied);
  t.equal(rb.text, PARTIAL);
  t.equal(rb.ruleCount, 11);
  t.equal(rb.elementCount, 5);
  t.equal(rb.chainsWritten, 5);
  // The fake accepts it on top of A, and ends where a full sync of B ends.
  const f = new NftFake();
  await f.apply(ra.text);
  await f.apply(rb.text);
  const g = new NftFake();
  await g.apply(renderNftables(B, CFG, full).text);
  t.same(f.table('ip', 'kube-proxy'), g.table('ip', 'kube-proxy'));
});

t.test('partial sync touches nothing for unchanged Services', async (t) => {
  const A = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80')]], [svc('ns2', 'svc2', '172.30.0.42'), [ep('10.180.0.2:80')]]);
  const ra = renderNftables(A, CFG, full);
  const r = renderNftables(A, CFG, { full: false, changed: new Set() }, ra.applied);
  t.equal(r.text, '\n');
  t.equal(r.ruleCount, 0);
  // a changed Service whose rendering did not change still gets its chains rewritten, but no element churn
  const r2 = renderNftables(A, CFG, { full: false, changed: new Set(['ns2/svc2']) }, ra.applied);
  t.notMatch(r2.text, /svc1/);
  t.notMatch(r2.text, /element/);
  t.equal(r2.chainsWritten, 2);
});

t.test('partial sync: value change is delete + add; affinity sets come and go with the Service', async (t) => {
  const A = snapshot([svc('ns1', 'svc1', '172.30.0.41', { affinity: 60 }), [ep('10.180.0.1:80')]]);
  const B = snapshot([svc('ns1', 'svc1', '172.30.0.41', { itp: 'Local' }), [ep('10.180.0.1:80', { local: true })]]);
  const ra = renderNftables(A, CFG, full);
  const rb = renderNftables(B, CFG, { full: false, changed: new Set(['ns1/svc1']) }, ra.applied);
  t.match(rb.text, /delete element ip kube-proxy service-ips \{ 172\.30\.0\.41 \. tcp \. 80 \}\n# elements added or changed\nadd element ip kube-proxy service-ips \{ 172\.30\.0\.41 \. tcp \. 80 comment "ns1\/svc1:p80" : goto local-/);
  t.match(rb.text, /delete set ip kube-proxy affinity-5OJB2KTY-ns1\/svc1\/tcp\/p80__10\.180\.0\.1\/80\n$/);
  t.match(rb.text, /delete chain ip kube-proxy service-ULMVA6XW-ns1\/svc1\/tcp\/p80\n/);
  const f = new NftFake();
  await f.apply(ra.text);
  await f.apply(rb.text);
  t.notOk(f.table('ip', 'kube-proxy')!.sets.has('affinity-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80'));
});

t.test('a partial sync needs the record of the last sync', async (t) => {
  t.throws(() => renderNftables(snapshot(), CFG, { full: false, changed: new Set() }), /needs the state of the last successful sync/);
});

t.test('full sync with a record deletes stale per-service chains and affinity sets', async (t) => {
  const existing = {
    ...EMPTY_APPLIED,
    chains: new Set(['service-AAAAAAAA-old/gone/tcp/p', 'endpoint-BBBBBBBB-old/gone/tcp/p__10.1.1.1/80', 'service-ULMVA6XW-ns1/svc1/tcp/p80']),
    affinitySets: new Map([['affinity-BBBBBBBB-old/gone/tcp/p__10.1.1.1/80', 10800]]),
  };
  const r = renderNftables(snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1:80')]]), CFG, full, existing);
  t.equal(
    r.text.slice(r.text.indexOf('# stale per-service objects')),
    golden`
      # stale per-service objects
      add chain ip kube-proxy endpoint-BBBBBBBB-old/gone/tcp/p__10.1.1.1/80
      flush chain ip kube-proxy endpoint-BBBBBBBB-old/gone/tcp/p__10.1.1.1/80
      add chain ip kube-proxy service-AAAAAAAA-old/gone/tcp/p
      flush chain ip kube-proxy service-AAAAAAAA-old/gone/tcp/p
      delete chain ip kube-proxy endpoint-BBBBBBBB-old/gone/tcp/p__10.1.1.1/80
      delete chain ip kube-proxy service-AAAAAAAA-old/gone/tcp/p
      add set ip kube-proxy affinity-BBBBBBBB-old/gone/tcp/p__10.1.1.1/80 { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }
      delete set ip kube-proxy affinity-BBBBBBBB-old/gone/tcp/p__10.1.1.1/80
    `,
  );
  // stale objects that the kernel no longer has (a drifted record) cannot fail the transaction
  await new NftFake().apply(r.text);
});

t.test('partial syncs converge to the same table as a full sync (seeded random changes)', async (t) => {
  // mulberry32: a small seeded PRNG whose low bits are usable
  let seed = 7;
  const rnd = (n: number) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) % n;
  };
  let staleDeleted = 0;
  let elementsChanged = 0;
  const makeSvc = (i: number) => {
    const kind = rnd(7);
    return svc(`ns${i % 3}`, `s${i}`, `172.30.1.${i + 1}`, {
      ...(kind === 5 ? { nodePort: 30100 + i, lbVIPs: [`203.0.113.${i + 1}`], sourceRanges: rnd(2) ? ['198.51.100.0/24'] : ['198.51.100.0/24', '192.168.0.0/16'], etp: 'Local' as const } : {}),
      ...(kind === 6 ? { lbVIPs: [`203.0.113.${i + 1}`, `203.0.113.${i + 101}`] } : {}),
      ...(kind === 1 ? { nodePort: 30100 + i } : {}),
      ...(kind === 2 ? { nodePort: 30100 + i, etp: 'Local' as const } : {}),
      ...(kind === 3 ? { affinity: 100 + rnd(3) } : {}),
      ...(kind === 4 ? { itp: 'Local' as const, externalIPs: [`192.168.99.${i + 1}`] } : {}),
    });
  };
  const makeEps = () =>
    Array.from({ length: rnd(4) }, () => ep(`10.180.${rnd(3)}.${rnd(6) + 1}:80`, { local: rnd(2) === 0, ready: rnd(5) !== 0, terminating: rnd(4) === 0 })).filter(
      (e, i, all) => all.findIndex((x) => x.ip === e.ip) === i,
    );
  const state = new Map<number, [ReturnType<typeof svc>, ReturnType<typeof ep>[]]>();
  for (let i = 0; i < 12; i++) state.set(i, [makeSvc(i), makeEps()]);
  const f = new NftFake();
  let r = renderNftables(snapshot(...state.values()), CFG, full);
  await f.apply(r.text);
  for (let round = 0; round < 40; round++) {
    const changed = new Set<string>();
    for (let k = 0; k < 1 + rnd(3); k++) {
      const i = rnd(15);
      const op = rnd(4);
      if (op === 0) state.delete(i);
      else if (op === 1 || !state.has(i)) state.set(i, [makeSvc(i), makeEps()]);
      else state.set(i, [state.get(i)![0], makeEps()]);
      changed.add(`ns${i % 3}/s${i}`);
    }
    const snap = snapshot(...state.values());
    r = renderNftables(snap, CFG, { full: false, changed }, r.applied);
    staleDeleted += (r.text.match(/^delete (chain|set) /gm) ?? []).length;
    elementsChanged += r.elementCount;
    await f.apply(r.text);
    const g = new NftFake();
    await g.apply(renderNftables(snap, CFG, full).text);
    t.same(f.table('ip', 'kube-proxy'), g.table('ip', 'kube-proxy'), `round ${round}`);
  }
  // the sequence did exercise deletions and element churn
  t.ok(staleDeleted > 20, `stale objects deleted: ${staleDeleted}`);
  t.ok(elementsChanged > 40, `elements changed: ${elementsChanged}`);
});
