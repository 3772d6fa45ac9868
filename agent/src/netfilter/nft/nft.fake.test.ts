import t, { type Test } from 'tap';
import { NodenetError, ErrorCode } from '../../../../lib/errors/errors.js';
import { NftFake } from './nft.fake.js';
import { parseNftListing } from './nft-listing.js';

const BASE = [
  'add table ip t',
  'add chain ip t nat-prerouting { type nat hook prerouting priority -100 ; }',
  'add chain ip t filter-forward { type filter hook forward priority 0 ; }',
  'add chain ip t svc',
  'add chain ip t ep',
  'add map ip t service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; }',
  'add set ip t cluster-ips { type ipv4_addr ; }',
  'add rule ip t nat-prerouting ip daddr . meta l4proto . th dport vmap @service-ips',
  'add rule ip t svc goto ep',
  'add rule ip t ep meta l4proto tcp dnat to 10.180.0.1:80',
  'add element ip t service-ips { 172.30.0.1 . tcp . 80 comment "ns/a:p" : goto svc }',
  'add element ip t cluster-ips { 172.30.0.1 }',
].join('\n');

async function fresh(): Promise<NftFake> {
  const f = new NftFake();
  await f.apply(BASE);
  return f;
}

async function rejects(t: Test, f: NftFake, script: string, re: RegExp): Promise<void> {
  const before = f.table('ip', 't');
  const err = await f.apply(script).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof NodenetError, `${script} fails`);
  if (err instanceof NodenetError) {
    t.equal(err.code, ErrorCode.RuleApply);
    t.match(err.message + '\n' + err.details, re, `${script}: ${err.message}`);
  }
  t.same(f.table('ip', 't'), before, 'state unchanged (the batch is atomic)');
}

t.test('applies a valid script and keeps state', async (t) => {
  const f = await fresh();
  const tb = f.table('ip', 't')!;
  t.same(tb.chains.get('svc')!.rules, ['goto ep']);
  t.same([...tb.sets.get('service-ips')!.elements], [['172.30.0.1 . tcp . 80', { value: 'goto svc', comment: 'ns/a:p' }]]);
  t.equal(await f.tableExists('ip', 't'), true);
  t.equal(await f.tableExists('ip', 'other'), false);
  const info = await f.listTable('ip', 't');
  t.equal(info!.chains.get('svc')!.ruleCount, 1);
  t.same(info!.chains.get('nat-prerouting')!.base, { type: 'nat', hook: 'prerouting', priority: -100 });
});

t.test('rejects a goto/jump to an undeclared chain or a base chain', async (t) => {
  const f = await fresh();
  await rejects(t, f, 'add rule ip t svc goto nosuch', /undeclared chain nosuch/);
  await rejects(t, f, 'add rule ip t svc jump filter-forward', /Operation not supported.*base chain/);
  // declared later in the same script is still undeclared at that line
  await rejects(t, f, 'add rule ip t svc goto later\nadd chain ip t later', /line 1/);
});

t.test('rejects elements for a missing map, with bad keys, or naming a missing chain', async (t) => {
  const f = await fresh();
  await rejects(t, f, 'add element ip t nosuch { 1.2.3.4 }', /missing set or map nosuch/);
  await rejects(t, f, 'add element ip t service-ips { 172.30.0.9 . tcp : goto svc }', /datatype mismatch/);
  await rejects(t, f, 'add element ip t service-ips { 172.30.0.9 . icmpx . 80 : goto svc }', /datatype mismatch/);
  await rejects(t, f, 'add element ip t service-ips { 172.30.0.9 . tcp . 80 : goto nosuch }', /undeclared chain nosuch/);
  await rejects(t, f, 'add element ip t service-ips { 172.30.0.9 . tcp . 80 }', /needs a value/);
  await rejects(t, f, 'add element ip t cluster-ips { 172.30.0.9 : drop }', /cannot have a value/);
});

t.test('an existing key: same value is a no-op, another value is refused; deleting a missing element fails', async (t) => {
  const f = await fresh();
  await f.apply('add element ip t service-ips { 172.30.0.1 . tcp . 80 : goto svc }');
  await rejects(t, f, 'add element ip t service-ips { 172.30.0.1 . tcp . 80 : goto ep }', /File exists/);
  await rejects(t, f, 'delete element ip t service-ips { 172.30.0.2 . tcp . 80 }', /No such file or directory/);
  await f.apply('delete element ip t service-ips { 172.30.0.1 . tcp . 80 }\nadd element ip t service-ips { 172.30.0.1 . tcp . 80 : goto ep }');
  t.equal(f.table('ip', 't')!.sets.get('service-ips')!.elements.get('172.30.0.1 . tcp . 80')!.value, 'goto ep');
});

