import t from 'tap';
import * as dnsPacket from 'dns-packet';
import { parseDnsBenchArgs } from './args.js';
import { chartSpec } from './chart.js';
import { parseDnsperf, parseRcodes } from './parse.js';
import { caseResult, chartRows, figures, formatReport, type DnsBenchResult } from './report.js';
import { queryA, rcodeName, startFakeUpstream, upstreamReply } from './wire.js';
import { caseNames, externalIndex, externalIP, fqdn, hostsFile, queryFile, serviceAt, shuffled } from './workload.js';

const DNSPERF_OUT = `DNS Performance Testing Tool
Version 2.10.0

[Status] Command line: dnsperf -s 127.0.0.1 -p 5399 -d q -l 1 -c 2 -q 10 -v
[Status] Sending queries (to 127.0.0.1:5399)
> NOERROR svc-1.ns-1.svc.cluster.local A 0.001438
> NXDOMAIN svc-9.ns-1.svc.cluster.local A 0.000374
> NOERROR svc-1.ns-1.svc.cluster.local A 0.000322
> T svc-9.ns-1.svc.cluster.local A
[Status] Testing complete (time limit)

Statistics:

  Queries sent:         4
  Queries completed:    3 (75.00%)
  Queries lost:         1 (25.00%)

  Response codes:       NOERROR 2 (66.67%), NXDOMAIN 1 (33.33%)
  Average packet size:  request 46, response 54
  Run time (s):         1.000191
  Queries per second:   2.999427

  Average Latency (s):  0.000711 (min 0.000322, max 0.001438)
  Latency StdDev (s):   0.000487
`;

t.test('workload: names, the seeded order, the hosts file, dnsperf input', async (t) => {
  t.equal(fqdn(serviceAt(123, 100)), 'svc-123.ns-23.svc.cluster.local');
  const n = caseNames(1000, 10);
  t.equal(n.cluster.length, 1000);
  t.equal(new Set(n.cluster).size, 1000, 'every Service once');
  t.not(n.cluster[0], 'svc-0.ns-0.svc.cluster.local', 'shuffled');
  t.same(caseNames(1000, 10), n, 'the same order every run');
  t.equal(n.external.length, 100);
  t.ok(n.nxdomain.every((x) => /^nx-\d+\.ns-\d\.svc\.cluster\.local$/.test(x)), 'missing names in existing namespaces');
  t.same(shuffled([1, 2, 3, 4], 7).sort(), [1, 2, 3, 4]);
  t.equal(hostsFile(new Map([['a.ns.svc.cluster.local', '10.96.0.5']])).split('\n')[1], '10.96.0.5 a.ns.svc.cluster.local');
  t.equal(queryFile(['a', 'b']), 'a A\nb A\n');
  t.equal(externalIndex('ext-7.example.'), 7);
  t.equal(externalIndex('EXT-7.example'), 7);
  t.equal(externalIndex('ext-100.example'), null, 'only the 100 names');
  t.equal(externalIndex('example.com'), null);
  t.equal(externalIP(0), '198.51.100.1');
  t.equal(externalIP(254), '203.0.113.1');
  t.throws(() => externalIP(600), RangeError);
});

t.test('dnsperf: the summary, per-query latencies from -v, timeouts', async (t) => {
  const r = parseDnsperf(DNSPERF_OUT);
  t.match(r, { sent: 4, completed: 3, lost: 1, runS: 1.000191, qps: 2.999427, timedOut: 1 });
  t.same(r.rcodes, { NOERROR: 2, NXDOMAIN: 1 });
  t.same(r.lineRcodes, { NOERROR: 2, NXDOMAIN: 1 });
  t.same([...r.latenciesMs].map((x) => Math.round(x * 1000)), [1438, 374, 322], 'ms, µs resolution');
  t.ok(Math.abs(r.avgLatencyMs - 0.711) < 1e-9);
  t.throws(() => parseDnsperf('dnsperf: error'), TypeError, 'no summary');
  t.same(parseRcodes(' NOERROR 9739 (50.00%), SERVFAIL 3 (0.01%)'), { NOERROR: 9739, SERVFAIL: 3 });
});

