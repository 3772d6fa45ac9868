/**
 * dns/server over real sockets on 127.0.0.1: the cluster's answers with their header bits, EDNS0, UDP
 * truncation and the TCP retry (also with dig, the real client), TCP framing/pipelining/limits, the
 * issue's bad inputs (each followed by a good query still answered), forwarding, and concurrency.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import packet from 'dns-packet';
import t, { type Test } from 'tap';
import { silentLogger } from '../../../lib/log/log.js';
import { realClock } from '../../../lib/reconcile/clock.js';
import { FakeClock } from '../../../lib/reconcile/clock.fake.js';
import { rng } from '../../../lib/testing/rng.js';
import type { ForwardQuery, ForwardResult, Resolver } from './forward.js';
import { buildDnsIndex, type DnsIndex } from './records.js';
import { DnsServer, startDnsServer, type DnsServerOptions } from './server.js';
import { TcpClient, frame, query, udpAsk, RD } from './testing.js';

const run = promisify(execFile);
const DIG = '/usr/bin/dig';

const svc = (name: string, spec: Record<string, unknown>, ns = 'default') => ({ metadata: { name, namespace: ns }, spec });
const many = Array.from({ length: 100 }, (_, i) => ({ addresses: [`10.244.${Math.floor(i / 200) + 7}.${(i % 200) + 1}`], conditions: { ready: true } }));
const index = buildDnsIndex({
  services: [
    svc('kubernetes', { clusterIP: '10.96.0.1', ports: [{ name: 'https', protocol: 'TCP', port: 443 }] }),
    svc('web', { clusterIP: '10.96.0.20', ports: [{ name: 'http', port: 80 }] }),
    svc('big', { clusterIP: 'None' }),
    svc('ext', { type: 'ExternalName', externalName: 'www.example.com' }),
    svc('alias', { type: 'ExternalName', externalName: 'web.default.svc.cluster.local' }),
  ],
  endpointSlices: [{ metadata: { name: 'big-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'big' } }, addressType: 'IPv4', endpoints: many }],
  namespaces: [{ metadata: { name: 'default' } }],
});

/** A resolver that answers A queries with 192.0.2.1 and records what it was asked. */
class FakeResolver implements Resolver {
  readonly asked: ForwardQuery[] = [];
  gate: Promise<void> | null = null;
  async resolve(q: ForwardQuery): Promise<ForwardResult> {
    this.asked.push(q);
    if (this.gate) await this.gate;
    const answers: packet.Answer[] = q.qtype === 1 ? [{ type: 'A', name: q.lname, ttl: 60, data: '192.0.2.1' }] : [];
    return { rcode: 0, ad: false, answers, authorities: [], additionals: [], from: 'upstream' };
  }
}

async function start(t: Test, o: Partial<DnsServerOptions> = {}) {
  const resolver = new FakeResolver();
  const s = await startDnsServer({ listen: { host: '127.0.0.1', port: 0 }, records: () => index, forwarder: resolver, log: silentLogger(), clock: realClock, ...o });
  t.teardown(() => s.close());
  return { ...s, resolver, port: s.udpPort };
}

/** A decoded reply, records loosely typed (dns-packet's union has no common `data`). */
interface Rec { type: string; name: string; ttl?: number; data?: unknown; [k: string]: unknown }
type Reply = Omit<packet.DecodedPacket, 'answers' | 'authorities' | 'additionals'> & { answers?: Rec[]; authorities?: Rec[]; additionals?: Rec[]; rcode?: string; opcode?: string };
const dec = (b: Buffer | null): Reply => {
  if (!b) throw new Error('no reply');
  return packet.decode(b) as unknown as Reply;
};
const data = (a: Rec): unknown => a.data;
const opt = (p: Reply) => (p.additionals ?? []).find((r) => r.type === 'OPT');
const ask = async (port: number, name: string, type: packet.RecordType = 'A', o: Parameters<typeof query>[2] = {}) => dec(await udpAsk(port, query(name, type, o)));

/** A good query still answered: what every bad-input case ends with. */
async function stillServes(t: Test, port: number, what: string): Promise<void> {
  const r = await ask(port, 'kubernetes.default.svc.cluster.local');
  t.same(r.answers?.map((a) => data(a)), ['10.96.0.1'], `after ${what}: a good query is still answered`);
}

