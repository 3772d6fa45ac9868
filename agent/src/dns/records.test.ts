/**
 * dns/records against the Kubernetes DNS-Based Service Discovery specification, section by section
 * (kubernetes/dns docs/specification.md), with CoreDNS plugin/kubernetes for the NXDOMAIN/NODATA edges.
 */
import t from 'tap';
import { buildDnsIndex, type Answer } from './records.js';

const svc = (name: string, spec: Record<string, unknown>, ns = 'default') => ({ metadata: { name, namespace: ns }, spec });
const slice = (service: string, endpoints: Record<string, unknown>[], ns = 'default', addressType = 'IPv4') => ({
  metadata: { name: `${service}-abc`, namespace: ns, labels: { 'kubernetes.io/service-name': service } },
  addressType, endpoints,
});

const objects = () => ({
  services: [
    svc('kubernetes', { type: 'ClusterIP', clusterIP: '10.96.0.1', clusterIPs: ['10.96.0.1'], ports: [{ name: 'https', protocol: 'TCP', port: 443 }] }),
    svc('web', { clusterIP: '10.96.0.20', ports: [{ name: 'http', port: 80 }, { port: 8080 }, { name: 'dns', protocol: 'UDP', port: 53 }] }),
    svc('headless', { clusterIP: 'None', ports: [{ name: 'https', protocol: 'TCP', port: 443 }, { port: 9 }] }),
    svc('empty', { clusterIP: 'None', ports: [{ name: 'http', port: 80 }] }),
    svc('unready', { clusterIP: 'None', publishNotReadyAddresses: true }),
    svc('foo', { type: 'ExternalName', externalName: 'www.example.com.' }),
    svc('other', { clusterIP: '10.96.5.5' }, 'team-a'),
  ],
  endpointSlices: [
    slice('headless', [
      { addresses: ['10.244.1.100'], hostname: 'My-Pet', conditions: { ready: true } },
      { addresses: ['10.244.1.101'], hostname: 'my-pet-2' },
      { addresses: ['10.244.2.7'], conditions: { ready: true } },
      { addresses: ['10.244.2.8'], hostname: 'sick', conditions: { ready: false } },
    ]),
    slice('headless', [{ addresses: ['fd00::1'] }], 'default', 'IPv6'),
    slice('empty', [{ addresses: ['10.244.3.3'], conditions: { ready: false } }]),
    slice('unready', [{ addresses: ['10.244.4.4'], conditions: { ready: false } }]),
    slice('web', [{ addresses: ['10.244.1.50'], conditions: { ready: true } }]),
  ],
  namespaces: [{ metadata: { name: 'default' } }, { metadata: { name: 'quiet' } }],
});
const idx = buildDnsIndex(objects());
const ask = (q: string, type: string): Answer => {
  const a = idx.answer(q, type);
  if (!a) throw new Error(`${q} ${type}: not ours`);
  return a;
};
const data = (a: Answer) => a.answers.map((r) => r.data);
const NODATA = { rcode: 'NOERROR', answers: [] };
const NXDOMAIN = { rcode: 'NXDOMAIN', answers: [] };

t.test('§2.2 dns-version TXT; other types at that name are NODATA', async (t) => {
  t.same(ask('dns-version.cluster.local.', 'TXT'), { rcode: 'NOERROR', answers: [{ name: 'dns-version.cluster.local', type: 'TXT', ttl: 5, data: '1.1.0' }] });
  t.same(ask('dns-version.cluster.local', 'A'), NODATA);
  t.equal(buildDnsIndex(objects(), { domain: 'Corp.Example.' }).answer('dns-version.corp.example', 'TXT')?.answers[0]?.data, '1.1.0', 'another cluster domain');
});

t.test('§2.3.1 A for a ClusterIP Service, TTL 5, case-insensitive', async (t) => {
  t.same(ask('kubernetes.default.svc.cluster.local.', 'A'), { rcode: 'NOERROR', answers: [{ name: 'kubernetes.default.svc.cluster.local', type: 'A', ttl: 5, data: '10.96.0.1' }] });
  t.same(data(ask('KUBERNETES.Default.SVC.cluster.LOCAL', 'a')), ['10.96.0.1']);
  t.same(data(ask('other.team-a.svc.cluster.local', 'A')), ['10.96.5.5']);
  t.same(ask('web.default.svc.cluster.local', 'AAAA'), NODATA, 'IPv4 only: an existing name, another qtype');
  t.same(ask('web.default.svc.cluster.local', 'TXT'), NODATA);
  t.same(ask('web.default.svc.cluster.local', 'SRV'), NODATA, 'SRV only under _port._proto');
});

