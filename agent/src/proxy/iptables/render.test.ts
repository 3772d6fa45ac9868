import t from 'tap';
import { NodenetError } from '../../../../lib/errors/errors.js';
import { FakeIptables } from '../../netfilter/iptables/iptables.fake.js';
import { getChain, parseRestore } from '../../netfilter/iptables/iptables-parse.js';
import { parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import { ep, nodeConfig, snapshot, svc } from '../test-fixtures.js';
import { builtinJumps } from './jumps.js';
import { LARGE_CLUSTER_ENDPOINTS, formatProbability, masqueradeMark, renderIptables } from './render.js';

// The parts every full render shares, spelled out once. The first golden below
// is written out in full; the others splice their Service-specific lines in.
const FILTER_HEAD = `*filter
:KUBE-SERVICES - [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-PROXY-CANARY - [0:0]
`;
const FILTER_TAIL = `-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-FIREWALL -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
COMMIT
`;
const NAT_HEAD = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-PROXY-CANARY - [0:0]
`;
const NODEPORTS_LAST = `-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
`;
const NAT_FIXED = `-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
`;
const MANGLE = `*mangle
:KUBE-PROXY-CANARY - [0:0]
COMMIT
`;

/** filterEnd: rules of the filter chains written after KUBE-FIREWALL (KUBE-NODEPORTS, KUBE-PROXY-FIREWALL). */
function full(p: { filter?: string; filterEnd?: string; natChains?: string; services?: string; nodePorts?: string; rules?: string }): string {
  return FILTER_HEAD + (p.filter ?? '') + FILTER_TAIL.replace(/COMMIT\n$/, `${p.filterEnd ?? ''}COMMIT\n`) + NAT_HEAD + (p.natChains ?? '') + (p.services ?? '') + NODEPORTS_LAST + (p.nodePorts ?? '') + NAT_FIXED + (p.rules ?? '') + 'COMMIT\n' + MANGLE;
}

const FULL = { full: true } as const;
const cfg = nodeConfig();

t.test('ClusterIP with one endpoint (golden, written out in full)', async (t) => {
  const r = renderIptables(snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]]), cfg, FULL);
  t.equal(
    r.text,
    `*filter
:KUBE-SERVICES - [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-PROXY-CANARY - [0:0]
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-FIREWALL -m comment --comment "block incoming localnet connections" -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP
COMMIT
*nat
:KUBE-SERVICES - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-PROXY-CANARY - [0:0]
:KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]
-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -j KUBE-SEP-SXIVWICOYRO3J4NJ
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80
COMMIT
*mangle
:KUBE-PROXY-CANARY - [0:0]
COMMIT
`,
  );
  t.equal(r.text, r.filter + r.nat + r.mangle);
  t.equal(r.ruleCount, 14, '4 filter + 10 nat -A lines');
  t.same([...r.natChains].sort(), ['KUBE-SEP-SXIVWICOYRO3J4NJ', 'KUBE-SVC-XPGD46QRK7WJZT7O']);
  t.same(r.deletedChains, []);
  t.doesNotThrow(() => parseRestore(r.text), 'the output parses as restore input');
});

t.test('ClusterIP with three endpoints: 1/3, 1/2, then the last unconditionally', async (t) => {
  const r = renderIptables(snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.3'), ep('10.180.0.1'), ep('10.180.0.2')]]), cfg, FULL);
  t.equal(
    r.text,
    full({
      natChains: `:KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]
:KUBE-SEP-LXVODXWDISEETFEF - [0:0]
:KUBE-SEP-ICDUIKC33SFI6ZPR - [0:0]
`,
      services: `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
`,
      rules: `-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-SXIVWICOYRO3J4NJ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.2:80" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-LXVODXWDISEETFEF
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.3:80" -j KUBE-SEP-ICDUIKC33SFI6ZPR
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80
-A KUBE-SEP-LXVODXWDISEETFEF -m comment --comment ns1/svc1:p80 -s 10.180.0.2 -j KUBE-MARK-MASQ
-A KUBE-SEP-LXVODXWDISEETFEF -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.2:80
-A KUBE-SEP-ICDUIKC33SFI6ZPR -m comment --comment ns1/svc1:p80 -s 10.180.0.3 -j KUBE-MARK-MASQ
-A KUBE-SEP-ICDUIKC33SFI6ZPR -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.3:80
`,
    }),
  );
});

t.test('no endpoints: a filter REJECT and no nat chains', async (t) => {
  const r = renderIptables(snapshot([svc('ns6', 'svc6', '172.30.0.46'), []]), cfg, FULL);
  t.equal(
    r.text,
    full({
      filter: `-A KUBE-SERVICES -m comment --comment "ns6/svc6:p80 has no endpoints" -m tcp -p tcp -d 172.30.0.46 --dport 80 -j REJECT
`,
    }),
  );
  t.same([...r.natChains], []);
});

t.test('ClientIP affinity: recent --rcheck per endpoint before the random choice, --set in the SEP', async (t) => {
  const r = renderIptables(snapshot([svc('ns1', 'svc1', '172.30.0.41', { affinity: 10800 }), [ep('10.180.0.1'), ep('10.180.0.2')]]), cfg, FULL);
  t.equal(
    r.text,
    full({
      natChains: `:KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]