t.test('a Service A over UDP: AA, RA, ID, RD and the question echoed as sent (case kept), TTL 5', async (t) => {
  const { port } = await start(t);
  const r = await ask(port, 'Web.Default.SVC.cluster.local', 'A', { id: 777 });
  t.equal(r.id, 777);
  t.equal(r.type, 'response');
  t.equal(r.rcode, 'NOERROR');
  t.ok(r.flag_aa, 'authoritative');
  t.ok(r.flag_ra, 'recursion available');
  t.ok(r.flag_rd, 'RD copied');
  t.same(r.questions, [{ name: 'Web.Default.SVC.cluster.local', type: 'A', class: 'IN' }]);
  t.same(r.answers?.map((a) => [a.name.toLowerCase(), a.type, (a as { ttl: number }).ttl, data(a)]), [['web.default.svc.cluster.local', 'A', 5, '10.96.0.20']]);
  t.equal(opt(r), undefined, 'no OPT in the reply to a query without one');
  const nord = dec(await udpAsk(port, query('web.default.svc.cluster.local', 'A', { flags: 0 })));
  t.notOk(nord.flag_rd, 'RD clear stays clear');
});

t.test('SRV with the target A in additionals; NXDOMAIN and NODATA carry the zone SOA; SOA at the apex', async (t) => {
  const { port } = await start(t);
  const srv = await ask(port, '_https._tcp.kubernetes.default.svc.cluster.local', 'SRV');
  t.same(srv.answers?.map((a) => data(a)), [{ priority: 0, weight: 100, port: 443, target: 'kubernetes.default.svc.cluster.local' }]);
  t.same(srv.additionals?.map((a) => data(a)), ['10.96.0.1']);
  const nx = await ask(port, 'nope.default.svc.cluster.local');
  t.equal(nx.rcode, 'NXDOMAIN');
  t.ok(nx.flag_aa);
  t.same(nx.authorities?.map((a) => [a.type, a.name]), [['SOA', 'cluster.local']]);
  t.match(nx.authorities?.[0]?.data, { mname: 'ns.dns.cluster.local', rname: 'hostmaster.cluster.local', refresh: 7200, retry: 1800, expire: 86400, minimum: 5 });
  const nodata = await ask(port, 'web.default.svc.cluster.local', 'AAAA');
  t.equal(nodata.rcode, 'NOERROR');
  t.same(nodata.answers, []);
  t.same(nodata.authorities?.map((a) => a.type), ['SOA']);
  const apex = await ask(port, 'cluster.local', 'SOA');
  t.same(apex.answers?.map((a) => a.type), ['SOA']);
  const ptr = await ask(port, '1.0.96.10.in-addr.arpa', 'PTR');
  t.same(ptr.answers?.map((a) => data(a)), ['kubernetes.default.svc.cluster.local']);
  t.ok(ptr.flag_aa);
});

t.test('ExternalName: the CNAME, chased through the forwarder outside the zone and through the index inside', async (t) => {
  const { port, resolver } = await start(t);
  const ext = await ask(port, 'ext.default.svc.cluster.local');
  t.same(ext.answers?.map((a) => [a.type, data(a)]), [['CNAME', 'www.example.com'], ['A', '192.0.2.1']]);
  t.equal(resolver.asked[0]?.lname, 'www.example.com');
  const alias = await ask(port, 'alias.default.svc.cluster.local');
  t.same(alias.answers?.map((a) => [a.type, data(a)]), [['CNAME', 'web.default.svc.cluster.local'], ['A', '10.96.0.20']]);
  const cname = await ask(port, 'ext.default.svc.cluster.local', 'CNAME');
  t.same(cname.answers?.map((a) => a.type), ['CNAME'], 'a CNAME query is not chased');
});

t.test('EDNS0: the reply has an OPT with our size and DO echoed; version 1 gets BADVERS', async (t) => {
  const { port } = await start(t);
  const r = await ask(port, 'web.default.svc.cluster.local', 'A', { edns: 4096, do: true });
  t.match(opt(r), { udpPayloadSize: 1232, ednsVersion: 0, flag_do: true });
  const bad = await ask(port, 'web.default.svc.cluster.local', 'A', { edns: 4096, version: 1 });
  t.equal(bad.rcode, 'NOERROR', 'header rcode 0 ...');
  t.match(opt(bad), { extendedRcode: 1, ednsVersion: 0 }, '... extended rcode 1: BADVERS (16)');
  t.same(bad.answers, []);
  await stillServes(t, port, 'BADVERS');
});