t.test('§2.3.2 SRV for named ports of a ClusterIP Service, the A in additionals; unnamed ports have none', async (t) => {
  t.same(ask('_https._tcp.kubernetes.default.svc.cluster.local', 'SRV'), {
    rcode: 'NOERROR',
    answers: [{ name: '_https._tcp.kubernetes.default.svc.cluster.local', type: 'SRV', ttl: 5, data: { priority: 0, weight: 100, port: 443, target: 'kubernetes.default.svc.cluster.local' } }],
    additionals: [{ name: 'kubernetes.default.svc.cluster.local', type: 'A', ttl: 5, data: '10.96.0.1' }],
  });
  t.same(data(ask('_http._tcp.web.default.svc.cluster.local', 'SRV')), [{ priority: 0, weight: 100, port: 80, target: 'web.default.svc.cluster.local' }], 'protocol defaults to TCP');
  t.same(data(ask('_DNS._UDP.web.default.svc.cluster.local', 'SRV')), [{ priority: 0, weight: 100, port: 53, target: 'web.default.svc.cluster.local' }]);
  t.same(ask('_dns._tcp.web.default.svc.cluster.local', 'SRV'), NXDOMAIN, 'wrong protocol');
  t.same(ask('_8080._tcp.web.default.svc.cluster.local', 'SRV'), NXDOMAIN, 'the unnamed port');
  t.same(ask('_http._tcp.web.default.svc.cluster.local', 'A'), NODATA, 'the SRV name, another qtype');
  t.same(ask('_tcp.web.default.svc.cluster.local', 'SRV'), NODATA, 'an empty non-terminal');
});

t.test('§2.3.3 PTR for a ClusterIP; unknown reverse names are not ours (forwarded)', async (t) => {
  t.same(ask('1.0.96.10.in-addr.arpa.', 'PTR'), { rcode: 'NOERROR', answers: [{ name: '1.0.96.10.in-addr.arpa', type: 'PTR', ttl: 5, data: 'kubernetes.default.svc.cluster.local' }] });
  t.same(ask('1.0.96.10.in-addr.arpa', 'A'), NODATA);
  t.equal(idx.answer('9.9.96.10.in-addr.arpa', 'PTR'), undefined);
  t.equal(idx.answer('example.com', 'A'), undefined, 'outside the zone');
  t.equal(idx.answer('local', 'A'), undefined, 'a parent of the zone');
});

t.test('§2.4.1 headless: A per ready endpoint and per hostname; not-ready excluded; none ready is NXDOMAIN', async (t) => {
  t.same(data(ask('headless.default.svc.cluster.local', 'A')).sort(), ['10.244.1.100', '10.244.1.101', '10.244.2.7'], 'the not-ready one and the IPv6 slice left out');
  t.same(data(ask('my-pet.headless.default.svc.cluster.local', 'A')), ['10.244.1.100'], 'hostname compared case-insensitively');
  t.same(data(ask('10-244-2-7.headless.default.svc.cluster.local', 'A')), ['10.244.2.7'], 'no hostname: the generated one, as CoreDNS');
  t.same(ask('sick.headless.default.svc.cluster.local', 'A'), NXDOMAIN, 'a not-ready endpoint has no name');
  t.same(ask('empty.default.svc.cluster.local', 'A'), NXDOMAIN, 'no ready endpoints: NXDOMAIN (§2.4.1)');
  t.same(ask('_http._tcp.empty.default.svc.cluster.local', 'SRV'), NXDOMAIN);
  t.same(data(ask('unready.default.svc.cluster.local', 'A')), ['10.244.4.4'], 'publishNotReadyAddresses: unready endpoints count');
  t.same(ask('headless.default.svc.cluster.local', 'AAAA'), NODATA);
});

t.test('§2.4.2 headless SRV: one per ready endpoint and named port, targets resolved in additionals', async (t) => {
  const a = ask('_https._tcp.headless.default.svc.cluster.local', 'SRV');
  t.same(a.answers.map((r) => r.data).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))), [
    { priority: 0, weight: 33, port: 443, target: '10-244-2-7.headless.default.svc.cluster.local' },
    { priority: 0, weight: 33, port: 443, target: 'my-pet-2.headless.default.svc.cluster.local' },
    { priority: 0, weight: 33, port: 443, target: 'my-pet.headless.default.svc.cluster.local' },
  ]);
  t.same((a.additionals ?? []).map((r) => `${r.name} ${String(r.data)}`).sort(), [
    '10-244-2-7.headless.default.svc.cluster.local 10.244.2.7',
    'my-pet-2.headless.default.svc.cluster.local 10.244.1.101',
    'my-pet.headless.default.svc.cluster.local 10.244.1.100',
  ]);
});

t.test('§2.4.3 PTR for endpoint IPs, to hostname.service', async (t) => {
  t.same(data(ask('100.1.244.10.in-addr.arpa', 'PTR')), ['my-pet.headless.default.svc.cluster.local']);
  t.same(data(ask('7.2.244.10.in-addr.arpa', 'PTR')), ['10-244-2-7.headless.default.svc.cluster.local']);
  t.same(data(ask('50.1.244.10.in-addr.arpa', 'PTR')), ['10-244-1-50.web.default.svc.cluster.local'], 'a ClusterIP Service\'s endpoint too, as CoreDNS');
  t.equal(idx.answer('8.2.244.10.in-addr.arpa', 'PTR'), undefined, 'not-ready: no PTR');
});