:KUBE-SEP-LXVODXWDISEETFEF - [0:0]
`,
      services: `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
`,
      rules: `-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -m recent --name KUBE-SEP-SXIVWICOYRO3J4NJ --rcheck --seconds 10800 --reap -j KUBE-SEP-SXIVWICOYRO3J4NJ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.2:80" -m recent --name KUBE-SEP-LXVODXWDISEETFEF --rcheck --seconds 10800 --reap -j KUBE-SEP-LXVODXWDISEETFEF
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-SXIVWICOYRO3J4NJ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.2:80" -j KUBE-SEP-LXVODXWDISEETFEF
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m recent --name KUBE-SEP-SXIVWICOYRO3J4NJ --set -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80
-A KUBE-SEP-LXVODXWDISEETFEF -m comment --comment ns1/svc1:p80 -s 10.180.0.2 -j KUBE-MARK-MASQ
-A KUBE-SEP-LXVODXWDISEETFEF -m comment --comment ns1/svc1:p80 -m recent --name KUBE-SEP-LXVODXWDISEETFEF --set -m tcp -p tcp -j DNAT --to-destination 10.180.0.2:80
`,
    }),
  );
});

const NP_SEPS = `-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80
-A KUBE-SEP-LXVODXWDISEETFEF -m comment --comment ns1/svc1:p80 -s 10.180.0.2 -j KUBE-MARK-MASQ
-A KUBE-SEP-LXVODXWDISEETFEF -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.2:80
`;
const NP_SVC = `-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-SXIVWICOYRO3J4NJ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.2:80" -j KUBE-SEP-LXVODXWDISEETFEF
`;

t.test('NodePort, Cluster policy: NODEPORTS → EXT (masquerade) → SVC', async (t) => {
  // 10.180.0.2 is on this node; with Cluster policy that changes nothing.
  const r = renderIptables(snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30080 }), [ep('10.180.0.1'), ep('10.180.0.2', { node: 'node1' })]]), cfg, FULL);
  t.equal(
    r.text,
    full({
      natChains: `:KUBE-EXT-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]
:KUBE-SEP-LXVODXWDISEETFEF - [0:0]
`,
      services: `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
`,
      nodePorts: `-A KUBE-NODEPORTS -m comment --comment ns1/svc1:p80 -m tcp -p tcp --dport 30080 -j KUBE-EXT-XPGD46QRK7WJZT7O
`,
      rules: `-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment "masquerade traffic for ns1/svc1:p80 external destinations" -j KUBE-MARK-MASQ
-A KUBE-EXT-XPGD46QRK7WJZT7O -j KUBE-SVC-XPGD46QRK7WJZT7O
${NP_SVC}${NP_SEPS}`,
    }),
  );
});

t.test('NodePort, Local policy: EXT short-circuits pod and node traffic to SVC, the rest goes to SVL (local endpoints)', async (t) => {
  const r = renderIptables(snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30080, etp: 'Local' }), [ep('10.180.0.1'), ep('10.180.0.2', { node: 'node1' })]]), cfg, FULL);
  t.equal(
    r.text,
    full({
      natChains: `:KUBE-EXT-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SVL-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]
:KUBE-SEP-LXVODXWDISEETFEF - [0:0]
`,
      services: `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
`,
      nodePorts: `-A KUBE-NODEPORTS -m comment --comment ns1/svc1:p80 -m tcp -p tcp --dport 30080 -j KUBE-EXT-XPGD46QRK7WJZT7O
`,
      rules: `-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment "pod traffic for ns1/svc1:p80 external destinations" -s 10.0.0.0/8 -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment "masquerade LOCAL traffic for ns1/svc1:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ
-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment "route LOCAL traffic for ns1/svc1:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-EXT-XPGD46QRK7WJZT7O -j KUBE-SVL-XPGD46QRK7WJZT7O
${NP_SVC}-A KUBE-SVL-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.2:80" -j KUBE-SEP-LXVODXWDISEETFEF
${NP_SEPS}`,
    }),
  );
});

t.test('NodePort, Local policy, no local endpoint: filter DROPs external traffic, EXT keeps only the short-circuits', async (t) => {
  const r = renderIptables(snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30080, etp: 'Local', externalIPs: ['192.168.99.11'] }), [ep('10.180.0.1')]]), cfg, FULL);
  t.equal(
    r.text,
    full({
      filter: `-A KUBE-EXTERNAL-SERVICES -m comment --comment "ns1/svc1:p80 has no local endpoints" -m tcp -p tcp -d 192.168.99.11 --dport 80 -j DROP
-A KUBE-EXTERNAL-SERVICES -m comment --comment "ns1/svc1:p80 has no local endpoints" -m addrtype --dst-type LOCAL -m tcp -p tcp --dport 30080 -j DROP
`,
      natChains: `:KUBE-EXT-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]
`,
      services: `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 external IP" -m tcp -p tcp -d 192.168.99.11 --dport 80 -j KUBE-EXT-XPGD46QRK7WJZT7O
`,
      nodePorts: `-A KUBE-NODEPORTS -m comment --comment ns1/svc1:p80 -m tcp -p tcp --dport 30080 -j KUBE-EXT-XPGD46QRK7WJZT7O