t.test('UDP truncation: 100 A records do not fit 512 (TC, no records) but fit 4096; TCP has them all', async (t) => {
  const { port } = await start(t);
  const name = 'big.default.svc.cluster.local';
  const small = await udpAsk(port, query(name));
  t.ok(small && small.length <= 512);
  const s = dec(small);
  t.ok(s.flag_tc, 'TC set without EDNS0');
  t.same(s.answers, []);
  t.same(s.questions?.[0]?.name, name);
  const e512 = await ask(port, name, 'A', { edns: 512 });
  t.ok(e512.flag_tc, 'TC with EDNS0 size 512');
  t.ok(opt(e512), 'the truncated reply keeps its OPT');
  const big = await ask(port, name, 'A', { edns: 4096 });
  t.notOk(big.flag_tc);
  t.equal(big.answers?.length, 100, 'all 100 over UDP with EDNS0 4096');
  const c = new TcpClient(port);
  t.teardown(() => c.close());
  await c.ready;
  c.write(frame(query(name)));
  const [r] = await c.take(1);
  const p = dec(r!);
  t.notOk(p.flag_tc);
  t.equal(p.answers?.length, 100, 'all 100 over TCP without EDNS0');
});

t.test('dig, the real client: UDP, +tcp, +noedns, and +bufsize=512 retrying over TCP on TC', { skip: !existsSync(DIG) && 'no dig' }, async (t) => {
  const { port } = await start(t);
  const dig = async (...args: string[]) => (await run(DIG, ['@127.0.0.1', '-p', String(port), '+time=2', '+tries=1', ...args])).stdout;
  const short = async (...args: string[]) => (await dig('+short', ...args)).trim().split('\n').filter(Boolean);
  t.same(await short('kubernetes.default.svc.cluster.local'), ['10.96.0.1']);
  t.same(await short('+tcp', 'kubernetes.default.svc.cluster.local'), ['10.96.0.1']);
  t.same(await short('+noedns', '_https._tcp.kubernetes.default.svc.cluster.local', 'SRV'), ['0 100 443 kubernetes.default.svc.cluster.local.']);
  const out = await dig('+bufsize=512', 'big.default.svc.cluster.local');
  t.match(out, /Truncated, retrying in TCP mode/, 'dig saw TC over UDP');
  t.equal((out.match(/\sIN\s+A\s+10\.244\./g) ?? []).length, 100, 'and got all 100 records over TCP');
  t.match(out, /flags: qr aa rd ra;/);
  t.match(await dig('nope.default.svc.cluster.local'), /status: NXDOMAIN/);
  t.match(await dig('example.org', 'ANY'), /HINFO\s+"ANY obsoleted" "See RFC 8482"/);
});

