/**
 * A Pod's resolv.conf by policy, as the kubelet forms it (dns.go's cases):
 * the node's file read, each policy's base, dnsConfig merged, the limits cut
 * with their Warnings, the fallback without cluster DNS.
 */
import t from 'tap';
import { parseResolvConf, podDns, renderResolvConf, type PodDnsInput } from './resolv-conf.js';

const NODE = parseResolvConf('# the node\nnameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch lab.example. corp.example\noptions timeout:2 rotate\n');
const POD = { namespace: 'ns1', name: 'web', uid: 'u-1' };
const input = (o: Partial<PodDnsInput> = {}): PodDnsInput => ({ policy: 'ClusterFirst', config: null, hostNetwork: false, clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', pod: POD, node: NODE, ...o });
const file = (o: Partial<PodDnsInput> = {}) => renderResolvConf(podDns(input(o)).conf);

t.test('the node\'s file as the kubelet reads it: nameservers accumulate, the last search / domain and options line wins, a trailing dot dropped, comments skipped', async (t) => {
  t.same(NODE, { nameservers: ['192.0.2.53', '192.0.2.54'], searches: ['lab.example', 'corp.example'], options: ['timeout:2', 'rotate'] });
  t.same(parseResolvConf('search a.example\ndomain b.example.\n; nameserver 1.1.1.1\noptions ndots:1\noptions edns0\nnameserver\nbogus x\n'), { nameservers: [], searches: ['b.example'], options: ['edns0'] });
  t.same(parseResolvConf(''), { nameservers: [], searches: [], options: [] });
  t.equal(renderResolvConf({ nameservers: ['10.0.0.1'], searches: [], options: [] }), 'nameserver 10.0.0.1\n', 'no empty search or options line');
});

t.test('ClusterFirst: the cluster DNS only, the cluster\'s search paths then the node\'s, ndots:5; no Warning', async (t) => {
  const r = podDns(input());
  t.same(r.events, []);
  t.equal(renderResolvConf(r.conf), 'search ns1.svc.cluster.local svc.cluster.local cluster.local lab.example corp.example\nnameserver 10.96.0.10\noptions ndots:5\n');
  t.equal(file({ policy: '' }), renderResolvConf(r.conf), 'an empty dnsPolicy is ClusterFirst');
  t.equal(file({ node: parseResolvConf('nameserver 1.1.1.1\nsearch cluster.local lab.example lab.example\n') }), 'search ns1.svc.cluster.local svc.cluster.local cluster.local lab.example\nnameserver 10.96.0.10\noptions ndots:5\n', 'deduplicated, first place kept');
  t.equal(file({ clusterDomain: '' }), 'search lab.example corp.example\nnameserver 10.96.0.10\noptions ndots:5\n', 'no cluster domain: the node\'s search only');
  t.equal(file({ clusterDNS: ['10.96.0.10', 'fd00::a'] }), 'search ns1.svc.cluster.local svc.cluster.local cluster.local lab.example corp.example\nnameserver 10.96.0.10\nnameserver fd00::a\noptions ndots:5\n');
});

t.test('ClusterFirst without cluster DNS: Default, and MissingClusterDNS as the kubelet words it', async (t) => {
  const r = podDns(input({ clusterDNS: [] }));
  t.equal(renderResolvConf(r.conf), 'search lab.example corp.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\noptions timeout:2 rotate\n');
  t.same(r.events, [{ reason: 'MissingClusterDNS', message: 'pod: "web_ns1(u-1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.' }]);
  t.same(podDns(input({ clusterDNS: [], policy: 'ClusterFirstWithHostNet' })).events.map((e) => e.reason), ['MissingClusterDNS'], 'ClusterFirstWithHostNet too');
  t.same(podDns(input({ clusterDNS: [], policy: 'Default' })).events, [], 'Default never asks for it');
});

t.test('hostNetwork: ClusterFirst means Default, ClusterFirstWithHostNet the cluster\'s', async (t) => {
  t.equal(file({ hostNetwork: true }), renderResolvConf(NODE));
  t.equal(file({ hostNetwork: true, policy: 'ClusterFirstWithHostNet' }), file());
  t.equal(file({ policy: 'ClusterFirstWithHostNet' }), file());
});

t.test('Default: the node\'s nameservers, search and options', async (t) => {
  t.equal(file({ policy: 'Default' }), 'search lab.example corp.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\noptions timeout:2 rotate\n');
  t.equal(file({ policy: 'Default', node: parseResolvConf('') }), '', 'an empty node file gives an empty one');
});

t.test('None: the dnsConfig alone', async (t) => {
  const config = { nameservers: ['1.2.3.4'], searches: ['ns1.svc.cluster-domain.example', 'my.dns.search.suffix'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0', value: null }] };
  t.equal(file({ policy: 'None', config }), 'search ns1.svc.cluster-domain.example my.dns.search.suffix\nnameserver 1.2.3.4\noptions ndots:2 edns0\n');
});

t.test('dnsConfig merged into every policy: nameservers and searches appended without duplicates, options by name (the Pod\'s value wins)', async (t) => {
  const config = { nameservers: ['10.96.0.10', '8.8.8.8'], searches: ['cluster.local', 'extra.example'], options: [{ name: 'ndots', value: '2' }, { name: 'rotate', value: null }, { name: 'timeout', value: null }] };
  t.equal(file({ config }), 'search ns1.svc.cluster.local svc.cluster.local cluster.local lab.example corp.example extra.example\nnameserver 10.96.0.10\nnameserver 8.8.8.8\noptions ndots:2 rotate timeout\n');
  t.equal(file({ policy: 'Default', config }), 'search lab.example corp.example cluster.local extra.example\nnameserver 192.0.2.53\nnameserver 192.0.2.54\nnameserver 10.96.0.10\noptions timeout rotate ndots:2\n', 'the node\'s options replaced in place, new ones after; the fourth nameserver cut');
});

t.test('limits: 3 nameservers, 32 search paths, none over 253 characters, 2048 in all; each cut a DNSConfigForming Warning', async (t) => {
  const ns = podDns(input({ policy: 'Default', config: { nameservers: ['10.0.0.1', '10.0.0.2'], searches: [], options: [] } }));
  t.same(ns.conf.nameservers, ['192.0.2.53', '192.0.2.54', '10.0.0.1']);
  t.same(ns.events, [{ reason: 'DNSConfigForming', message: 'Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 192.0.2.53 192.0.2.54 10.0.0.1' }]);

  const many = Array.from({ length: 30 }, (_, i) => `d${i}.example`);
  const r = podDns(input({ config: { nameservers: [], searches: many, options: [] } }));
  t.equal(r.conf.searches.length, 32, 'the first 32');
  t.equal(r.conf.searches.at(-1), 'd26.example');
  t.same(r.events.map((e) => e.reason), ['DNSConfigForming']);
  t.match(r.events[0]!.message, /^Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ns1\.svc\.cluster\.local .* d26\.example$/);

  const long = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.example`;
  t.ok(long.length > 253);
  const l = podDns(input({ policy: 'Default', node: parseResolvConf(`search ${long} ok.example\n`) }));
  t.same(l.conf.searches, ['ok.example'], 'a path over 253 characters left out');
  t.same(l.events.map((e) => e.reason), ['DNSConfigForming']);

  const wide = Array.from({ length: 10 }, (_, i) => `${String(i).repeat(200)}.example`);
  const w = podDns(input({ policy: 'None', config: { nameservers: ['1.1.1.1'], searches: wide, options: [] } }));
  t.ok(w.conf.searches.join(' ').length <= 2048);
  t.same(w.conf.searches, wide.slice(0, 9), 'cut from the end until the line fits');
  t.same(w.events.map((e) => e.reason), ['DNSConfigForming']);

  t.same(podDns(input({ policy: 'None', config: { nameservers: ['1.1.1.1'], searches: wide.slice(0, 9), options: [] } })).events, [], 'exactly fitting: no Warning');
});