`,
      rules: `-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment "pod traffic for ns1/svc1:p80 external destinations" -s 10.0.0.0/8 -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment "masquerade LOCAL traffic for ns1/svc1:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ
-A KUBE-EXT-XPGD46QRK7WJZT7O -m comment --comment "route LOCAL traffic for ns1/svc1:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -j KUBE-SEP-SXIVWICOYRO3J4NJ
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80
`,
    }),
  );
});

t.test('internalTrafficPolicy Local: the ClusterIP goes to SVL; without a local endpoint filter DROPs', async (t) => {
  const r = renderIptables(
    snapshot(
      [svc('ns1', 'svc1', '172.30.0.41', { itp: 'Local' }), [ep('10.180.0.1'), ep('10.180.0.2', { node: 'node1' })]],
      [svc('ns2', 'svc2', '172.30.0.42', { itp: 'Local' }), [ep('10.180.0.3')]],
    ),
    cfg,
    FULL,
  );
  t.equal(
    r.text,
    full({
      filter: `-A KUBE-SERVICES -m comment --comment "ns2/svc2:p80 has no local endpoints" -m tcp -p tcp -d 172.30.0.42 --dport 80 -j DROP
`,
      natChains: `:KUBE-SVL-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SEP-LXVODXWDISEETFEF - [0:0]
`,
      services: `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVL-XPGD46QRK7WJZT7O
`,
      rules: `-A KUBE-SVL-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVL-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.2:80" -j KUBE-SEP-LXVODXWDISEETFEF
-A KUBE-SEP-LXVODXWDISEETFEF -m comment --comment ns1/svc1:p80 -s 10.180.0.2 -j KUBE-MARK-MASQ
-A KUBE-SEP-LXVODXWDISEETFEF -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.2:80
`,
    }),
  );
});

t.test('terminating endpoints: serving+terminating ones only when none is ready', async (t) => {
  const r = renderIptables(
    snapshot(
      // No ready endpoint: .1 (serving, terminating) is used; .2 (terminating, not serving) and .3 (not ready) are not.
      [svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1', { ready: false, serving: true, terminating: true }), ep('10.180.0.2', { ready: false, serving: false, terminating: true }), ep('10.180.0.3', { ready: false })]],
      // A ready endpoint exists: the terminating one is left out.
      [svc('ns2', 'svc2', '172.30.0.42'), [ep('10.180.0.4', { ready: false, serving: true, terminating: true }), ep('10.180.0.5')]],
    ),
    cfg,
    FULL,
  );
  t.equal(
    r.text,
    full({
      natChains: `:KUBE-SVC-XPGD46QRK7WJZT7O - [0:0]
:KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]
:KUBE-SVC-GNZBNJ2PO5MGZ6GT - [0:0]
:KUBE-SEP-73XYSGBP6YVLYPDR - [0:0]
`,
      services: `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-SERVICES -m comment --comment "ns2/svc2:p80 cluster IP" -m tcp -p tcp -d 172.30.0.42 --dport 80 -j KUBE-SVC-GNZBNJ2PO5MGZ6GT
`,
      rules: `-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -j KUBE-SEP-SXIVWICOYRO3J4NJ
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ
-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80
-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment "ns2/svc2:p80 cluster IP" -m tcp -p tcp -d 172.30.0.42 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment "ns2/svc2:p80 -> 10.180.0.5:80" -j KUBE-SEP-73XYSGBP6YVLYPDR
-A KUBE-SEP-73XYSGBP6YVLYPDR -m comment --comment ns2/svc2:p80 -s 10.180.0.5 -j KUBE-MARK-MASQ
-A KUBE-SEP-73XYSGBP6YVLYPDR -m comment --comment ns2/svc2:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.5:80
`,
    }),
  );
});

t.test('named ports and an unnamed UDP port: comments and hashes use "ns/name:port" or "ns/name"', async (t) => {
  const r = renderIptables(
    snapshot(
      [svc('ns1', 'web', '172.30.0.41', { portName: 'http', port: 80 }), [ep('10.180.0.1', { port: 8080 })]],
      [svc('ns1', 'web', '172.30.0.41', { portName: 'https', port: 443 }), [ep('10.180.0.1', { port: 8443 })]],
      [svc('ns1', 'dns', '172.30.0.10', { portName: '', port: 53, protocol: 'UDP' }), [ep('10.180.0.9', { port: 53 })]],
    ),
    cfg,
    FULL,
  );
  t.equal(
    r.text,
    full({
      natChains: `:KUBE-SVC-IIU7RI4YYSQY3FXW - [0:0]
:KUBE-SEP-ZNUHPSTYIG434XST - [0:0]
:KUBE-SVC-4LVCYZMTA5CQO6SX - [0:0]
:KUBE-SEP-7HRCPU2YTRWB4GDC - [0:0]
:KUBE-SVC-AI7VONCETSESNZE7 - [0:0]
:KUBE-SEP-YV3XZWQYRNCCIJW5 - [0:0]
`,
      services: `-A KUBE-SERVICES -m comment --comment "ns1/dns cluster IP" -m udp -p udp -d 172.30.0.10 --dport 53 -j KUBE-SVC-IIU7RI4YYSQY3FXW