t.test('bad input: each answered with the right rcode or dropped, and a good query still answered after', async (t) => {
  const { port } = await start(t);
  const r = rng(30);
  const random = Buffer.from(Array.from({ length: 300 }, () => Math.floor(r() * 256)));
  random.writeUInt16BE(0x0100, 2); // a query (QR 0), opcode QUERY: must be parsed, not just dropped
  const rr = dec(await udpAsk(port, random));
  t.equal(rr.rcode, 'FORMERR', 'random bytes behind a query header: FORMERR');
  t.equal(rr.id, random.readUInt16BE(0));
  t.same(rr.questions, [], 'header-only reply');
  await stillServes(t, port, 'random bytes');

  t.equal(await udpAsk(port, Buffer.from([1, 2, 3, 4, 5]), 300), null, '5 bytes: no header, dropped');
  await stillServes(t, port, '5 bytes');

  const resp = query('web.default.svc.cluster.local');
  resp.writeUInt16BE(resp.readUInt16BE(2) | 0x8000, 2);
  t.equal(await udpAsk(port, resp, 300), null, 'a response (QR set): dropped, never answered');

  const fifty = `${Array.from({ length: 50 }, (_, i) => `l${i}`).join('.')}.default.svc.cluster.local`;
  const f = await ask(port, fifty);
  t.equal(f.rcode, 'NXDOMAIN', '50 labels (a legal name of 182 octets): answered, NXDOMAIN');
  t.equal(f.questions?.[0]?.name, fifty);
  await stillServes(t, port, '50 labels');

  // 50 labels of 6 octets: 351 octets, over 255. Built by hand: encoders refuse it.
  const long = Buffer.concat([Buffer.from([0, 9, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]), ...Array.from({ length: 50 }, () => Buffer.from('\x05abcde')), Buffer.from([0, 0, 1, 0, 1])]);
  const l = dec(await udpAsk(port, long));
  t.equal(l.rcode, 'FORMERR', 'a name over 255 octets: FORMERR');
  await stillServes(t, port, 'a name over 255 octets');

  // The question's name is a pointer to itself (offset 12): a compression loop.
  const loop = Buffer.from([0, 10, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1]);
  t.equal(dec(await udpAsk(port, loop)).rcode, 'FORMERR', 'a compression loop (pointer to itself): FORMERR');
  // a label, then a pointer back to that label: a loop through a prior label
  const loop2 = Buffer.from([0, 11, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0x61, 0xc0, 12, 0, 1, 0, 1]);
  t.equal(dec(await udpAsk(port, loop2)).rcode, 'FORMERR', 'a loop through a prior label: FORMERR');
  await stillServes(t, port, 'compression loops');

  const any = await ask(port, 'web.default.svc.cluster.local', 'ANY' as packet.RecordType);
  t.equal(any.rcode, 'NOERROR');
  t.same(any.answers?.map((a) => [a.type, data(a), (a as { ttl: number }).ttl]), [['HINFO', { cpu: 'ANY obsoleted', os: 'See RFC 8482' }, 8482]], 'ANY: the any plugin\'s RFC 8482 HINFO');
  await stillServes(t, port, 'ANY');

  const two = packet.encode({ type: 'query', id: 12, flags: RD, questions: [{ type: 'A', name: 'a.example' }, { type: 'A', name: 'b.example' }] });
  const tw = dec(await udpAsk(port, two));
  t.equal(tw.rcode, 'FORMERR', 'QDCOUNT 2: FORMERR');
  t.equal(tw.id, 12);
  await stillServes(t, port, 'QDCOUNT 2');

  for (const [opcode, name] of [[4, 'NOTIFY'], [5, 'UPDATE'], [2, 'STATUS']] as const) {
    const m = query('web.default.svc.cluster.local', 'A', { id: 13 });
    m.writeUInt16BE((m.readUInt16BE(2) & ~0x7800) | (opcode << 11), 2);
    const n = dec(await udpAsk(port, m));
    t.equal(n.rcode, 'NOTIMP', `opcode ${name}: NOTIMP`);
    t.equal(n.opcode, name, 'opcode echoed');
    await stillServes(t, port, `opcode ${name}`);
  }

  const ch = query('version.bind', 'TXT');
  ch.writeUInt16BE(3, ch.length - 2); // class CH
  t.equal(dec(await udpAsk(port, ch)).rcode, 'REFUSED', 'class CH: REFUSED, as CoreDNS without chaos');

  const trunc = query('web.default.svc.cluster.local').subarray(0, 20);
  t.equal(dec(await udpAsk(port, trunc)).rcode, 'FORMERR', 'a question cut short: FORMERR');
  await stillServes(t, port, 'a cut question');
});

