/**
 * dns/metrics and dns/http, end to end: a DnsServer with a real Forwarder (a fake upstream on 127.0.0.1)
 * answering real queries, then CoreDNS's series and labels read off GET /metrics; /health and /ready as
 * CoreDNS's health and ready plugins answer them.
 */
import packet from 'dns-packet';
import t from 'tap';
import { silentLogger } from '../../../lib/log/log.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import { Forwarder } from './forward.js';
import { Readiness, startDnsHttp } from './http.js';
import { DnsMetrics, TIME_BUCKETS, qtypeLabel } from './metrics.js';
import { buildDnsIndex } from './records.js';
import { startDnsServer } from './server.js';
import { TcpClient, fakeUpstream, frame, query, udpAsk } from './testing.js';

const index = buildDnsIndex({
  services: [{ metadata: { name: 'web', namespace: 'default' }, spec: { clusterIP: '10.96.0.20' } }],
  endpointSlices: [],
});

t.test('CoreDNS buckets and monitored types', async (t) => {
  t.equal(TIME_BUCKETS.length, 16);
  t.equal(TIME_BUCKETS[0], 0.00025);
  t.equal(TIME_BUCKETS[15], 8.192);
  t.equal(qtypeLabel('AAAA'), 'AAAA');
  t.equal(qtypeLabel('HINFO'), 'other');
});

t.test('requests, responses by rcode and plugin, durations, cache and upstream series, on /metrics', async (t) => {
  const up = await fakeUpstream(() => ({ answers: [{ type: 'A', name: 'www.example.org', ttl: 60, data: '192.0.2.1' }] }));
  t.teardown(() => up.close());
  const clock = new FakeClock();
  const metrics = new DnsMetrics();
  const log = silentLogger();
  const forwarder = new Forwarder({ upstreams: [{ host: '127.0.0.1', port: up.port }], log, clock, metrics });
  const dns = await startDnsServer({ listen: { host: '127.0.0.1', port: 0 }, records: () => index, forwarder, log, clock, metrics });
  t.teardown(() => dns.close());
  const readiness = new Readiness();
  const http = await startDnsHttp({ host: '127.0.0.1', metricsPort: 0, healthPort: 0, readyPort: 0, metrics, readiness, log });
  t.teardown(() => http.close());

  const port = dns.udpPort;
  t.ok(await udpAsk(port, query('web.default.svc.cluster.local')));
  t.ok(await udpAsk(port, query('nope.default.svc.cluster.local', 'AAAA')));
  t.ok(await udpAsk(port, query('www.example.org')));
  t.equal(packet.decode((await udpAsk(port, query('www.example.org')))!).answers?.length, 1, 'the second from the cache');
  const two = packet.encode({ type: 'query', id: 1, questions: [{ type: 'A', name: 'a' }, { type: 'A', name: 'b' }] });
  t.ok(await udpAsk(port, two), 'FORMERR');
  const c = new TcpClient(port);
  t.teardown(() => c.close());
  await c.ready;
  c.write(frame(query('web.default.svc.cluster.local', 'A', { edns: 1232, do: true })));
  await c.take(1);

  const res = await fetch(`http://127.0.0.1:${http.metricsPort}/metrics`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /text\/plain/);
  const text = await res.text();
  const server = `server="dns://127.0.0.1:${port}"`;
  const has = (line: string) => t.ok(text.split('\n').includes(line), line);
  has(`coredns_dns_requests_total{${server},zone=".",view="",proto="udp",family="1",type="A"} 3`);
  has(`coredns_dns_requests_total{${server},zone=".",view="",proto="udp",family="1",type="AAAA"} 1`);
  has(`coredns_dns_requests_total{${server},zone=".",view="",proto="tcp",family="1",type="A"} 1`);
  has(`coredns_dns_requests_total{${server},zone="dropped",view="",proto="udp",family="1",type="other"} 1`);
  has(`coredns_dns_responses_total{${server},zone=".",view="",rcode="NOERROR",plugin="kubernetes"} 2`);
  has(`coredns_dns_responses_total{${server},zone=".",view="",rcode="NXDOMAIN",plugin="kubernetes"} 1`);
  has(`coredns_dns_responses_total{${server},zone=".",view="",rcode="NOERROR",plugin="forward"} 1`);
  has(`coredns_dns_responses_total{${server},zone=".",view="",rcode="NOERROR",plugin="cache"} 1`);
  has(`coredns_dns_responses_total{${server},zone="dropped",view="",rcode="FORMERR",plugin=""} 1`);
  has(`coredns_dns_request_duration_seconds_count{${server},zone=".",view=""} 5`);
  t.match(text, new RegExp(`coredns_dns_request_duration_seconds_bucket\\{le="0.00025",${server},zone=".",view=""\\} \\d+`));
  t.match(text, new RegExp(`coredns_dns_request_duration_seconds_bucket\\{le="8.192",${server},zone=".",view=""\\} 5`));
  has(`coredns_dns_do_requests_total{${server},zone=".",view=""} 1`);
  has(`coredns_cache_hits_total{${server},type="success",zones=".",view=""} 1`);
  has(`coredns_cache_misses_total{${server},zones=".",view=""} 1`);
  has(`coredns_cache_entries{${server},type="success",zones=".",view=""} 1`);
  has(`coredns_proxy_request_duration_seconds_count{proxy_name="forward",to="127.0.0.1:${up.port}",rcode="NOERROR"} 1`);
  has(`coredns_plugin_enabled{${server},zone=".",view="",name="kubernetes"} 1`);
  t.equal((await fetch(`http://127.0.0.1:${http.metricsPort}/other`)).status, 404);
});

t.test('/health is 200 OK; /ready is 503 naming the plugins not ready, 200 OK once synced, 503 when shutting down', async (t) => {
  const readiness = new Readiness(['kubernetes']);
  const http = await startDnsHttp({ host: '127.0.0.1', metricsPort: null, healthPort: 0, readyPort: 0, metrics: new DnsMetrics(), readiness, log: silentLogger() });
  t.teardown(() => http.close());
  t.equal(http.metricsPort, null, 'a port of null: off');
  const get = async (port: number | null, path: string) => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`);
    return [r.status, await r.text()];
  };
  t.same(await get(http.healthPort, '/health'), [200, 'OK']);
  t.same(await get(http.readyPort, '/ready'), [503, 'kubernetes'], 'not synced: the kubernetes plugin is not ready');
  readiness.set('other', false);
  t.same(await get(http.readyPort, '/ready'), [503, 'kubernetes,other'], 'sorted, comma-separated');
  readiness.setReady(true);
  t.same(await get(http.readyPort, '/ready'), [200, 'OK']);
  readiness.shutdown();
  t.same(await get(http.readyPort, '/ready'), [503, 'Shutting down']);
  t.same(await get(http.healthPort, '/health'), [200, 'OK'], 'health stays OK in the lameduck window');
  t.equal((await fetch(`http://127.0.0.1:${http.readyPort}/health`)).status, 404, 'each path on its own port');
});
