import t from 'tap';
import { readFileSync } from 'node:fs';
import { ParseError, parseIperf3Json, parseLinkMtus, parsePing, parseRrOutput } from './parse.js';

// Real outputs of iperf3 3.12 and iputils ping 20221126 on this machine (in a scratch nn- namespace).
const fixture = (f: string) => readFileSync(new URL(`./fixtures/${f}`, import.meta.url), 'utf8');

t.test('iperf3 -J, 2 streams: the receiver\'s sum, the sender\'s beside it, retransmits, CPU, congestion control, path MTU', async (t) => {
  const r = parseIperf3Json(fixture('iperf3-loopback-p2.json'));
  t.same(r, {
    receivedBps: 16978611093.504278,
    sentBps: 17079407225.797937,
    seconds: 1.000243,
    streams: 2,
    retransmits: 1,
    cpuSenderPct: 28.064928161717457,
    cpuReceiverPct: 58.675777403440023,
    congestion: 'bbr',
    pmtu: 65535,
  });
});

t.test('iperf3 -J of a failed run: its own message (it prints JSON, and may exit 0)', async (t) => {
  t.throws(() => parseIperf3Json(fixture('iperf3-refused.json')), new ParseError('iperf3: unable to connect to server: Connection refused'));
});

t.test('iperf3 output that is not a finished TCP run', async (t) => {
  t.throws(() => parseIperf3Json('iperf3: error - unable to connect'), /iperf3 output is not JSON: "iperf3: error/);
  t.throws(() => parseIperf3Json('[1,2]'), /not a JSON object/);
  t.throws(() => parseIperf3Json('{"start":{},"intervals":[],"end":{"sum":{"bits_per_second":1}}}'), /no end\.sum_received/);
  const minimal = parseIperf3Json('{"end":{"sum_sent":{"bits_per_second":2e9,"seconds":5},"sum_received":{"bits_per_second":1.9e9}}}');
  t.same(minimal, { receivedBps: 1.9e9, sentBps: 2e9, seconds: 5, streams: 0, retransmits: null, cpuSenderPct: null, cpuReceiverPct: null, congestion: null, pmtu: null }, 'optional figures are null, never invented');
});

t.test('ping: one RTT per reply in µs, and the summary', async (t) => {
  t.same(parsePing(fixture('ping-loopback.txt')), { rttUs: [23, 28, 22, 28, 20], transmitted: 5, received: 5 });
  t.same(parsePing(fixture('ping-lost.txt')), { rttUs: [], transmitted: 3, received: 0 });
  const dup = 'PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=1.25 ms\n64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=1.30 ms (DUP!)\n' +
    '64 bytes from 10.0.0.2: icmp_seq=2 ttl=63 time=0.104 ms\n\n--- 10.0.0.2 ping statistics ---\n2 packets transmitted, 2 received, +1 duplicates, 0% packet loss, time 5ms\n';
  t.same(parsePing(dup), { rttUs: [1250, 104], transmitted: 2, received: 2 }, 'duplicates left out, ms → µs');
  t.throws(() => parsePing('ping: connect: Network is unreachable\n'), /ping printed no summary: "ping: connect: Network is unreachable"/);
});

t.test('the rr client\'s JSON line', async (t) => {
  t.same(parseRrOutput('{"rttUs":[61.2,70,58.9]}\n'), [61.2, 70, 58.9]);
  t.same(parseRrOutput('a warning\n{"rttUs":[]}\n'), [], 'the last line counts');
  t.throws(() => parseRrOutput(''), /rr client printed no JSON line/);
  t.throws(() => parseRrOutput('{"rttUs":[1,-2]}'), /non-negative numbers/);
  t.throws(() => parseRrOutput('{"rtt":[1]}'), /rttUs must be an array/);
});

t.test('ip -j link: MTU by interface name', async (t) => {
  const text = JSON.stringify([
    { ifindex: 1, ifname: 'lo', mtu: 65536 }, { ifindex: 2, ifname: 'eth0', mtu: 1500 }, { ifindex: 3, ifname: 'nodenet.1', mtu: 1450 }, { ifindex: 4, ifname: 'cbr0' },
  ]);
  t.same([...parseLinkMtus(text)], [['lo', 65536], ['eth0', 1500], ['nodenet.1', 1450]]);
  t.throws(() => parseLinkMtus('Cannot find device'), /ip -j link printed no JSON/);
});