t.test('§2.5 ExternalName: CNAME for any qtype; a change of target; nothing below it', async (t) => {
  const cname = { rcode: 'NOERROR', answers: [{ name: 'foo.default.svc.cluster.local', type: 'CNAME', ttl: 5, data: 'www.example.com' }] };
  t.same(ask('foo.default.svc.cluster.local', 'A'), cname);
  t.same(ask('foo.default.svc.cluster.local', 'CNAME'), cname);
  t.same(ask('foo.default.svc.cluster.local', 'AAAA'), cname);
  t.same(ask('x.foo.default.svc.cluster.local', 'A'), NXDOMAIN);
  const o = objects();
  o.services = o.services.map((s) => (s.metadata.name === 'foo' ? svc('foo', { type: 'ExternalName', externalName: 'Other.Example.ORG' }) : s));
  t.same(data(buildDnsIndex(o).answer('foo.default.svc.cluster.local', 'A')!), ['other.example.org'], 'a new index follows the new target');
});

t.test('§2.6 Pod A records, the IP read off the name (CoreDNS pods insecure)', async (t) => {
  t.same(ask('10-244-9-9.default.pod.cluster.local', 'A'), { rcode: 'NOERROR', answers: [{ name: '10-244-9-9.default.pod.cluster.local', type: 'A', ttl: 5, data: '10.244.9.9' }] });
  t.same(ask('1-2-3-4.quiet.pod.cluster.local', 'A').answers.map((r) => r.data), ['1.2.3.4'], 'a namespace with no Services');
  t.same(ask('1-2-3-4.default.pod.cluster.local', 'AAAA'), NODATA);
  t.same(ask('1-2-3-4.nowhere.pod.cluster.local', 'A'), NXDOMAIN, 'the namespace must exist');
  t.same(ask('1-2-3-256.default.pod.cluster.local', 'A'), NXDOMAIN);
  t.same(ask('1-2-3.default.pod.cluster.local', 'A'), NXDOMAIN);
  t.same(ask('01-2-3-4.default.pod.cluster.local', 'A'), NXDOMAIN, 'not an IP as Go parses it');
  t.same(ask('x.1-2-3-4.default.pod.cluster.local', 'A'), NXDOMAIN);
});

t.test('NODATA for the zone\'s structure and existing namespaces, NXDOMAIN for the rest (CoreDNS)', async (t) => {
  for (const n of ['cluster.local', 'svc.cluster.local', 'pod.cluster.local', 'default.svc.cluster.local', 'quiet.svc.cluster.local', 'team-a.svc.cluster.local', 'default.pod.cluster.local']) {
    t.same(ask(n, 'A'), NODATA, n);
  }
  for (const n of ['nowhere.svc.cluster.local', 'nope.default.svc.cluster.local', 'nope.cluster.local', 'x.kubernetes.default.svc.cluster.local', 'kubernetes.default.pod.x.cluster.local']) {
    t.same(ask(n, 'A'), NXDOMAIN, n);
  }
});

t.test('a Service deleted (and its slices) is NXDOMAIN, its PTR gone', async (t) => {
  const o = objects();
  t.same(data(ask('web.default.svc.cluster.local', 'A')), ['10.96.0.20']);
  o.services = o.services.filter((s) => s.metadata.name !== 'web');
  o.endpointSlices = o.endpointSlices.filter((s) => s.metadata.labels['kubernetes.io/service-name'] !== 'web');
  const after = buildDnsIndex(o);
  t.same(after.answer('web.default.svc.cluster.local', 'A'), NXDOMAIN);
  t.same(after.answer('_http._tcp.web.default.svc.cluster.local', 'SRV'), NXDOMAIN);
  t.equal(after.answer('20.0.96.10.in-addr.arpa', 'PTR'), undefined);
});

t.test('loose input: malformed objects are skipped, never thrown on', async (t) => {
  const i = buildDnsIndex({
    services: [null, 3, 'x', {}, { metadata: { name: 'a' } }, { metadata: { name: 'ok', namespace: 'n' }, spec: { clusterIP: '10.96.0.9', ports: 'no' } },
      { metadata: { name: 'bad', namespace: 'n' }, spec: { clusterIP: '999.1.1.1' } }],
    endpointSlices: [null, { metadata: {} }, { addressType: 'IPv4', metadata: { namespace: 'n', labels: { 'kubernetes.io/service-name': 3 } } }],
  });
  t.same(data(i.answer('ok.n.svc.cluster.local', 'A')!), ['10.96.0.9']);
  t.same(i.answer('bad.n.svc.cluster.local', 'A'), NXDOMAIN, 'no valid IPv4 ClusterIP: no records');
});
