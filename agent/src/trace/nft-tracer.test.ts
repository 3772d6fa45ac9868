import t from 'tap';
import { NftFake } from '../netfilter/nft/nft.fake.js';
import type { NftTableState } from '../netfilter/nft/nft-state.js';
import { KERNEL_LISTING } from '../netfilter/nft/nft-testdata.js';
import { parseNftListing } from '../netfilter/nft/nft-listing.js';
import type { IPv4 } from '../../../lib/net/ip.js';
import { traceNftables, NftTraceError } from './nft-tracer.js';

const NODE = ['192.168.0.2'];
const tcp = (from: string, to: string, port: number) => ({ sourceIP: from as IPv4, protocol: 'TCP' as const, destIP: to as IPv4, destPort: port });

async function state(script: string): Promise<NftTableState> {
  const f = new NftFake();
  await f.apply(script);
  return f.table('ip', 't')!;
}

const HEAD = [
  'add table ip t',
  'add chain ip t pre { type nat hook prerouting priority -100 ; }',
  'add chain ip t fwd { type filter hook forward priority 0 ; }',
  'add chain ip t post { type nat hook postrouting priority 100 ; }',
  'add chain ip t out { type nat hook output priority -100 ; }',
  'add chain ip t input { type filter hook input priority 0 ; }',
];

t.test('goto does not come back; jump does; return goes back to the caller', async (t) => {
  const st = await state(
    [
      ...HEAD,
      'add chain ip t a',
      'add chain ip t b',
      'add chain ip t c',
      'add rule ip t b ip saddr 10.0.0.1 return',
      'add rule ip t b meta l4proto tcp dnat to 10.9.9.9:1',
      'add rule ip t a jump b',
      'add rule ip t a meta l4proto tcp dnat to 10.9.9.8:1',
      'add rule ip t c goto b',
      'add rule ip t c meta l4proto tcp dnat to 10.9.9.7:1',
      'add rule ip t pre tcp dport 1 jump a',
      'add rule ip t pre tcp dport 2 jump c',
      'add rule ip t pre tcp dport 2 meta l4proto tcp dnat to 10.9.9.6:1',
    ].join('\n'),
  );
  // jump a -> jump b: 10.0.0.1 returns from b, continues in a
  t.equal(traceNftables(st, tcp('10.0.0.1', '1.1.1.1', 1), { nodeIPs: NODE }).destination, '10.9.9.8:1');
  t.equal(traceNftables(st, tcp('10.0.0.2', '1.1.1.1', 1), { nodeIPs: NODE }).destination, '10.9.9.9:1');
  // jump c -> goto b -> return: back to pre (c's caller), not to c
  const r = traceNftables(st, tcp('10.0.0.1', '1.1.1.1', 2), { nodeIPs: NODE });
  t.equal(r.destination, '10.9.9.6:1');
  t.same(r.visited, ['pre', 'c', 'b', 'fwd', 'post']);
});

t.test('numgen: every branch is followed, in both spellings; mod 1 and impossible branches', async (t) => {
  const base = [...HEAD, 'add chain ip t e1', 'add chain ip t e2', 'add chain ip t e3', 'add chain ip t s'];
  for (const [i, ip] of ['10.1.0.1', '10.1.0.2', '10.1.0.3'].entries()) base.push(`add rule ip t e${i + 1} meta l4proto tcp dnat to ${ip}:80`);
  const st = await state([...base, 'add rule ip t s numgen random mod 3 == 0 goto e1', 'add rule ip t s numgen random mod 2 == 0 goto e2', 'add rule ip t s goto e3', 'add rule ip t pre jump s'].join('\n'));
  t.equal(traceNftables(st, tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }).destination, '10.1.0.1:80, 10.1.0.2:80, 10.1.0.3:80');
  // the kernel prints "numgen random mod 3 0"
  const kernel = structuredClone(st);
  kernel.chains.get('s')!.rules = ['numgen random mod 3 0 goto e1', 'numgen random mod 2 0 goto e2', 'goto e3'];
  t.equal(traceNftables(kernel, tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }).destination, '10.1.0.1:80, 10.1.0.2:80, 10.1.0.3:80');
  // a branch that can never match (k >= N) is not followed
  kernel.chains.get('s')!.rules = ['numgen random mod 2 2 goto e1', 'goto e3'];
  t.equal(traceNftables(kernel, tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }).destination, '10.1.0.3:80');
});

t.test('DNAT changes what later chains see; drop and reject stop the packet', async (t) => {
  const st = await state(
    [
      ...HEAD,
      'add rule ip t pre ip daddr 172.30.0.1 meta l4proto tcp dnat to 10.1.0.1:8080',
      'add rule ip t fwd ip daddr 10.1.0.1 tcp dport 8080 ip saddr 10.0.0.66 drop',
      'add rule ip t fwd ip daddr 172.30.0.1 reject',
    ].join('\n'),
  );
  t.equal(traceNftables(st, tcp('10.0.0.1', '172.30.0.1', 80), { nodeIPs: NODE }).destination, '10.1.0.1:8080');
  t.same(traceNftables(st, tcp('10.0.0.66', '172.30.0.1', 80), { nodeIPs: NODE }), { visited: ['pre', 'fwd'], destination: 'DROP', masquerade: false });
  t.equal(traceNftables(st, { sourceIP: '10.0.0.1', protocol: 'ICMP', destIP: '172.30.0.1' }, { nodeIPs: NODE }).destination, 'REJECT');
});

