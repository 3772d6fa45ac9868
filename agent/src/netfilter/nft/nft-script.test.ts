import t from 'tap';
import { parseNftScript, parseRule, NftScriptError } from './nft-script.js';

t.test('parses the object forms nodenet writes', async (t) => {
  const ops = parseNftScript(
    [
      'add table ip kube-proxy { comment "rules for kube-proxy" ; }',
      '# a comment line',
      '',
      'add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }',
      'add chain ip kube-proxy reject-chain { comment "helper" ; }',
      'add chain ip kube-proxy filter-prerouting { type filter hook prerouting priority dstnat - 10 ; }',
      'flush chain ip kube-proxy nat-prerouting',
      'add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "x" ; }',
      'add set ip kube-proxy affinity-A/b { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }',
      'add element ip kube-proxy service-ips { 172.30.0.1 . tcp . 80 comment "ns/svc:p, with comma" : goto reject-chain, 172.30.0.2 . udp . 53 : drop }',
      'delete element ip kube-proxy service-ips { 172.30.0.1 . tcp . 80 }',
      'delete set ip kube-proxy affinity-A/b',
    ].join('\n'),
  );
  t.equal(ops.length, 10);
  const chain = ops[1]!;
  t.match(chain, { verb: 'add', obj: 'chain', name: 'nat-prerouting', base: { type: 'nat', hook: 'prerouting', priority: -100 }, line: 4 });
  t.match(ops[2], { obj: 'chain', base: null, comment: 'helper' });
  t.match(ops[3], { obj: 'chain', base: { priority: -110 } });
  t.match(ops[5], { obj: 'map', keyTypes: ['ipv4_addr', 'inet_proto', 'inet_service'], dataType: 'verdict', comment: 'x' });
  t.match(ops[6], { obj: 'set', flags: ['dynamic', 'timeout'], timeout: 10800 });
  const el = ops[7]!;
  t.same(el.obj === 'element' ? el.elements : null, [
    { key: '172.30.0.1 . tcp . 80', value: 'goto reject-chain', comment: 'ns/svc:p, with comma' },
    { key: '172.30.0.2 . udp . 53', value: 'drop', comment: null },
  ]);
  t.match(ops[8], { verb: 'delete', obj: 'element', elements: [{ key: '172.30.0.1 . tcp . 80', value: null }] });
});

t.test('nft 1.0.6 needs ";" before "}" in a one-line body', async (t) => {
  t.throws(() => parseNftScript('add chain ip t c { type nat hook prerouting priority -100 }'), /needs ';' before '}'/);
  t.throws(() => parseNftScript('add set ip t s { type ipv4_addr }'), NftScriptError);
});

t.test('rejects what nodenet never writes, naming the line', async (t) => {
  const bad = [
    'add table ip6x t',
    'insert rule ip t c drop',
    'add rule ip t c tcp flags syn drop',
    'add rule ip t c ip daddr 300.1.1.1 drop',
    'add map ip t m { type ipv4_addr : ipv4_addr ; }',
    'add set ip t s { type ether_addr ; }',
    'add set ip t s { type ipv4_addr ; timeout 10s ; }',
    'add element ip t m { }',
    'add chain ip t c { type nat hook forward priority 0 ; }',
    'add chain ip t bad name',
  ];
  for (const line of bad) {
    const e = t.throws(() => parseNftScript(`add table ip t\n${line}`), NftScriptError, line) as unknown;
    if (e instanceof NftScriptError) t.equal(e.line, 2, `line number for ${line}`);
  }
});

t.test('parseRule finds references and effects', async (t) => {
  t.same(parseRule(1, 'ip daddr . meta l4proto . th dport vmap @service-ips'), {
    chainRefs: [],
    setRefs: [{ name: 'service-ips', use: 'vmap', keyTypes: ['ipv4_addr', 'inet_proto', 'inet_service'] }],
    dnat: false,
    masquerade: false,
    reject: false,
  });
  t.match(parseRule(1, 'numgen random mod 3 == 0 goto endpoint-X-a/b/tcp/p__10.0.0.1/80'), { chainRefs: ['endpoint-X-a/b/tcp/p__10.0.0.1/80'] });
  t.match(parseRule(1, 'meta l4proto tcp dnat to 10.180.0.1:80'), { dnat: true });
  t.match(parseRule(1, 'ip daddr @cluster-ips meta l4proto icmp reject comment "x"'), { reject: true, setRefs: [{ name: 'cluster-ips', use: 'lookup' }] });
  t.match(parseRule(1, 'update @affinity-x/y { ip saddr }'), { setRefs: [{ name: 'affinity-x/y', use: 'update' }] });
  t.match(parseRule(1, 'masquerade fully-random'), { masquerade: true });
  t.throws(() => parseRule(1, 'ip daddr 10.0.0.0/33 drop'));
  t.throws(() => parseRule(1, 'counter drop'), /unsupported rule syntax at "counter drop"/);
});