t.test('TCP: pipelined queries on one connection, a 64 KB junk frame, a frame cut short, idle close', async (t) => {
  const clock = new FakeClock();
  const { port } = await start(t, { clock });
  const c = new TcpClient(port);
  t.teardown(() => c.close());
  await c.ready;
  c.write(Buffer.concat([frame(query('web.default.svc.cluster.local', 'A', { id: 1 })), frame(query('kubernetes.default.svc.cluster.local', 'A', { id: 2 })), frame(query('nope.default.svc.cluster.local', 'A', { id: 3 }))]));
  const rs = (await c.take(3)).map(dec).sort((a, b) => (a.id ?? 0) - (b.id ?? 0));
  t.same(rs.map((r) => [r.id, r.rcode, r.answers?.[0]?.data]), [[1, 'NOERROR', '10.96.0.20'], [2, 'NOERROR', '10.96.0.1'], [3, 'NXDOMAIN', undefined]], 'three pipelined, three answers');

  const junk = Buffer.alloc(65535, 0x41);
  junk.writeUInt16BE(0xabcd, 0);
  junk.writeUInt16BE(0, 2); // a query header, QDCOUNT 0x4141
  c.write(Buffer.concat([Buffer.from([0xff, 0xff]), junk]));
  const [j] = await c.take(1);
  t.match(dec(j!), { id: 0xabcd, rcode: 'FORMERR' }, 'a 65535-byte junk frame: FORMERR');
  c.write(frame(query('web.default.svc.cluster.local', 'A', { id: 4 })));
  t.equal(dec((await c.take(1))[0]!).answers?.[0]?.data, '10.96.0.20', 'the same connection still serves');

  const early = new TcpClient(port);
  await early.ready;
  early.write(Buffer.concat([Buffer.from([0xff, 0xff]), Buffer.alloc(1000, 0x41)]));
  early.sock.end();
  await early.whenClosed();
  const again = new TcpClient(port);
  t.teardown(() => again.close());
  await again.ready;
  again.write(frame(query('web.default.svc.cluster.local', 'A', { id: 5 })));
  t.equal(dec((await again.take(1))[0]!).answers?.[0]?.data, '10.96.0.20', 'after a client claimed 65535 bytes and closed early');
  await stillServes(t, port, 'TCP junk');

  // Idle: the server's clock decides; 10 s without a query closes the connection.
  await clock.advance(10_000);
  await c.whenClosed();
  await again.whenClosed();
  t.pass('idle connections closed after idleMs');
});

t.test('TCP: a partial frame is closed after readMs; at most maxConnections at once', async (t) => {
  const clock = new FakeClock();
  const { port } = await start(t, { clock, tcp: { maxConnections: 2 } });
  const a = new TcpClient(port);
  const b = new TcpClient(port);
  t.teardown(() => { a.close(); b.close(); });
  await Promise.all([a.ready, b.ready]);
  a.write(frame(query('web.default.svc.cluster.local')));
  await a.take(1);
  b.write(frame(query('web.default.svc.cluster.local')));
  await b.take(1);
  const third = new TcpClient(port);
  t.teardown(() => third.close());
  await third.whenClosed();
  t.pass('a third connection is closed by the listener');
  await stillServes(t, port, 'the connection limit');
  a.write(Buffer.from([0, 40, 1, 2, 3])); // 5 of a 42-byte frame
  await new Promise((r) => setImmediate(r));
  await clock.advance(3_000);
  await a.whenClosed();
  t.notOk(b.closed, 'the other connection (idle for less than idleMs) stays');
  t.pass('a frame not completed within readMs: closed');
});

t.test('forwarding: other names go to the forwarder, not authoritative; none: SERVFAIL; concurrency', async (t) => {
  const { port, resolver } = await start(t);
  const r = await ask(port, 'www.example.org', 'A', { edns: 1232, do: true });
  t.same(r.answers?.map((a) => data(a)), ['192.0.2.1']);
  t.notOk(r.flag_aa);
  t.ok(r.flag_ra);
  t.match(resolver.asked.at(-1), { lname: 'www.example.org', qtype: 1, qclass: 1, do: true, cd: false });
  const rev = await ask(port, '9.9.9.9.in-addr.arpa', 'PTR');
  t.equal(rev.rcode, 'NOERROR');
  t.equal(resolver.asked.at(-1)?.lname, '9.9.9.9.in-addr.arpa', 'a reverse name the index has no PTR for is forwarded');

  // A forwarded query waiting on its upstream does not hold up the cluster's.
  let open!: () => void;
  resolver.gate = new Promise((r) => (open = r));
  const slow = udpAsk(port, query('slow.example.org'));
  const c = new TcpClient(port);
  t.teardown(() => c.close());
  await c.ready;
  c.write(Buffer.concat([frame(query('slow2.example.org', 'A', { id: 90 })), frame(query('web.default.svc.cluster.local', 'A', { id: 91 }))]));
  const fast = await ask(port, 'web.default.svc.cluster.local');
  t.equal(fast.answers?.[0]?.data, '10.96.0.20', 'a cluster query over UDP answered while a forwarded one waits');
  const [first] = await c.take(1);
  t.equal(dec(first!).id, 91, 'on one TCP connection the cluster answer overtakes the forwarded one');
  open();
  t.equal(dec(await slow).answers?.[0]?.data, '192.0.2.1');
  t.equal(dec((await c.take(1))[0]!).id, 90);
  const burst = await Promise.all(Array.from({ length: 200 }, (_, i) => udpAsk(port, query(i % 2 ? 'kubernetes.default.svc.cluster.local' : `n${i}.example.org`, 'A', { id: i }))));
  t.ok(burst.every((b, i) => dec(b).id === i && dec(b).answers?.length === 1), '200 concurrent queries, all answered');

  const none = await start(t, { forwarder: null });
  t.equal((await ask(none.port, 'www.example.org')).rcode, 'SERVFAIL', 'no forwarder: SERVFAIL');
});