-A KUBE-SERVICES -m comment --comment "ns1/web:http cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-4LVCYZMTA5CQO6SX
-A KUBE-SERVICES -m comment --comment "ns1/web:https cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 443 -j KUBE-SVC-AI7VONCETSESNZE7
`,
      rules: `-A KUBE-SVC-IIU7RI4YYSQY3FXW -m comment --comment "ns1/dns cluster IP" -m udp -p udp -d 172.30.0.10 --dport 53 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-IIU7RI4YYSQY3FXW -m comment --comment "ns1/dns -> 10.180.0.9:53" -j KUBE-SEP-ZNUHPSTYIG434XST
-A KUBE-SEP-ZNUHPSTYIG434XST -m comment --comment ns1/dns -s 10.180.0.9 -j KUBE-MARK-MASQ
-A KUBE-SEP-ZNUHPSTYIG434XST -m comment --comment ns1/dns -m udp -p udp -j DNAT --to-destination 10.180.0.9:53
-A KUBE-SVC-4LVCYZMTA5CQO6SX -m comment --comment "ns1/web:http cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-4LVCYZMTA5CQO6SX -m comment --comment "ns1/web:http -> 10.180.0.1:8080" -j KUBE-SEP-7HRCPU2YTRWB4GDC
-A KUBE-SEP-7HRCPU2YTRWB4GDC -m comment --comment ns1/web:http -s 10.180.0.1 -j KUBE-MARK-MASQ
-A KUBE-SEP-7HRCPU2YTRWB4GDC -m comment --comment ns1/web:http -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:8080
-A KUBE-SVC-AI7VONCETSESNZE7 -m comment --comment "ns1/web:https cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 443 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-AI7VONCETSESNZE7 -m comment --comment "ns1/web:https -> 10.180.0.1:8443" -j KUBE-SEP-YV3XZWQYRNCCIJW5
-A KUBE-SEP-YV3XZWQYRNCCIJW5 -m comment --comment ns1/web:https -s 10.180.0.1 -j KUBE-MARK-MASQ
-A KUBE-SEP-YV3XZWQYRNCCIJW5 -m comment --comment ns1/web:https -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:8443
`,
    }),
  );
});

t.test('partial sync: only the changed Services’ chains, stale chains flushed then deleted, no canary', async (t) => {
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]], [svc('ns2', 'svc2', '172.30.0.42'), [ep('10.180.0.3')]]);
  // In the kernel: svc1 as before; svc2 with its old endpoint 10.180.0.2; ns3/svc3, now deleted; someone else's DOCKER chain.
  const existing = new Set([
    'PREROUTING', 'KUBE-SERVICES', 'DOCKER',
    'KUBE-SVC-XPGD46QRK7WJZT7O', 'KUBE-SEP-SXIVWICOYRO3J4NJ',
    'KUBE-SVC-GNZBNJ2PO5MGZ6GT', 'KUBE-SEP-RS4RBKLTHTF2IUXJ',
    'KUBE-SVC-X27LE4BHSL4DOUIK', 'KUBE-SEP-OYPFS5VJICHGATKP',
  ]);
  const r = renderIptables(snap, cfg, { full: false, changed: new Set(['ns2/svc2', 'ns3/svc3']) }, existing);
  t.equal(
    r.text,
    `*filter
