/**
 * Root test: the names the executor reads over netlink (tableExists,
 * listNames) are the ones nft reads, on a real table in a scratch
 * namespace: chains of one table only, named sets with their flags and
 * timeouts, no maps and no anonymous sets; a missing table is null.
 */
import t from 'tap';
import { SpawnRunner } from '../../../exec/runner.js';
import { Lab, uniqueTag } from '../../../lab/lab.js';
import { NftExecutor } from '../nft.js';

const runner = new SpawnRunner();
const lab = await Lab.create(uniqueTag('nd'), { runner });
t.teardown(() => lab.destroy());
const ns = await lab.addNetns('a');

const viaNetlink = new NftExecutor({ runner, netns: ns.path });
const viaNft = new NftExecutor({ runner, netns: ns.path, netlinkBatch: false });

t.test('before the table exists', async (t) => {
  t.equal(await viaNetlink.tableExists('ip', 'kube-proxy'), false);
  t.equal(await viaNetlink.listNames('ip', 'kube-proxy'), null);
  t.equal(await viaNft.listNames('ip', 'kube-proxy'), null);
});

t.test('the same names as nft lists', async (t) => {
  await viaNft.apply(
    [
      'add table ip kube-proxy { comment "rules for kube-proxy" ; }',
      'add chain ip kube-proxy services',
      'add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }',
      'add chain ip kube-proxy endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80',
      'add rule ip kube-proxy services ip daddr { 10.0.0.1, 10.0.0.2 } drop',
      'add set ip kube-proxy cluster-ips { type ipv4_addr ; comment "Active ClusterIPs" ; }',
      'add element ip kube-proxy cluster-ips { 172.30.0.41 }',
      'add set ip kube-proxy affinity-XYZ-ns1/svc1/tcp/p80__10.180.0.1/80 { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }',
      'add set ip kube-proxy ranges { type ipv4_addr ; flags interval ; }',
      'add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; }',
      'add table ip other',
      'add chain ip other x',
      'add table inet kube-proxy',
      'add chain inet kube-proxy y',
    ].join('\n') + '\n',
  );
  t.equal(await viaNetlink.tableExists('ip', 'kube-proxy'), true);
  t.equal(await viaNetlink.tableExists('ip', 'other'), true);
  t.equal(await viaNetlink.tableExists('ip6', 'kube-proxy'), false, 'another family');
  const a = await viaNetlink.listNames('ip', 'kube-proxy');
  const b = await viaNft.listNames('ip', 'kube-proxy');
  const sorted = (n: typeof a) => n && { chains: [...n.chains].sort(), sets: [...n.sets].sort((x, y) => (x.name < y.name ? -1 : 1)) };
  t.same(sorted(a), sorted(b), 'netlink and nft agree');
  t.same(
    [...a!.chains].sort(),
    ['endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80', 'nat-prerouting', 'services'],
    'this table\'s chains only',
  );
  t.same(sorted(a)!.sets, [
    { name: 'affinity-XYZ-ns1/svc1/tcp/p80__10.180.0.1/80', flags: ['timeout'], timeout: 10800 },
    { name: 'cluster-ips', flags: [], timeout: null },
    { name: 'ranges', flags: ['interval'], timeout: null },
  ], 'named sets with flags and timeouts; no map, no anonymous set');
  t.same((await viaNetlink.listNames('inet', 'kube-proxy'))?.chains, ['y'], 'the inet family');
  for (const [kind, name, want] of [
    ['chain', 'services', true],
    ['chain', 'nope', false],
    ['map', 'service-ips', true],
    ['set', 'service-ips', false],
    ['set', 'cluster-ips', true],
    ['map', 'cluster-ips', false],
    ['set', 'nope', false],
  ] as const) {
    t.equal(await viaNetlink.objectExists('ip', 'kube-proxy', kind, name), want, `objectExists ${kind} ${name} over netlink: ${want}`);
    t.equal(await viaNft.objectExists('ip', 'kube-proxy', kind, name), want, `and through nft: ${want}`);
  }
  t.equal(await viaNetlink.objectExists('ip', 'gone', 'chain', 'services'), false, 'a missing table: false');
  await viaNft.deleteTable('ip', 'kube-proxy');
  t.equal(await viaNetlink.listNames('ip', 'kube-proxy'), null, 'gone again');
});