t.test('before the first index: SERVFAIL for the cluster zone, reverse names still forwarded', async (t) => {
  let current: DnsIndex | null = null;
  const { port } = await start(t, { records: () => current });
  const r = await ask(port, 'web.default.svc.cluster.local');
  t.equal(r.rcode, 'SERVFAIL');
  t.same(r.authorities?.map((a) => a.type), ['SOA']);
  t.equal((await ask(port, '1.0.96.10.in-addr.arpa', 'PTR')).rcode, 'NOERROR', 'forwarded (fallthrough in-addr.arpa)');
  t.equal((await ask(port, 'www.example.org')).answers?.[0]?.data, '192.0.2.1');
  current = index;
  t.equal((await ask(port, 'web.default.svc.cluster.local')).answers?.[0]?.data, '10.96.0.20', 'served once the index is there');
});

t.test('handle() never throws: an index that throws is SERVFAIL, counted as a panic', async (t) => {
  const s = new DnsServer({ listen: { host: '127.0.0.1', port: 0 }, records: () => { throw new Error('boom'); }, forwarder: null, log: silentLogger(), clock: realClock });
  const reply = await s.serve(query('web.default.svc.cluster.local'), 'udp', 1);
  t.equal(dec(reply).rcode, 'SERVFAIL');
  t.match(await s.metrics.metrics(), /coredns_panics_total 1/);
});

t.test('fuzz: 3,000 mutations of valid queries never reach the panic path; replies keep the query ID', async (t) => {
  const s = new DnsServer({ listen: { host: '127.0.0.1', port: 0 }, records: () => index, forwarder: new FakeResolver(), log: silentLogger(), clock: realClock });
  const r = rng(3030);
  const seeds = [
    query('web.default.svc.cluster.local'),
    query('_https._tcp.kubernetes.default.svc.cluster.local', 'SRV', { edns: 1232, do: true }),
    query('www.example.org', 'AAAA', { edns: 4096 }),
    packet.encode({ type: 'query', id: 7, flags: RD, questions: [{ type: 'PTR', name: '1.0.96.10.in-addr.arpa' }], answers: [{ type: 'A', name: 'x', data: '1.2.3.4' }] }),
  ];
  let replies = 0;
  let wrongId = 0;
  for (let i = 0; i < 3000; i++) {
    const m = Buffer.from(seeds[i % seeds.length]!);
    const flips = 1 + Math.floor(r() * 4);
    for (let k = 0; k < flips; k++) m[Math.floor(r() * m.length)] = Math.floor(r() * 256);
    const msg = r() < 0.2 ? m.subarray(0, Math.floor(r() * m.length)) : m;
    const reply = await s.serve(msg, r() < 0.5 ? 'udp' : 'tcp', 1);
    if (reply) {
      replies++;
      if (reply.readUInt16BE(0) !== msg.readUInt16BE(0)) wrongId++;
    }
  }
  t.ok(replies > 1000, `${replies} replies`);
  t.equal(wrongId, 0, 'every reply carries its query\'s ID');
  t.notMatch(await s.metrics.metrics(), /coredns_panics_total [1-9]/, 'no input threw out of handle()');
});