t.test('masquerade follows the mark: set in one hook, tested in postrouting', async (t) => {
  const st = await state(
    [
      ...HEAD,
      'add chain ip t mark-for-masquerade',
      'add chain ip t masquerading',
      'add rule ip t mark-for-masquerade mark set mark or 0x4000',
      'add rule ip t masquerading mark and 0x4000 == 0 return',
      'add rule ip t masquerading mark set mark xor 0x4000',
      'add rule ip t masquerading masquerade fully-random',
      'add rule ip t pre ip saddr != 10.0.0.0/8 jump mark-for-masquerade',
      'add rule ip t out jump mark-for-masquerade',
      'add rule ip t post jump masquerading',
    ].join('\n'),
  );
  t.equal(traceNftables(st, tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }).masquerade, false);
  t.equal(traceNftables(st, tcp('203.0.113.1', '1.1.1.1', 80), { nodeIPs: NODE }).masquerade, true);
  // from the node: output path
  const r = traceNftables(st, tcp('192.168.0.2', '1.1.1.1', 80), { nodeIPs: NODE });
  t.same(r.visited, ['out', 'mark-for-masquerade', 'post', 'masquerading']);
  t.equal(r.masquerade, true);
  // kernel spelling of the same rules
  const k = structuredClone(st);
  k.chains.get('mark-for-masquerade')!.rules = ['meta mark set meta mark | 0x00004000'];
  k.chains.get('masquerading')!.rules = ['meta mark & 0x00004000 == 0x00000000 return', 'meta mark set meta mark ^ 0x00004000', 'masquerade fully-random'];
  t.equal(traceNftables(k, tcp('203.0.113.1', '1.1.1.1', 80), { nodeIPs: NODE }).masquerade, true);
  t.equal(traceNftables(k, tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }).masquerade, false);
});

t.test('to a node IP: input path, no postrouting; fib type local', async (t) => {
  const st = await state([...HEAD, 'add rule ip t input fib daddr type local tcp dport 22 drop', 'add rule ip t pre fib saddr type local drop'].join('\n'));
  t.same(traceNftables(st, tcp('10.0.0.1', '192.168.0.2', 22), { nodeIPs: NODE }), { visited: ['pre', 'input'], destination: 'DROP', masquerade: false });
  t.equal(traceNftables(st, tcp('10.0.0.1', '192.168.0.2', 23), { nodeIPs: NODE }).destination, 'ACCEPT');
  t.equal(traceNftables(st, tcp('10.0.0.1', '127.0.0.1', 22), { nodeIPs: NODE }).destination, 'DROP', 'loopback is local');
});

t.test('unknown pieces, chains and sets are errors, not guesses', async (t) => {
  const st = await state([...HEAD].join('\n'));
  const bad = structuredClone(st);
  bad.chains.get('pre')!.rules = ['tcp flags syn counter drop'];
  t.throws(() => traceNftables(bad, tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }), NftTraceError);
  bad.chains.get('pre')!.rules = ['jump nowhere'];
  t.throws(() => traceNftables(bad, tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }), /unknown chain nowhere/);
  bad.chains.get('pre')!.rules = ['ip daddr . meta l4proto . th dport vmap @nomap'];
  t.throws(() => traceNftables(bad, tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }), /unknown set or map nomap/);
  bad.chains.get('pre')!.rules = ['jump pre2'];
  bad.chains.set('pre2', { name: 'pre2', base: null, comment: null, rules: ['jump pre2'] });
  t.throws(() => traceNftables(bad, tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }), /loop/);
  t.throws(() => traceNftables(st, tcp('10.0.0.1', 'x', 80), { nodeIPs: NODE }), /IPv4/);
  t.throws(() => traceNftables('', tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }), /a table/);
  t.throws(() => traceNftables([], tcp('10.0.0.1', '1.1.1.1', 80), { nodeIPs: NODE }), /no table/);
});

t.test("the kernel's own listing of a nodenet table traces like our rendering of it", async (t) => {
  const [k] = parseNftListing(KERNEL_LISTING);
  const trace = (p: Parameters<typeof traceNftables>[1]) => traceNftables(KERNEL_LISTING, p, { nodeIPs: NODE });
  t.same(trace(tcp('10.1.1.1', '172.30.0.41', 80)).destination, '10.180.0.1:80, 10.180.0.2:80, 10.180.0.3:80');
  t.same(trace(tcp('10.1.1.1', '172.30.0.41', 80)).masquerade, false);
  t.same(trace(tcp('203.0.113.9', '172.30.0.41', 80)).masquerade, true);
  t.same(trace(tcp('10.1.1.1', '172.30.0.41', 81)).destination, 'REJECT');
  t.same(trace({ sourceIP: '10.1.1.1', protocol: 'ICMP', destIP: '172.30.0.41' }).destination, 'REJECT');
  t.same(trace(tcp('10.1.1.1', '172.30.0.43', 80)).destination, 'REJECT');
  t.same(trace(tcp('203.0.113.9', '192.168.0.2', 3001)), {
    visited: ['filter-prerouting', 'nat-prerouting', 'services', 'external-42NFTM6N-ns2/svc2/tcp/p80', 'local-42NFTM6N-ns2/svc2/tcp/p80', 'endpoint-TFPIOPED-ns2/svc2/tcp/p80__10.180.0.4/80', 'filter-forward', 'service-endpoints-check', 'cluster-ips-check', 'nat-postrouting', 'masquerading'],
    destination: '10.180.0.4:80',
    masquerade: false,
  });
  // 203.0.113.7 is in the kernel's affinity set of endpoint 10.180.0.4: sticky
  t.same(trace(tcp('203.0.113.7', '172.30.0.42', 80)).destination, '10.180.0.4:80');
  t.same(trace(tcp('203.0.113.8', '172.30.0.42', 80)).destination, '10.180.0.4:80, 10.180.0.5:80');
  t.equal(k!.chains.size, 23);
});