t.test('refuses to delete a chain or set still referenced', async (t) => {
  const f = await fresh();
  await rejects(t, f, 'delete chain ip t ep', /Device or resource busy.*referenced by chain svc/);
  await rejects(t, f, 'delete chain ip t svc', /busy.*map service-ips element 172.30.0.1 . tcp . 80/);
  await rejects(t, f, 'delete map ip t service-ips', /busy.*nat-prerouting/);
  await rejects(t, f, 'delete chain ip t nosuch', /No such file/);
  // once the references are gone (in the same batch), deletion works; a chain's own rules go with it
  await f.apply(['flush map ip t service-ips', 'delete chain ip t svc', 'delete chain ip t ep'].join('\n'));
  t.notOk(f.table('ip', 't')!.chains.has('ep'));
});

t.test('base chains: re-adding with other hook facts is refused; add + delete + add recreates', async (t) => {
  const f = await fresh();
  await rejects(t, f, 'add chain ip t nat-prerouting { type nat hook prerouting priority -90 ; }', /Operation not supported/);
  await f.apply(['add chain ip t nat-prerouting', 'delete chain ip t nat-prerouting', 'add chain ip t nat-prerouting { type nat hook prerouting priority -90 ; }'].join('\n'));
  t.same(f.table('ip', 't')!.chains.get('nat-prerouting')!.base, { type: 'nat', hook: 'prerouting', priority: -90 });
  t.same(f.table('ip', 't')!.chains.get('nat-prerouting')!.rules, []);
});

t.test('dnat, masquerade and reject only where the kernel allows them', async (t) => {
  const f = await fresh();
  await rejects(t, f, 'add rule ip t filter-forward jump svc', /dnat in rule .* reachable from filter-forward/);
  await rejects(t, f, 'add chain ip t m\nadd rule ip t m masquerade\nadd rule ip t nat-prerouting jump m', /masquerade/);
  await rejects(
    t,
    f,
    'add chain ip t post { type filter hook postrouting priority 100 ; }\nadd chain ip t r\nadd rule ip t r reject\nadd rule ip t post jump r',
    /reject/,
  );
  // a map element can make a chain reachable too
  await rejects(t, f, 'add map ip t fm { type ipv4_addr . inet_proto . inet_service : verdict ; }\nadd rule ip t filter-forward ip daddr . meta l4proto . th dport vmap @fm\nadd element ip t fm { 1.1.1.1 . tcp . 1 : goto svc }', /dnat/);
});

t.test('set and map declarations: type and flags must match an existing one; timeout may change', async (t) => {
  const f = await fresh();
  await f.apply('add set ip t aff { type ipv4_addr ; flags dynamic,timeout ; timeout 10s ; }\nadd rule ip t ep update @aff { ip saddr }');
  await f.apply('add set ip t aff { type ipv4_addr ; flags dynamic,timeout ; timeout 20s ; }');
  t.equal(f.table('ip', 't')!.sets.get('aff')!.timeout, 20);
  await rejects(t, f, 'add set ip t aff { type ipv4_addr ; }', /File exists/);
  await rejects(t, f, 'add rule ip t ep ip saddr @service-ips drop', /is a map/);
  await rejects(t, f, 'add rule ip t ep meta l4proto . th dport vmap @service-ips', /datatype mismatch/);
  await rejects(t, f, 'delete set ip t aff', /busy/);
});

t.test('operations on a missing table fail; deleteTable is idempotent', async (t) => {
  const f = new NftFake();
  await rejects(t, f, 'add chain ip t c', /no table ip t/);
  await f.deleteTable('ip', 't');
  await f.apply('add table ip t\nadd chain ip t c');
  await f.deleteTable('ip', 't');
  t.equal(await f.tableExists('ip', 't'), false);
  t.equal(await f.listTable('ip', 't'), null);
  t.equal(await f.listTableText('ip', 't'), null);
});

t.test('errors name the line and show the lines around it', async (t) => {
  const f = await fresh();
  const script = ['add chain ip t a', 'add chain ip t b', 'add rule ip t a goto nosuch', 'add chain ip t c', 'add chain ip t d'].join('\n');
  const err = await f.apply(script).catch((e: unknown) => e);
  t.ok(err instanceof NodenetError);
  if (!(err instanceof NodenetError)) return;
  t.match(err.message, /nft -f failed at line 3 of 5/);
  t.match(err.details, />\s+3 \| add rule ip t a goto nosuch/);
  t.match(err.details, /\s+1 \| add chain ip t a/);
  t.match(err.details, /\s+5 \| add chain ip t d/);
  t.same(f.failed, [script]);
});

t.test('listTableText prints a listing that parses back to the same state', async (t) => {
  const f = await fresh();
  await f.apply('add set ip t aff { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }');
  const text = (await f.listTableText('ip', 't'))!;
  const [parsed, ...more] = parseNftListing(text);
  t.equal(more.length, 0);
  t.same(parsed, f.table('ip', 't'));
});

t.test('listNames gives chain and set names (not maps)', async (t) => {
  const f = await fresh();
  const n = await f.listNames('ip', 't');
  t.same(n!.chains, ['nat-prerouting', 'filter-forward', 'svc', 'ep']);
  t.same(n!.sets, [{ name: 'cluster-ips', flags: [], timeout: null }]);
  t.equal(await f.listNames('ip', 'none'), null);
});