t.test('report: wrong rcodes per case, the tables, the figures, the chart', async (t) => {
  const run = parseDnsperf(DNSPERF_OUT);
  const a = caseResult('cluster', 'nodenet', run, 0);
  t.equal(a.wrongRcode, 1, 'an NXDOMAIN among cluster names');
  t.equal(a.p50Ms, run.latenciesMs[1], 'nearest rank: the middle of 3');
  t.equal(caseResult('nxdomain', 'dnsmasq', run, 0).wrongRcode, 2);
  const args = parseDnsBenchArgs(['--smoke']);
  const result: DnsBenchResult = {
    meta: { date: '2026-12-06T00:00:00Z', kernel: 'k', cpus: 2, cpuModel: 'cpu', memTotalMiB: 1, node: 'v20', loadavgBefore: [], loadavgAfter: [], dnsperf: '2.10.0', dnsmasq: 'Dnsmasq version 2.90', commit: 'abc', pinning: 'pinned' },
    args,
    load: { services: 1000, wallMs: 5000 },
    cases: [a, caseResult('cluster', 'dnsmasq', run, 0), caseResult('external', 'nodenet', run, 3)],
    freshness: [{ server: 'nodenet', change: 'create', via: 'API POST', samplesMs: [30, 10, 20], timeouts: 0 }],
    noReload: { waitedMs: 500, stillStale: true },
    verification: [{ server: 'nodenet', checked: 320, agreed: 320, mismatches: [] }],
    notes: [],
  };
  const text = formatReport(result);
  t.match(text, /### \(a\) cluster names\n\n\|  \| nodenet dns \| dnsmasq \|/);
  t.match(text, /\| queries\/s \| 3 \| 3 \|/);
  t.match(text, /\| upstream queries during the run \| 3 \| – \|/, 'a server not measured in a case shows –');
  t.match(text, /\| nodenet dns \| create \| API POST \| 3 \| 20 \| 30 \| 0 \|/, 'freshness p50 and max');
  t.match(text, /still NXDOMAIN/);
  t.match(text, /33,669 qps for cluster names .* about 17,721 qps per busy vCPU .*nodenet dns here: 3 qps for cluster names on one core, 0% of/s, 'CoreDNS\'s published figure beside ours');
  const f = figures(result);
  t.equal(f['freshness/nodenet/create/p50Ms'], 20);
  t.equal(f['cluster/nodenet/qps'], run.qps);
  const spec = chartSpec(chartRows(result.cases), 'title', 'sub') as { hconcat: unknown[]; data: { values: unknown[] } };
  t.equal(spec.hconcat.length, 2, 'qps and p99');
  t.equal(spec.data.values.length, 3);
});

t.test('args: the full run and the smoke run; errors name the flag', async (t) => {
  t.match(parseDnsBenchArgs([]), { services: 10_000, namespaces: 100, durationS: 10, clients: 10, outstanding: 100, freshness: 10, servers: ['nodenet', 'dnsmasq'], smoke: false, outDir: 'bench/results' });
  t.match(parseDnsBenchArgs(['--smoke', '--duration', '3']), { services: 1_000, durationS: 3, smoke: true });
  t.same(parseDnsBenchArgs(['--servers', 'dnsmasq,nodenet']).servers, ['nodenet', 'dnsmasq'], 'the bench\'s order');
  t.throws(() => parseDnsBenchArgs(['--servers', 'coredns']), /--servers/);
  t.throws(() => parseDnsBenchArgs(['--services', '5', '--namespaces', '10']), /--namespaces/);
  t.throws(() => parseDnsBenchArgs(['x']), /unexpected argument/);
});

t.test('the fake upstream: external names answered over a real loopback socket, anything else NXDOMAIN', async (t) => {
  const up = await startFakeUpstream();
  t.teardown(() => up.close());
  t.same(await queryA(up.port, 'ext-5.example'), { rcode: 'NOERROR', ips: ['198.51.100.6'] });
  t.same(await queryA(up.port, 'www.example.com'), { rcode: 'NXDOMAIN', ips: [] });
  t.equal(up.queries(), 2);
  t.equal(upstreamReply(Buffer.from('junk')), null, 'not DNS: no reply');
  const reply = dnsPacket.decode(upstreamReply(dnsPacket.encode({ type: 'query', id: 9, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: 'A', name: 'ext-1.example' }] }))!);
  t.equal(reply.id, 9);
  t.equal((reply.answers?.[0] as { ttl?: number } | undefined)?.ttl, 3600, 'a long TTL: both caches keep it through a case');
  t.equal(rcodeName(0x8183), 'NXDOMAIN');
});
