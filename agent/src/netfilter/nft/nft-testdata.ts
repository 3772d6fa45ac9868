/**
 * Test data: what nft 1.0.6 on kernel 6.18 printed for a small nodenet table
 * (three Services: three endpoints; NodePort with externalTrafficPolicy Local
 * and ClientIP affinity, one affinity entry present; no endpoints), captured
 * with `nft list table ip kube-proxy` and `nft -j list table ip kube-proxy`.
 * Parsers are tested against the kernel's own spelling, not ours.
 */

export const KERNEL_LISTING = `table ip kube-proxy {
	comment "rules for kube-proxy"
	set cluster-ips {
		type ipv4_addr
		comment "Active ClusterIPs"
		elements = { 172.30.0.41, 172.30.0.42,
			     172.30.0.43 }
	}

	map service-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
		comment "ClusterIP and ExternalIP traffic"
		elements = { 172.30.0.41 . tcp . 80 comment "ns1/svc1:p80" : goto service-ULMVA6XW-ns1/svc1/tcp/p80,
			     172.30.0.42 . tcp . 80 comment "ns2/svc2:p80" : goto service-42NFTM6N-ns2/svc2/tcp/p80 }
	}

	map service-nodeports {
		type inet_proto . inet_service : verdict
		comment "NodePort traffic"
		elements = { tcp . 3001 comment "ns2/svc2:p80" : goto external-42NFTM6N-ns2/svc2/tcp/p80 }
	}

	map no-endpoint-services {
		type ipv4_addr . inet_proto . inet_service : verdict
		comment "vmap to drop or reject packets to services with no endpoints"
		elements = { 172.30.0.43 . tcp . 80 comment "ns3/svc3:p80" : goto reject-chain }
	}

	map no-endpoint-nodeports {
		type inet_proto . inet_service : verdict
		comment "vmap to drop or reject packets to service nodeports with no endpoints"
	}

	set affinity-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80 {
		type ipv4_addr
		size 65535
		flags dynamic,timeout
		timeout 3h
		elements = { 203.0.113.7 expires 2h59m59s996ms }
	}

	set affinity-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80 {
		type ipv4_addr
		size 65535
		flags dynamic,timeout
		timeout 3h
	}

	chain services {
		ip daddr . meta l4proto . th dport vmap @service-ips
		fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports
	}

	chain service-endpoints-check {
		ip daddr . meta l4proto . th dport vmap @no-endpoint-services
	}

	chain nodeport-endpoints-check {
		ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports
	}

	chain cluster-ips-check {
		ip daddr @cluster-ips meta l4proto icmp reject comment "Reject ping to ClusterIPs"
		ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"
	}

	chain reject-chain {
		comment "helper for @no-endpoint-services / @no-endpoint-nodeports"
		reject
	}

	chain mark-for-masquerade {
		meta mark set meta mark | 0x00004000
	}

	chain masquerading {
		meta mark & 0x00004000 == 0x00000000 return
		meta mark set meta mark ^ 0x00004000
		masquerade fully-random
	}

	chain service-ULMVA6XW-ns1/svc1/tcp/p80 {
		ip daddr 172.30.0.41 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
		numgen random mod 3 0 goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80
		numgen random mod 2 0 goto endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80
		goto endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80
	}

	chain endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 {
		ip saddr 10.180.0.1 jump mark-for-masquerade
		meta l4proto tcp dnat to 10.180.0.1:80
	}

	chain endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80 {
		ip saddr 10.180.0.2 jump mark-for-masquerade
		meta l4proto tcp dnat to 10.180.0.2:80
	}

	chain endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80 {
		ip saddr 10.180.0.3 jump mark-for-masquerade
		meta l4proto tcp dnat to 10.180.0.3:80
	}

	chain service-42NFTM6N-ns2/svc2/tcp/p80 {
		ip daddr 172.30.0.42 ip saddr != 10.0.0.0/8 jump mark-for-masquerade
		ip saddr @affinity-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80 goto endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80
		ip saddr @affinity-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80 goto endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80
		numgen random mod 2 0 goto endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80
		goto endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80
	}

	chain local-42NFTM6N-ns2/svc2/tcp/p80 {
		ip saddr @affinity-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80 goto endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80
		goto endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80
	}

	chain external-42NFTM6N-ns2/svc2/tcp/p80 {
		ip saddr 10.0.0.0/8 goto service-42NFTM6N-ns2/svc2/tcp/p80 comment "short-circuit pod traffic"
		fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"
		fib saddr type local goto service-42NFTM6N-ns2/svc2/tcp/p80 comment "short-circuit local traffic"
		goto local-42NFTM6N-ns2/svc2/tcp/p80
	}

	chain endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80 {
		ip saddr 10.180.0.4 jump mark-for-masquerade
		update @affinity-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80 { ip saddr }
		meta l4proto tcp dnat to 10.180.0.4:80
	}

	chain endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80 {
		ip saddr 10.180.0.5 jump mark-for-masquerade
		update @affinity-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80 { ip saddr }
		meta l4proto tcp dnat to 10.180.0.5:80
	}

	chain filter-prerouting {
		type filter hook prerouting priority dstnat - 10; policy accept;
	}

	chain filter-input {
		type filter hook input priority filter; policy accept;
		ct state new jump nodeport-endpoints-check
		ct state new jump service-endpoints-check
	}

	chain filter-forward {
		type filter hook forward priority filter; policy accept;
		ct state new jump service-endpoints-check
		ct state new jump cluster-ips-check
	}

	chain filter-output {
		type filter hook output priority filter; policy accept;
		ct state new jump service-endpoints-check
		ct state new jump cluster-ips-check
	}

	chain nat-prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		jump services
	}

	chain nat-output {
		type nat hook output priority -100; policy accept;
		jump services
	}

	chain nat-postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		jump masquerading
	}
}
`;

