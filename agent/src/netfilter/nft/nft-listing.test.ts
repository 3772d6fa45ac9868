import t from 'tap';
import { parseNftListing, parseNftDuration, formatNftDuration, renderListing, NftListingError } from './nft-listing.js';
import { parseNftJsonTable, parseNftJsonTables } from './nft-json.js';
import { KERNEL_JSON, KERNEL_LISTING } from './nft-testdata.js';

t.test('parses the kernel listing: base chains, named priorities, rules verbatim', async (t) => {
  const [tb, ...rest] = parseNftListing(KERNEL_LISTING);
  t.equal(rest.length, 0);
  t.equal(tb!.family, 'ip');
  t.equal(tb!.name, 'kube-proxy');
  t.equal(tb!.comment, 'rules for kube-proxy');
  t.same(tb!.chains.get('filter-prerouting')!.base, { type: 'filter', hook: 'prerouting', priority: -110 });
  t.same(tb!.chains.get('nat-prerouting')!.base, { type: 'nat', hook: 'prerouting', priority: -100 });
  t.same(tb!.chains.get('nat-postrouting')!.base, { type: 'nat', hook: 'postrouting', priority: 100 });
  t.same(tb!.chains.get('filter-forward')!.base, { type: 'filter', hook: 'forward', priority: 0 });
  t.equal(tb!.chains.get('reject-chain')!.comment, 'helper for @no-endpoint-services / @no-endpoint-nodeports');
  t.same(tb!.chains.get('reject-chain')!.rules, ['reject']);
  t.same(tb!.chains.get('masquerading')!.rules, ['meta mark & 0x00004000 == 0x00000000 return', 'meta mark set meta mark ^ 0x00004000', 'masquerade fully-random']);
  t.same(tb!.chains.get('service-ULMVA6XW-ns1/svc1/tcp/p80')!.rules.slice(1), [
    'numgen random mod 3 0 goto endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80',
    'numgen random mod 2 0 goto endpoint-2ZNDXFAB-ns1/svc1/tcp/p80__10.180.0.2/80',
    'goto endpoint-WUHIZN2H-ns1/svc1/tcp/p80__10.180.0.3/80',
  ]);
});

t.test('parses element lists over several lines, with comments, and drops dynamic timers', async (t) => {
  const [tb] = parseNftListing(KERNEL_LISTING);
  const sips = tb!.sets.get('service-ips')!;
  t.same(sips.keyTypes, ['ipv4_addr', 'inet_proto', 'inet_service']);
  t.equal(sips.dataType, 'verdict');
  t.same(sips.elements.get('172.30.0.42 . tcp . 80'), { value: 'goto service-42NFTM6N-ns2/svc2/tcp/p80', comment: 'ns2/svc2:p80' });
  t.same([...tb!.sets.get('cluster-ips')!.elements.keys()], ['172.30.0.41', '172.30.0.42', '172.30.0.43']);
  const aff = tb!.sets.get('affinity-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80')!;
  t.same(aff.flags, ['dynamic', 'timeout']);
  t.equal(aff.timeout, 10800);
  t.same([...aff.elements.keys()], ['203.0.113.7']);
  t.same(tb!.sets.get('no-endpoint-nodeports')!.elements.size, 0);
});

t.test('the JSON listing agrees with the text listing on chains, sets and elements', async (t) => {
  const info = parseNftJsonTable(KERNEL_JSON, 'ip', 'kube-proxy');
  const [tb] = parseNftListing(KERNEL_LISTING);
  t.same([...info.chains.keys()].sort(), [...tb!.chains.keys()].sort());
  for (const [name, c] of tb!.chains) {
    t.equal(info.chains.get(name)!.ruleCount, c.rules.length, `rule count of ${name}`);
    t.same(info.chains.get(name)!.base, c.base, `base of ${name}`);
  }
  for (const [name, s] of tb!.sets) {
    const j = info.sets.get(name)!;
    t.same(j.keyTypes, s.keyTypes, `key types of ${name}`);
    t.same([...j.elements].sort(), [...s.elements].sort(), `elements of ${name}`);
  }
  t.same(parseNftJsonTables('{"nftables":[{"metainfo":{}},{"table":{"family":"ip","name":"kube-proxy","handle":1}}]}'), [{ family: 'ip', name: 'kube-proxy' }]);
  t.throws(() => parseNftJsonTable('{"x":1}', 'ip', 't'), /expected/);
  t.throws(() => parseNftJsonTable('{"nftables":[{"map":{"family":"ip","table":"t","name":"m","type":"ipv4_addr","map":"verdict","elem":[["1.1.1.1",{"queue":1}]]}}]}', 'ip', 't'), /unsupported verdict/);
});

t.test('durations', async (t) => {
  t.equal(parseNftDuration('3h'), 10800);
  t.equal(parseNftDuration('1m40s'), 100);
  t.equal(parseNftDuration('10800s'), 10800);
  t.equal(parseNftDuration('1d2h'), 93600);
  t.equal(parseNftDuration('2h59m59s996ms'), 10799.996);
  t.equal(parseNftDuration('soon'), null);
  t.equal(formatNftDuration(10800), '3h');
  t.equal(formatNftDuration(100), '1m40s');
  t.equal(formatNftDuration(0), '0s');
});

t.test('renderListing round-trips the kernel listing', async (t) => {
  const [tb] = parseNftListing(KERNEL_LISTING);
  const [again] = parseNftListing(renderListing(tb!));
  t.same(again, tb);
});

t.test('malformed listings are errors with a line number', async (t) => {
  t.throws(() => parseNftListing('table ip t {\n\tchain c {\n'), NftListingError);
  t.throws(() => parseNftListing('tabel ip t {'), /line 1/);
  t.throws(() => parseNftListing('table ip t {\n\tset s {\n\t\tbogus\n\t}\n}'), /line 3/);
});