-S KUBE-PROXY-CANARY
:KUBE-SERVICES - [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
${FILTER_TAIL}*nat
-S KUBE-PROXY-CANARY
:KUBE-SERVICES - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-SVC-GNZBNJ2PO5MGZ6GT - [0:0]
:KUBE-SEP-2GOKER2KF7NAANZN - [0:0]
:KUBE-SEP-OYPFS5VJICHGATKP - [0:0]
:KUBE-SEP-RS4RBKLTHTF2IUXJ - [0:0]
:KUBE-SVC-X27LE4BHSL4DOUIK - [0:0]
-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O
-A KUBE-SERVICES -m comment --comment "ns2/svc2:p80 cluster IP" -m tcp -p tcp -d 172.30.0.42 --dport 80 -j KUBE-SVC-GNZBNJ2PO5MGZ6GT
${NODEPORTS_LAST}${NAT_FIXED}-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment "ns2/svc2:p80 cluster IP" -m tcp -p tcp -d 172.30.0.42 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment "ns2/svc2:p80 -> 10.180.0.3:80" -j KUBE-SEP-2GOKER2KF7NAANZN
-A KUBE-SEP-2GOKER2KF7NAANZN -m comment --comment ns2/svc2:p80 -s 10.180.0.3 -j KUBE-MARK-MASQ
-A KUBE-SEP-2GOKER2KF7NAANZN -m comment --comment ns2/svc2:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.3:80
-X KUBE-SEP-OYPFS5VJICHGATKP
-X KUBE-SEP-RS4RBKLTHTF2IUXJ
-X KUBE-SVC-X27LE4BHSL4DOUIK
COMMIT
`,
  );
  t.equal(r.mangle, '');
  t.same(r.deletedChains, ['KUBE-SEP-OYPFS5VJICHGATKP', 'KUBE-SEP-RS4RBKLTHTF2IUXJ', 'KUBE-SVC-X27LE4BHSL4DOUIK']);
  t.same([...r.natChains].sort(), ['KUBE-SEP-2GOKER2KF7NAANZN', 'KUBE-SEP-SXIVWICOYRO3J4NJ', 'KUBE-SVC-GNZBNJ2PO5MGZ6GT', 'KUBE-SVC-XPGD46QRK7WJZT7O'], 'svc1’s chains stay active although not written');
  t.notMatch(r.text, 'KUBE-SEP-SXIVWICOYRO3J4NJ - [0:0]', 'unchanged svc1 is not declared (so not flushed)');
});

t.test('partial sync with the previous top-level chains: unchanged ones are left out, changed ones written whole', async (t) => {
  const before = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]], [svc('ns2', 'svc2', '172.30.0.42'), [ep('10.180.0.2')]]);
  const full = renderIptables(before, cfg, FULL);
  // One endpoint of svc2 replaced: only svc2's chains change; every top-level chain is as before.
  const swapped = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]], [svc('ns2', 'svc2', '172.30.0.42'), [ep('10.180.0.3')]]);
  const r = renderIptables(swapped, cfg, { full: false, changed: new Set(['ns2/svc2']) }, full.natChains, full);
  t.equal(
    r.text,
    `*filter
-S KUBE-PROXY-CANARY
COMMIT
*nat
-S KUBE-PROXY-CANARY
:KUBE-SVC-GNZBNJ2PO5MGZ6GT - [0:0]
:KUBE-SEP-2GOKER2KF7NAANZN - [0:0]
:KUBE-SEP-RS4RBKLTHTF2IUXJ - [0:0]
-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment "ns2/svc2:p80 cluster IP" -m tcp -p tcp -d 172.30.0.42 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-GNZBNJ2PO5MGZ6GT -m comment --comment "ns2/svc2:p80 -> 10.180.0.3:80" -j KUBE-SEP-2GOKER2KF7NAANZN
-A KUBE-SEP-2GOKER2KF7NAANZN -m comment --comment ns2/svc2:p80 -s 10.180.0.3 -j KUBE-MARK-MASQ
-A KUBE-SEP-2GOKER2KF7NAANZN -m comment --comment ns2/svc2:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.3:80
-X KUBE-SEP-RS4RBKLTHTF2IUXJ
COMMIT
`,
  );
  t.equal(r.unchangedTopLevel.length, 10, 'all ten top-level chains unchanged');
  t.same(r.topLevel, full.topLevel, 'their texts are carried forward for the next sync');
  t.same(r.topLevel, renderIptables(swapped, cfg, FULL).topLevel, 'reusing unchanged Services\' lines gives what a fresh render gives');
  t.equal(r.ruleCount, 4);

  // svc2 loses its endpoints: KUBE-SERVICES (nat) and KUBE-SERVICES (filter) change and are written whole.
  const empty = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]], [svc('ns2', 'svc2', '172.30.0.42'), []]);
  const r2 = renderIptables(empty, cfg, { full: false, changed: new Set(['ns2/svc2']) }, r.natChains, r);
  t.same([...r2.unchangedTopLevel].sort(), ['filter/KUBE-EXTERNAL-SERVICES', 'filter/KUBE-FIREWALL', 'filter/KUBE-FORWARD', 'filter/KUBE-NODEPORTS', 'filter/KUBE-PROXY-FIREWALL', 'nat/KUBE-MARK-MASQ', 'nat/KUBE-NODEPORTS', 'nat/KUBE-POSTROUTING']);
  t.match(r2.filter, /^\*filter\n-S KUBE-PROXY-CANARY\n:KUBE-SERVICES - \[0:0\]\n-A KUBE-SERVICES -m comment --comment "ns2\/svc2:p80 has no endpoints" .* -j REJECT\nCOMMIT\n$/);
  t.match(r2.nat, /:KUBE-SERVICES - \[0:0\]\n/);
  t.same(r2.topLevel, renderIptables(empty, cfg, FULL).topLevel, 'the same top level as a fresh render');
  t.match(r2.nat, /-A KUBE-SERVICES .*172\.30\.0\.41 .*\n-A KUBE-SERVICES .*nodeports/, 'the changed chain is written whole, other Services included');
  // Without the previous texts (or in a full sync) everything is written, as before.
  t.equal(renderIptables(swapped, cfg, { full: false, changed: new Set(['ns2/svc2']) }, full.natChains).unchangedTopLevel.length, 0);
  t.equal(renderIptables(swapped, cfg, FULL, full.natChains, full).unchangedTopLevel.length, 0);
});

t.test('a full sync with existing chains also deletes stale ones, and never touches foreign chains', async (t) => {
  const r = renderIptables(snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]]), cfg, FULL, new Set(['KUBE-SVC-XPGD46QRK7WJZT7O', 'KUBE-SEP-AAAAAAAAAAAAAAAA', 'KUBE-KUBELET-CANARY', 'NN-SVC-AAAAAAAAAAAAAAAA']));
  t.same(r.deletedChains, ['KUBE-SEP-AAAAAAAAAAAAAAAA']);
  t.match(r.nat, /:KUBE-SEP-AAAAAAAAAAAAAAAA - \[0:0\]\n[^]*-X KUBE-SEP-AAAAAAAAAAAAAAAA\nCOMMIT\n$/);
});

t.test('prefix and masquerade bit are configurable', async (t) => {
  const r = renderIptables(snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30080 }), [ep('10.180.0.1')]]), nodeConfig({ prefix: 'NN', masqueradeBit: 1, clusterCIDR: null }), FULL);
  t.notMatch(r.text, 'KUBE-');
  t.match(r.text, '-A NN-MARK-MASQ -j MARK --or-mark 0x2\n');
  t.match(r.text, '-A NN-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j NN-SVC-XPGD46QRK7WJZT7O\n');
  t.notMatch(r.text, /! -s \S+ -j NN-MARK-MASQ/, 'without a cluster CIDR there is no off-cluster masquerade rule');
  t.throws(() => renderIptables(snapshot(), nodeConfig({ masqueradeBit: 32 }), FULL), NodenetError);
  t.equal(masqueradeMark(14), '0x4000');
  t.equal(masqueradeMark(31), '0x80000000');
});

t.test('formatProbability is Go’s %0.10f of 1/n', async (t) => {
  t.equal(formatProbability(1), '1.0000000000');
  t.equal(formatProbability(2), '0.5000000000');
  t.equal(formatProbability(3), '0.3333333333');
  t.equal(formatProbability(6), '0.1666666667');
  t.equal(formatProbability(7), '0.1428571429');
  t.equal(formatProbability(2048), '0.0004882812', 'exact tie rounds half to even, as Go does');
  t.equal(formatProbability(4096), '0.0002441406');
  t.throws(() => formatProbability(0));
});

t.test('rendering is deterministic whatever the map and endpoint order', async (t) => {
  const a = snapshot([svc('ns2', 'b', '172.30.0.2'), [ep('10.180.0.2'), ep('10.180.0.10')]], [svc('ns1', 'a', '172.30.0.1'), [ep('10.180.0.1')]]);
  const b = snapshot([svc('ns1', 'a', '172.30.0.1'), [ep('10.180.0.1')]], [svc('ns2', 'b', '172.30.0.2'), [ep('10.180.0.10'), ep('10.180.0.2')]]);
  t.equal(renderIptables(a, cfg, FULL).text, renderIptables(b, cfg, FULL).text);
});

t.test('LoadBalancer with source ranges, externalTrafficPolicy Local and a health check NodePort (golden)', async (t) => {
  const lb = svc('ns5', 'svc5', '172.30.0.45', { nodePort: 3002, lbVIPs: ['1.2.3.4'], sourceRanges: ['203.0.113.0/25', '192.168.0.0/24'], etp: 'Local', healthCheckNodePort: 30000 });
  // The node's primary IP is in 192.168.0.0/24: the VIP itself is admitted as a source (a node reaching its own VIP).
  const r = renderIptables(snapshot([lb, [ep('10.180.0.5', { local: true }), ep('10.180.0.6')]]), nodeConfig({ primaryIP: parseIPv4('192.168.0.2') }), FULL);
  t.equal(
    r.text,
    full({
      filterEnd: `-A KUBE-NODEPORTS -m comment --comment "ns5/svc5:p80 health check node port" -m tcp -p tcp --dport 30000 -j ACCEPT
-A KUBE-PROXY-FIREWALL -m comment --comment "ns5/svc5:p80 traffic not accepted by KUBE-FW-NUKIZ6OKUXPJNT4C" -m tcp -p tcp -d 1.2.3.4 --dport 80 -j DROP
`,
      natChains: `:KUBE-EXT-NUKIZ6OKUXPJNT4C - [0:0]
:KUBE-FW-NUKIZ6OKUXPJNT4C - [0:0]
:KUBE-SVC-NUKIZ6OKUXPJNT4C - [0:0]
:KUBE-SVL-NUKIZ6OKUXPJNT4C - [0:0]
:KUBE-SEP-TGTSLJDSI6KB7NCB - [0:0]
:KUBE-SEP-A4DKTHKFNECIAUSJ - [0:0]
`,
      services: `-A KUBE-SERVICES -m comment --comment "ns5/svc5:p80 cluster IP" -m tcp -p tcp -d 172.30.0.45 --dport 80 -j KUBE-SVC-NUKIZ6OKUXPJNT4C
-A KUBE-SERVICES -m comment --comment "ns5/svc5:p80 loadbalancer IP" -m tcp -p tcp -d 1.2.3.4 --dport 80 -j KUBE-FW-NUKIZ6OKUXPJNT4C
`,
      nodePorts: `-A KUBE-NODEPORTS -m comment --comment ns5/svc5:p80 -m tcp -p tcp --dport 3002 -j KUBE-EXT-NUKIZ6OKUXPJNT4C
`,
      rules: `-A KUBE-EXT-NUKIZ6OKUXPJNT4C -m comment --comment "pod traffic for ns5/svc5:p80 external destinations" -s 10.0.0.0/8 -j KUBE-SVC-NUKIZ6OKUXPJNT4C
-A KUBE-EXT-NUKIZ6OKUXPJNT4C -m comment --comment "masquerade LOCAL traffic for ns5/svc5:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ
-A KUBE-EXT-NUKIZ6OKUXPJNT4C -m comment --comment "route LOCAL traffic for ns5/svc5:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-SVC-NUKIZ6OKUXPJNT4C
-A KUBE-EXT-NUKIZ6OKUXPJNT4C -j KUBE-SVL-NUKIZ6OKUXPJNT4C
-A KUBE-FW-NUKIZ6OKUXPJNT4C -m comment --comment "ns5/svc5:p80 loadbalancer IP" -s 203.0.113.0/25 -j KUBE-EXT-NUKIZ6OKUXPJNT4C
-A KUBE-FW-NUKIZ6OKUXPJNT4C -m comment --comment "ns5/svc5:p80 loadbalancer IP" -s 192.168.0.0/24 -j KUBE-EXT-NUKIZ6OKUXPJNT4C
-A KUBE-FW-NUKIZ6OKUXPJNT4C -m comment --comment "ns5/svc5:p80 loadbalancer IP" -s 1.2.3.4 -j KUBE-EXT-NUKIZ6OKUXPJNT4C
-A KUBE-FW-NUKIZ6OKUXPJNT4C -m comment --comment "other traffic to ns5/svc5:p80 will be dropped by KUBE-PROXY-FIREWALL"
-A KUBE-SVC-NUKIZ6OKUXPJNT4C -m comment --comment "ns5/svc5:p80 cluster IP" -m tcp -p tcp -d 172.30.0.45 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ
-A KUBE-SVC-NUKIZ6OKUXPJNT4C -m comment --comment "ns5/svc5:p80 -> 10.180.0.5:80" -m statistic --mode random --probability 0.5000000000 -j KUBE-SEP-TGTSLJDSI6KB7NCB
-A KUBE-SVC-NUKIZ6OKUXPJNT4C -m comment --comment "ns5/svc5:p80 -> 10.180.0.6:80" -j KUBE-SEP-A4DKTHKFNECIAUSJ
-A KUBE-SVL-NUKIZ6OKUXPJNT4C -m comment --comment "ns5/svc5:p80 -> 10.180.0.5:80" -j KUBE-SEP-TGTSLJDSI6KB7NCB
-A KUBE-SEP-TGTSLJDSI6KB7NCB -m comment --comment ns5/svc5:p80 -s 10.180.0.5 -j KUBE-MARK-MASQ
-A KUBE-SEP-TGTSLJDSI6KB7NCB -m comment --comment ns5/svc5:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.5:80
-A KUBE-SEP-A4DKTHKFNECIAUSJ -m comment --comment ns5/svc5:p80 -s 10.180.0.6 -j KUBE-MARK-MASQ
-A KUBE-SEP-A4DKTHKFNECIAUSJ -m comment --comment ns5/svc5:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.6:80
`,
    }),
  );
  t.same([...r.natChains].sort(), ['KUBE-EXT-NUKIZ6OKUXPJNT4C', 'KUBE-FW-NUKIZ6OKUXPJNT4C', 'KUBE-SEP-A4DKTHKFNECIAUSJ', 'KUBE-SEP-TGTSLJDSI6KB7NCB', 'KUBE-SVC-NUKIZ6OKUXPJNT4C', 'KUBE-SVL-NUKIZ6OKUXPJNT4C']);
  t.doesNotThrow(() => parseRestore(r.text), 'the output parses as restore input (the FW chain ends in a rule without a target)');
  // Without the primary IP in a range, the VIP is not a source the firewall admits.
  const r2 = renderIptables(snapshot([lb, [ep('10.180.0.5', { local: true })]]), nodeConfig({ primaryIP: parseIPv4('192.168.9.9') }), FULL);
  t.notMatch(r2.nat, /-s 1\.2\.3\.4 /);
});

t.test('LoadBalancer without source ranges goes straight to EXT; without endpoints its VIP is rejected and no FW chain exists', async (t) => {
  const r = renderIptables(snapshot([svc('ns5', 'svc5', '172.30.0.45', { lbVIPs: ['1.2.3.4', '1.2.3.5'] }), [ep('10.180.0.5')]]), cfg, FULL);
  t.match(r.nat, '-A KUBE-SERVICES -m comment --comment "ns5/svc5:p80 loadbalancer IP" -m tcp -p tcp -d 1.2.3.4 --dport 80 -j KUBE-EXT-NUKIZ6OKUXPJNT4C\n-A KUBE-SERVICES -m comment --comment "ns5/svc5:p80 loadbalancer IP" -m tcp -p tcp -d 1.2.3.5 --dport 80 -j KUBE-EXT-NUKIZ6OKUXPJNT4C\n');
  t.match(r.nat, '-A KUBE-EXT-NUKIZ6OKUXPJNT4C -m comment --comment "masquerade traffic for ns5/svc5:p80 external destinations" -j KUBE-MARK-MASQ\n');
  t.notMatch(r.text, 'KUBE-FW-');
  const none = renderIptables(snapshot([svc('ns5', 'svc5', '172.30.0.45', { lbVIPs: ['1.2.3.4'], sourceRanges: ['203.0.113.0/25'] }), []]), cfg, FULL);
  t.match(none.filter, '-A KUBE-EXTERNAL-SERVICES -m comment --comment "ns5/svc5:p80 has no endpoints" -m tcp -p tcp -d 1.2.3.4 --dport 80 -j REJECT\n');
  t.notMatch(none.text, /KUBE-FW-|KUBE-PROXY-FIREWALL -m/, 'without endpoints everyone gets the REJECT: no firewall rules');
  // ETP Local and no local endpoint: the VIP drops what the EXT chain does not short-circuit.
  const noLocal = renderIptables(snapshot([svc('ns5', 'svc5', '172.30.0.45', { lbVIPs: ['1.2.3.4'], etp: 'Local' }), [ep('10.180.0.6')]]), cfg, FULL);
  t.match(noLocal.filter, '-A KUBE-EXTERNAL-SERVICES -m comment --comment "ns5/svc5:p80 has no local endpoints" -m tcp -p tcp -d 1.2.3.4 --dport 80 -j DROP\n');
});

t.test('nodePortAddresses: one `-d CIDR --dst-type LOCAL` rule per CIDR ends KUBE-SERVICES', async (t) => {
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41', { nodePort: 30080 }), [ep('10.180.0.1')]]);
  const r = renderIptables(snap, nodeConfig({ nodePortAddresses: [parseCidr('192.168.0.2/32').cidr, parseCidr('127.0.0.0/8').cidr] }), FULL);
  t.match(
    r.nat,
    `-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -d 192.168.0.2/32 -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -d 127.0.0.0/8 -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
-A KUBE-NODEPORTS `,
  );
  t.notMatch(r.nat, /nodeports; NOTE: this must be the last rule in this chain" -m addrtype/, 'no rule for every local address');
  t.equal(renderIptables(snap, nodeConfig({ nodePortAddresses: null }), FULL).text, renderIptables(snap, cfg, FULL).text, 'null is every local address, as absent');
});

t.test('jumps passed in go last in their table\'s block, after the chains they target', async (t) => {
  const snap = snapshot([svc('ns1', 'svc1', '172.30.0.41'), [ep('10.180.0.1')]]);
  const jumps = builtinJumps('KUBE').filter((j) => (j.table === 'nat' && j.builtinChain === 'PREROUTING') || (j.table === 'filter' && j.builtinChain === 'OUTPUT' && j.target === 'KUBE-FIREWALL'));
  const r = renderIptables(snap, cfg, FULL, undefined, undefined, { jumps });
  t.match(r.filter, /:KUBE-FIREWALL - \[0:0\]\n[^]*\n-I OUTPUT 1 -j KUBE-FIREWALL\nCOMMIT\n$/);
  t.match(r.nat, /:KUBE-SERVICES - \[0:0\]\n[^]*\n-I PREROUTING 1 -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\nCOMMIT\n$/);
  t.equal(r.ruleCount, renderIptables(snap, cfg, FULL).ruleCount, 'jump inserts are not counted as rules');
  const f = new FakeIptables();
  await f.restore(r.text, { noflush: true });
  t.same(getChain(f.dump(), 'nat', 'PREROUTING')!.rules.map((x) => x.target), [{ kind: 'chain', chain: 'KUBE-SERVICES' }], 'the fake accepts it');
});

t.test('large cluster mode: above 1,000 endpoints the per-endpoint rules carry no comment (kube-proxy)', async (t) => {
  const many = (n: number) => Array.from({ length: n }, (_, i) => ep(`10.180.${i >> 8}.${i & 255}`));
  const small = renderIptables(snapshot([svc('ns1', 'svc1', '172.30.0.41'), many(LARGE_CLUSTER_ENDPOINTS)]), cfg, FULL);
  t.match(small.nat, '-m comment --comment "ns1/svc1:p80 -> 10.180.0.0:80" -m statistic', 'at the threshold: comments');
  t.match(small.nat, /-A KUBE-SEP-\S+ -m comment --comment ns1\/svc1:p80 -s 10\.180\.0\.0 -j KUBE-MARK-MASQ/);
  const large = renderIptables(snapshot([svc('ns1', 'svc1', '172.30.0.41'), many(LARGE_CLUSTER_ENDPOINTS + 1)]), cfg, FULL);
  t.notMatch(large.nat, '-> 10.180.', 'no SVC → SEP comments');
  t.match(large.nat, /-A KUBE-SVC-\S+ -m statistic --mode random --probability 0\.0009990010 -j KUBE-SEP-/);
  t.match(large.nat, /-A KUBE-SEP-\S+ -s 10\.180\.0\.0 -j KUBE-MARK-MASQ\n-A KUBE-SEP-\S+ -m tcp -p tcp -j DNAT --to-destination 10\.180\.0\.0:80\n/);
  t.match(large.nat, '-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP"', 'the dispatch rules keep theirs');
  t.match(large.nat, /-A KUBE-SVC-\S+ -m comment --comment "ns1\/svc1:p80 cluster IP" .* -j KUBE-MARK-MASQ/, 'and so does the masquerade rule');
  const f = new FakeIptables();
  await f.restore(large.text, { noflush: true });
  const nat = f.dump().tables.get('nat')!;
  const svcChain = [...nat.chains.values()].find((c) => c.name.startsWith('KUBE-SVC-'))!;
  const seps = svcChain.rules.flatMap((r) => (r.target?.kind === 'chain' && r.target.chain.startsWith('KUBE-SEP-') ? [r.target.chain] : []));
  t.equal(new Set(seps).size, LARGE_CLUSTER_ENDPOINTS + 1, 'the fake accepts it: one SVC rule per endpoint');
  t.ok(seps.every((c) => nat.chains.get(c)!.rules.some((r) => r.target?.kind === 'DNAT')), 'each to a SEP chain that DNATs');
});