export const KERNEL_JSON = "{\"nftables\": [{\"metainfo\": {\"version\": \"1.0.6\", \"release_name\": \"Lester Gooch #5\", \"json_schema_version\": 1}}, {\"table\": {\"family\": \"ip\", \"name\": \"kube-proxy\", \"handle\": 19}}, {\"set\": {\"family\": \"ip\", \"name\": \"cluster-ips\", \"table\": \"kube-proxy\", \"type\": \"ipv4_addr\", \"handle\": 22, \"comment\": \"Active ClusterIPs\", \"elem\": [\"172.30.0.41\", \"172.30.0.42\", \"172.30.0.43\"]}}, {\"map\": {\"family\": \"ip\", \"name\": \"service-ips\", \"table\": \"kube-proxy\", \"type\": [\"ipv4_addr\", \"inet_proto\", \"inet_service\"], \"handle\": 23, \"comment\": \"ClusterIP and ExternalIP traffic\", \"map\": \"verdict\", \"elem\": [[{\"elem\": {\"val\": {\"concat\": [\"172.30.0.41\", \"tcp\", 80]}, \"comment\": \"ns1/svc1:p80\"}}, {\"goto\": {\"target\": \"service-ULMVA6XW-ns1/svc1/tcp/p80\"}}], [{\"elem\": {\"val\": {\"concat\": [\"172.30.0.42\", \"tcp\", 80]}, \"comment\": \"ns2/svc2:p80\"}}, {\"goto\": {\"target\": \"service-42NFTM6N-ns2/svc2/tcp/p80\"}}]]}}, {\"map\": {\"family\": \"ip\", \"name\": \"service-nodeports\", \"table\": \"kube-proxy\", \"type\": [\"inet_proto\", \"inet_service\"], \"handle\": 24, \"comment\": \"NodePort traffic\", \"map\": \"verdict\", \"elem\": [[{\"elem\": {\"val\": {\"concat\": [\"tcp\", 3001]}, \"comment\": \"ns2/svc2:p80\"}}, {\"goto\": {\"target\": \"external-42NFTM6N-ns2/svc2/tcp/p80\"}}]]}}, {\"map\": {\"family\": \"ip\", \"name\": \"no-endpoint-services\", \"table\": \"kube-proxy\", \"type\": [\"ipv4_addr\", \"inet_proto\", \"inet_service\"], \"handle\": 25, \"comment\": \"vmap to drop or reject packets to services with no endpoints\", \"map\": \"verdict\", \"elem\": [[{\"elem\": {\"val\": {\"concat\": [\"172.30.0.43\", \"tcp\", 80]}, \"comment\": \"ns3/svc3:p80\"}}, {\"goto\": {\"target\": \"reject-chain\"}}]]}}, {\"map\": {\"family\": \"ip\", \"name\": \"no-endpoint-nodeports\", \"table\": \"kube-proxy\", \"type\": [\"inet_proto\", \"inet_service\"], \"handle\": 26, \"comment\": \"vmap to drop or reject packets to service nodeports with no endpoints\", \"map\": \"verdict\"}}, {\"set\": {\"family\": \"ip\", \"name\": \"affinity-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\", \"table\": \"kube-proxy\", \"type\": \"ipv4_addr\", \"handle\": 66, \"size\": 65535, \"flags\": [\"timeout\"], \"timeout\": 10800, \"elem\": [{\"elem\": {\"val\": \"203.0.113.7\", \"expires\": 10799}}]}}, {\"set\": {\"family\": \"ip\", \"name\": \"affinity-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80\", \"table\": \"kube-proxy\", \"type\": \"ipv4_addr\", \"handle\": 67, \"size\": 65535, \"flags\": [\"timeout\"], \"timeout\": 10800}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"services\", \"handle\": 15}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"service-endpoints-check\", \"handle\": 16}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"nodeport-endpoints-check\", \"handle\": 17}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"cluster-ips-check\", \"handle\": 18}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"reject-chain\", \"handle\": 19}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"mark-for-masquerade\", \"handle\": 20}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"masquerading\", \"handle\": 21}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"service-ULMVA6XW-ns1/svc1/tcp/p80\", \"handle\": 47}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80\", \"handle\": 48}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80\", \"handle\": 49}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80\", \"handle\": 50}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"service-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 61}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"local-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 62}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"external-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 63}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\", \"handle\": 64}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80\", \"handle\": 65}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"filter-prerouting\", \"handle\": 85, \"type\": \"filter\", \"hook\": \"prerouting\", \"prio\": -110, \"policy\": \"accept\"}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"filter-input\", \"handle\": 86, \"type\": \"filter\", \"hook\": \"input\", \"prio\": 0, \"policy\": \"accept\"}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"filter-forward\", \"handle\": 87, \"type\": \"filter\", \"hook\": \"forward\", \"prio\": 0, \"policy\": \"accept\"}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"filter-output\", \"handle\": 88, \"type\": \"filter\", \"hook\": \"output\", \"prio\": 0, \"policy\": \"accept\"}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"nat-prerouting\", \"handle\": 89, \"type\": \"nat\", \"hook\": \"prerouting\", \"prio\": -100, \"policy\": \"accept\"}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"nat-output\", \"handle\": 90, \"type\": \"nat\", \"hook\": \"output\", \"prio\": -100, \"policy\": \"accept\"}}, {\"chain\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"name\": \"nat-postrouting\", \"handle\": 91, \"type\": \"nat\", \"hook\": \"postrouting\", \"prio\": 100, \"policy\": \"accept\"}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"services\", \"handle\": 101, \"expr\": [{\"vmap\": {\"key\": {\"concat\": [{\"payload\": {\"protocol\": \"ip\", \"field\": \"daddr\"}}, {\"meta\": {\"key\": \"l4proto\"}}, {\"payload\": {\"protocol\": \"th\", \"field\": \"dport\"}}]}, \"data\": \"@service-ips\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"services\", \"handle\": 102, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"fib\": {\"result\": \"type\", \"flags\": [\"daddr\"]}}, \"right\": \"local\"}}, {\"match\": {\"op\": \"!=\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"daddr\"}}, \"right\": {\"prefix\": {\"addr\": \"127.0.0.0\", \"len\": 8}}}}, {\"vmap\": {\"key\": {\"concat\": [{\"meta\": {\"key\": \"l4proto\"}}, {\"payload\": {\"protocol\": \"th\", \"field\": \"dport\"}}]}, \"data\": \"@service-nodeports\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"service-endpoints-check\", \"handle\": 103, \"expr\": [{\"vmap\": {\"key\": {\"concat\": [{\"payload\": {\"protocol\": \"ip\", \"field\": \"daddr\"}}, {\"meta\": {\"key\": \"l4proto\"}}, {\"payload\": {\"protocol\": \"th\", \"field\": \"dport\"}}]}, \"data\": \"@no-endpoint-services\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"nodeport-endpoints-check\", \"handle\": 104, \"expr\": [{\"match\": {\"op\": \"!=\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"daddr\"}}, \"right\": {\"prefix\": {\"addr\": \"127.0.0.0\", \"len\": 8}}}}, {\"vmap\": {\"key\": {\"concat\": [{\"meta\": {\"key\": \"l4proto\"}}, {\"payload\": {\"protocol\": \"th\", \"field\": \"dport\"}}]}, \"data\": \"@no-endpoint-nodeports\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"cluster-ips-check\", \"handle\": 106, \"comment\": \"Reject ping to ClusterIPs\", \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"daddr\"}}, \"right\": \"@cluster-ips\"}}, {\"match\": {\"op\": \"==\", \"left\": {\"meta\": {\"key\": \"l4proto\"}}, \"right\": \"icmp\"}}, {\"reject\": {\"type\": \"icmp\", \"expr\": \"port-unreachable\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"cluster-ips-check\", \"handle\": 107, \"comment\": \"Reject traffic to invalid ports of ClusterIPs\", \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"daddr\"}}, \"right\": \"@cluster-ips\"}}, {\"reject\": {\"type\": \"icmp\", \"expr\": \"port-unreachable\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"reject-chain\", \"handle\": 105, \"expr\": [{\"reject\": {\"type\": \"icmp\", \"expr\": \"port-unreachable\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"mark-for-masquerade\", \"handle\": 108, \"expr\": [{\"mangle\": {\"key\": {\"meta\": {\"key\": \"mark\"}}, \"value\": {\"|\": [{\"meta\": {\"key\": \"mark\"}}, 16384]}}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"masquerading\", \"handle\": 109, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"&\": [{\"meta\": {\"key\": \"mark\"}}, 16384]}, \"right\": 0}}, {\"return\": null}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"masquerading\", \"handle\": 110, \"expr\": [{\"mangle\": {\"key\": {\"meta\": {\"key\": \"mark\"}}, \"value\": {\"^\": [{\"meta\": {\"key\": \"mark\"}}, 16384]}}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"masquerading\", \"handle\": 111, \"expr\": [{\"masquerade\": {\"flags\": \"fully-random\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"service-ULMVA6XW-ns1/svc1/tcp/p80\", \"handle\": 112, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"daddr\"}}, \"right\": \"172.30.0.41\"}}, {\"match\": {\"op\": \"!=\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": {\"prefix\": {\"addr\": \"10.0.0.0\", \"len\": 8}}}}, {\"jump\": {\"target\": \"mark-for-masquerade\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"service-ULMVA6XW-ns1/svc1/tcp/p80\", \"handle\": 113, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"numgen\": {\"mode\": \"random\", \"mod\": 3, \"offset\": 0}}, \"right\": 0}}, {\"goto\": {\"target\": \"endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"service-ULMVA6XW-ns1/svc1/tcp/p80\", \"handle\": 114, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"numgen\": {\"mode\": \"random\", \"mod\": 2, \"offset\": 0}}, \"right\": 0}}, {\"goto\": {\"target\": \"endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"service-ULMVA6XW-ns1/svc1/tcp/p80\", \"handle\": 115, \"expr\": [{\"goto\": {\"target\": \"endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80\", \"handle\": 116, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": \"10.180.0.1\"}}, {\"jump\": {\"target\": \"mark-for-masquerade\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80\", \"handle\": 117, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"meta\": {\"key\": \"l4proto\"}}, \"right\": \"tcp\"}}, {\"dnat\": {\"addr\": \"10.180.0.1\", \"port\": 80}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80\", \"handle\": 118, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": \"10.180.0.2\"}}, {\"jump\": {\"target\": \"mark-for-masquerade\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80\", \"handle\": 119, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"meta\": {\"key\": \"l4proto\"}}, \"right\": \"tcp\"}}, {\"dnat\": {\"addr\": \"10.180.0.2\", \"port\": 80}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80\", \"handle\": 120, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": \"10.180.0.3\"}}, {\"jump\": {\"target\": \"mark-for-masquerade\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80\", \"handle\": 121, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"meta\": {\"key\": \"l4proto\"}}, \"right\": \"tcp\"}}, {\"dnat\": {\"addr\": \"10.180.0.3\", \"port\": 80}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"service-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 122, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"daddr\"}}, \"right\": \"172.30.0.42\"}}, {\"match\": {\"op\": \"!=\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": {\"prefix\": {\"addr\": \"10.0.0.0\", \"len\": 8}}}}, {\"jump\": {\"target\": \"mark-for-masquerade\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"service-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 123, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": \"@affinity-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\"}}, {\"goto\": {\"target\": \"endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"service-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 124, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": \"@affinity-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80\"}}, {\"goto\": {\"target\": \"endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"service-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 125, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"numgen\": {\"mode\": \"random\", \"mod\": 2, \"offset\": 0}}, \"right\": 0}}, {\"goto\": {\"target\": \"endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"service-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 126, \"expr\": [{\"goto\": {\"target\": \"endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"local-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 127, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": \"@affinity-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\"}}, {\"goto\": {\"target\": \"endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"local-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 128, \"expr\": [{\"goto\": {\"target\": \"endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"external-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 129, \"comment\": \"short-circuit pod traffic\", \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": {\"prefix\": {\"addr\": \"10.0.0.0\", \"len\": 8}}}}, {\"goto\": {\"target\": \"service-42NFTM6N-ns2/svc2/tcp/p80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"external-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 130, \"comment\": \"masquerade local traffic\", \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"fib\": {\"result\": \"type\", \"flags\": [\"saddr\"]}}, \"right\": \"local\"}}, {\"jump\": {\"target\": \"mark-for-masquerade\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"external-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 131, \"comment\": \"short-circuit local traffic\", \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"fib\": {\"result\": \"type\", \"flags\": [\"saddr\"]}}, \"right\": \"local\"}}, {\"goto\": {\"target\": \"service-42NFTM6N-ns2/svc2/tcp/p80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"external-42NFTM6N-ns2/svc2/tcp/p80\", \"handle\": 132, \"expr\": [{\"goto\": {\"target\": \"local-42NFTM6N-ns2/svc2/tcp/p80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\", \"handle\": 133, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": \"10.180.0.4\"}}, {\"jump\": {\"target\": \"mark-for-masquerade\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\", \"handle\": 134, \"expr\": [{\"set\": {\"op\": \"update\", \"elem\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"set\": \"@affinity-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80\", \"handle\": 135, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"meta\": {\"key\": \"l4proto\"}}, \"right\": \"tcp\"}}, {\"dnat\": {\"addr\": \"10.180.0.4\", \"port\": 80}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80\", \"handle\": 136, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"right\": \"10.180.0.5\"}}, {\"jump\": {\"target\": \"mark-for-masquerade\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80\", \"handle\": 137, \"expr\": [{\"set\": {\"op\": \"update\", \"elem\": {\"payload\": {\"protocol\": \"ip\", \"field\": \"saddr\"}}, \"set\": \"@affinity-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"endpoint-NILE4YCW-ns2/svc2/tcp/p80__10.180.0.5/80\", \"handle\": 138, \"expr\": [{\"match\": {\"op\": \"==\", \"left\": {\"meta\": {\"key\": \"l4proto\"}}, \"right\": \"tcp\"}}, {\"dnat\": {\"addr\": \"10.180.0.5\", \"port\": 80}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"filter-input\", \"handle\": 92, \"expr\": [{\"match\": {\"op\": \"in\", \"left\": {\"ct\": {\"key\": \"state\"}}, \"right\": \"new\"}}, {\"jump\": {\"target\": \"nodeport-endpoints-check\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"filter-input\", \"handle\": 93, \"expr\": [{\"match\": {\"op\": \"in\", \"left\": {\"ct\": {\"key\": \"state\"}}, \"right\": \"new\"}}, {\"jump\": {\"target\": \"service-endpoints-check\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"filter-forward\", \"handle\": 94, \"expr\": [{\"match\": {\"op\": \"in\", \"left\": {\"ct\": {\"key\": \"state\"}}, \"right\": \"new\"}}, {\"jump\": {\"target\": \"service-endpoints-check\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"filter-forward\", \"handle\": 95, \"expr\": [{\"match\": {\"op\": \"in\", \"left\": {\"ct\": {\"key\": \"state\"}}, \"right\": \"new\"}}, {\"jump\": {\"target\": \"cluster-ips-check\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"filter-output\", \"handle\": 96, \"expr\": [{\"match\": {\"op\": \"in\", \"left\": {\"ct\": {\"key\": \"state\"}}, \"right\": \"new\"}}, {\"jump\": {\"target\": \"service-endpoints-check\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"filter-output\", \"handle\": 97, \"expr\": [{\"match\": {\"op\": \"in\", \"left\": {\"ct\": {\"key\": \"state\"}}, \"right\": \"new\"}}, {\"jump\": {\"target\": \"cluster-ips-check\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"nat-prerouting\", \"handle\": 98, \"expr\": [{\"jump\": {\"target\": \"services\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"nat-output\", \"handle\": 99, \"expr\": [{\"jump\": {\"target\": \"services\"}}]}}, {\"rule\": {\"family\": \"ip\", \"table\": \"kube-proxy\", \"chain\": \"nat-postrouting\", \"handle\": 100, \"expr\": [{\"jump\": {\"target\": \"masquerading\"}}]}}]}";
